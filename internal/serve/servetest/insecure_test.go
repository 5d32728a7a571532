package servetest

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// TestMulMatchesClear: the product of two shared tensors, then a ReLU (which opens at both
// parties), revealed to party 1, equals the cleartext product.
func TestMulMatchesClear(t *testing.T) {
	r := ring.Must(24)
	a, b := transport.Pipe(transport.Options{Timeout: 10 * time.Second})
	t.Cleanup(func() { a.Close(); b.Close() })
	ctx := context.Background()
	var be [2]*Insecure
	testenv.MustBoth(t, func() (err error) { be[0], err = New(ctx, a, 0, r); return },
		func() (err error) { be[1], err = New(ctx, b, 1, r); return })
	rng := rand.New(rand.NewPCG(1, 2))
	n := 40
	x, y := ring.NewTensor([]int{n}), ring.NewTensor([]int{n})
	for i := range x.Data {
		x.Data[i], y.Data[i] = r.Reduce(rng.Uint64()), r.Reduce(rng.Uint64())
	}
	x.Data[0], y.Data[1] = r.Mask(), 0
	want := ring.NewTensor([]int{n})
	r.MulVec(want.Data, x.Data, y.Data)
	for i, v := range want.Data {
		if r.IsNeg(v) {
			want.Data[i] = 0
		}
	}
	var got ring.Tensor
	run := func(p int) error {
		// x is party 1's input, y party 0's (the other party holds zeros: valid shares).
		xs, ys := ring.NewTensor([]int{n}), ring.NewTensor([]int{n})
		if p == 1 {
			copy(xs.Data, x.Data)
		} else {
			copy(ys.Data, y.Data)
		}
		prod, out := ring.NewTensor([]int{n}), ring.NewTensor([]int{n})
		if err := be[p].Mul(ctx, prod, xs, ys); err != nil {
			return err
		}
		if err := be[p].ReLU(ctx, out, prod); err != nil {
			return err
		}
		_, err := be[p].Reveal(ctx, 1, out)
		if p == 1 {
			got = out
		}
		return err
	}
	testenv.MustBoth(t, func() error { return run(0) }, func() error { return run(1) })
	if !slices.Equal(got.Data, want.Data) {
		t.Fatalf("got %v\nwant %v", got.Data[:8], want.Data[:8])
	}
}
