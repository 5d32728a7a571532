package nonlinear

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// Random parameter combinations (any l, any m, shifts and divisors that do
// not divide evenly into digits) against the cleartext semantics.
func TestRandomParameters(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	ctx := context.Background()
	for trial := 0; trial < 14; trial++ {
		l := 2 + rng.IntN(63)
		m := 1 + rng.IntN(MaxM)
		s := 1 + rng.IntN(l-1)
		d := uint64(3 + rng.IntN(500))
		alg5 := rng.IntN(3) == 0
		p := newPair(t, l, Options{M: m, PaperTrunc: alg5}, 1+rng.IntN(2))
		r := p.r
		n := 150
		v := testValues(r, rng, n)
		nn := make([]uint64, n)
		for i, a := range v {
			nn[i] = a & (r.Mask() >> 1)
		}
		x0, x1 := shareWrapping(r, rng, v)
		y0, y1 := share(r, rng, nn)
		type out struct{ relu, trunc, truncNN, div []uint64 }
		var o [2]out
		p.run(t, func(ss *Session, party int) error {
			x, y := x0, y0
			if party == 1 {
				x, y = x1, y1
			}
			res := out{make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)}
			if err := ss.ReLU(ctx, res.relu, x); err != nil {
				return err
			}
			if err := ss.Trunc(ctx, res.trunc, x, s, false); err != nil {
				return err
			}
			if err := ss.Trunc(ctx, res.truncNN, y, s, true); err != nil {
				return err
			}
			if err := ss.Div(ctx, res.div, x, d); err != nil {
				return err
			}
			o[party] = res
			return nil
		})
		relu, trunc := ringtest.Reconstruct(r, o[0].relu, o[1].relu), ringtest.Reconstruct(r, o[0].trunc, o[1].trunc)
		truncNN, div := ringtest.Reconstruct(r, o[0].truncNN, o[1].truncNN), ringtest.Reconstruct(r, o[0].div, o[1].div)
		for i, a := range v {
			want := a
			if r.Signed(a) < 0 {
				want = 0
			}
			if relu[i] != want {
				t.Fatalf("l=%d m=%d: ReLU(%d) = %d", l, m, r.Signed(a), r.Signed(relu[i]))
			}
			if trunc[i] != r.Trunc(a, s) {
				t.Fatalf("l=%d m=%d s=%d alg5=%v: Trunc(%d) = %d", l, m, s, alg5, r.Signed(a), r.Signed(trunc[i]))
			}
			if truncNN[i] != r.Trunc(nn[i], s) {
				t.Fatalf("l=%d m=%d s=%d: Trunc(%d, x≥0) = %d", l, m, s, r.Signed(nn[i]), r.Signed(truncNN[i]))
			}
			if want := floorDivRef(r, a, d); div[i] != want {
				t.Fatalf("l=%d m=%d d=%d: %d / d = %d, want %d", l, m, d, r.Signed(a), r.Signed(div[i]), r.Signed(want))
			}
		}
	}
}

// Batches split over three streams (odd and even roles) and several chunks.
func TestManyStreamsAndChunks(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	p := newPair(t, 32, Options{MinSplit: 1000, Budget: 1 << 14}, 3)
	r := p.r
	n := 5000
	v := testValues(r, rng, n)
	x0, x1 := shareWrapping(r, rng, v)
	var z [2][]uint64
	var b [2][]uint64
	p.run(t, func(ss *Session, party int) error {
		x := x0
		if party == 1 {
			x = x1
		}
		z[party] = make([]uint64, n)
		b[party] = make([]uint64, bitvec.Words(n))
		if err := ss.DReLU(context.Background(), b[party], x); err != nil {
			return err
		}
		return ss.Trunc(context.Background(), z[party], x, 9, false)
	})
	got := ringtest.Reconstruct(r, z[0], z[1])
	dr := reconstructBits(b[0], b[1], n)
	for i, a := range v {
		if got[i] != r.Trunc(a, 9) {
			t.Fatalf("element %d: Trunc(%d) = %d", i, r.Signed(a), r.Signed(got[i]))
		}
		if (dr[i] == 1) != (r.Signed(a) >= 0) {
			t.Fatalf("element %d: DReLU(%d) = %d", i, r.Signed(a), dr[i])
		}
	}
}
