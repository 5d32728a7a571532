// Package pbwire reads protocol-buffer messages field by field, on google.golang.org/protobuf's
// protowire: the shared bottom of the project's own ONNX and TensorFlow decoders, which need no
// generated code. Every accessor names what it reads, so a malformed model gives an error that says
// which field was wrong, never a panic.
package pbwire

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field is one decoded protobuf field: its number, wire type and payload. For VarintType,
// Fixed32Type and Fixed64Type the value is in V; for BytesType the payload is in B (a sub-slice of
// the message, not a copy).
type Field struct {
	Num  protowire.Number
	Type protowire.Type
	V    uint64
	B    []byte
}

// Each walks the fields of an encoded message in order and calls fn for each. Groups (a
// deprecated wire form neither ONNX nor TensorFlow uses) are skipped. Any malformed tag or length
// is an error.
func Each(msg []byte, fn func(f Field) error) error {
	for len(msg) > 0 {
		num, typ, n := protowire.ConsumeTag(msg)
		if n < 0 {
			return fmt.Errorf("bad field tag: %w", protowire.ParseError(n))
		}
		msg = msg[n:]
		f := Field{Num: num, Type: typ}
		switch typ {
		case protowire.VarintType:
			f.V, n = protowire.ConsumeVarint(msg)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(msg)
			f.V = uint64(v)
		case protowire.Fixed64Type:
			f.V, n = protowire.ConsumeFixed64(msg)
		case protowire.BytesType:
			f.B, n = protowire.ConsumeBytes(msg)
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

// WrongType is the error for a field of an unexpected wire type.
func (f Field) WrongType(what string) error {
	return fmt.Errorf("field %d (%s) has wire type %d", f.Num, what, f.Type)
}

// Uint64 returns a varint field.
func (f Field) Uint64(what string) (uint64, error) {
	if f.Type != protowire.VarintType {
		return 0, f.WrongType(what)
	}
	return f.V, nil
}

// Int64 returns a varint field as a signed integer (protobuf int64/int32/enum encoding).
func (f Field) Int64(what string) (int64, error) {
	if f.Type != protowire.VarintType {
		return 0, f.WrongType(what)
	}
	return int64(f.V), nil
}

// Float32 returns a fixed32 field as a float.
func (f Field) Float32(what string) (float32, error) {
	if f.Type != protowire.Fixed32Type {
		return 0, f.WrongType(what)
	}
	return math.Float32frombits(uint32(f.V)), nil
}

// Bytes returns a length-delimited field's payload.
func (f Field) Bytes(what string) ([]byte, error) {
	if f.Type != protowire.BytesType {
		return nil, f.WrongType(what)
	}
	return f.B, nil
}

// Text returns a length-delimited field as a string (copied, so the result does not pin the
// input buffer).
func (f Field) Text(what string) (string, error) {
	b, err := f.Bytes(what)
	return string(b), err
}

// AppendVarints appends a repeated varint field in either the packed or the unpacked form.
func (f Field) AppendVarints(dst []uint64, what string) ([]uint64, error) {
	switch f.Type {
	case protowire.VarintType:
		return append(dst, f.V), nil
	case protowire.BytesType:
		b := f.B
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
	return nil, f.WrongType(what)
}

// AppendInt64s appends a repeated int64 field (packed or not).
func (f Field) AppendInt64s(dst []int64, what string) ([]int64, error) {
	switch f.Type {
	case protowire.VarintType:
		return append(dst, int64(f.V)), nil
	case protowire.BytesType:
		b := f.B
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
	return nil, f.WrongType(what)
}

// AppendFloat32s appends a repeated float field (packed or not).
func (f Field) AppendFloat32s(dst []float32, what string) ([]float32, error) {
	switch f.Type {
	case protowire.Fixed32Type:
		return append(dst, math.Float32frombits(uint32(f.V))), nil
	case protowire.BytesType:
		if len(f.B)%4 != 0 {
			return nil, fmt.Errorf("packed %s: length %d is not a multiple of 4", what, len(f.B))
		}
		if dst == nil {
			dst = make([]float32, 0, len(f.B)/4)
		}
		for i := 0; i < len(f.B); i += 4 {
			dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(f.B[i:])))
		}
		return dst, nil
	}
	return nil, f.WrongType(what)
}

// AppendFloat64s appends a repeated double field (packed or not).
func (f Field) AppendFloat64s(dst []float64, what string) ([]float64, error) {
	switch f.Type {
	case protowire.Fixed64Type:
		return append(dst, math.Float64frombits(f.V)), nil
	case protowire.BytesType:
		if len(f.B)%8 != 0 {
			return nil, fmt.Errorf("packed %s: length %d is not a multiple of 8", what, len(f.B))
		}
		if dst == nil {
			dst = make([]float64, 0, len(f.B)/8)
		}
		for i := 0; i < len(f.B); i += 8 {
			dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(f.B[i:])))
		}
		return dst, nil
	}
	return nil, f.WrongType(what)
}
