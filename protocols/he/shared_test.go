package he

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// TestMatMulShared: batch products of two shared matrices equal the cleartext products exactly,
// on random values and on the ring's extremes, with the traffic of heplan.SharedMatMulCost and
// two flights each way (the first upload with party 1's key); mismatched operands are refused.
func TestMatMulShared(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, l := range []int{32, 40} {
		p := newPair(t, l, Options{})
		for i, s := range [][4]int{{1, 1, 1, 1}, {2, 5, 4, 5}, {3, 7, 16, 2}, {4, 1, 33, 9}} {
			batch, m, k, n := s[0], s[1], s[2], s[3]
			t.Run(fmt.Sprintf("l%d/%dx%dx%dx%d", l, batch, m, k, n), func(t *testing.T) {
				x := ringtest.Values(p.r, rng, batch*m*k)
				y := ringtest.Values(p.r, rng, batch*k*n)
				if i == 1 {
					for j := range x {
						x[j] = p.r.Mask() ^ uint64(j&1)<<(l-1) // −1 and 2^(l−1) − 1
					}
					for j := range y {
						y[j] = uint64(1) << (l - 1) // −2^(l−1)
					}
				}
				x0, x1 := ringtest.Share(p.r, rng, x)
				y0, y1 := ringtest.Share(p.r, rng, y)
				d0, d1 := make([]uint64, batch*m*n), make([]uint64, batch*m*n)
				before, rounds := p.bytes(), p.rounds()
				ctx := context.Background()
				testenv.MustBoth(t, func() error { return p.s0.MatMulShared(ctx, d0, x0, y0, batch, m, k, n) },
					func() error { return p.s1.MatMulShared(ctx, d1, x1, y1, batch, m, k, n) })
				want := make([]uint64, batch*m*n)
				for b := 0; b < batch; b++ {
					p.r.MatMul(want[b*m*n:(b+1)*m*n], x[b*m*k:(b+1)*m*k], m, k, n, y[b*k*n:(b+1)*k*n])
				}
				if got := ringtest.Reconstruct(p.r, d0, d1); !slices.Equal(got, want) {
					t.Fatalf("shared product wrong")
				}
				cost, err := heplan.SharedMatMulCost(batch, m, k, n, l)
				if err != nil {
					t.Fatal(err)
				}
				if got := p.bytes() - before; got != cost.Bytes {
					t.Errorf("%d bytes, want %d", got, cost.Bytes)
				}
				if got, want := p.rounds()-rounds, p.wantRounds()+p.wantRounds(); got != want {
					t.Errorf("%d flights, want %d", got, want)
				}
			})
		}
	}
	p := newPair(t, 32, Options{})
	if err := p.s0.MatMulShared(context.Background(), make([]uint64, 4), make([]uint64, 3), make([]uint64, 4), 1, 2, 2, 2); err == nil {
		t.Error("a 3-element X for 2×2 accepted")
	}
}
