package ring

import (
	"math"
	"testing"
)

func TestNewBounds(t *testing.T) {
	for _, l := range []int{0, -1, 65} {
		if _, err := New(l); err == nil {
			t.Errorf("New(%d) succeeded", l)
		}
	}
	for _, l := range []int{1, 8, 32, 63, 64} {
		r, err := New(l)
		if err != nil || !r.Valid() || r.Bits != l {
			t.Fatalf("New(%d) = %v, %v", l, r, err)
		}
	}
	if (Ring{}).Valid() {
		t.Error("zero Ring is valid")
	}
	if r, err := Of(Prime, 65537); err != nil || !r.Valid() || r.Modulus() != 65537 {
		t.Errorf("Of(Prime, 65537) = %v, %v", r, err)
	}
	if _, err := Of(Prime, 65536); err == nil {
		t.Error("Of(Prime) accepted an even modulus")
	}
	if _, err := Of(Kind(9), 8); err == nil {
		t.Error("unknown kind accepted")
	}
	if r, err := Of(Pow2, 37); err != nil || r.Bits != 37 {
		t.Errorf("Of(Pow2, 37) = %v, %v", r, err)
	}
}

func TestSignedEdges(t *testing.T) {
	for _, c := range []struct {
		l    int
		v    uint64
		want int64
	}{
		{8, 0, 0}, {8, 127, 127}, {8, 128, -128}, {8, 255, -1},
		{1, 0, 0}, {1, 1, -1},
		{64, math.MaxUint64, -1}, {64, 1 << 63, math.MinInt64}, {64, 1<<63 - 1, math.MaxInt64},
		{63, 1 << 62, -(1 << 62)},
	} {
		r := Must(c.l)
		if got := r.Signed(c.v); got != c.want {
			t.Errorf("Z_2^%d Signed(%d) = %d, want %d", c.l, c.v, got, c.want)
		}
		if got := r.FromSigned(c.want); got != c.v {
			t.Errorf("Z_2^%d FromSigned(%d) = %d, want %d", c.l, c.want, got, c.v)
		}
	}
	r := Must(8)
	if r.MinSigned() != -128 || r.MaxSigned() != 127 {
		t.Errorf("bounds %d %d", r.MinSigned(), r.MaxSigned())
	}
}

func TestArithmeticWraps(t *testing.T) {
	r := Must(8)
	if got := r.Add(200, 100); got != 44 {
		t.Errorf("200+100 = %d", got)
	}
	if got := r.Sub(3, 5); got != 254 {
		t.Errorf("3-5 = %d", got)
	}
	if got := r.Mul(16, 17); got != 16 {
		t.Errorf("16*17 = %d", got)
	}
	if got := r.Neg(1); got != 255 {
		t.Errorf("-1 = %d", got)
	}
	// 127 + 1 wraps to -128: overflow is silent.
	if got := r.Signed(r.Add(127, 1)); got != -128 {
		t.Errorf("127+1 = %d", got)
	}
	dst := make([]uint64, 2)
	r.AddVec(dst, []uint64{255, 1}, []uint64{1, 1})
	if dst[0] != 0 || dst[1] != 2 {
		t.Errorf("AddVec = %v", dst)
	}
	r.ScaleVec(dst, []uint64{r.FromSigned(-3), 100}, 4)
	if r.Signed(dst[0]) != -12 || dst[1] != 144 {
		t.Errorf("ScaleVec = %v", dst)
	}
}

func TestTruncFloors(t *testing.T) {
	r := Must(16)
	for _, c := range []struct {
		x    int64
		k    int
		want int64
	}{
		{7, 1, 3}, {-7, 1, -4}, {-1, 4, -1}, {-16, 4, -1}, {-17, 4, -2}, {15, 4, 0}, {0, 3, 0},
		{-32768, 15, -1}, {32767, 15, 0}, {5, 0, 5},
	} {
		if got := r.Signed(r.Trunc(r.FromSigned(c.x), c.k)); got != c.want {
			t.Errorf("Trunc(%d, %d) = %d, want %d", c.x, c.k, got, c.want)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	r := Must(32)
	for _, c := range []struct {
		x     float64
		scale int
		want  int64
	}{
		{1.5, 4, 24}, {-1.5, 4, -24}, {-0.01, 4, -1}, {0.01, 4, 0}, {3, 0, 3}, {-2.5, 1, -5},
	} {
		v, err := r.Encode(c.x, c.scale)
		if err != nil || r.Signed(v) != c.want {
			t.Errorf("Encode(%g, %d) = %d, %v; want %d", c.x, c.scale, r.Signed(v), err, c.want)
		}
		if d := r.Decode(v, c.scale); math.Abs(d-c.x) > math.Ldexp(1, -c.scale) {
			t.Errorf("Decode(Encode(%g)) = %g", c.x, d)
		}
	}
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1e30} {
		if _, err := r.Encode(x, 8); err == nil {
			t.Errorf("Encode(%g) succeeded", x)
		}
	}
	// Values beyond the ring wrap, as the ring arithmetic does.
	v, err := Must(8).Encode(130, 0)
	if err != nil || Must(8).Signed(v) != -126 {
		t.Errorf("Encode(130) in Z_2^8 = %d, %v", Must(8).Signed(v), err)
	}
	tt, err := r.EncodeTensor([]int{2}, []float32{0.5, -0.25}, 2)
	if err != nil || tt.Data[0] != 2 || r.Signed(tt.Data[1]) != -1 {
		t.Fatalf("EncodeTensor = %v, %v", tt, err)
	}
	if got := r.DecodeTensor(tt, 2); got[0] != 0.5 || got[1] != -0.25 {
		t.Errorf("DecodeTensor = %v", got)
	}
	if _, err := r.EncodeTensor([]int{3}, []float32{1}, 2); err == nil {
		t.Error("EncodeTensor with a short slice succeeded")
	}
}

func TestBitsFor(t *testing.T) {
	for _, c := range []struct {
		x    int64
		want int
	}{{0, 0}, {1, 1}, {-1, 1}, {255, 8}, {-256, 9}, {math.MaxInt64, 63}, {math.MinInt64, 64}} {
		if got := BitsFor(c.x); got != c.want {
			t.Errorf("BitsFor(%d) = %d, want %d", c.x, got, c.want)
		}
	}
}

func TestTensor(t *testing.T) {
	x := NewTensor([]int{2, 3})
	if x.Len() != 6 || x.Check() != nil {
		t.Fatalf("NewTensor: %v", x)
	}
	y := x.Clone()
	y.Data[0] = 1
	if x.Data[0] != 0 {
		t.Error("Clone shares data")
	}
	if (Tensor{Shape: []int{2}, Data: make([]uint64, 3)}).Check() == nil {
		t.Error("Check accepted a wrong length")
	}
	if (Tensor{Shape: []int{-1}}).Check() == nil {
		t.Error("Check accepted a negative dimension")
	}
}
