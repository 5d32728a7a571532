package sci_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// TestMathMatchesClear runs every math function through the backend (one and two streams, the
// second splitting a layer of 5000 elements across both) against the cleartext backend.
func TestMathMatchesClear(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	ctx := context.Background()
	for _, streams := range []int{1, 2} {
		p := newPair(t, 32, streams)
		c, err := cleartext.New(p.r)
		if err != nil {
			t.Fatal(err)
		}
		n := 300
		if streams == 2 {
			n = 5000
		}
		x := randTensor(p.r, rng, []int{n}, 18)
		for _, f := range fxmath.Funcs() {
			want := ring.NewTensor([]int{n})
			if err := c.Math(ctx, f, want, x, 12); err != nil {
				t.Fatal(err)
			}
			got := p.secure(t, 1, x, []int{n}, func(b *sci.Backend, _ int, dst, xs ring.Tensor) error {
				return b.Math(ctx, f, dst, xs, 12)
			})
			if !slices.Equal(got.Data, want.Data) {
				t.Fatalf("%s with %d streams: secure result differs from clear", f, streams)
			}
		}
		if prof := fmt.Sprint(p.b[0].Profile().Nonlinear.Calls); prof == "0" {
			t.Error("math calls not charged to the nonlinear profile")
		}
	}
}
