package he

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

func runMatMul(t *testing.T, p *pair, rng *rand.Rand, m, k, n int) {
	t.Helper()
	w := ringtest.Values(p.r, rng, m*k)
	x := ringtest.Values(p.r, rng, k*n)
	rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
	x0, x1 := ringtest.Share(p.r, rng, x)
	d0, d1 := make([]uint64, m*n), make([]uint64, m*n)
	before, rounds := p.bytes(), p.rounds()
	ctx := context.Background()
	testenv.MustBoth(t, func() error { return p.s0.MatMul(ctx, d0, w, m, k, n, x0) },
		func() error { return p.s1.MatMul(ctx, d1, nil, m, k, n, x1) })
	want := make([]uint64, m*n)
	p.r.MatMul(want, w, m, k, n, x)
	if got := ringtest.Reconstruct(p.r, d0, d1); !slices.Equal(got, want) {
		bad := 0
		for i := range got {
			if got[i] != want[i] {
				bad++
			}
		}
		t.Fatalf("MatMul %d×%d×%d l=%d: %d of %d wrong", m, k, n, p.r.Bits, bad, len(want))
	}
	wantBytes, err := heplan.MatMulBytes(m, k, n, p.r.Bits)
	if err != nil {
		t.Fatal(err)
	}
	checkCost(t, p, heplan.MatMulGeom(m, k, n))
	if mc, err := heplan.MatMulCost(m, k, n, p.r.Bits); err != nil || mc.Bytes != wantBytes {
		t.Fatalf("MatMulCost %+v (%v), MatMulBytes %d", mc, err, wantBytes)
	}
	if got := p.bytes() - before; got != wantBytes {
		t.Fatalf("MatMul %d×%d×%d l=%d: %d bytes, formula %d", m, k, n, p.r.Bits, got, wantBytes)
	}
	if got, want := p.rounds()-rounds, p.wantRounds(); got != want {
		t.Fatalf("MatMul %d×%d×%d: %d flights, want %d", m, k, n, got, want)
	}
}

func TestMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, l := range []int{32, 37, 41, 44} {
		p := newPair(t, l, Options{})
		shapes := [][3]int{{1, 1, 1}, {3, 5, 2}, {17, 300, 1}, {2, 9000, 1}}
		if !testing.Short() {
			shapes = append(shapes, [3]int{1 + rng.IntN(40), 1 + rng.IntN(3000), 1 + rng.IntN(3)})
		}
		for _, s := range shapes {
			t.Run(fmt.Sprintf("l%d/%dx%dx%d", l, s[0], s[1], s[2]), func(t *testing.T) { runMatMul(t, p, rng, s[0], s[1], s[2]) })
		}
	}
}

func runConv(t *testing.T, p *pair, rng *rand.Rand, c ring.ConvGeom) {
	t.Helper()
	w := ringtest.Values(p.r, rng, c.M*(c.C/c.Groups)*c.KH*c.KW)
	x := ringtest.Values(p.r, rng, c.N*c.C*c.H*c.W)
	rng.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	x0, x1 := ringtest.Share(p.r, rng, x)
	n := c.N * c.M * c.OH * c.OW
	d0, d1 := make([]uint64, n), make([]uint64, n)
	before, rounds := p.bytes(), p.rounds()
	ctx := context.Background()
	testenv.MustBoth(t, func() error { return p.s0.Conv2D(ctx, d0, w, c, x0) },
		func() error { return p.s1.Conv2D(ctx, d1, nil, c, x1) })
	want := ringtest.Conv(p.r, w, c, x)
	if got := ringtest.Reconstruct(p.r, d0, d1); !slices.Equal(got, want) {
		bad := 0
		for i := range got {
			if got[i] != want[i] {
				bad++
			}
		}
		t.Fatalf("Conv2D %+v l=%d: %d of %d wrong", c, p.r.Bits, bad, len(want))
	}
	wantBytes, err := heplan.ConvBytes(c, p.r.Bits)
	if err != nil {
		t.Fatal(err)
	}
	checkCost(t, p, c)
	if got := p.bytes() - before; got != wantBytes {
		t.Fatalf("Conv2D %+v l=%d: %d bytes, formula %d", c, p.r.Bits, got, wantBytes)
	}
	if got, want := p.rounds()-rounds, p.wantRounds(); got != want {
		t.Fatalf("Conv2D %+v: %d flights, want %d", c, got, want)
	}
}

func conv(n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, g, padEndH, padEndW int) ring.ConvGeom {
	return ring.ConvGeom{N: n, C: c, H: h, W: w, M: m, KH: kh, KW: kw, SH: sh, SW: sw, PH: ph, PW: pw, DH: dh, DW: dw, Groups: g,
		OH: ringtest.OutSize(h, kh, sh, ph+padEndH, dh), OW: ringtest.OutSize(w, kw, sw, pw+padEndW, dw)}
}

func TestConv2D(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	cases := []struct {
		name string
		g    ring.ConvGeom
	}{
		{"plain3x3", conv(1, 2, 5, 5, 3, 3, 3, 1, 1, 0, 0, 1, 1, 1, 0, 0)},
		{"pad1", conv(1, 3, 6, 7, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)},
		{"stride2", conv(1, 2, 9, 8, 2, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 0)},
		{"dilation2", conv(1, 2, 9, 9, 2, 3, 2, 1, 1, 2, 1, 2, 2, 1, 2, 0)},
		{"groups", conv(1, 4, 6, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 2, 1, 1)},
		{"depthwise", conv(1, 3, 6, 5, 3, 3, 3, 2, 1, 1, 1, 1, 1, 3, 1, 1)},
		{"batch2", conv(2, 2, 5, 6, 3, 3, 3, 1, 2, 1, 0, 1, 1, 1, 1, 0)},
		{"stride3-dilation2", conv(1, 2, 13, 11, 3, 3, 2, 3, 2, 2, 1, 2, 3, 1, 1, 0)},
		{"stride2-groups", conv(2, 4, 9, 10, 4, 3, 3, 2, 2, 1, 1, 1, 1, 2, 0, 1)},
		{"1d", conv(1, 3, 1, 20, 2, 1, 5, 1, 2, 0, 2, 1, 1, 1, 0, 2)},
		{"1x1", conv(1, 5, 4, 4, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0)},
		// 40 channels of 8×8 share input ciphertexts across groups.
		{"depthwise-shared", conv(1, 40, 6, 6, 40, 3, 3, 1, 1, 1, 1, 1, 1, 40, 1, 1)},
		// Channel blocks of 3 channels of 52×52 and groups of 2 channels: group 1 straddles two blocks.
		{"groups-straddle", conv(1, 6, 50, 50, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3, 1, 1)},
		// 2·100·100 = 20000 padded input positions > N: several spatial and channel blocks.
		{"larger-than-N", conv(1, 2, 98, 98, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)},
	}
	for _, l := range []int{32, 37, 41, 44} {
		p := newPair(t, l, Options{})
		for _, c := range cases {
			if testing.Short() && l != 37 && (c.name == "larger-than-N" || c.name == "groups-straddle") {
				continue
			}
			t.Run(fmt.Sprintf("l%d/%s", l, c.name), func(t *testing.T) { runConv(t, p, rng, c.g) })
		}
	}
}

// TestForcedPacking runs convolutions with packings forced at the limits of the layout: K·S = N
// exactly (the negacyclic wrap-around reaches coefficient O − 1), channel blocks straddling
// groups, several spatial blocks with several output channels per ciphertext, depthwise with
// stacked kernels.
func TestForcedPacking(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	p := newPair(t, 37, Options{})
	if p.s0.p.N() != 8192 {
		t.Fatalf("N = %d, the cases assume 8192", p.s0.p.N())
	}
	cases := []struct {
		name          string
		g             ring.ConvGeom
		cw, hw, ww, k int
	}{
		{"K·S=N", conv(1, 4, 14, 14, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2, 1, 1), 4, 16, 16, 8},
		{"straddle", conv(1, 4, 14, 14, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2, 1, 1), 3, 16, 16, 2},
		{"spatial-blocks", conv(2, 3, 14, 14, 8, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1), 1, 9, 9, 8},
		{"depthwise-stacked", conv(1, 8, 14, 14, 8, 3, 3, 1, 1, 1, 1, 1, 1, 8, 1, 1), 8, 16, 16, 4},
		{"dilated", conv(1, 2, 12, 12, 5, 3, 3, 1, 1, 2, 2, 2, 2, 1, 2, 2), 2, 16, 16, 5},
		// One output channel, 2 images × 49 spatial blocks: one weight group of 98 outputs.
		{"one-group-many-outputs", conv(2, 1, 14, 14, 1, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1), 1, 4, 4, 1},
	}
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.g
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			pl, err := heplan.ConvPlanBlocks(&p.s0.p.Params, c, heplan.Blocks{C: tc.cw, H: tc.hw, W: tc.ww, K: tc.k})
			if err != nil {
				t.Fatal(err)
			}
			w := ringtest.Values(p.r, rng, c.M*(c.C/c.Groups)*c.KH*c.KW)
			x := ringtest.Values(p.r, rng, c.N*c.C*c.H*c.W)
			x0, x1 := ringtest.Share(p.r, rng, x)
			n := c.N * c.M * c.OH * c.OW
			d0, d1 := make([]uint64, n), make([]uint64, n)
			before := p.bytes()
			testenv.MustBoth(t, func() error { return p.s0.run(ctx, "Conv2D", pl, d0, w, x0) },
				func() error { return p.s1.run(ctx, "Conv2D", pl, d1, nil, x1) })
			if got := ringtest.Reconstruct(p.r, d0, d1); !slices.Equal(got, ringtest.Conv(p.r, w, c, x)) {
				t.Fatalf("%s: wrong result", tc.name)
			}
			if got := p.bytes() - before; got != pl.Bytes {
				t.Fatalf("%s: %d bytes, formula %d", tc.name, got, pl.Bytes)
			}
		})
	}
}

// checkCost compares ConvCost with the plan the session ran.
func checkCost(t *testing.T, p *pair, c ring.ConvGeom) {
	t.Helper()
	cost, err := heplan.ConvCost(c, p.r.Bits)
	if err != nil {
		t.Fatal(err)
	}
	pl := p.s0.plans[c]
	if pl == nil {
		t.Fatal("no plan")
	}
	if cost.Bytes != pl.Bytes || cost.Uploads != pl.Inputs || cost.Replies != len(pl.Outputs) || cost.Products != pl.Products || cost.Weights != pl.Weights {
		t.Fatalf("ConvCost %+v, plan: %d bytes, %d uploads, %d replies, %d products, %d weights", cost, pl.Bytes, pl.Inputs, len(pl.Outputs), pl.Products, pl.Weights)
	}
}
