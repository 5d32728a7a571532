// Package npy reads and writes NumPy .npy array files (format versions 1.0, 2.0 and 3.0).
//
// Reading supports C-order arrays of float32, float64, int32, int64 and uint8 in either byte
// order; Fortran-order arrays, structured dtypes and other element types are rejected with a
// clear error. Writing produces little-endian C-order arrays of any of those types with the same
// header layout NumPy itself writes (format version 1.0). StatFile and ReadFileRows check a
// file's header and size before reading data; Reshape, Slice, Concat and Stack edit arrays
// without changing their element type.
//
// Specification: https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html
package npy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/readfile"
)

// DType is the element type of an array as stored in the file.
type DType int

// Supported element types.
const (
	Float32 DType = iota + 1
	Float64
	Int32
	Int64
	Uint8
)

// String returns the NumPy name of the type ("float32", ...).
func (d DType) String() string {
	switch d {
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	case Int32:
		return "int32"
	case Int64:
		return "int64"
	case Uint8:
		return "uint8"
	}
	return fmt.Sprintf("DType(%d)", int(d))
}

// Size returns the size of one element in bytes.
func (d DType) Size() int {
	switch d {
	case Float32, Int32:
		return 4
	case Float64, Int64:
		return 8
	case Uint8:
		return 1
	}
	return 0
}

// Array is a decoded .npy array in C (row-major) order.
type Array struct {
	// Shape is the array's shape; empty for a 0-d (scalar) array.
	Shape []int
	// DType is the element type stored in the file.
	DType DType

	// data is exactly one of []float32, []float64, []int32, []int64, []uint8, matching DType.
	data any
}

// Len returns the number of elements (the product of Shape; 1 for a scalar).
func (a *Array) Len() int {
	n := 1
	for _, d := range a.Shape {
		n *= d
	}
	return n
}

// Float32 returns the elements as float32. A float32 array's own slice is returned (not a
// copy); other types are converted into a new slice: float64 is rounded to nearest, integers
// are converted exactly up to 2^24 in magnitude and rounded to nearest beyond that.
func (a *Array) Float32() ([]float32, error) {
	switch d := a.data.(type) {
	case []float32:
		return d, nil
	case []float64:
		return convert[float32](d), nil
	case []int32:
		return convert[float32](d), nil
	case []int64:
		return convert[float32](d), nil
	case []uint8:
		return convert[float32](d), nil
	}
	return nil, fmt.Errorf("npy: array has no data of a known type (dtype %v)", a.DType)
}

// Int64 returns the elements as int64. An int64 array's own slice is returned (not a copy);
// int32 and uint8 arrays are widened into a new slice. Floating-point arrays give an error.
func (a *Array) Int64() ([]int64, error) {
	switch d := a.data.(type) {
	case []int64:
		return d, nil
	case []int32:
		return convert[int64](d), nil
	case []uint8:
		return convert[int64](d), nil
	case []float32, []float64:
		return nil, fmt.Errorf("npy: %v array cannot be read as int64", a.DType)
	}
	return nil, fmt.Errorf("npy: array has no data of a known type (dtype %v)", a.DType)
}

func convert[D float32 | int64, S float32 | float64 | int32 | int64 | uint8](src []S) []D {
	dst := make([]D, len(src))
	for i, v := range src {
		dst[i] = D(v)
	}
	return dst
}

const (
	magic = "\x93NUMPY"
	// maxHeaderLen bounds the header dictionary we accept; real headers are ~100 bytes.
	maxHeaderLen = 1 << 20
	// maxDims bounds the number of dimensions (NumPy's own limit is 32 or 64).
	maxDims = 64
	// align is the total header alignment NumPy uses when writing.
	align = 64
	// growthDigits is the spare room NumPy reserves after the header dictionary so that the
	// first dimension can be rewritten in place (numpy.lib.format.GROWTH_AXIS_MAX_DIGITS).
	growthDigits = 21
	// readChunk bounds up-front allocation when reading data, so that a header claiming a huge
	// array cannot make us allocate more than the input actually holds.
	readChunk = 1 << 20
)

// ReadFile reads one array from a .npy file. Bytes after the array are an error. Only a regular
// file is read (a named pipe is refused at once; see internal/readfile).
func ReadFile(path string) (*Array, error) {
	return ReadFileChecked(context.Background(), path, nil)
}

// ReadFileChecked is ReadFile that stops when ctx is done and, when check is not nil, calls it
// with the array's shape as the header announces it, before any data is read: an error from
// check (say, a shape the caller cannot use) is returned, naming the path, without reading the
// data. So is a header that announces more data than the file holds.
func ReadFileChecked(ctx context.Context, path string, check func(shape []int) error) (*Array, error) {
	f, err := readfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	defer f.Close()
	br := bufio.NewReader(readfile.Reader(ctx, f))
	h, err := readHeader(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if check != nil {
		if err := check(h.shape); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	if st, err := f.Stat(); err == nil && st.Size()-h.offset < int64(h.bytes()) {
		return nil, fmt.Errorf("%s: npy: the header announces %d %v elements of shape %v (%d bytes), the file holds %d bytes of data",
			path, h.n, h.dt, h.shape, h.bytes(), max(st.Size()-h.offset, 0))
	}
	a, err := h.readData(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if n, _ := io.Copy(io.Discard, br); n > 0 {
		return nil, fmt.Errorf("%s: npy: %d unexpected bytes after the array data", path, n)
	}
	return a, nil
}

// Read reads one array from r. It consumes exactly the header and the array data, so several
// arrays written back to back can be read in turn.
func Read(r io.Reader) (*Array, error) {
	h, err := readHeader(r)
	if err != nil {
		return nil, err
	}
	return h.readData(r)
}

// arrayHeader is what a .npy header says about the data that follows it.
type arrayHeader struct {
	shape  []int
	dt     DType
	order  binary.ByteOrder
	n      int   // elements
	offset int64 // bytes before the data
}

func (h *arrayHeader) bytes() int { return h.n * h.dt.Size() }

// readData reads the array data that follows the header.
func (h *arrayHeader) readData(r io.Reader) (*Array, error) {
	raw, err := readN(r, h.bytes())
	if err != nil {
		return nil, fmt.Errorf("npy: reading %d %v elements of shape %v: %w", h.n, h.dt, h.shape, err)
	}
	return &Array{Shape: h.shape, DType: h.dt, data: decode(raw, h.dt, h.order, h.n)}, nil
}

// readHeader reads the magic, version and header of a .npy array, leaving r at its data.
func readHeader(r io.Reader) (*arrayHeader, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fmt.Errorf("npy: reading magic: %w", noEOF(err))
	}
	if string(pre[:6]) != magic {
		return nil, fmt.Errorf("npy: bad magic %q, not a .npy file", pre[:6])
	}
	major, minor := pre[6], pre[7]
	var hlen int
	switch major {
	case 1:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("npy: reading header length: %w", noEOF(err))
		}
		hlen = int(binary.LittleEndian.Uint16(b[:]))
	case 2, 3:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("npy: reading header length: %w", noEOF(err))
		}
		n := binary.LittleEndian.Uint32(b[:])
		if n > maxHeaderLen {
			return nil, fmt.Errorf("npy: header length %d exceeds the limit of %d bytes", n, maxHeaderLen)
		}
		hlen = int(n)
	default:
		return nil, fmt.Errorf("npy: unsupported format version %d.%d", major, minor)
	}
	if minor != 0 {
		return nil, fmt.Errorf("npy: unsupported format version %d.%d", major, minor)
	}
	hdr := make([]byte, hlen)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("npy: reading %d-byte header: %w", hlen, noEOF(err))
	}
	h, err := parseHeader(hdr, major == 3)
	if err != nil {
		return nil, fmt.Errorf("npy: header %q: %w", truncate(hdr, 200), err)
	}
	dt, order, err := parseDescr(h.descr)
	if err != nil {
		return nil, fmt.Errorf("npy: %w", err)
	}
	if h.fortran {
		return nil, errors.New("npy: fortran_order arrays are not supported; save a C-contiguous array (numpy.ascontiguousarray)")
	}
	n := 1
	for _, d := range h.shape {
		if d != 0 && n > math.MaxInt/dt.Size()/d {
			return nil, fmt.Errorf("npy: shape %v is too large", h.shape)
		}
		n *= d
	}
	return &arrayHeader{shape: h.shape, dt: dt, order: order, n: n, offset: int64(len(pre) + lenBytes(major) + hlen)}, nil
}

// lenBytes is the size of the header length field of format version major.
func lenBytes(major byte) int {
	if major == 1 {
		return 2
	}
	return 4
}

// readN reads exactly n bytes. Large reads grow the buffer as data arrives instead of
// allocating what the header claims up front.
func readN(r io.Reader, n int) ([]byte, error) {
	if n <= readChunk {
		buf := make([]byte, n)
		if m, err := io.ReadFull(r, buf); err != nil {
			return nil, fmt.Errorf("got %d of %d bytes: %w", m, n, noEOF(err))
		}
		return buf, nil
	}
	var b bytes.Buffer
	m, err := io.CopyN(&b, r, int64(n))
	if err != nil {
		return nil, fmt.Errorf("got %d of %d bytes: %w", m, n, noEOF(err))
	}
	return b.Bytes(), nil
}

func decode(raw []byte, dt DType, order binary.ByteOrder, n int) any {
	switch dt {
	case Float32:
		out := make([]float32, n)
		for i := range out {
			out[i] = math.Float32frombits(order.Uint32(raw[4*i:]))
		}
		return out
	case Float64:
		out := make([]float64, n)
		for i := range out {
			out[i] = math.Float64frombits(order.Uint64(raw[8*i:]))
		}
		return out
	case Int32:
		out := make([]int32, n)
		for i := range out {
			out[i] = int32(order.Uint32(raw[4*i:]))
		}
		return out
	case Int64:
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(order.Uint64(raw[8*i:]))
		}
		return out
	default: // Uint8
		return raw[:n:n]
	}
}

func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// parseDescr maps a NumPy type string such as "<f4" to a DType and byte order.
func parseDescr(s string) (DType, binary.ByteOrder, error) {
	if len(s) < 2 {
		return 0, nil, fmt.Errorf("unsupported dtype %q", s)
	}
	var dt DType
	switch s[1:] {
	case "f4":
		dt = Float32
	case "f8":
		dt = Float64
	case "i4":
		dt = Int32
	case "i8":
		dt = Int64
	case "u1":
		dt = Uint8
	default:
		return 0, nil, fmt.Errorf("unsupported dtype %q (supported: float32, float64, int32, int64, uint8)", s)
	}
	switch s[0] {
	case '<':
		return dt, binary.LittleEndian, nil
	case '>':
		return dt, binary.BigEndian, nil
	case '|':
		if dt.Size() == 1 {
			return dt, binary.LittleEndian, nil
		}
	}
	return 0, nil, fmt.Errorf("unsupported byte order in dtype %q", s)
}

// WriteFloat32 writes a little-endian C-order float32 array of the given shape to w.
func WriteFloat32(w io.Writer, shape []int, data []float32) error {
	if err := writeHeader(w, "<f4", shape, len(data)); err != nil {
		return err
	}
	return writeData(w, len(data), 4, func(dst []byte, i int) {
		binary.LittleEndian.PutUint32(dst, math.Float32bits(data[i]))
	})
}

// WriteInt64 writes a little-endian C-order int64 array of the given shape to w.
func WriteInt64(w io.Writer, shape []int, data []int64) error {
	if err := writeHeader(w, "<i8", shape, len(data)); err != nil {
		return err
	}
	return writeData(w, len(data), 8, func(dst []byte, i int) {
		binary.LittleEndian.PutUint64(dst, uint64(data[i]))
	})
}

// WriteFileFloat32 writes a float32 array to a new .npy file at path.
func WriteFileFloat32(path string, shape []int, data []float32) error {
	return writeFile(path, func(w io.Writer) error { return WriteFloat32(w, shape, data) })
}

// WriteFileInt64 writes an int64 array to a new .npy file at path.
func WriteFileInt64(path string, shape []int, data []int64) error {
	return writeFile(path, func(w io.Writer) error { return WriteInt64(w, shape, data) })
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("npy: %w", err)
	}
	bw := bufio.NewWriter(f)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("npy: %w", cerr)
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// writeData encodes n elements of the given size in bounded chunks.
func writeData(w io.Writer, n, size int, put func(dst []byte, i int)) error {
	per := max(1, min(n, readChunk/size))
	buf := make([]byte, per*size)
	for i := 0; i < n; i += per {
		m := min(per, n-i)
		for j := range m {
			put(buf[j*size:], i+j)
		}
		if _, err := w.Write(buf[:m*size]); err != nil {
			return fmt.Errorf("npy: writing data: %w", err)
		}
	}
	return nil
}

// writeHeader writes the magic, version, header length and the header dictionary, laid out
// exactly as numpy.save does (NumPy 1.24+): sorted keys, spare room for growing the first
// dimension, space padding and a newline so that the data starts at a multiple of 64 bytes.
func writeHeader(w io.Writer, descr string, shape []int, n int) error {
	if len(shape) > maxDims {
		return fmt.Errorf("npy: %d dimensions exceed the limit of %d", len(shape), maxDims)
	}
	want := 1
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("npy: negative dimension in shape %v", shape)
		}
		if d != 0 && want > math.MaxInt/8/d {
			return fmt.Errorf("npy: shape %v is too large", shape)
		}
		want *= d
	}
	if want != n {
		return fmt.Errorf("npy: shape %v holds %d elements but %d were given", shape, want, n)
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }", descr, shapeRepr(shape))
	if len(shape) > 0 {
		if pad := growthDigits - len(fmt.Sprint(shape[0])); pad > 0 {
			dict += strings.Repeat(" ", pad)
		}
	}
	// With at most maxDims dimensions the dictionary is far below the 64 KiB that version 1.0's
	// 2-byte header length allows, so (like NumPy) we always write version 1.0.
	hlen := paddedLen(len(dict), 2)
	pad := hlen - len(dict) - 1

	out := make([]byte, 0, len(magic)+4+hlen)
	out = append(out, magic...)
	out = append(out, 1, 0)
	out = binary.LittleEndian.AppendUint16(out, uint16(hlen))
	out = append(out, dict...)
	out = append(out, strings.Repeat(" ", pad)...)
	out = append(out, '\n')
	if _, err := w.Write(out); err != nil {
		return fmt.Errorf("npy: writing header: %w", err)
	}
	return nil
}

func shapeRepr(shape []int) string {
	switch len(shape) {
	case 0:
		return "()"
	case 1:
		return fmt.Sprintf("(%d,)", shape[0])
	}
	s := "("
	for i, d := range shape {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(d)
	}
	return s + ")"
}

// paddedLen is the header length (dictionary, padding and newline) that makes the data start
// at a multiple of align bytes. Like NumPy, it always adds at least one space.
func paddedLen(dictLen, lenSize int) int {
	used := len(magic) + 2 + lenSize + dictLen + 1
	return dictLen + 1 + align - used%align
}
