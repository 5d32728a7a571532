package tf

import (
	"encoding/binary"
	"fmt"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// field is one decoded protobuf field. For varint and fixed types the value is in v; for
// length-delimited fields the payload is in b (a sub-slice of the message).
type field struct {
	num protowire.Number
	typ protowire.Type
	v   uint64
	b   []byte
}

// eachField walks the fields of an encoded message in order and calls fn for each. Groups are
// skipped. A malformed tag or length is an error.
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

func (f field) varint(what string) (uint64, error) {
	if f.typ != protowire.VarintType {
		return 0, f.wrongType(what)
	}
	return f.v, nil
}

func (f field) bytes(what string) ([]byte, error) {
	if f.typ != protowire.BytesType {
		return nil, f.wrongType(what)
	}
	return f.b, nil
}

func (f field) string(what string) (string, error) {
	b, err := f.bytes(what)
	return string(b), err
}

// appendVarints appends a repeated varint field, packed or not.
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

// appendFloat32s appends a repeated float field, packed or not.
func (f field) appendFloat32s(dst []float32, what string) ([]float32, error) {
	switch f.typ {
	case protowire.Fixed32Type:
		return append(dst, math.Float32frombits(uint32(f.v))), nil
	case protowire.BytesType:
		if len(f.b)%4 != 0 {
			return nil, fmt.Errorf("packed %s: length %d is not a multiple of 4", what, len(f.b))
		}
		for i := 0; i < len(f.b); i += 4 {
			dst = append(dst, math.Float32frombits(binary.LittleEndian.Uint32(f.b[i:])))
		}
		return dst, nil
	}
	return nil, f.wrongType(what)
}

// appendFloat64s appends a repeated double field, packed or not.
func (f field) appendFloat64s(dst []float64, what string) ([]float64, error) {
	switch f.typ {
	case protowire.Fixed64Type:
		return append(dst, math.Float64frombits(f.v)), nil
	case protowire.BytesType:
		if len(f.b)%8 != 0 {
			return nil, fmt.Errorf("packed %s: length %d is not a multiple of 8", what, len(f.b))
		}
		for i := 0; i < len(f.b); i += 8 {
			dst = append(dst, math.Float64frombits(binary.LittleEndian.Uint64(f.b[i:])))
		}
		return dst, nil
	}
	return nil, f.wrongType(what)
}
