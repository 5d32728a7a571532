package npy

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestWriteEveryDType writes each element type with Write and reads it back with ReadFile,
// StatFile and ReadFileRows.
func TestWriteEveryDType(t *testing.T) {
	dir := t.TempDir()
	for _, data := range []any{
		[]float32{0, 1.5, -2, 3e-7, 4, 5},
		[]float64{0, 1.5, -2, 3e-300, 4, 5},
		[]int32{0, -1, 2, 1 << 30, 4, 5},
		[]int64{0, -1, 2, 1 << 60, 4, 5},
		[]uint8{0, 1, 2, 255, 4, 5},
	} {
		a, err := NewArray([]int{3, 2}, data)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, a.DType.String()+".npy")
		if err := WriteFile(path, a); err != nil {
			t.Fatal(err)
		}
		b, err := ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if b.DType != a.DType || !reflect.DeepEqual(b.Shape, []int{3, 2}) || !reflect.DeepEqual(b.Data(), data) {
			t.Errorf("%v: read back %v %v %v", a.DType, b.DType, b.Shape, b.Data())
		}
		info, err := StatFile(path)
		if err != nil || info.DType != a.DType || !reflect.DeepEqual(info.Shape, []int{3, 2}) || info.DataOffset%64 != 0 || info.Len() != 6 {
			t.Errorf("%v: StatFile %+v %v", a.DType, info, err)
		}
		rows, err := ReadFileRows(path, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := a.Slice(1, 2)
		if !reflect.DeepEqual(rows, want) || !reflect.DeepEqual(rows.Shape, []int{2, 2}) {
			t.Errorf("%v: rows %+v, want %+v", a.DType, rows, want)
		}
	}
	// Write produces the same bytes as the typed writers.
	x := []float32{1, 2, 3}
	var b1, b2 bytes.Buffer
	WriteFloat32(&b1, []int{1, 3}, x)
	a, _ := NewArray([]int{1, 3}, x)
	Write(&b2, a)
	if !bytes.Equal(b1.Bytes(), b2.Bytes()) {
		t.Error("Write and WriteFloat32 differ")
	}
}

// TestReadFileRowsBigEndian reads rows of a big-endian file.
func TestReadFileRowsBigEndian(t *testing.T) {
	path := filepath.Join(t.TempDir(), "be.npy")
	data := "\x00\x00\x00\x01\x00\x00\x00\x02\x00\x00\x00\x03"
	os.WriteFile(path, []byte(v1("{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }\n", data)), 0o644)
	a, err := ReadFileRows(path, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := a.Int64(); !reflect.DeepEqual(got, []int64{2, 3}) || a.DType != Int32 {
		t.Errorf("rows %v %v", a.DType, got)
	}
}

func TestStatFileErrors(t *testing.T) {
	dir := t.TempDir()
	f32 := "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n"
	for _, tc := range []struct{ name, in, want string }{
		{"truncated", v1(f32, "\x00\x00\x00\x00"), "truncated: shape [2] of float32 needs 8 bytes after the header, the file has 4"},
		{"extra", v1(f32, strings.Repeat("\x00", 9)), "1 unexpected bytes"},
		{"magic", "not an npy file at all", "bad magic"},
		{"version", magic + "\x04\x00\x00\x00", "unsupported format version 4.0"},
		{"fortran", v1("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }\n", "\x00\x00\x00\x00"), "fortran_order"},
		{"dtype", v1("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n", "12345678"), "unsupported dtype"},
		{"short header", magic + "\x01\x00\x40\x00{'descr'", "reading 64-byte header"},
	} {
		path := filepath.Join(dir, tc.name+".npy")
		os.WriteFile(path, []byte(tc.in), 0o644)
		if _, err := StatFile(path); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want %q and the path", tc.name, err, tc.want)
		}
		if _, err := ReadFileRows(path, 0, 1); err == nil {
			t.Errorf("%s: ReadFileRows accepted it", tc.name)
		}
	}
	if _, err := StatFile(filepath.Join(dir, "none.npy")); err == nil {
		t.Error("missing file accepted")
	}
	scalar := filepath.Join(dir, "scalar.npy")
	s, _ := NewArray(nil, []float32{1})
	WriteFile(scalar, s)
	if _, err := ReadFileRows(scalar, 0, 1); err == nil || !strings.Contains(err.Error(), "no rows") {
		t.Errorf("scalar rows: %v", err)
	}
	two := filepath.Join(dir, "two.npy")
	WriteFileFloat32(two, []int{2, 1}, []float32{1, 2})
	for _, r := range [][2]int{{-1, 1}, {0, 3}, {3, 0}, {1, -1}} {
		if _, err := ReadFileRows(two, r[0], r[1]); err == nil || !strings.Contains(err.Error(), "outside the 2 rows") {
			t.Errorf("rows %v: %v", r, err)
		}
	}
	if a, err := ReadFileRows(two, 2, 0); err != nil || !reflect.DeepEqual(a.Shape, []int{0, 1}) {
		t.Errorf("empty slice at the end: %v %v", a, err)
	}
}

func TestReshapeSlice(t *testing.T) {
	a, err := NewArray([]int{2, 3, 4}, make([]int32, 24))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want []int }{
		{[]int{24}, []int{24}},
		{[]int{-1, 4}, []int{6, 4}},
		{[]int{1, 2, -1}, []int{1, 2, 12}},
		{[]int{4, 3, 2, 1}, []int{4, 3, 2, 1}},
	} {
		b, err := a.Reshape(tc.in)
		if err != nil || !reflect.DeepEqual(b.Shape, tc.want) || b.DType != Int32 {
			t.Errorf("reshape %v: %v %v", tc.in, b, err)
		}
	}
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{[]int{5, 5}, "which holds 25"},
		{[]int{-1, 5}, "cannot reshape 24 elements"},
		{[]int{-1, -1}, "more than one -1"},
		{[]int{-2, 12}, "negative dimension"},
		{[]int{0, -1}, "cannot reshape"},
	} {
		if _, err := a.Reshape(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("reshape %v: %v, want %q", tc.in, err, tc.want)
		}
	}
	b, err := a.Slice(1, 1)
	if err != nil || !reflect.DeepEqual(b.Shape, []int{1, 3, 4}) || len(b.Data().([]int32)) != 12 {
		t.Errorf("slice: %v %v", b, err)
	}
	if _, err := a.Slice(1, 2); err == nil {
		t.Error("slice past the end accepted")
	}
	if _, err := NewArray([]int{2}, []float32{1}); err == nil || !strings.Contains(err.Error(), "holds 2 elements but 1") {
		t.Errorf("NewArray count: %v", err)
	}
	if _, err := NewArray([]int{1}, []int16{1}); err == nil || !strings.Contains(err.Error(), "unsupported element slice") {
		t.Errorf("NewArray type: %v", err)
	}
}

func TestConcatStack(t *testing.T) {
	a, _ := NewArray([]int{1, 2}, []uint8{1, 2})
	b, _ := NewArray([]int{2, 2}, []uint8{3, 4, 5, 6})
	c, err := Concat(a, b)
	if err != nil || !reflect.DeepEqual(c.Shape, []int{3, 2}) || !reflect.DeepEqual(c.Data(), []uint8{1, 2, 3, 4, 5, 6}) {
		t.Errorf("concat: %+v %v", c, err)
	}
	s, err := Stack(a, a, a)
	if err != nil || !reflect.DeepEqual(s.Shape, []int{3, 1, 2}) || !reflect.DeepEqual(s.Data(), []uint8{1, 2, 1, 2, 1, 2}) {
		t.Errorf("stack: %+v %v", s, err)
	}
	if _, err := Stack(a, b); err == nil || !strings.Contains(err.Error(), "stacking needs equal shapes") {
		t.Errorf("stack of unequal shapes: %v", err)
	}
	f, _ := NewArray([]int{1, 2}, []float32{1, 2})
	if _, err := Concat(a, f); err == nil || !strings.Contains(err.Error(), "array 1 is float32, array 0 is uint8") {
		t.Errorf("concat of two dtypes: %v", err)
	}
	w, _ := NewArray([]int{1, 3}, []uint8{1, 2, 3})
	if _, err := Concat(a, w); err == nil || !strings.Contains(err.Error(), "only the first dimension may differ") {
		t.Errorf("concat of [1,2] and [1,3]: %v", err)
	}
	sc, _ := NewArray(nil, []uint8{1})
	if _, err := Concat(sc, sc); err == nil || !strings.Contains(err.Error(), "scalar") {
		t.Errorf("concat of scalars: %v", err)
	}
	if s, err := Stack(sc, sc); err != nil || !reflect.DeepEqual(s.Shape, []int{2}) {
		t.Errorf("stack of scalars: %v %v", s, err)
	}
	if _, err := Concat(); err == nil {
		t.Error("concat of nothing accepted")
	}
}
