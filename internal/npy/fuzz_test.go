package npy

import (
	"bytes"
	"math"
	"reflect"
	"testing"
)

// FuzzRead checks that Read never panics on arbitrary input, and that whatever it accepts is
// self-consistent and round-trips through the writer. Seeds: the numpy outputs above plus the
// corpus in testdata/fuzz/FuzzRead.
func FuzzRead(f *testing.F) {
	for _, s := range []string{npF32, npI64, npF64, npI32, npU8, npScalar, npEmpty, npV2, npV3,
		npFortran, npBigEndian, npBool, npImage, npI64Scalar} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		a, err := Read(bytes.NewReader(in))
		if err != nil {
			if a != nil {
				t.Fatalf("Read returned both an array and error %v", err)
			}
			return
		}
		n := a.Len()
		if n < 0 {
			t.Fatalf("negative length %d for shape %v", n, a.Shape)
		}
		fl, err := a.Float32()
		if err != nil || len(fl) != n {
			t.Fatalf("Float32: %d elements, %v; want %d", len(fl), err, n)
		}
		var buf bytes.Buffer
		switch a.DType {
		case Float32:
			err = WriteFloat32(&buf, a.Shape, fl)
		case Int64:
			var iv []int64
			if iv, err = a.Int64(); err != nil || len(iv) != n {
				t.Fatalf("Int64: %d elements, %v; want %d", len(iv), err, n)
			}
			err = WriteInt64(&buf, a.Shape, iv)
		default:
			return
		}
		if err != nil {
			t.Fatalf("re-encoding shape %v: %v", a.Shape, err)
		}
		b, err := Read(&buf)
		if err != nil {
			t.Fatalf("reading back our own output: %v", err)
		}
		if !reflect.DeepEqual(a.Shape, b.Shape) || a.DType != b.DType {
			t.Fatalf("round trip changed shape/dtype: %v %v -> %v %v", a.Shape, a.DType, b.Shape, b.DType)
		}
		fb, _ := b.Float32()
		for i := range fl {
			if math.Float32bits(fl[i]) != math.Float32bits(fb[i]) {
				t.Fatalf("round trip changed element %d: %#x -> %#x", i, math.Float32bits(fl[i]), math.Float32bits(fb[i]))
			}
		}
	})
}
