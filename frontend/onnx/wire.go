package onnx

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// field is one decoded protobuf field: its number, wire type and payload. For VarintType, Fixed32Type
// and Fixed64Type the value is in v; for BytesType the payload is in b (a sub-slice of the message,
// not a copy).
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

// eachField walks the fields of an encoded message in order and calls fn for each. Groups (a
// deprecated wire form ONNX never uses) are skipped. Any malformed tag or length is an error.
func eachField(msg []byte, fn func(f field) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("bad field tag: %w", protowire.ParseError(n))
		}
		msg = msg[n:]
		f := field{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.v, n = protowire.ConsumeVarint(msg)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(msg)
			f.v = uint64(v)
		case protowire.Fixed64Type:
			f.v, n = protowire.ConsumeFixed64(msg)
		case protowire.BytesType:
			f.b, n = protowire.ConsumeBytes(msg)
		default:
			n = protowire.ConsumeFieldValue(num, typ, msg)
			if n >= 0 {
				msg = msg[n:]
				continue
			}
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		msg = msg[n:]
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

func (f field) wrongType(what string) error {
	return fmt.Errorf("field %d (%s) has wire type %d", f.num, what, f.typ)
}

// int64 returns a varint field as a signed integer (protobuf int64/int32/enum encoding).
func (f field) int64(what string) (int64, error) {
	if f.typ != protowire.VarintType {
		return 0, f.wrongType(what)
	}
	return int64(f.v), nil
}

// float32 returns a fixed32 field as a float.
func (f field) float32(what string) (float32, error) {
	if f.typ != protowire.Fixed32Type {
		return 0, f.wrongType(what)
	}
	return math.Float32frombits(uint32(f.v)), nil
}

// bytes returns a length-delimited field's payload.
func (f field) bytes(what string) ([]byte, error) {
	if f.typ != protowire.BytesType {
		return nil, f.wrongType(what)
	}
	return f.b, nil
}

// string returns a length-delimited field as a string (copied, so the result does not pin the
// input buffer).
func (f field) string(what string) (string, error) {
	b, err := f.bytes(what)
	return string(b), err
}

// appendVarints appends a repeated varint field in either the packed or the unpacked form.
func (f field) appendVarints(dst []uint64, what string) ([]uint64, error) {
	switch f.typ {
	case protowire.VarintType:
		return append(dst, f.v), nil
	case protowire.BytesType:
		b := f.b
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, fmt.Errorf("packed %s: %w", what, protowire.ParseError(n))
			}
			dst = append(dst, v)
			b = b[n:]
		}
		return dst, nil
	}
	return nil, f.wrongType(what)
}

// appendInt64s appends a repeated int64 field (packed or not).
func (f field) appendInt64s(dst []int64, what string) ([]int64, error) {
	switch f.typ {
	case protowire.VarintType:
		return append(dst, int64(f.v)), nil
	case protowire.BytesType:
		b := f.b
		for len(b) > 0 {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, fmt.Errorf("packed %s: %w", what, protowire.ParseError(n))
			}
			dst = append(dst, int64(v))
			b = b[n:]
		}
		return dst, nil
	}
	return nil, f.wrongType(what)
}

// appendFloat32s appends a repeated float field (packed or not).
func (f field) appendFloat32s(dst []float32, what string) ([]float32, error) {
	switch f.typ {
	case protowire.Fixed32Type:
		return append(dst, math.Float32frombits(uint32(f.v))), nil
	case protowire.BytesType:
		if len(f.b)%4 != 0 {
			return nil, fmt.Errorf("packed %s: length %d is not a multiple of 4", what, len(f.b))
		}
		if dst == nil {
			dst = make([]float32, 0, len(f.b)/4)
		}
		for i := 0; i < len(f.b); i += 4 {
			dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(f.b[i:])))
		}
		return dst, nil
	}
	return nil, f.wrongType(what)
}

// appendFloat64s appends a repeated double field (packed or not).
func (f field) appendFloat64s(dst []float64, what string) ([]float64, error) {
	switch f.typ {
	case protowire.Fixed64Type:
		return append(dst, math.Float64frombits(f.v)), nil
	case protowire.BytesType:
		if len(f.b)%8 != 0 {
			return nil, fmt.Errorf("packed %s: length %d is not a multiple of 8", what, len(f.b))
		}
		if dst == nil {
			dst = make([]float64, 0, len(f.b)/8)
		}
		for i := 0; i < len(f.b); i += 8 {
			dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(f.b[i:])))
		}
		return dst, nil
	}
	return nil, f.wrongType(what)
}
