package onnx

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// A tiny ONNX encoder for tests: each helper returns one encoded field (tag plus payload), and a
// message is the concatenation of its fields. Field numbers are those of onnx.proto, as in the
// decoder's constants.

type pb = []byte

func cat(parts ...pb) pb {
	var out pb
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func fVarint(num int, v uint64) pb {
	b := protowire.AppendTag(nil, protowire.Number(num), protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func fInt(num int, v int64) pb { return fVarint(num, uint64(v)) }

func fBytes(num int, v []byte) pb {
	b := protowire.AppendTag(nil, protowire.Number(num), protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func fString(num int, s string) pb { return fBytes(num, []byte(s)) }

func fFloat(num int, v float32) pb {
	b := protowire.AppendTag(nil, protowire.Number(num), protowire.Fixed32Type)
	return protowire.AppendFixed32(b, math.Float32bits(v))
}

func packedInts(num int, vs []int64) pb {
	var p []byte
	for _, v := range vs {
		p = protowire.AppendVarint(p, uint64(v))
	}
	return fBytes(num, p)
}

func packedFloats(num int, vs []float32) pb {
	var p []byte
	for _, v := range vs {
		p = binary.LittleEndian.AppendUint32(p, math.Float32bits(v))
	}
	return fBytes(num, p)
}

// ---- TensorProto ----

func dimsField(dims []int64) pb {
	if len(dims) == 0 {
		return nil
	}
	return packedInts(tensorDims, dims)
}

// tensorF encodes a float32 tensor in raw_data.
func tensorF(name string, dims []int64, data []float32) pb {
	raw := make([]byte, 0, 4*len(data))
	for _, v := range data {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	return cat(dimsField(dims), fInt(tensorDataType, int64(Float)), fString(tensorName, name), fBytes(tensorRawData, raw))
}

// tensorFTyped encodes a float32 tensor in float_data.
func tensorFTyped(name string, dims []int64, data []float32) pb {
	return cat(dimsField(dims), fInt(tensorDataType, int64(Float)), fString(tensorName, name), packedFloats(tensorFloatData, data))
}

// tensorI64 encodes an int64 tensor in int64_data.
func tensorI64(name string, dims []int64, data []int64) pb {
	return cat(dimsField(dims), fInt(tensorDataType, int64(Int64)), fString(tensorName, name), packedInts(tensorInt64Data, data))
}

// ---- ValueInfoProto ----

// valueInfo encodes a tensor value with a shape; each dim is an int (dim_value), a string
// (dim_param) or nil (unknown).
func valueInfo(name string, elem DataType, dims ...any) pb {
	var shape pb
	for _, d := range dims {
		var dim pb
		switch v := d.(type) {
		case int:
			dim = fInt(1, int64(v))
		case string:
			dim = fString(2, v)
		}
		shape = append(shape, fBytes(1, dim)...)
	}
	tt := cat(fInt(tensorTypeElem, int64(elem)), fBytes(tensorTypeShape, shape))
	return cat(fString(1, name), fBytes(2, fBytes(typeTensor, tt)))
}

// ---- AttributeProto ----

func aInt(name string, v int64) pb {
	return cat(fString(attrName, name), fInt(attrType, int64(AttrInt)), fInt(attrI, v))
}

func aFloat(name string, v float32) pb {
	return cat(fString(attrName, name), fInt(attrType, int64(AttrFloat)), fFloat(attrF, v))
}

func aString(name, v string) pb {
	return cat(fString(attrName, name), fInt(attrType, int64(AttrString)), fString(attrS, v))
}

func aInts(name string, vs ...int64) pb {
	return cat(fString(attrName, name), fInt(attrType, int64(AttrInts)), packedInts(attrInts, vs))
}

func aFloats(name string, vs ...float32) pb {
	return cat(fString(attrName, name), fInt(attrType, int64(AttrFloats)), packedFloats(attrFloats, vs))
}

func aTensor(name string, t pb) pb {
	return cat(fString(attrName, name), fInt(attrType, int64(AttrTensor)), fBytes(attrT, t))
}

// ---- NodeProto, GraphProto, ModelProto ----

// node encodes a node; attrs are encoded AttributeProtos.
func node(op, name string, inputs, outputs []string, attrs ...pb) pb {
	var b pb
	for _, in := range inputs {
		b = append(b, fString(nodeInput, in)...)
	}
	for _, out := range outputs {
		b = append(b, fString(nodeOutput, out)...)
	}
	b = append(b, fString(nodeName, name)...)
	b = append(b, fString(nodeOpType, op)...)
	for _, a := range attrs {
		b = append(b, fBytes(nodeAttribute, a)...)
	}
	return b
}

// graphSpec lists the encoded parts of a graph.
type graphSpec struct {
	nodes, inits, inputs, outputs []pb
}

func (g graphSpec) encode() pb {
	b := fString(graphName, "test")
	for _, n := range g.nodes {
		b = append(b, fBytes(graphNode, n)...)
	}
	for _, t := range g.inits {
		b = append(b, fBytes(graphInitializer, t)...)
	}
	for _, v := range g.inputs {
		b = append(b, fBytes(graphInput, v)...)
	}
	for _, v := range g.outputs {
		b = append(b, fBytes(graphOutput, v)...)
	}
	return b
}

func opsetImport(domain string, version int64) pb {
	return fBytes(modelOpsetImport, cat(fString(1, domain), fInt(2, version)))
}

// modelBytes encodes a model importing the default domain at opset.
func modelBytes(opset int64, g graphSpec) pb {
	return cat(fInt(modelIRVersion, 8), fString(modelProducerName, "cryptflow-test"), opsetImport("", opset), fBytes(modelGraph, g.encode()))
}

// floats returns n deterministic pseudo-random values in [-1, 1).
func floats(n int, seed uint32) []float32 {
	out := make([]float32, n)
	s := seed*2654435761 + 1
	for i := range out {
		s ^= s << 13
		s ^= s >> 17
		s ^= s << 5
		out[i] = float32(s%20000)/10000 - 1
	}
	return out
}
