package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// Byte-exact output of numpy 1.24.2 (np.save, or np.lib.format.write_array with an explicit
// version), for the array shown above each constant.
const (
	// array([ 1.5 , -2.  ,  0.25], dtype=float32)
	npF32 = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }                                                            \n" +
		"\x00\x00\xc0?\x00\x00\x00\xc0\x00\x00\x80>"
	// array([[            1,            -2],        [            3, 1099511627776]])
	npI64 = "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (2, 2), }                                                          \n" +
		"\x01\x00\x00\x00\x00\x00\x00\x00\xfe\xff\xff\xff\xff\xff\xff\xff\x03\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00"
	// array([ 0.1, -3. ])
	npF64 = "\x93NUMPY\x01\x00v\x00{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }                                                            \n" +
		"\x9a\x99\x99\x99\x99\x99\xb9?\x00\x00\x00\x00\x00\x00\x08\xc0"
	// array([ 7, -1], dtype=int32)
	npI32 = "\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }                                                            \n" +
		"\x07\x00\x00\x00\xff\xff\xff\xff"
	// array([[  0, 255, 128]], dtype=uint8)
	npU8 = "\x93NUMPY\x01\x00v\x00{'descr': '|u1', 'fortran_order': False, 'shape': (1, 3), }                                                          \n" +
		"\x00\xff\x80"
	// array(2.5, dtype=float32)
	npScalar = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (), }                                                              \n" +
		"\x00\x00 @"
	// array([], shape=(0, 3), dtype=float32)
	npEmpty = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }                                                          \n"
	// array([1.], dtype=float32)
	npV2 = "\x93NUMPY\x02\x00t\x00\x00\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }                                                          \n" +
		"\x00\x00\x80?"
	// array([1.], dtype=float32)
	npV3 = "\x93NUMPY\x03\x00t\x00\x00\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }                                                          \n" +
		"\x00\x00\x80?"
	// array([[0., 1., 2.],        [3., 4., 5.]], dtype=float32)
	npFortran = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }                                                           \n" +
		"\x00\x00\x00\x00\x00\x00@@\x00\x00\x80?\x00\x00\x80@\x00\x00\x00@\x00\x00\xa0@"
	// array([1., 2.], dtype=float32)
	npBigEndian = "\x93NUMPY\x01\x00v\x00{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }                                                            \n" +
		"?\x80\x00\x00@\x00\x00\x00"
	// array([ True])
	npBool = "\x93NUMPY\x01\x00v\x00{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }                                                            \n" +
		"\x01"
	// array([[[[0., 1.],          [2., 3.]]]], dtype=float32)
	npImage = "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 2, 2), }                                                    \n" +
		"\x00\x00\x00\x00\x00\x00\x80?\x00\x00\x00@\x00\x00@@"
	// array(-5)
	npI64Scalar = "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': False, 'shape': (), }                                                              \n" +
		"\xfb\xff\xff\xff\xff\xff\xff\xff"
)

func TestReadNumPyOutput(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		shape []int
		dtype DType
		f32   []float32
		i64   []int64 // nil: Int64 must fail (float arrays)
	}{
		{"float32", npF32, []int{3}, Float32, []float32{1.5, -2, 0.25}, nil},
		{"int64", npI64, []int{2, 2}, Int64, []float32{1, -2, 3, 1 << 40}, []int64{1, -2, 3, 1 << 40}},
		{"float64", npF64, []int{2}, Float64, []float32{0.1, -3}, nil},
		{"int32", npI32, []int{2}, Int32, []float32{7, -1}, []int64{7, -1}},
		{"uint8", npU8, []int{1, 3}, Uint8, []float32{0, 255, 128}, []int64{0, 255, 128}},
		{"scalar", npScalar, []int{}, Float32, []float32{2.5}, nil},
		{"int64 scalar", npI64Scalar, []int{}, Int64, []float32{-5}, []int64{-5}},
		{"empty", npEmpty, []int{0, 3}, Float32, []float32{}, nil},
		{"version 2.0", npV2, []int{1}, Float32, []float32{1}, nil},
		{"version 3.0", npV3, []int{1}, Float32, []float32{1}, nil},
		{"big endian", npBigEndian, []int{2}, Float32, []float32{1, 2}, nil},
		{"image", npImage, []int{1, 1, 2, 2}, Float32, []float32{0, 1, 2, 3}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := strings.NewReader(tc.in)
			a, err := Read(r)
			if err != nil {
				t.Fatal(err)
			}
			if r.Len() != 0 {
				t.Errorf("Read left %d bytes unread", r.Len())
			}
			if !reflect.DeepEqual(a.Shape, tc.shape) || a.DType != tc.dtype {
				t.Errorf("got shape %v dtype %v, want %v %v", a.Shape, a.DType, tc.shape, tc.dtype)
			}
			if a.Len() != len(tc.f32) {
				t.Errorf("Len() = %d, want %d", a.Len(), len(tc.f32))
			}
			f, err := a.Float32()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(f, tc.f32) {
				t.Errorf("Float32() = %v, want %v", f, tc.f32)
			}
			i, err := a.Int64()
			if tc.i64 == nil {
				if err == nil {
					t.Errorf("Int64() on %v succeeded, want an error", a.DType)
				}
			} else if err != nil || !reflect.DeepEqual(i, tc.i64) {
				t.Errorf("Int64() = %v, %v; want %v", i, err, tc.i64)
			}
		})
	}
}

func TestWriteMatchesNumPy(t *testing.T) {
	tests := []struct {
		name  string
		write func(io.Writer) error
		want  string
	}{
		{"float32", func(w io.Writer) error { return WriteFloat32(w, []int{3}, []float32{1.5, -2, 0.25}) }, npF32},
		{"int64", func(w io.Writer) error { return WriteInt64(w, []int{2, 2}, []int64{1, -2, 3, 1 << 40}) }, npI64},
		{"scalar", func(w io.Writer) error { return WriteFloat32(w, nil, []float32{2.5}) }, npScalar},
		{"int64 scalar", func(w io.Writer) error { return WriteInt64(w, []int{}, []int64{-5}) }, npI64Scalar},
		{"empty", func(w io.Writer) error { return WriteFloat32(w, []int{0, 3}, nil) }, npEmpty},
		{"image", func(w io.Writer) error { return WriteFloat32(w, []int{1, 1, 2, 2}, []float32{0, 1, 2, 3}) }, npImage},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := tc.write(&buf); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tc.want {
				t.Errorf("bytes differ from numpy's:\n got %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestHeaderAlignment(t *testing.T) {
	// Every header length from tiny to long must leave the data 64-byte aligned, including the
	// cases where the dictionary alone would end exactly on a boundary, and the header must
	// parse back to the same shape.
	for dims := 0; dims <= 12; dims++ {
		for _, first := range []int{0, 1, 9, 12345, 1 << 40, math.MaxInt / 8} {
			shape := make([]int, dims)
			for i := range shape {
				shape[i] = 1
			}
			if dims > 0 {
				shape[0] = first
			}
			n := 1
			for _, d := range shape {
				n *= d
			}
			var buf bytes.Buffer
			if err := writeHeader(&buf, "<f4", shape, n); err != nil {
				t.Fatal(err)
			}
			if buf.Len()%64 != 0 {
				t.Errorf("shape %v: data starts at %d, not a multiple of 64", shape, buf.Len())
			}
			hdr := buf.Bytes()[10:]
			if hdr[len(hdr)-1] != '\n' {
				t.Errorf("shape %v: header does not end in a newline", shape)
			}
			if hlen := int(binary.LittleEndian.Uint16(buf.Bytes()[8:])); hlen != len(hdr) {
				t.Errorf("shape %v: header length field %d, actual %d", shape, hlen, len(hdr))
			}
			h, err := parseHeader(hdr, false)
			if err != nil || !reflect.DeepEqual(h.shape, shape) || h.descr != "<f4" || h.fortran {
				t.Errorf("shape %v: parsed back %+v, %v", shape, h, err)
			}
		}
	}
}

func TestRoundTrip(t *testing.T) {
	f := []float32{0, float32(math.Copysign(0, -1)), 1, -1, math.MaxFloat32, math.SmallestNonzeroFloat32,
		float32(math.Inf(1)), float32(math.Inf(-1)), math.Float32frombits(0x7fc00001), 3.14159}
	var buf bytes.Buffer
	if err := WriteFloat32(&buf, []int{2, 5}, f); err != nil {
		t.Fatal(err)
	}
	i := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, 42}
	if err := WriteInt64(&buf, []int{3, 1, 2}, i); err != nil {
		t.Fatal(err)
	}
	// Two arrays back to back: Read must consume exactly one each time.
	a, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	gotF, _ := a.Float32()
	for k := range f {
		if math.Float32bits(gotF[k]) != math.Float32bits(f[k]) {
			t.Errorf("float32[%d]: got bits %#x, want %#x", k, math.Float32bits(gotF[k]), math.Float32bits(f[k]))
		}
	}
	b, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	gotI, _ := b.Int64()
	if !reflect.DeepEqual(b.Shape, []int{3, 1, 2}) || !reflect.DeepEqual(gotI, i) {
		t.Errorf("int64: got %v %v, want [3 1 2] %v", b.Shape, gotI, i)
	}
	if buf.Len() != 0 {
		t.Errorf("%d bytes left over", buf.Len())
	}
}

func TestRoundTripLarge(t *testing.T) {
	// Larger than one read/write chunk, to exercise the chunked paths.
	n := readChunk/4*2 + 3
	f := make([]float32, n)
	for k := range f {
		f[k] = float32(k) * 0.5
	}
	var buf bytes.Buffer
	if err := WriteFloat32(&buf, []int{n}, f); err != nil {
		t.Fatal(err)
	}
	a, err := Read(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := a.Float32()
	if !reflect.DeepEqual(got, f) {
		t.Error("large array does not round-trip")
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.npy")
	if err := WriteFileFloat32(p, []int{1, 1, 2, 2}, []float32{0, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if string(raw) != npImage {
		t.Errorf("file bytes differ from numpy's")
	}
	a, err := ReadFile(p)
	if err != nil || !reflect.DeepEqual(a.Shape, []int{1, 1, 2, 2}) {
		t.Fatalf("ReadFile: %v, %v", a, err)
	}
	q := filepath.Join(dir, "y.npy")
	if err := WriteFileInt64(q, []int{2}, []int64{7, 8}); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(q); err != nil || b.DType != Int64 {
		t.Fatalf("ReadFile int64: %v, %v", b, err)
	}

	// Trailing garbage in a file is an error.
	if err := os.WriteFile(p, append(raw, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(p); err == nil || !strings.Contains(err.Error(), "unexpected bytes after") {
		t.Errorf("trailing byte: got %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "missing.npy")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: got %v, want ErrNotExist", err)
	}
	// A failed write leaves no file behind.
	bad := filepath.Join(dir, "bad.npy")
	if err := WriteFileFloat32(bad, []int{2}, []float32{1}); err == nil {
		t.Error("shape/data mismatch accepted")
	}
	if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("failed write left %s behind", bad)
	}
}

func TestWriteErrors(t *testing.T) {
	tests := []struct {
		name  string
		shape []int
		n     int
		want  string
	}{
		{"mismatch", []int{2, 3}, 5, "holds 6 elements but 5"},
		{"negative", []int{-1, 3}, 0, "negative dimension"},
		{"overflow", []int{1 << 40, 1 << 40}, 0, "too large"},
		{"too many dims", make([]int, maxDims+1), 0, "dimensions exceed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := WriteFloat32(io.Discard, tc.shape, make([]float32, tc.n))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want error containing %q", err, tc.want)
			}
			err = WriteInt64(io.Discard, tc.shape, make([]int64, tc.n))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("int64: got %v, want error containing %q", err, tc.want)
			}
		})
	}
}

type failWriter struct{ after int }

func (w *failWriter) Write(p []byte) (int, error) {
	if w.after <= 0 {
		return 0, errors.New("disk full")
	}
	w.after--
	return len(p), nil
}

func TestWriteIOError(t *testing.T) {
	if err := WriteFloat32(&failWriter{0}, []int{1}, []float32{1}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("header write error: got %v", err)
	}
	if err := WriteInt64(&failWriter{1}, []int{1}, []int64{1}); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("data write error: got %v", err)
	}
}

// v1 builds a version 1.0 file around a header dictionary (no alignment padding needed).
func v1(dict string, data string) string {
	var b [2]byte
	binary.LittleEndian.PutUint16(b[:], uint16(len(dict)))
	return magic + "\x01\x00" + string(b[:]) + dict + data
}

func TestReadErrors(t *testing.T) {
	f32 := "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"
	tests := []struct {
		name, in, want string
	}{
		{"empty input", "", "reading magic: unexpected EOF"},
		{"short magic", "\x93NUM", "unexpected EOF"},
		{"bad magic", "PK\x03\x04zipfile", "bad magic"},
		{"version 4", magic + "\x04\x00\x10\x00", "unsupported format version 4.0"},
		{"version 1.1", magic + "\x01\x01\x10\x00", "unsupported format version 1.1"},
		{"short header length", magic + "\x02\x00\x10", "header length"},
		{"huge header length", magic + "\x02\x00\xff\xff\xff\x7f", "exceeds the limit"},
		{"truncated header", magic + "\x01\x00\x40\x00{'descr'", "reading 64-byte header"},
		{"truncated data", v1(f32, "\x00\x00\x80?"), "reading 2 float32 elements"},
		{"no data", v1(f32, ""), "got 0 of 8 bytes"},
		{"fortran order", npFortran, "fortran_order arrays are not supported"},
		{"bool", npBool, `unsupported dtype "|b1"`},
		{"float16", v1("{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", "\x00\x00\x00\x00"), `unsupported dtype "<f2"`},
		{"native order", v1("{'descr': '=f4', 'fortran_order': False, 'shape': (2,), }", ""), "unsupported byte order"},
		{"pipe multibyte", v1("{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", ""), "unsupported byte order"},
		{"short descr", v1("{'descr': 'f', 'fortran_order': False, 'shape': (2,), }", ""), `unsupported dtype "f"`},
		{"structured", v1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", ""), "structured dtypes are not supported"},
		{"missing shape", v1("{'descr': '<f4', 'fortran_order': False}", ""), `missing key "shape"`},
		{"missing descr", v1("{'fortran_order': False, 'shape': ()}", ""), `missing key "descr"`},
		{"extra key", v1("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}", ""), `unexpected key "x"`},
		{"duplicate key", v1("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", ""), `duplicate key "descr"`},
		{"not a dict", v1("['descr']", ""), `expected '{'`},
		{"unclosed dict", v1("{'descr': '<f4', 'fortran_order': False, 'shape': ()", ""), "end of header"},
		{"missing colon", v1("{'descr' '<f4'}", ""), `expected ':'`},
		{"missing comma", v1("{'descr': '<f4' 'fortran_order': False, 'shape': ()}", ""), `expected '}'`},
		{"junk after dict", v1("{'descr': '<f4', 'fortran_order': False, 'shape': ()} x", ""), "after the dictionary"},
		{"unquoted key", v1("{descr: '<f4'}", ""), "expected a string"},
		{"unterminated string", v1("{'descr: '<f4'}", ""), "expected ':'"},
		{"unterminated string at end", v1("{'descr", ""), "unterminated string"},
		{"escape", v1(`{'de\'scr': 1}`, ""), "escapes"},
		{"bad bool", v1("{'descr': '<f4', 'fortran_order': false, 'shape': ()}", ""), "expected True or False"},
		{"shape not tuple", v1("{'descr': '<f4', 'fortran_order': False, 'shape': 3}", ""), "expected a tuple"},
		{"one-tuple without comma", v1("{'descr': '<f4', 'fortran_order': False, 'shape': (3)}", ""), "without a trailing comma"},
		{"negative dim", v1("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", ""), "negative dimension"},
		{"float dim", v1("{'descr': '<f4', 'fortran_order': False, 'shape': (1.5,)}", ""), `expected ')'`},
		{"dim overflow", v1("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", ""), "overflows int"},
		{"shape too large", v1("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", ""), "too large"},
		{"too many dims", v1("{'descr': '<f4', 'fortran_order': False, 'shape': ("+strings.Repeat("1,", maxDims+1)+")}", ""), "more than 64 dimensions"},
		{"huge claimed data", v1("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000,)}", "\x00\x00"), "got 2 of 8000000000 bytes"},
		{"version 3 invalid utf8", magic + "\x03\x00\x04\x00\x00\x00{\xff}\n", "not valid UTF-8"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Read(strings.NewReader(tc.in))
			if err == nil {
				t.Fatalf("got %v, want error containing %q", a, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want error containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "npy: ") {
				t.Errorf("error %q lacks the npy: prefix", err)
			}
		})
	}
}

func TestHeaderVariants(t *testing.T) {
	// Forms other writers (old numpy, Python 2, hand-written files) produce.
	tests := []struct {
		dict  string
		shape []int
	}{
		{`{"descr": "<f4", "fortran_order": False, "shape": (2,)}`, []int{2}},
		{"{'shape': (2L,), 'fortran_order': False, 'descr': '<f4'}", []int{2}},
		{"{'descr':'<f4','fortran_order':False,'shape':[1, 2]}", []int{1, 2}},
		{"{ 'descr' : '<f4' , 'fortran_order' : False , 'shape' : ( 2 , ) , }\t\r\n", []int{2}},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2,), }", []int{1, 2}},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': [2]}", []int{2}},
	}
	for _, tc := range tests {
		a, err := Read(strings.NewReader(v1(tc.dict, "\x00\x00\x80?\x00\x00\x00@")))
		if err != nil {
			t.Errorf("%s: %v", tc.dict, err)
			continue
		}
		if !reflect.DeepEqual(a.Shape, tc.shape) {
			t.Errorf("%s: shape %v, want %v", tc.dict, a.Shape, tc.shape)
		}
	}
}

func TestDType(t *testing.T) {
	for _, d := range []DType{Float32, Float64, Int32, Int64, Uint8} {
		if d.Size() == 0 || strings.HasPrefix(d.String(), "DType(") {
			t.Errorf("%d: size %d name %q", int(d), d.Size(), d)
		}
	}
	if DType(99).String() != "DType(99)" || DType(99).Size() != 0 {
		t.Error("unknown DType")
	}
	var a Array
	if _, err := a.Float32(); err == nil {
		t.Error("Float32 on a zero Array succeeded")
	}
	if _, err := a.Int64(); err == nil {
		t.Error("Int64 on a zero Array succeeded")
	}
}
