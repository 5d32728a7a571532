package he

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

func TestRandomShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	rounds := 6
	if testing.Short() {
		rounds = 2
	}
	for _, l := range []int{32, 37, 41, 44, 64} {
		p := newPair(t, l, Options{})
		for i := 0; i < rounds; i++ {
			c := ringtest.RandomConvGeom(rng, 12)
			t.Run(fmt.Sprintf("l%d/conv%d", l, i), func(t *testing.T) { runConv(t, p, rng, c) })
			m, k, n := 1+rng.IntN(30), 1+rng.IntN(200), 1+rng.IntN(3)
			t.Run(fmt.Sprintf("l%d/mm%d", l, i), func(t *testing.T) { runMatMul(t, p, rng, m, k, n) })
		}
	}
}

// TestOtherRings runs small products in rings on both sides of the supported range, at the
// ring degree change (l = 18 uses N = 4096, l = 19 N = 8192) and at the change to a reply modulus
// of two primes (l = 47).
func TestOtherRings(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, l := range []int{1, 8, 18, 19, 46, 47, 55, 64} {
		p := newPair(t, l, Options{Workers: 1})
		t.Run(fmt.Sprintf("l%d", l), func(t *testing.T) {
			runMatMul(t, p, rng, 9, 70, 2)
			runConv(t, p, rng, conv(1, 2, 7, 6, 3, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1))
		})
	}
	if _, err := New(context.Background(), ring.Must(32), 0, nil, Options{}); err == nil {
		t.Fatal("New with a nil connection: no error")
	}
}

func TestHelloBytes(t *testing.T) {
	p := newPair(t, 41, Options{})
	want, err := HelloBytes(41)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.bytes(); got != want {
		t.Fatalf("New: %d bytes, HelloBytes %d", got, want)
	}
}

// TestWeightCache runs the same layer three times: the weights are cached after the first call,
// then changed in place (the cache must notice), and the cache disabled.
func TestWeightCache(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, cache := range []int{0, -1} {
		p := newPair(t, 37, Options{CacheBytes: cache})
		c := conv(1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)
		w := ringtest.Values(p.r, rng, c.M*c.C*c.KH*c.KW)
		x := ringtest.Values(p.r, rng, c.N*c.C*c.H*c.W)
		ctx := context.Background()
		for round := 0; round < 3; round++ {
			if round == 2 {
				for i := range w {
					w[i] = p.r.Add(w[i], uint64(i+1))
				}
			}
			x0, x1 := ringtest.Share(p.r, rng, x)
			d0, d1 := make([]uint64, c.M*c.OH*c.OW), make([]uint64, c.M*c.OH*c.OW)
			testenv.MustBoth(t, func() error { return p.s0.Conv2D(ctx, d0, w, c, x0) },
				func() error { return p.s1.Conv2D(ctx, d1, nil, c, x1) })
			if got := ringtest.Reconstruct(p.r, d0, d1); !slices.Equal(got, ringtest.Conv(p.r, w, c, x)) {
				t.Fatalf("cache %d, round %d: wrong result", cache, round)
			}
			if cached := len(p.s0.wcache) > 0; cached != (cache >= 0) {
				t.Fatalf("cache %d, round %d: %d cached layers", cache, round, len(p.s0.wcache))
			}
		}
	}
}

// TestBadInput checks argument errors: they are reported before anything is sent and leave the
// session usable.
func TestBadInput(t *testing.T) {
	p := newPair(t, 32, Options{})
	ctx := context.Background()
	w, x, d := make([]uint64, 6), make([]uint64, 6), make([]uint64, 4)
	good := conv(1, 1, 4, 4, 1, 3, 3, 1, 1, 0, 0, 1, 1, 1, 0, 0)
	bad := good
	bad.Groups = 3
	for name, f := range map[string]func() error{
		"short weights":      func() error { return p.s0.MatMul(ctx, d, w[:5], 2, 3, 2, x) },
		"party 1 weights":    func() error { return p.s1.MatMul(ctx, d, w, 2, 3, 2, x) },
		"short operand":      func() error { return p.s1.MatMul(ctx, d, nil, 2, 3, 2, x[:5]) },
		"short result":       func() error { return p.s1.MatMul(ctx, d[:3], nil, 2, 3, 2, x) },
		"negative dimension": func() error { return p.s1.MatMul(ctx, d, nil, -2, 3, 2, x) },
		"invalid geometry":   func() error { return p.s1.Conv2D(ctx, make([]uint64, 4), nil, bad, make([]uint64, 16)) },
		"conv short operand": func() error { return p.s1.Conv2D(ctx, make([]uint64, 4), nil, good, make([]uint64, 15)) },
		"conv party 0 no w":  func() error { return p.s0.Conv2D(ctx, make([]uint64, 4), nil, good, make([]uint64, 16)) },
		"kernel larger than N": func() error {
			g := conv(1, 1, 100, 100, 1, 91, 91, 1, 1, 0, 0, 1, 1, 1, 0, 0)
			return p.s1.Conv2D(ctx, make([]uint64, g.OH*g.OW), nil, g, make([]uint64, 10000))
		},
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if p.bytes() != mustHello(t, 32) {
		t.Fatalf("argument errors sent %d bytes", p.bytes()-mustHello(t, 32))
	}
	rng := rand.New(rand.NewPCG(1, 1))
	runMatMul(t, p, rng, 3, 4, 1)
	if _, err := heplan.ConvBytes(bad, 32); err == nil {
		t.Error("ConvBytes of an invalid geometry: no error")
	}
	if _, err := heplan.MatMulBytes(0, 1, 1, 32); err == nil {
		t.Error("MatMulBytes with m = 0: no error")
	}
}

func mustHello(t *testing.T, l int) int64 {
	b, err := HelloBytes(l)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPeerFailure: when party 0 disappears in the middle of a product, party 1 fails (no hang)
// and its session refuses further work.
func TestPeerFailure(t *testing.T) {
	p := newPair(t, 32, Options{})
	ctx := context.Background()
	x := make([]uint64, 80)
	d := make([]uint64, 8)
	p.c0.Close()
	err := p.s1.MatMul(ctx, d, nil, 2, 20, 4, x)
	if err == nil {
		t.Fatal("MatMul with a closed peer: no error")
	}
	if p.s1.Err() == nil {
		t.Fatal("the session is still usable after a protocol failure")
	}
	if err := p.s1.MatMul(ctx, d, nil, 2, 20, 4, x); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Fatalf("second call: %v", err)
	}
}

// TestCancel: a call with a cancelled context fails at once at that party, and the peer fails
// from the abort instead of waiting for its timeout.
func TestCancel(t *testing.T) {
	p := newPair(t, 32, Options{})
	x := make([]uint64, 80)
	d0, d1 := make([]uint64, 8), make([]uint64, 8)
	w := make([]uint64, 40)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e0, e1 := testenv.Both(func() error { return p.s0.MatMul(context.Background(), d0, w, 2, 20, 4, x) },
		func() error { return p.s1.MatMul(ctx, d1, nil, 2, 20, 4, x) })
	if e0 == nil || e1 == nil {
		t.Fatalf("party 0: %v; party 1 (cancelled): %v", e0, e1)
	}
	if p.s0.Err() == nil || p.s1.Err() == nil {
		t.Fatal("a session is still usable after a failed protocol")
	}
}

// TestPrepareWeights: weights prepared ahead (conv and matrix product) are in the cache before
// the call, which then builds none and is exact; a cache too small for them says so; party 1
// and bad geometries are refused.
func TestPrepareWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	ctx := context.Background()
	p := newPair(t, 37, Options{})
	c := conv(1, 3, 8, 8, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)
	w := ringtest.Values(p.r, rng, c.M*c.C*c.KH*c.KW)
	m, k, n := 5, 40, 2
	wm := ringtest.Values(p.r, rng, m*k)
	for _, g := range []struct {
		g ring.ConvGeom
		w []uint64
	}{{c, w}, {heplan.MatMulGeom(m, k, n), wm}} {
		ok, err := p.s0.PrepareWeights(ctx, g.g, g.w)
		if err != nil || !ok {
			t.Fatalf("PrepareWeights %+v: %v, %v", g.g, ok, err)
		}
	}
	if len(p.s0.wcache) != 2 {
		t.Fatalf("%d layers cached, want 2", len(p.s0.wcache))
	}
	used, bound := p.s0.CacheBytes()
	if used <= 0 || used > bound {
		t.Fatalf("cache %d of %d bytes", used, bound)
	}
	x := ringtest.Values(p.r, rng, c.N*c.C*c.H*c.W)
	x0, x1 := ringtest.Share(p.r, rng, x)
	d0, d1 := make([]uint64, c.M*c.OH*c.OW), make([]uint64, c.M*c.OH*c.OW)
	testenv.MustBoth(t, func() error { return p.s0.Conv2D(ctx, d0, w, c, x0) }, func() error { return p.s1.Conv2D(ctx, d1, nil, c, x1) })
	if got := ringtest.Reconstruct(p.r, d0, d1); !slices.Equal(got, ringtest.Conv(p.r, w, c, x)) {
		t.Fatal("conv after PrepareWeights: wrong result")
	}
	xm := ringtest.Values(p.r, rng, k*n)
	xm0, xm1 := ringtest.Share(p.r, rng, xm)
	e0, e1 := make([]uint64, m*n), make([]uint64, m*n)
	testenv.MustBoth(t, func() error { return p.s0.MatMul(ctx, e0, wm, m, k, n, xm0) }, func() error { return p.s1.MatMul(ctx, e1, nil, m, k, n, xm1) })
	if got := ringtest.Reconstruct(p.r, e0, e1); !slices.Equal(got, ringtest.Conv(p.r, wm, heplan.MatMulGeom(m, k, n), xm)) {
		t.Fatal("matmul after PrepareWeights: wrong result")
	}
	if u, _ := p.s0.CacheBytes(); u != used || len(p.s0.wcache) != 2 {
		t.Fatalf("the calls rebuilt prepared weights: cache %d bytes (was %d), %d layers", u, used, len(p.s0.wcache))
	}
	small := newPair(t, 37, Options{CacheBytes: 1})
	if ok, err := small.s0.PrepareWeights(ctx, c, w); err != nil || ok {
		t.Fatalf("a 1-byte cache: %v, %v; want not cached, no error", ok, err)
	}
	if _, err := p.s1.PrepareWeights(ctx, c, w); err == nil {
		t.Fatal("party 1 prepared weights")
	}
	if _, err := p.s0.PrepareWeights(ctx, c, w[1:]); err == nil {
		t.Fatal("short weights accepted")
	}
}
