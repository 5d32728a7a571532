package linear

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/ferret"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// testFerret is a Ferret parameter set for tests only (far from 128-bit LPN security): 13,824
// COTs per iteration, so that the layers run through refills.
var testFerret = ferret.Config{Name: "test", Main: ferret.Params{N: 1 << 14, T: 64, K: 2048, LogBin: 8}}

// newFerretPair is newPair on Ferret's silent OT: one Ferret session per stream over the IKNP
// session and its forks.
func newFerretPair(t testing.TB, l int, opt Options, nstreams int) *pair {
	t.Helper()
	p := &pair{r: ring.Must(l)}
	p.c0, p.c1 = ottest.Pipes(t, nstreams, testOpt)
	o0, o1 := ottest.Sessions(t, p.c0, p.c1)
	ctx := context.Background()
	var f0, f1 []*ot.Session
	for i := range nstreams {
		var a, b *ot.Session
		testenv.MustBoth(t, func() (err error) { a, err = ferret.NewSession(ctx, o0[i], testFerret, ferret.Options{}); return },
			func() (err error) { b, err = ferret.NewSession(ctx, o1[i], testFerret, ferret.Options{}); return })
		f0, f1 = append(f0, a), append(f1, b)
	}
	testenv.MustBoth(t, func() (err error) { p.s0, err = New(ctx, p.r, opt, f0...); return },
		func() (err error) { p.s1, err = New(ctx, p.r, opt, f1...); return })
	return p
}

// The OT linear layers on Ferret: a representative part of the IKNP tests' tables (rings, shapes,
// one and two streams, chunked and one-batch), checked against the same plain definitions.
func TestFerretLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("the IKNP runs cover -short")
	}
	rng := rand.New(rand.NewPCG(51, 52))
	for _, l := range []int{8, 32, 41, 64} {
		for _, nstreams := range []int{1, 2} {
			p := newFerretPair(t, l, Options{Budget: 4096, MinSplit: 64, OneBatch: nstreams == 2}, nstreams)
			for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 2}, {16, 33, 70}, {2, 3, 130}} {
				m, k, n := sh[0], sh[1], sh[2]
				w, x := ringtest.Values(p.r, rng, m*k), ringtest.Values(p.r, rng, k*n)
				if got, want := runMatMul(t, p, rng, w, m, k, n, x), refMatMul(p.r, w, m, k, n, x); !slices.Equal(got, want) {
					t.Fatalf("MatMul l=%d streams=%d %dx%dx%d: wrong product", l, nstreams, m, k, n)
				}
			}
			for _, c := range []ring.ConvGeom{
				{N: 2, C: 4, H: 7, W: 6, M: 6, OH: 2, OW: 3, KH: 3, KW: 2, SH: 2, SW: 2, PH: 1, PW: 0, DH: 2, DW: 2, Groups: 2},
				{N: 1, C: 3, H: 8, W: 8, M: 4, OH: 8, OW: 8, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
				ringtest.RandomConvGeom(rng, 9),
			} {
				w, x := convOperands(p.r, rng, c)
				if got, want := runConv(t, p, rng, w, c, x), ringtest.Conv(p.r, w, c, x); !slices.Equal(got, want) {
					t.Fatalf("Conv2D l=%d streams=%d %+v: wrong convolution", l, nstreams, c)
				}
			}
			x, y := mulOperands(p.r, rng, 300)
			got := runMul(t, p, rng, x, y)
			for i := range got {
				if want := p.r.Mul(x[i], y[i]); got[i] != want {
					t.Fatalf("Mul l=%d streams=%d element %d: %#x·%#x = %#x, want %#x", l, nstreams, i, x[i], y[i], got[i], want)
				}
			}
			w, v := ringtest.Values(p.r, rng, 500), ringtest.Values(p.r, rng, 500)
			v0, v1 := ringtest.Share(p.r, rng, v)
			d0, d1 := make([]uint64, 500), make([]uint64, 500)
			ctx := context.Background()
			testenv.MustBoth(t, func() error { return p.s0.MulElem(ctx, d0, w, v0) },
				func() error { return p.s1.MulElem(ctx, d1, nil, v1) })
			for i, g := range ringtest.Reconstruct(p.r, d0, d1) {
				if want := p.r.Mul(w[i], v[i]); g != want {
					t.Fatalf("MulElem l=%d streams=%d element %d: %#x, want %#x", l, nstreams, i, g, want)
				}
			}
		}
	}
}
