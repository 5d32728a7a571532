package cleartext

import (
	"context"
	"testing"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// TestMath checks the backend's math functions against fxmath's definition.
func TestMath(t *testing.T) {
	r := ring.Must(32)
	b, err := New(r)
	if err != nil {
		t.Fatal(err)
	}
	p, err := fxmath.NewParams(32, 12)
	if err != nil {
		t.Fatal(err)
	}
	x := ring.Tensor{Shape: []int{7}, Data: []uint64{0, 1, r.FromSigned(-1), 4096, r.FromSigned(-4096), 1 << 20, r.FromSigned(-5 << 12)}}
	for _, f := range fxmath.Funcs() {
		got := ring.Tensor{Shape: []int{7}, Data: make([]uint64, 7)}
		if err := b.Math(context.Background(), f, got, x, 12); err != nil {
			t.Fatal(err)
		}
		want := make([]uint64, 7)
		if err := p.EvalClear(f, want, x.Data); err != nil {
			t.Fatal(err)
		}
		for i := range want {
			if got.Data[i] != want[i] {
				t.Errorf("%s(%d) = %d, want %d", f, r.Signed(x.Data[i]), got.Data[i], want[i])
			}
		}
	}
	if err := b.Math(context.Background(), fxmath.Exp, x, x, 14); err == nil {
		t.Error("scale 14 in Z_2^32 accepted (needs l ≥ 33)")
	}
}
