package npy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// Info is what a .npy header says about the array that follows it.
type Info struct {
	Shape []int
	DType DType
	// DataOffset is the size of everything before the array data (magic, version, header).
	DataOffset int64

	order binary.ByteOrder
}

// Len returns the number of elements the header announces (1 for a scalar).
func (i *Info) Len() int {
	n := 1
	for _, d := range i.Shape {
		n *= d
	}
	return n
}

// ReadInfo reads the magic, version and header of a .npy stream and checks them as Read does,
// without reading any array data: r is left at the first data byte.
func ReadInfo(r io.Reader) (*Info, error) {
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	return &Info{Shape: h.shape, DType: h.dt, DataOffset: h.offset, order: h.order}, nil
}

// StatFile reads the header of a .npy file and checks that the file holds exactly the data the
// header announces, without reading that data.
func StatFile(path string) (*Info, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	defer f.Close()
	info, err := ReadInfo(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	want := info.DataOffset + int64(info.Len())*int64(info.DType.Size())
	switch {
	case fi.Size() < want:
		return nil, fmt.Errorf("%s: npy: truncated: shape %v of %v needs %d bytes after the header, the file has %d",
			path, info.Shape, info.DType, want-info.DataOffset, fi.Size()-info.DataOffset)
	case fi.Size() > want:
		return nil, fmt.Errorf("%s: npy: %d unexpected bytes after the array data", path, fi.Size()-want)
	}
	return info, nil
}

// ReadFileRows reads rows from..from+count-1 along the first axis of a .npy file, reading only
// their bytes after checking the header (see StatFile). The result has shape [count, ...].
func ReadFileRows(path string, from, count int) (*Array, error) {
	info, err := StatFile(path)
	if err != nil {
		return nil, err
	}
	if len(info.Shape) == 0 {
		return nil, fmt.Errorf("%s: npy: a scalar (0-d) array has no rows", path)
	}
	if from < 0 || count < 0 || from > info.Shape[0] || count > info.Shape[0]-from {
		return nil, fmt.Errorf("%s: npy: rows [%d, %d) are outside the %d rows of shape %v", path, from, from+count, info.Shape[0], info.Shape)
	}
	row := 1
	for _, d := range info.Shape[1:] {
		row *= d
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	defer f.Close()
	size := info.DType.Size()
	off := info.DataOffset + int64(from)*int64(row)*int64(size)
	n := count * row
	raw, err := readN(io.NewSectionReader(f, off, int64(n)*int64(size)), n*size)
	if err != nil {
		return nil, fmt.Errorf("%s: npy: reading rows [%d, %d): %w", path, from, from+count, err)
	}
	shape := append([]int{count}, info.Shape[1:]...)
	return &Array{Shape: shape, DType: info.DType, data: decode(raw, info.DType, info.order, n)}, nil
}

// NewArray makes an array of the given shape from data, which must be a []float32, []float64,
// []int32, []int64 or []uint8 of exactly the shape's number of elements. The array holds data
// itself, not a copy.
func NewArray(shape []int, data any) (*Array, error) {
	var dt DType
	var n int
	switch d := data.(type) {
	case []float32:
		dt, n = Float32, len(d)
	case []float64:
		dt, n = Float64, len(d)
	case []int32:
		dt, n = Int32, len(d)
	case []int64:
		dt, n = Int64, len(d)
	case []uint8:
		dt, n = Uint8, len(d)
	default:
		return nil, fmt.Errorf("npy: unsupported element slice %T (want []float32, []float64, []int32, []int64 or []uint8)", data)
	}
	want, err := elements(shape)
	if err != nil {
		return nil, err
	}
	if want != n {
		return nil, fmt.Errorf("npy: shape %v holds %d elements but %d were given", shape, want, n)
	}
	return &Array{Shape: slices.Clone(shape), DType: dt, data: data}, nil
}

// Data returns the elements in their stored type: a []float32, []float64, []int32, []int64 or
// []uint8 matching DType. It is the array's own slice, not a copy.
func (a *Array) Data() any { return a.data }

// elements is the number of elements of shape, which must have no negative dimension.
func elements(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("npy: negative dimension in shape %v", shape)
		}
		if d != 0 && n > math.MaxInt/8/d {
			return 0, fmt.Errorf("npy: shape %v is too large", shape)
		}
		n *= d
	}
	return n, nil
}

// Reshape returns the array with a new shape of the same number of elements, sharing the data.
// One dimension may be -1: it is inferred from the others, as in numpy.reshape.
func (a *Array) Reshape(shape []int) (*Array, error) {
	to, err := ReshapeTo(a.Shape, shape)
	if err != nil {
		return nil, err
	}
	return &Array{Shape: to, DType: a.DType, data: a.data}, nil
}

// ReshapeTo checks that an array of shape from can take shape to (see Reshape) and returns to
// with a -1 dimension filled in. It needs only the shapes, so a file's header is enough.
func ReshapeTo(from, to []int) ([]int, error) {
	shape := slices.Clone(to)
	infer, known := -1, 1
	for i, d := range shape {
		switch {
		case d == -1 && infer >= 0:
			return nil, fmt.Errorf("npy: shape %v has more than one -1", shape)
		case d == -1:
			infer = i
		case d < 0:
			return nil, fmt.Errorf("npy: negative dimension in shape %v", shape)
		default:
			known *= d
		}
	}
	n, err := elements(from)
	if err != nil {
		return nil, err
	}
	if infer >= 0 {
		if known == 0 || n%known != 0 {
			return nil, fmt.Errorf("npy: cannot reshape %d elements (shape %v) to %v", n, from, shape)
		}
		shape[infer] = n / known
	}
	if got, err := elements(shape); err != nil {
		return nil, err
	} else if got != n {
		return nil, fmt.Errorf("npy: cannot reshape %d elements (shape %v) to %v, which holds %d", n, from, shape, got)
	}
	if shape == nil {
		shape = []int{}
	}
	return shape, nil
}

// Slice returns rows from..from+count-1 along the first axis, sharing the data.
func (a *Array) Slice(from, count int) (*Array, error) {
	if len(a.Shape) == 0 {
		return nil, errors.New("npy: a scalar (0-d) array has no rows")
	}
	if from < 0 || count < 0 || from > a.Shape[0] || count > a.Shape[0]-from {
		return nil, fmt.Errorf("npy: rows [%d, %d) are outside the %d rows of shape %v", from, from+count, a.Shape[0], a.Shape)
	}
	row := 1
	for _, d := range a.Shape[1:] {
		row *= d
	}
	lo, hi := from*row, (from+count)*row
	var data any
	switch d := a.data.(type) {
	case []float32:
		data = d[lo:hi:hi]
	case []float64:
		data = d[lo:hi:hi]
	case []int32:
		data = d[lo:hi:hi]
	case []int64:
		data = d[lo:hi:hi]
	case []uint8:
		data = d[lo:hi:hi]
	default:
		return nil, fmt.Errorf("npy: array has no data of a known type (dtype %v)", a.DType)
	}
	return &Array{Shape: append([]int{count}, a.Shape[1:]...), DType: a.DType, data: data}, nil
}

// CheckConcat reports whether arrays of these shapes and types can be joined along the first
// axis (same dtype, at least one dimension, equal dimensions after the first) and returns the
// joined shape. It needs only headers, so files can be checked before their data is read.
func CheckConcat(shapes [][]int, dtypes []DType) ([]int, error) {
	if len(shapes) == 0 || len(shapes) != len(dtypes) {
		return nil, errors.New("npy: nothing to join")
	}
	out := slices.Clone(shapes[0])
	if len(out) == 0 {
		return nil, errors.New("npy: array 0 is a scalar (0-d); it has no first axis to join along")
	}
	for i := 1; i < len(shapes); i++ {
		if dtypes[i] != dtypes[0] {
			return nil, fmt.Errorf("npy: array %d is %v, array 0 is %v (convert them to one dtype first)", i, dtypes[i], dtypes[0])
		}
		if len(shapes[i]) == 0 || !slices.Equal(shapes[i][1:], shapes[0][1:]) {
			return nil, fmt.Errorf("npy: array %d has shape %v, array 0 %v: only the first dimension may differ", i, shapes[i], shapes[0])
		}
		out[0] += shapes[i][0]
	}
	return out, nil
}

// Concat joins arrays along the first axis (numpy.concatenate(arrays, axis=0)): [2,3] and [4,3]
// give [6,3]. The arrays must pass CheckConcat.
func Concat(arrays ...*Array) (*Array, error) {
	shapes := make([][]int, len(arrays))
	dtypes := make([]DType, len(arrays))
	for i, a := range arrays {
		shapes[i], dtypes[i] = a.Shape, a.DType
	}
	shape, err := CheckConcat(shapes, dtypes)
	if err != nil {
		return nil, err
	}
	var data any
	switch arrays[0].data.(type) {
	case []float32:
		data = join[float32](arrays)
	case []float64:
		data = join[float64](arrays)
	case []int32:
		data = join[int32](arrays)
	case []int64:
		data = join[int64](arrays)
	case []uint8:
		data = join[uint8](arrays)
	default:
		return nil, fmt.Errorf("npy: array has no data of a known type (dtype %v)", arrays[0].DType)
	}
	return &Array{Shape: shape, DType: arrays[0].DType, data: data}, nil
}

func join[T float32 | float64 | int32 | int64 | uint8](arrays []*Array) []T {
	var out []T
	for _, a := range arrays {
		out = append(out, a.data.([]T)...)
	}
	return out
}

// Stack joins arrays of one shape along a new first axis (numpy.stack(arrays, axis=0)): n arrays
// of shape [28,28] give [n,28,28].
func Stack(arrays ...*Array) (*Array, error) {
	batched := make([]*Array, len(arrays))
	for i, a := range arrays {
		if i > 0 && !slices.Equal(a.Shape, arrays[0].Shape) {
			return nil, fmt.Errorf("npy: array %d has shape %v, array 0 %v: stacking needs equal shapes", i, a.Shape, arrays[0].Shape)
		}
		batched[i] = &Array{Shape: append([]int{1}, a.Shape...), DType: a.DType, data: a.data}
	}
	return Concat(batched...)
}

// descr is the NumPy type string Write uses for each type (little-endian).
func (d DType) descr() string {
	switch d {
	case Float32:
		return "<f4"
	case Float64:
		return "<f8"
	case Int32:
		return "<i4"
	case Int64:
		return "<i8"
	case Uint8:
		return "|u1"
	}
	return ""
}

// Write writes a as a little-endian C-order .npy array of its own dtype.
func Write(w io.Writer, a *Array) error {
	n := a.Len()
	if err := writeHeader(w, a.DType.descr(), a.Shape, n); err != nil {
		return err
	}
	le := binary.LittleEndian
	switch d := a.data.(type) {
	case []float32:
		return writeData(w, len(d), 4, func(dst []byte, i int) { le.PutUint32(dst, math.Float32bits(d[i])) })
	case []float64:
		return writeData(w, len(d), 8, func(dst []byte, i int) { le.PutUint64(dst, math.Float64bits(d[i])) })
	case []int32:
		return writeData(w, len(d), 4, func(dst []byte, i int) { le.PutUint32(dst, uint32(d[i])) })
	case []int64:
		return writeData(w, len(d), 8, func(dst []byte, i int) { le.PutUint64(dst, uint64(d[i])) })
	case []uint8:
		_, err := w.Write(d)
		if err != nil {
			return fmt.Errorf("npy: writing data: %w", err)
		}
		return nil
	}
	return fmt.Errorf("npy: array has no data of a known type (dtype %v)", a.DType)
}

// WriteFile writes a to a new .npy file at path (see Write).
func WriteFile(path string, a *Array) error {
	return writeFile(path, func(w io.Writer) error { return Write(w, a) })
}
