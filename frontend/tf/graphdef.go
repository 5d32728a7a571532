package tf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cryptflow-go/cryptflow/frontend/pbwire"
)

// ErrUnsupported is wrapped by every error about a construct this front end deliberately does not
// handle (an operator, a data type, a runtime use of a shape-only operator), as opposed to a
// malformed or inconsistent graph. Test with errors.Is.
var ErrUnsupported = errors.New("unsupported")

// MaxElements bounds the number of elements of any tensor the decoder expands or the importer
// folds, so that a small malformed file cannot demand gigabytes.
const MaxElements = 1 << 26

// DataType is TensorFlow's DataType enum.
type DataType int32

// The TensorFlow data types (types.proto). The *_REF variants (value+100) are mapped to these by
// the decoder.
const (
	DTInvalid    DataType = 0
	DTFloat      DataType = 1
	DTDouble     DataType = 2
	DTInt32      DataType = 3
	DTUint8      DataType = 4
	DTInt16      DataType = 5
	DTInt8       DataType = 6
	DTString     DataType = 7
	DTComplex64  DataType = 8
	DTInt64      DataType = 9
	DTBool       DataType = 10
	DTBfloat16   DataType = 14
	DTUint16     DataType = 17
	DTComplex128 DataType = 18
	DTHalf       DataType = 19
	DTResource   DataType = 20
	DTVariant    DataType = 21
	DTUint32     DataType = 22
	DTUint64     DataType = 23
)

var dtypeNames = map[DataType]string{
	DTFloat: "float32", DTDouble: "float64", DTInt32: "int32", DTUint8: "uint8", DTInt16: "int16",
	DTInt8: "int8", DTString: "string", DTComplex64: "complex64", DTInt64: "int64", DTBool: "bool",
	DTBfloat16: "bfloat16", DTUint16: "uint16", DTComplex128: "complex128", DTHalf: "float16",
	DTResource: "resource", DTVariant: "variant", DTUint32: "uint32", DTUint64: "uint64",
}

func (d DataType) String() string {
	if s, ok := dtypeNames[d]; ok {
		return s
	}
	return fmt.Sprintf("DataType(%d)", int32(d))
}

// IsFloat reports whether d is a floating-point type the importer computes with.
func (d DataType) IsFloat() bool {
	return d == DTFloat || d == DTDouble || d == DTHalf || d == DTBfloat16
}

// IsInt reports whether d is an integer type.
func (d DataType) IsInt() bool {
	switch d {
	case DTInt32, DTUint8, DTInt16, DTInt8, DTInt64, DTUint16, DTUint32, DTUint64:
		return true
	}
	return false
}

// size is the byte size of one element in tensor_content, or 0 for types without a fixed one.
func (d DataType) size() int {
	switch d {
	case DTFloat, DTInt32, DTUint32:
		return 4
	case DTDouble, DTInt64, DTUint64:
		return 8
	case DTUint8, DTInt8, DTBool:
		return 1
	case DTInt16, DTUint16, DTHalf, DTBfloat16:
		return 2
	}
	return 0
}

// GraphDef is a decoded GraphDef.
type GraphDef struct {
	Nodes    []*NodeDef
	Producer int64 // versions.producer (the TF GraphDef version that wrote it), 0 when absent
}

// NodeDef is a decoded NodeDef.
type NodeDef struct {
	Name   string
	Op     string
	Inputs []string // data inputs "name" or "name:k", then control inputs "^name"
	Device string
	Attr   map[string]*AttrValue
}

// String describes the node for error messages.
func (n *NodeDef) String() string { return fmt.Sprintf("%s node %q", n.Op, n.Name) }

// AttrKind tells which field of an AttrValue is set.
type AttrKind uint8

// The kinds of AttrValue.
const (
	AttrNone AttrKind = iota
	AttrList
	AttrS
	AttrI
	AttrF
	AttrB
	AttrType
	AttrShape
	AttrTensor
	AttrPlaceholder
	AttrFunc
)

// AttrValue is a decoded AttrValue; Kind says which field is meaningful.
type AttrValue struct {
	Kind   AttrKind
	S      string
	I      int64
	F      float32
	B      bool
	Type   DataType
	Shape  *TensorShape
	Tensor *Tensor
	List   *ListValue
	Func   string // the function name (AttrFunc) or the placeholder name (AttrPlaceholder)
}

// ListValue is AttrValue.ListValue. An attribute holding an empty list has every slice empty.
type ListValue struct {
	S      []string
	I      []int64
	F      []float32
	B      []bool
	Type   []DataType
	Shape  []*TensorShape
	Tensor []*Tensor
}

// TensorShape is a decoded TensorShapeProto. A dimension of -1 is unknown.
type TensorShape struct {
	Dims        []int64
	UnknownRank bool
}

// Known reports whether the rank and every dimension are known.
func (s *TensorShape) Known() bool {
	if s == nil || s.UnknownRank {
		return false
	}
	for _, d := range s.Dims {
		if d < 0 {
			return false
		}
	}
	return true
}

// Tensor is a decoded TensorProto. The payload is kept as it was stored (raw tensor_content or
// one typed value list); Float64s and Int64s expand it.
type Tensor struct {
	DType   DataType
	Shape   []int64
	content []byte
	hasRaw  bool
	floats  []float32
	doubles []float64
	ints    []uint64 // int_val, int64_val, bool_val, half_val, uint32_val, uint64_val (as varints)
	strings int      // number of string_val entries
}

// NumElements returns the number of elements the shape describes.
func (t *Tensor) NumElements() (int, error) {
	return numElements(t.Shape)
}

func numElements(shape []int64) (int, error) {
	n := int64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("tensor shape %v has a negative dimension", shape)
		}
		if d > 0 && n > MaxElements/d {
			return 0, fmt.Errorf("tensor shape %v has more than %d elements", shape, MaxElements)
		}
		n *= d
	}
	return int(n), nil
}

// Float64s returns the elements (row-major) as float64. Integers and booleans are converted;
// half and bfloat16 are widened exactly. Following TensorFlow, a typed value list shorter than
// the shape is padded with its last value, and an empty one means all zeros.
func (t *Tensor) Float64s() ([]float64, error) {
	n, err := t.NumElements()
	if err != nil {
		return nil, err
	}
	if t.DType == DTString || t.DType.size() == 0 {
		return nil, fmt.Errorf("%w tensor type %s", ErrUnsupported, t.DType)
	}
	out := make([]float64, n)
	if t.hasRaw {
		es := t.DType.size()
		if len(t.content) != n*es {
			return nil, fmt.Errorf("tensor_content has %d bytes, want %d for %d %s elements", len(t.content), n*es, n, t.DType)
		}
		for i := range out {
			out[i] = rawElement(t.DType, t.content[i*es:])
		}
		return out, nil
	}
	var vals []float64
	switch {
	case len(t.floats) > 0:
		vals = make([]float64, len(t.floats))
		for i, v := range t.floats {
			vals[i] = float64(v)
		}
	case len(t.doubles) > 0:
		vals = t.doubles
	case len(t.ints) > 0:
		vals = make([]float64, len(t.ints))
		for i, v := range t.ints {
			vals[i] = intElement(t.DType, v)
		}
	case t.strings > 0:
		return nil, fmt.Errorf("%s tensor holds string values", t.DType)
	}
	if len(vals) > n {
		return nil, fmt.Errorf("tensor has %d values for shape %v (%d elements)", len(vals), t.Shape, n)
	}
	copy(out, vals)
	if len(vals) > 0 {
		for i := len(vals); i < n; i++ {
			out[i] = vals[len(vals)-1]
		}
	}
	return out, nil
}

// rawElement decodes one little-endian element of tensor_content.
func rawElement(d DataType, b []byte) float64 {
	switch d {
	case DTFloat:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
	case DTDouble:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case DTInt32:
		return float64(int32(binary.LittleEndian.Uint32(b)))
	case DTUint32:
		return float64(binary.LittleEndian.Uint32(b))
	case DTInt64:
		return float64(int64(binary.LittleEndian.Uint64(b)))
	case DTUint64:
		return float64(binary.LittleEndian.Uint64(b))
	case DTUint8:
		return float64(b[0])
	case DTInt8:
		return float64(int8(b[0]))
	case DTBool:
		if b[0] != 0 {
			return 1
		}
		return 0
	case DTInt16:
		return float64(int16(binary.LittleEndian.Uint16(b)))
	case DTUint16:
		return float64(binary.LittleEndian.Uint16(b))
	case DTHalf:
		return halfToFloat(binary.LittleEndian.Uint16(b))
	case DTBfloat16:
		return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b)) << 16))
	}
	return 0
}

// intElement converts one varint-list element: int_val holds int32/int16/int8/uint8/uint16 (and
// half bits in half_val), int64_val int64, bool_val bools, uint32_val/uint64_val unsigned values.
func intElement(d DataType, v uint64) float64 {
	switch d {
	case DTHalf:
		return halfToFloat(uint16(v))
	case DTBfloat16:
		return float64(math.Float32frombits(uint32(uint16(v)) << 16))
	case DTBool:
		if v != 0 {
			return 1
		}
		return 0
	case DTUint32:
		return float64(uint32(v))
	case DTUint64:
		return float64(v)
	case DTInt64:
		return float64(int64(v))
	case DTUint8:
		return float64(uint8(v))
	case DTUint16:
		return float64(uint16(v))
	case DTInt8:
		return float64(int8(v))
	case DTInt16:
		return float64(int16(v))
	}
	return float64(int32(v))
}

// halfToFloat widens an IEEE 754 binary16 value.
func halfToFloat(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	frac := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * math.Ldexp(frac, -24)
	case 0x1f:
		if frac != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	}
	return sign * math.Ldexp(1+frac/1024, exp-15)
}

// Decode parses a binary GraphDef.
func Decode(b []byte) (*GraphDef, error) {
	g := &GraphDef{}
	err := pbwire.Each(b, func(f pbwire.Field) error {
		switch f.Num {
		case 1: // node
			nb, err := f.Bytes("node")
			if err != nil {
				return err
			}
			n, err := decodeNode(nb)
			if err != nil {
				return fmt.Errorf("node %d: %w", len(g.Nodes), err)
			}
			g.Nodes = append(g.Nodes, n)
		case 4: // versions
			vb, err := f.Bytes("versions")
			if err != nil {
				return err
			}
			return pbwire.Each(vb, func(f pbwire.Field) error {
				if f.Num == 1 {
					v, err := f.Uint64("producer")
					g.Producer = int64(v)
					return err
				}
				return nil
			})
		}
		return nil // library (2), deprecated version (3) and unknown fields are ignored
	})
	if err != nil {
		return nil, fmt.Errorf("decode GraphDef: %w", err)
	}
	return g, nil
}

func decodeNode(b []byte) (*NodeDef, error) {
	n := &NodeDef{Attr: map[string]*AttrValue{}}
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case 1:
			n.Name, err = f.Text("name")
		case 2:
			n.Op, err = f.Text("op")
		case 3:
			var s string
			s, err = f.Text("input")
			n.Inputs = append(n.Inputs, s)
		case 4:
			n.Device, err = f.Text("device")
		case 5:
			var eb []byte
			if eb, err = f.Bytes("attr"); err != nil {
				return err
			}
			var key string
			var val *AttrValue
			err = pbwire.Each(eb, func(f pbwire.Field) error {
				var err error
				switch f.Num {
				case 1:
					key, err = f.Text("attr key")
				case 2:
					var vb []byte
					if vb, err = f.Bytes("attr value"); err == nil {
						val, err = decodeAttr(vb)
					}
				}
				return err
			})
			if err != nil {
				return fmt.Errorf("attr %q: %w", key, err)
			}
			if val == nil {
				val = &AttrValue{}
			}
			n.Attr[key] = val
		}
		return err
	})
	if err != nil {
		if n.Name != "" {
			return nil, fmt.Errorf("%q: %w", n.Name, err)
		}
		return nil, err
	}
	if n.Name == "" {
		return nil, errors.New("node without a name")
	}
	if n.Op == "" {
		return nil, fmt.Errorf("node %q has no op", n.Name)
	}
	return n, nil
}

func dtypeOf(v uint64) DataType {
	d := DataType(int32(v))
	if d > 100 && d < 200 {
		d -= 100 // reference types
	}
	return d
}

func decodeAttr(b []byte) (*AttrValue, error) {
	a := &AttrValue{}
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case 1:
			a.Kind = AttrList
			var lb []byte
			if lb, err = f.Bytes("list"); err == nil {
				a.List, err = decodeList(lb)
			}
		case 2:
			a.Kind = AttrS
			a.S, err = f.Text("s")
		case 3:
			a.Kind = AttrI
			var v uint64
			v, err = f.Uint64("i")
			a.I = int64(v)
		case 4:
			a.Kind = AttrF
			if f.Type != 5 { // protowire.Fixed32Type
				return f.WrongType("f")
			}
			a.F = math.Float32frombits(uint32(f.V))
		case 5:
			a.Kind = AttrB
			var v uint64
			v, err = f.Uint64("b")
			a.B = v != 0
		case 6:
			a.Kind = AttrType
			var v uint64
			v, err = f.Uint64("type")
			a.Type = dtypeOf(v)
		case 7:
			a.Kind = AttrShape
			var sb []byte
			if sb, err = f.Bytes("shape"); err == nil {
				a.Shape, err = decodeShape(sb)
			}
		case 8:
			a.Kind = AttrTensor
			var tb []byte
			if tb, err = f.Bytes("tensor"); err == nil {
				a.Tensor, err = DecodeTensor(tb)
			}
		case 9:
			a.Kind = AttrPlaceholder
			a.Func, err = f.Text("placeholder")
		case 10:
			a.Kind = AttrFunc
			var fb []byte
			if fb, err = f.Bytes("func"); err == nil {
				err = pbwire.Each(fb, func(f pbwire.Field) error {
					if f.Num == 1 {
						var e error
						a.Func, e = f.Text("func name")
						return e
					}
					return nil
				})
			}
		}
		return err
	})
	return a, err
}

func decodeList(b []byte) (*ListValue, error) {
	l := &ListValue{}
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case 2:
			var s string
			s, err = f.Text("list s")
			l.S = append(l.S, s)
		case 3:
			var vs []uint64
			vs, err = f.AppendVarints(nil, "list i")
			for _, v := range vs {
				l.I = append(l.I, int64(v))
			}
		case 4:
			l.F, err = f.AppendFloat32s(l.F, "list f")
		case 5:
			var vs []uint64
			vs, err = f.AppendVarints(nil, "list b")
			for _, v := range vs {
				l.B = append(l.B, v != 0)
			}
		case 6:
			var vs []uint64
			vs, err = f.AppendVarints(nil, "list type")
			for _, v := range vs {
				l.Type = append(l.Type, dtypeOf(v))
			}
		case 7:
			var sb []byte
			if sb, err = f.Bytes("list shape"); err == nil {
				var s *TensorShape
				s, err = decodeShape(sb)
				l.Shape = append(l.Shape, s)
			}
		case 8:
			var tb []byte
			if tb, err = f.Bytes("list tensor"); err == nil {
				var t *Tensor
				t, err = DecodeTensor(tb)
				l.Tensor = append(l.Tensor, t)
			}
		}
		return err
	})
	return l, err
}

func decodeShape(b []byte) (*TensorShape, error) {
	s := &TensorShape{}
	err := pbwire.Each(b, func(f pbwire.Field) error {
		switch f.Num {
		case 2:
			db, err := f.Bytes("dim")
			if err != nil {
				return err
			}
			size := int64(0)
			if err := pbwire.Each(db, func(f pbwire.Field) error {
				if f.Num == 1 {
					v, err := f.Uint64("dim size")
					size = int64(v)
					return err
				}
				return nil
			}); err != nil {
				return err
			}
			if size < -1 {
				return fmt.Errorf("dimension size %d", size)
			}
			s.Dims = append(s.Dims, size)
		case 3:
			v, err := f.Uint64("unknown_rank")
			s.UnknownRank = v != 0
			return err
		}
		return nil
	})
	return s, err
}

// DecodeTensor parses a binary TensorProto. Its shape must be fully known.
func DecodeTensor(b []byte) (*Tensor, error) {
	t := &Tensor{}
	var shape *TensorShape
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case 1:
			var v uint64
			v, err = f.Uint64("dtype")
			t.DType = dtypeOf(v)
		case 2:
			var sb []byte
			if sb, err = f.Bytes("tensor_shape"); err == nil {
				shape, err = decodeShape(sb)
			}
		case 4:
			t.content, err = f.Bytes("tensor_content")
			t.hasRaw = true
		case 5:
			t.floats, err = f.AppendFloat32s(t.floats, "float_val")
		case 6:
			t.doubles, err = f.AppendFloat64s(t.doubles, "double_val")
		case 7, 10, 11, 13, 16, 17: // int_val, int64_val, bool_val, half_val, uint32_val, uint64_val
			t.ints, err = f.AppendVarints(t.ints, "int values")
		case 8:
			_, err = f.Bytes("string_val")
			t.strings++
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("tensor: %w", err)
	}
	if shape != nil {
		if !shape.Known() {
			return nil, fmt.Errorf("tensor: shape %v is not fully known", shape.Dims)
		}
		t.Shape = shape.Dims
	} else {
		t.Shape = []int64{}
	}
	if _, err := t.NumElements(); err != nil {
		return nil, fmt.Errorf("tensor: %w", err)
	}
	return t, nil
}

// parseInput splits a NodeDef input into the producing node, the output index and whether it is
// a control input.
func parseInput(s string) (node string, index int, control bool, err error) {
	if strings.HasPrefix(s, "^") {
		if len(s) == 1 {
			return "", 0, false, errors.New("empty control input")
		}
		return s[1:], 0, true, nil
	}
	if s == "" {
		return "", 0, false, errors.New("empty input name")
	}
	if i := strings.LastIndexByte(s, ':'); i >= 0 {
		k, err := strconv.Atoi(s[i+1:])
		if err != nil || k < 0 || i == 0 {
			return "", 0, false, fmt.Errorf("bad input name %q", s)
		}
		return s[:i], k, false, nil
	}
	return s, 0, false, nil
}

// printable reports whether a string decoded from the wire is valid, non-empty UTF-8 without
// control characters (used to recognise node names and op types).
func printable(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
