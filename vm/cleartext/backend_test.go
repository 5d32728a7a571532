package cleartext

import (
	"context"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
)

func newClear(t *testing.T, l int) (*Backend, ring.Ring) {
	t.Helper()
	r := ring.Must(l)
	c, err := New(r)
	if err != nil {
		t.Fatal(err)
	}
	return c, r
}

func TestClearDivFloors(t *testing.T) {
	c, r := newClear(t, 8)
	x := r.SignedTensor([]int{9}, -7, -8, -1, 7, 8, 0, -128, 127, -9)
	dst := ring.NewTensor([]int{9})
	if err := c.Div(context.Background(), dst, x, 2); err != nil {
		t.Fatal(err)
	}
	want := []int64{-4, -4, -1, 3, 4, 0, -64, 63, -5}
	if got := r.SignedValues(dst); !slices.Equal(got, want) {
		t.Errorf("div by 2 = %v, want %v", got, want)
	}
	if err := c.Div(context.Background(), dst, x, 3); err != nil {
		t.Fatal(err)
	}
	want = []int64{-3, -3, -1, 2, 2, 0, -43, 42, -3}
	if got := r.SignedValues(dst); !slices.Equal(got, want) {
		t.Errorf("div by 3 = %v, want %v", got, want)
	}
	if err := c.Div(context.Background(), dst, x, 0); err == nil {
		t.Error("division by 0 accepted")
	}
	if FloorDiv(-1, 1<<40) != -1 || FloorDiv(1<<40, 3) != (1<<40)/3 {
		t.Error("FloorDiv")
	}
}

func TestClearTruncAndReLUEdges(t *testing.T) {
	c, r := newClear(t, 8)
	x := r.SignedTensor([]int{6}, -128, 127, -1, 0, -5, 5)
	dst := ring.NewTensor([]int{6})
	ctx := context.Background()
	if err := c.Trunc(ctx, dst, x, 2, false); err != nil {
		t.Fatal(err)
	}
	if got, want := r.SignedValues(dst), []int64{-32, 31, -1, 0, -2, 1}; !slices.Equal(got, want) {
		t.Errorf("trunc = %v, want %v", got, want)
	}
	if err := c.Trunc(ctx, dst, x, 7, false); err != nil {
		t.Fatal(err)
	}
	if got, want := r.SignedValues(dst), []int64{-1, 0, -1, 0, -1, 0}; !slices.Equal(got, want) {
		t.Errorf("trunc by l-1 = %v, want %v", got, want)
	}
	if err := c.ReLU(ctx, dst, x); err != nil {
		t.Fatal(err)
	}
	if got, want := r.SignedValues(dst), []int64{0, 127, 0, 0, 0, 5}; !slices.Equal(got, want) {
		t.Errorf("relu = %v, want %v", got, want)
	}
	// Z_2^64: the top bit is the sign.
	c64, r64 := newClear(t, 64)
	x = r64.SignedTensor([]int{2}, -1<<63, 1<<62)
	dst = ring.NewTensor([]int{2})
	if err := c64.ReLU(ctx, dst, x); err != nil {
		t.Fatal(err)
	}
	if got, want := r64.SignedValues(dst), []int64{0, 1 << 62}; !slices.Equal(got, want) {
		t.Errorf("relu 64 = %v", got)
	}
}

func TestClearMatMulWraps(t *testing.T) {
	c, r := newClear(t, 8)
	ctx := context.Background()
	// W [2,3] x X [3,1]: 100*3 = 300 wraps to 44; negative weights.
	w := r.SignedTensor([]int{2, 3}, 100, 0, 0, -1, 2, -3)
	x := r.SignedTensor([]int{3, 1}, 3, 5, 7)
	dst := ring.NewTensor([]int{2, 1})
	if err := c.MatMul(ctx, fixed.EngineDefault, dst, &w, 2, 3, 1, x); err != nil {
		t.Fatal(err)
	}
	if got, want := r.SignedValues(dst), []int64{44, -3 + 10 - 21}; !slices.Equal(got, want) {
		t.Errorf("matmul = %v, want %v", got, want)
	}
	// A wide product (n >= 4) takes the row-streaming path; check against the dot-product path.
	const m, k, n = 3, 7, 9
	a := ring.NewTensor([]int{m, k})
	b := ring.NewTensor([]int{k, n})
	for i := range a.Data {
		a.Data[i] = r.FromSigned(int64(i*37%251) - 125)
	}
	for i := range b.Data {
		b.Data[i] = r.FromSigned(int64(i*53%241) - 120)
	}
	wide := ring.NewTensor([]int{m, n})
	r.MatMul(wide.Data, a.Data, m, k, n, b.Data)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s int64
			for t2 := 0; t2 < k; t2++ {
				s += r.Signed(a.Data[i*k+t2]) * r.Signed(b.Data[t2*n+j])
			}
			if got := wide.Data[i*n+j]; got != r.FromSigned(s) {
				t.Fatalf("matmul[%d,%d] = %d, want %d", i, j, got, r.FromSigned(s))
			}
		}
	}
	if err := c.MatMul(ctx, fixed.EngineDefault, dst, nil, 2, 3, 1, x); err == nil {
		t.Error("matmul without weights accepted")
	}
	if err := c.MatMul(ctx, fixed.EngineDefault, dst, &w, 2, 2, 1, x); err == nil {
		t.Error("matmul with wrong sizes accepted")
	}
}

func TestClearMaxAndArgMax(t *testing.T) {
	c, r := newClear(t, 8)
	ctx := context.Background()
	x := r.SignedTensor([]int{3, 4},
		-5, -3, -3, -128,
		7, 7, 7, 7,
		-128, 127, 0, 127)
	dst := ring.NewTensor([]int{3})
	if err := c.MaxRows(ctx, dst, x, 3, 4); err != nil {
		t.Fatal(err)
	}
	if got, want := r.SignedValues(dst), []int64{-3, 7, 127}; !slices.Equal(got, want) {
		t.Errorf("max = %v, want %v", got, want)
	}
	if err := c.ArgMaxRows(ctx, dst, x, 3, 4); err != nil {
		t.Fatal(err)
	}
	// Ties go to the lowest index.
	if got, want := r.SignedValues(dst), []int64{1, 0, 1}; !slices.Equal(got, want) {
		t.Errorf("argmax = %v, want %v", got, want)
	}
	if err := c.MaxRows(ctx, dst, x, 3, 3); err == nil {
		t.Error("wrong row size accepted")
	}
}

func TestClearMulConstAndIO(t *testing.T) {
	c, r := newClear(t, 8)
	ctx := context.Background()
	w := r.SignedTensor([]int{3}, 2, -1, 64)
	x := r.SignedTensor([]int{3}, 3, 4, 4)
	dst := ring.NewTensor([]int{3})
	if err := c.MulConst(ctx, dst, &w, x); err != nil {
		t.Fatal(err)
	}
	if got, want := r.SignedValues(dst), []int64{6, -4, 0}; !slices.Equal(got, want) {
		t.Errorf("mulconst = %v, want %v (64*4 wraps to 0)", got, want)
	}
	if err := c.Input(ctx, 1, x); err != nil {
		t.Error(err)
	}
	if ok, err := c.Reveal(ctx, 1, x); !ok || err != nil {
		t.Errorf("reveal = %v, %v", ok, err)
	}
	if err := c.Input(ctx, 2, x); err == nil {
		t.Error("input from party 2 accepted")
	}
	if c.Party() != 0 || c.Ring() != r {
		t.Error("party/ring")
	}
	if _, err := New(ring.Ring{}); err == nil {
		t.Error("New accepted an invalid ring")
	}
}

// ReLULow is ReLU on operands inside the width and an error, naming the element, outside it.
func TestReLULowChecksBound(t *testing.T) {
	ctx := context.Background()
	c, r := newClear(t, 64)
	x := r.SignedTensor([]int{4}, -128, 127, 0, -1)
	dst := ring.NewTensor([]int{4})
	if err := c.ReLULow(ctx, dst, x, 8); err != nil {
		t.Fatal(err)
	}
	if got, want := r.SignedValues(dst), []int64{0, 127, 0, 0}; !slices.Equal(got, want) {
		t.Errorf("relu low 8 = %v, want %v", got, want)
	}
	for _, bad := range []int64{128, -129} {
		x := r.SignedTensor([]int{2}, 0, bad)
		if err := c.ReLULow(ctx, ring.NewTensor([]int{2}), x, 8); err == nil {
			t.Errorf("%d passed as an 8-bit value", bad)
		}
	}
	if err := c.ReLULow(ctx, dst, x, 1); err == nil {
		t.Errorf("width 1 accepted")
	}
}
