package golden

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cryptflow-go/cryptflow/ir"
)

// ONNX field numbers (onnx.proto) and enum values used by EncodeONNX.
const (
	modelIRVersion   = 1
	modelProducer    = 2
	modelProducerVer = 3
	modelGraph       = 7
	modelOpset       = 8
	opsetDomain      = 1
	opsetVersion     = 2

	graphNode        = 1
	graphName        = 2
	graphInitializer = 5
	graphInput       = 11
	graphOutput      = 12

	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5

	attrName   = 1
	attrF      = 2
	attrI      = 3
	attrS      = 4
	attrFloats = 7
	attrInts   = 8
	attrType   = 20

	attrTypeFloat  = 1
	attrTypeInt    = 2
	attrTypeString = 3
	attrTypeFloats = 6
	attrTypeInts   = 7

	tensorDims     = 1
	tensorDataType = 2
	tensorName     = 8
	tensorRawData  = 9
	dataFloat      = 1
	dataInt64      = 7

	valueName       = 1
	valueType       = 2
	typeTensor      = 1
	tensorTypeElem  = 1
	tensorTypeShape = 2
	shapeDim        = 1
	dimValue        = 1
)

// onnxOpset is the opset EncodeONNX writes.
const onnxOpset = 13

type pb []byte

func (b pb) varint(num int, v uint64) pb {
	b = protowire.AppendTag(b, protowire.Number(num), protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func (b pb) bytes(num int, v []byte) pb {
	b = protowire.AppendTag(b, protowire.Number(num), protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func (b pb) str(num int, s string) pb { return b.bytes(num, []byte(s)) }

func (b pb) float(num int, v float32) pb {
	b = protowire.AppendTag(b, protowire.Number(num), protowire.Fixed32Type)
	return protowire.AppendFixed32(b, math.Float32bits(v))
}

func tensorFloat(name string, shape ir.Shape, data []float32) pb {
	var t pb
	for _, d := range shape {
		t = t.varint(tensorDims, uint64(d))
	}
	t = t.varint(tensorDataType, dataFloat).str(tensorName, name)
	raw := make([]byte, 0, 4*len(data))
	for _, v := range data {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
	}
	return t.bytes(tensorRawData, raw)
}

func tensorInt64(name string, data []int64) pb {
	t := pb(nil).varint(tensorDims, uint64(len(data))).varint(tensorDataType, dataInt64).str(tensorName, name)
	raw := make([]byte, 0, 8*len(data))
	for _, v := range data {
		raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
	}
	return t.bytes(tensorRawData, raw)
}

func valueInfo(name string, dtype ir.DType, shape ir.Shape) (pb, error) {
	elem := uint64(dataFloat)
	switch dtype {
	case ir.Float32:
	case ir.Int64:
		elem = dataInt64
	default:
		return nil, fmt.Errorf("value %q has type %v (float32 or int64 only)", name, dtype)
	}
	var sh pb
	for _, d := range shape {
		sh = sh.bytes(shapeDim, pb(nil).varint(dimValue, uint64(d)))
	}
	tt := pb(nil).varint(tensorTypeElem, elem).bytes(tensorTypeShape, sh)
	return pb(nil).str(valueName, name).bytes(valueType, pb(nil).bytes(typeTensor, tt)), nil
}

func attribute(name string, a ir.Attr) (pb, error) {
	b := pb(nil).str(attrName, name)
	switch a.Kind {
	case ir.AttrInt:
		return b.varint(attrI, uint64(a.Int)).varint(attrType, attrTypeInt), nil
	case ir.AttrFloat:
		return b.float(attrF, a.Float).varint(attrType, attrTypeFloat), nil
	case ir.AttrString:
		return b.str(attrS, a.String).varint(attrType, attrTypeString), nil
	case ir.AttrInts:
		for _, v := range a.Ints {
			b = b.varint(attrInts, uint64(v))
		}
		return b.varint(attrType, attrTypeInts), nil
	case ir.AttrFloats:
		for _, v := range a.Floats {
			b = b.float(attrFloats, v)
		}
		return b.varint(attrType, attrTypeFloats), nil
	}
	return nil, fmt.Errorf("attribute %q has unknown kind %d", name, a.Kind)
}

// EncodeONNX encodes g (with inferred shapes) as an ONNX model: IR version 7, opset 13, weights
// as float32 initializers in raw_data. It covers the operators of the project's synthetic
// networks — Conv, Gemm, MatMul, Add, Sub, Mul (also of two runtime tensors), Relu, Clip, MaxPool,
// AveragePool, GlobalAveragePool, GlobalMaxPool, BatchNormalization, Flatten, Reshape, Concat, Pad
// and ArgMax — and translates the canonical HLIL attributes to their opset-13 form (Pad's and
// Reshape's operands become int64 initializers, Clip's bounds float scalar initializers;
// AveragePool has no dilations attribute before opset 19).
func EncodeONNX(g *ir.Graph) ([]byte, error) {
	var gr pb
	extra := 0
	for _, n := range g.Nodes {
		node := pb(nil)
		inputs := slices.Clone(n.Inputs)
		attrs := ir.Attrs{}
		for k, v := range n.Attrs {
			attrs[k] = v
		}
		switch n.Op {
		case ir.Conv, ir.Gemm, ir.MatMul, ir.Add, ir.Sub, ir.Mul, ir.Relu, ir.MaxPool, ir.GlobalAveragePool,
			ir.GlobalMaxPool, ir.BatchNormalization, ir.Flatten, ir.Concat, ir.ArgMax:
		case ir.AveragePool:
			d, err := attrs.Ints("dilations")
			if err == nil && slices.ContainsFunc(d, func(v int) bool { return v != 1 }) {
				return nil, fmt.Errorf("%s: dilated average pooling needs opset 19", n)
			}
			delete(attrs, "dilations")
		case ir.Clip:
			// Opset 11+: the bounds are optional scalar inputs (an infinite bound is omitted).
			lo, err := attrs.Float("min")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			hi, err := attrs.Float("max")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			extra++
			for i, v := range []float32{lo, hi} {
				name := ""
				if !infBound(v) {
					name = fmt.Sprintf("%s_%s_%d", n.Outputs[0], []string{"min", "max"}[i], extra)
					gr = gr.bytes(graphInitializer, tensorFloat(name, nil, []float32{v}))
				}
				inputs = append(inputs, name)
			}
			for len(inputs) > 1 && inputs[len(inputs)-1] == "" {
				inputs = inputs[:len(inputs)-1]
			}
			delete(attrs, "min")
			delete(attrs, "max")
		case ir.Reshape:
			shape, err := attrs.Ints("shape")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			extra++
			name := fmt.Sprintf("%s_shape_%d", n.Outputs[0], extra)
			gr = gr.bytes(graphInitializer, tensorInt64(name, int64s(shape)))
			inputs = append(inputs, name)
			delete(attrs, "shape")
		case ir.Pad:
			pads, err := attrs.Ints("pads")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			value, err := attrs.Float("value")
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			extra++
			pn := fmt.Sprintf("%s_pads_%d", n.Outputs[0], extra)
			vn := fmt.Sprintf("%s_value_%d", n.Outputs[0], extra)
			gr = gr.bytes(graphInitializer, tensorInt64(pn, int64s(pads)))
			gr = gr.bytes(graphInitializer, tensorFloat(vn, nil, []float32{value}))
			inputs = append(inputs, pn, vn)
			delete(attrs, "pads")
			delete(attrs, "value")
		default:
			return nil, fmt.Errorf("%s: EncodeONNX does not write this operator", n)
		}
		for _, in := range inputs {
			node = node.str(nodeInput, in)
		}
		for _, out := range n.Outputs {
			node = node.str(nodeOutput, out)
		}
		node = node.str(nodeName, n.Name).str(nodeOpType, string(n.Op))
		for _, k := range attrs.Names() {
			a, err := attribute(k, attrs[k])
			if err != nil {
				return nil, fmt.Errorf("%s: %w", n, err)
			}
			node = node.bytes(nodeAttribute, a)
		}
		gr = gr.bytes(graphNode, node)
	}
	gr = gr.str(graphName, g.Name)
	for _, name := range g.ConstNames() {
		c := g.Consts[name]
		gr = gr.bytes(graphInitializer, tensorFloat(name, c.Shape, c.Data))
	}
	for _, in := range g.Inputs {
		v, err := valueInfo(in.Name, in.DType, in.Shape)
		if err != nil {
			return nil, err
		}
		gr = gr.bytes(graphInput, v)
	}
	for _, out := range g.Outputs {
		val, ok := g.Values[out]
		if !ok {
			return nil, fmt.Errorf("output %q has no inferred type (run InferShapes)", out)
		}
		v, err := valueInfo(out, val.DType, val.Shape)
		if err != nil {
			return nil, err
		}
		gr = gr.bytes(graphOutput, v)
	}
	opset := pb(nil).str(opsetDomain, "").varint(opsetVersion, onnxOpset)
	m := pb(nil).varint(modelIRVersion, 7).str(modelProducer, "cryptflow-go golden").str(modelProducerVer, "1")
	m = m.bytes(modelGraph, gr).bytes(modelOpset, opset)
	return m, nil
}

func int64s(v []int) []int64 {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return out
}
