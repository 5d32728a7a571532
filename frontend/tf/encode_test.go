package tf

import (
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// A tiny GraphDef encoder for the tests, written on protowire like the decoder.

type pb = []byte

func msg(fields ...pb) pb {
	var b pb
	for _, f := range fields {
		b = append(b, f...)
	}
	return b
}

func fBytes(num protowire.Number, v pb) pb {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func fString(num protowire.Number, s string) pb { return fBytes(num, pb(s)) }

func fVarint(num protowire.Number, v uint64) pb {
	b := protowire.AppendTag(nil, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func fFixed32(num protowire.Number, v uint32) pb {
	b := protowire.AppendTag(nil, num, protowire.Fixed32Type)
	return protowire.AppendFixed32(b, v)
}

func graphBytes(nodes ...pb) pb {
	var b pb
	for _, n := range nodes {
		b = append(b, fBytes(1, n)...)
	}
	return append(b, fBytes(4, fVarint(1, 27))...) // versions { producer: 27 }
}

// node encodes a NodeDef; attrs are encoded map entries from the a* helpers.
func node(name, op string, inputs []string, attrs ...pb) pb {
	b := msg(fString(1, name), fString(2, op))
	for _, in := range inputs {
		b = append(b, fString(3, in)...)
	}
	for _, a := range attrs {
		b = append(b, fBytes(5, a)...)
	}
	return b
}

func attrEntry(key string, value pb) pb { return msg(fString(1, key), fBytes(2, value)) }

func aS(k, v string) pb         { return attrEntry(k, fString(2, v)) }
func aI(k string, v int64) pb   { return attrEntry(k, fVarint(3, uint64(v))) }
func aF(k string, v float32) pb { return attrEntry(k, fFixed32(4, math.Float32bits(v))) }
func aB(k string, v bool) pb {
	x := uint64(0)
	if v {
		x = 1
	}
	return attrEntry(k, fVarint(5, x))
}
func aType(k string, d DataType) pb { return attrEntry(k, fVarint(6, uint64(d))) }

// aInts encodes list(int) packed.
func aInts(k string, vs ...int64) pb {
	var packed pb
	for _, v := range vs {
		packed = protowire.AppendVarint(packed, uint64(v))
	}
	return attrEntry(k, fBytes(1, fBytes(3, packed)))
}

func shapeBytes(dims ...int64) pb {
	var b pb
	for _, d := range dims {
		b = append(b, fBytes(2, fVarint(1, uint64(d)))...)
	}
	return b
}

func aShape(k string, dims ...int64) pb { return attrEntry(k, fBytes(7, shapeBytes(dims...))) }

func aTensor(k string, t pb) pb { return attrEntry(k, fBytes(8, t)) }

// tensorFloats encodes a float32 TensorProto with packed float_val.
func tensorFloats(shape []int64, vals ...float32) pb {
	var packed pb
	for _, v := range vals {
		packed = protowire.AppendFixed32(packed, math.Float32bits(v))
	}
	return msg(fVarint(1, uint64(DTFloat)), fBytes(2, shapeBytes(shape...)), fBytes(5, packed))
}

// tensorContent encodes a float32 TensorProto with raw tensor_content.
func tensorContent(shape []int64, vals ...float32) pb {
	var raw pb
	for _, v := range vals {
		raw = protowire.AppendFixed32(raw, math.Float32bits(v))
	}
	return msg(fVarint(1, uint64(DTFloat)), fBytes(2, shapeBytes(shape...)), fBytes(4, raw))
}

// tensorInts encodes an int32 TensorProto with packed int_val.
func tensorInts(shape []int64, vals ...int64) pb {
	var packed pb
	for _, v := range vals {
		packed = protowire.AppendVarint(packed, uint64(v))
	}
	return msg(fVarint(1, uint64(DTInt32)), fBytes(2, shapeBytes(shape...)), fBytes(7, packed))
}

func constF(name string, shape []int64, vals ...float32) pb {
	return node(name, "Const", nil, aType("dtype", DTFloat), aTensor("value", tensorContent(shape, vals...)))
}

func constI(name string, shape []int64, vals ...int64) pb {
	return node(name, "Const", nil, aType("dtype", DTInt32), aTensor("value", tensorInts(shape, vals...)))
}

func placeholder(name string, dims ...int64) pb {
	return node(name, "Placeholder", nil, aType("dtype", DTFloat), aShape("shape", dims...))
}

// constFill is a float constant given by one float_val that fills its shape.
func constFill(name string, shape []int64, v float32) pb {
	return node(name, "Const", nil, aType("dtype", DTFloat), aTensor("value", tensorFloats(shape, v)))
}
