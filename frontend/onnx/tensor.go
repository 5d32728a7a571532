package onnx

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cryptflow-go/cryptflow/frontend/pbwire"
	"github.com/cryptflow-go/cryptflow/internal/readfile"
	"github.com/cryptflow-go/cryptflow/ir"
)

// DataType is ONNX's TensorProto.DataType.
type DataType int32

// The ONNX element types (values from onnx.proto).
const (
	Undefined  DataType = 0
	Float      DataType = 1
	Uint8      DataType = 2
	Int8       DataType = 3
	Uint16     DataType = 4
	Int16      DataType = 5
	Int32      DataType = 6
	Int64      DataType = 7
	String     DataType = 8
	Bool       DataType = 9
	Float16    DataType = 10
	Double     DataType = 11
	Uint32     DataType = 12
	Uint64     DataType = 13
	Complex64  DataType = 14
	Complex128 DataType = 15
	BFloat16   DataType = 16
)

var dataTypeNames = map[DataType]string{
	Undefined: "undefined", Float: "float32", Uint8: "uint8", Int8: "int8", Uint16: "uint16",
	Int16: "int16", Int32: "int32", Int64: "int64", String: "string", Bool: "bool",
	Float16: "float16", Double: "float64", Uint32: "uint32", Uint64: "uint64",
	Complex64: "complex64", Complex128: "complex128", BFloat16: "bfloat16",
}

func (d DataType) String() string {
	if s, ok := dataTypeNames[d]; ok {
		return s
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// IsFloat reports whether d is a floating-point type (converted to float32 by the importer).
func (d DataType) IsFloat() bool {
	return d == Float || d == Double || d == Float16 || d == BFloat16
}

// IsInteger reports whether d is an integer or boolean type.
func (d DataType) IsInteger() bool {
	switch d {
	case Uint8, Int8, Uint16, Int16, Int32, Int64, Bool, Uint32, Uint64:
		return true
	}
	return false
}

// rawSize is the number of bytes one element takes in raw_data, or 0 when the type has no fixed
// raw encoding this decoder knows.
func (d DataType) rawSize() int {
	switch d {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16, Float16, BFloat16:
		return 2
	case Float, Int32, Uint32:
		return 4
	case Int64, Double, Uint64, Complex64:
		return 8
	case Complex128:
		return 16
	}
	return 0
}

// MaxElements bounds the element count of any tensor the decoder or importer materialises
// (2^28 elements, 1 GiB of float32), so that a small malicious file cannot request an enormous
// allocation.
const MaxElements = 1 << 28

// Tensor is a decoded TensorProto. Its payload stays in the field ONNX stored it in (raw_data or
// one of the typed lists); Float32s and Int64s convert it. A Tensor decoded from a buffer aliases
// that buffer's raw_data bytes.
type Tensor struct {
	Name     string
	DataType DataType
	Dims     []int64

	raw     []byte
	floats  []float32
	int32s  []int64 // int32_data holds int32, int16, int8, uint16, uint8, bool, float16 and bfloat16
	int64s  []int64
	doubles []float64
	uint64s []uint64 // uint64_data holds uint32 and uint64
	strings [][]byte

	// External data location (data_location == EXTERNAL), resolved by LoadExternal.
	external map[string]string
	hasRaw   bool
}

// IsExternal reports whether the tensor's data lives in an external file not loaded yet.
func (t *Tensor) IsExternal() bool { return t.external != nil }

// NumElements is the product of the dims (1 for a scalar).
func (t *Tensor) NumElements() int {
	n, _ := numElements(t.Dims)
	return n
}

// Shape returns the dims as an ir.Shape.
func (t *Tensor) Shape() ir.Shape {
	s := make(ir.Shape, len(t.Dims))
	for i, d := range t.Dims {
		s[i] = int(d)
	}
	return s
}

// numElements checks the dims (non-negative, product at most MaxElements) and returns the product.
func numElements(dims []int64) (int, error) {
	n := int64(1)
	zero := false
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d in %v", d, dims)
		}
		if d == 0 {
			zero = true
			continue
		}
		if !zero && n > MaxElements/d {
			return 0, fmt.Errorf("tensor of shape %v has more than %d elements", dims, MaxElements)
		}
		if !zero {
			n *= d
		}
	}
	if zero {
		return 0, nil
	}
	return int(n), nil
}

// TensorProto field numbers.
const (
	tensorDims         = 1
	tensorDataType     = 2
	tensorSegment      = 3
	tensorFloatData    = 4
	tensorInt32Data    = 5
	tensorStringData   = 6
	tensorInt64Data    = 7
	tensorName         = 8
	tensorRawData      = 9
	tensorDoubleData   = 10
	tensorUint64Data   = 11
	tensorExternalData = 13
	tensorDataLocation = 14
)

// DecodeTensor decodes a serialized TensorProto (for example a test_data_set_N/input_K.pb file).
// External data is left unresolved (see LoadExternal).
func DecodeTensor(b []byte) (*Tensor, error) {
	t := &Tensor{}
	location := int64(0)
	var ext map[string]string
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case tensorDims:
			t.Dims, err = f.AppendInt64s(t.Dims, "dims")
		case tensorDataType:
			var v int64
			v, err = f.Int64("data_type")
			t.DataType = DataType(v)
		case tensorSegment:
			return errors.New("segmented tensors are unsupported")
		case tensorFloatData:
			t.floats, err = f.AppendFloat32s(t.floats, "float_data")
		case tensorInt32Data:
			var vs []uint64
			vs, err = f.AppendVarints(nil, "int32_data")
			for _, v := range vs {
				t.int32s = append(t.int32s, int64(int32(v)))
			}
		case tensorStringData:
			var s []byte
			s, err = f.Bytes("string_data")
			t.strings = append(t.strings, s)
		case tensorInt64Data:
			t.int64s, err = f.AppendInt64s(t.int64s, "int64_data")
		case tensorName:
			t.Name, err = f.Text("name")
		case tensorRawData:
			t.raw, err = f.Bytes("raw_data")
			t.hasRaw = true
		case tensorDoubleData:
			t.doubles, err = f.AppendFloat64s(t.doubles, "double_data")
		case tensorUint64Data:
			t.uint64s, err = f.AppendVarints(t.uint64s, "uint64_data")
		case tensorExternalData:
			var k, v string
			k, v, err = decodeStringPair(f)
			if err == nil {
				if ext == nil {
					ext = map[string]string{}
				}
				ext[k] = v
			}
		case tensorDataLocation:
			location, err = f.Int64("data_location")
		}
		return err
	})
	if err != nil {
		return nil, tensorErr(t, err)
	}
	switch location {
	case 0:
	case 1:
		if ext == nil {
			ext = map[string]string{}
		}
		t.external = ext
	default:
		return nil, tensorErr(t, fmt.Errorf("unknown data_location %d", location))
	}
	if err := t.check(); err != nil {
		return nil, tensorErr(t, err)
	}
	return t, nil
}

func tensorErr(t *Tensor, err error) error {
	if t.Name != "" {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	return fmt.Errorf("tensor: %w", err)
}

// decodeStringPair decodes a StringStringEntryProto (key = 1, value = 2).
func decodeStringPair(f pbwire.Field) (string, string, error) {
	b, err := f.Bytes("external_data")
	if err != nil {
		return "", "", err
	}
	var k, v string
	err = pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case 1:
			k, err = f.Text("key")
		case 2:
			v, err = f.Text("value")
		}
		return err
	})
	return k, v, err
}

// check verifies that the payload agrees with the dims and the data type. External tensors are
// checked after loading.
func (t *Tensor) check() error {
	n, err := numElements(t.Dims)
	if err != nil {
		return err
	}
	if t.external != nil {
		return nil
	}
	if t.hasRaw {
		if t.DataType == String {
			return errors.New("string tensor with raw_data")
		}
		sz := t.DataType.rawSize()
		if sz == 0 {
			// Unknown element size: the bytes cannot be checked, only rejected on conversion.
			return nil
		}
		if len(t.raw) != n*sz {
			return fmt.Errorf("raw_data has %d bytes, want %d (%d elements of %s)", len(t.raw), n*sz, n, t.DataType)
		}
		return nil
	}
	got := 0
	switch t.DataType {
	case Float:
		got = len(t.floats)
	case Complex64:
		got = len(t.floats) / 2
	case Uint8, Int8, Uint16, Int16, Int32, Bool, Float16, BFloat16:
		got = len(t.int32s)
	case Int64:
		got = len(t.int64s)
	case Double:
		got = len(t.doubles)
	case Complex128:
		got = len(t.doubles) / 2
	case Uint32, Uint64:
		got = len(t.uint64s)
	case String:
		got = len(t.strings)
	case Undefined:
		if n == 0 {
			return nil
		}
		return errors.New("data_type is undefined")
	default:
		return nil
	}
	if got != n {
		return fmt.Errorf("holds %d %s values, dims %v need %d", got, t.DataType, t.Dims, n)
	}
	return nil
}

// LoadExternal reads the data of an external tensor from its location relative to dir. The
// location must stay inside dir (no absolute paths, no ".."). A tensor that is not external is
// left unchanged.
func (t *Tensor) LoadExternal(dir string) error {
	if t.external == nil {
		return nil
	}
	loc := t.external["location"]
	if loc == "" {
		return tensorErr(t, errors.New("external data without a location"))
	}
	clean := filepath.Clean(filepath.FromSlash(loc))
	if filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return tensorErr(t, fmt.Errorf("external data location %q leaves the model's folder", loc))
	}
	offset, err := parseExtInt(t.external, "offset")
	if err != nil {
		return tensorErr(t, err)
	}
	length, err := parseExtInt(t.external, "length")
	if err != nil {
		return tensorErr(t, err)
	}
	n, err := numElements(t.Dims)
	if err != nil {
		return tensorErr(t, err)
	}
	sz := t.DataType.rawSize()
	if sz == 0 {
		return tensorErr(t, fmt.Errorf("external data of type %s is unsupported", t.DataType))
	}
	want := int64(n) * int64(sz)
	if length >= 0 && length != want {
		return tensorErr(t, fmt.Errorf("external data length %d, want %d", length, want))
	}
	f, err := readfile.Open(filepath.Join(dir, clean))
	if err != nil {
		return tensorErr(t, fmt.Errorf("external data: %w", err))
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return tensorErr(t, fmt.Errorf("external data: %w", err))
	}
	if offset < 0 {
		offset = 0
	}
	if offset > st.Size() || st.Size()-offset < want {
		return tensorErr(t, fmt.Errorf("external file %q has %d bytes, need %d at offset %d", loc, st.Size(), want, offset))
	}
	buf := make([]byte, want)
	if _, err := f.ReadAt(buf, offset); err != nil && !(errors.Is(err, io.EOF) && want == 0) {
		return tensorErr(t, fmt.Errorf("external data: %w", err))
	}
	t.raw, t.hasRaw, t.external = buf, true, nil
	return nil
}

// parseExtInt parses an optional integer entry of external_data; -1 means absent.
func parseExtInt(m map[string]string, key string) (int64, error) {
	s, ok := m[key]
	if !ok || s == "" {
		return -1, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("external data %s %q is not a non-negative integer", key, s)
	}
	return v, nil
}

// Float32s returns the elements converted to float32. Every numeric type converts (integers
// exactly where float32 can hold them); string, complex and unknown types are an error.
func (t *Tensor) Float32s() ([]float32, error) {
	if t.external != nil {
		return nil, tensorErr(t, errors.New("external data not loaded"))
	}
	n, err := numElements(t.Dims)
	if err != nil {
		return nil, tensorErr(t, err)
	}
	if t.DataType == Float && !t.hasRaw {
		out := make([]float32, len(t.floats))
		copy(out, t.floats)
		return out, nil
	}
	if t.DataType == Float && t.hasRaw {
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.raw[4*i:]))
		}
		return out, nil
	}
	if t.DataType.IsFloat() || t.DataType.IsInteger() {
		out := make([]float32, n)
		if t.DataType.IsFloat() {
			for i := range out {
				out[i] = float32(t.floatAt(i))
			}
			return out, nil
		}
		for i := range out {
			out[i] = float32(t.intAt(i))
		}
		return out, nil
	}
	return nil, tensorErr(t, fmt.Errorf("cannot convert %s to float32", t.DataType))
}

// Int64s returns the elements as int64. Integer and bool types convert exactly (uint64 values
// above 2^63-1 wrap); floating types are an error.
func (t *Tensor) Int64s() ([]int64, error) {
	if t.external != nil {
		return nil, tensorErr(t, errors.New("external data not loaded"))
	}
	n, err := numElements(t.Dims)
	if err != nil {
		return nil, tensorErr(t, err)
	}
	if !t.DataType.IsInteger() {
		return nil, tensorErr(t, fmt.Errorf("cannot convert %s to int64", t.DataType))
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = t.intAt(i)
	}
	return out, nil
}

// ToIR converts the tensor to a float32 ir.Tensor.
func (t *Tensor) ToIR() (*ir.Tensor, error) {
	data, err := t.Float32s()
	if err != nil {
		return nil, err
	}
	return &ir.Tensor{Shape: t.Shape(), Data: data}, nil
}

// floatAt returns element i of a floating-point tensor (check has validated the lengths).
func (t *Tensor) floatAt(i int) float64 {
	if t.hasRaw {
		r := t.raw
		switch t.DataType {
		case Float:
			return float64(math.Float32frombits(binary.LittleEndian.Uint32(r[4*i:])))
		case Double:
			return math.Float64frombits(binary.LittleEndian.Uint64(r[8*i:]))
		case Float16:
			return float64(halfToFloat(binary.LittleEndian.Uint16(r[2*i:])))
		case BFloat16:
			return float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(r[2*i:])) << 16))
		}
		return 0
	}
	switch t.DataType {
	case Float:
		return float64(t.floats[i])
	case Double:
		return t.doubles[i]
	case Float16:
		return float64(halfToFloat(uint16(t.int32s[i])))
	case BFloat16:
		return float64(math.Float32frombits(uint32(uint16(t.int32s[i])) << 16))
	}
	return 0
}

// intAt returns element i of an integer or bool tensor.
func (t *Tensor) intAt(i int) int64 {
	if t.hasRaw {
		r := t.raw
		switch t.DataType {
		case Uint8:
			return int64(r[i])
		case Int8:
			return int64(int8(r[i]))
		case Bool:
			if r[i] != 0 {
				return 1
			}
			return 0
		case Uint16:
			return int64(binary.LittleEndian.Uint16(r[2*i:]))
		case Int16:
			return int64(int16(binary.LittleEndian.Uint16(r[2*i:])))
		case Int32:
			return int64(int32(binary.LittleEndian.Uint32(r[4*i:])))
		case Uint32:
			return int64(binary.LittleEndian.Uint32(r[4*i:]))
		case Int64, Uint64:
			return int64(binary.LittleEndian.Uint64(r[8*i:]))
		}
		return 0
	}
	switch t.DataType {
	case Uint8:
		return int64(uint8(t.int32s[i]))
	case Int8:
		return int64(int8(t.int32s[i]))
	case Bool:
		if t.int32s[i] != 0 {
			return 1
		}
		return 0
	case Uint16:
		return int64(uint16(t.int32s[i]))
	case Int16:
		return int64(int16(t.int32s[i]))
	case Int32:
		return int64(int32(t.int32s[i]))
	case Int64:
		return t.int64s[i]
	case Uint32:
		return int64(uint32(t.uint64s[i]))
	case Uint64:
		return int64(t.uint64s[i])
	}
	return 0
}

// halfToFloat converts an IEEE 754 binary16 bit pattern to float32.
func halfToFloat(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h) & 0x3ff
	switch {
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: value = mant * 2^-24
		v := float32(mant) * (1.0 / (1 << 24))
		if sign != 0 {
			v = -v
		}
		return v
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// ReadTensor reads a serialized TensorProto file (test_data_set_N/input_K.pb); external data is
// resolved relative to the file's folder.
func ReadTensor(path string) (*Tensor, error) {
	b, err := readfile.ReadFile(context.Background(), path)
	if err != nil {
		return nil, err
	}
	t, err := DecodeTensor(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := t.LoadExternal(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}
