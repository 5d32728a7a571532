package he

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/ring"
)

func runMatMul(t *testing.T, p *pair, rng *rand.Rand, m, k, n int) {
	t.Helper()
	w := values(p.r, rng, m*k)
	x := values(p.r, rng, k*n)
	rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
	x0, x1 := share(p.r, rng, x)
	d0, d1 := make([]uint64, m*n), make([]uint64, m*n)
	before := p.bytes()
	ctx := context.Background()
	testenv.MustBoth(t, func() error { return p.s0.MatMul(ctx, d0, w, m, k, n, x0) },
		func() error { return p.s1.MatMul(ctx, d1, nil, m, k, n, x1) })
	want := make([]uint64, m*n)
	p.r.MatMul(want, w, m, k, n, x)
	if got := reconstruct(p.r, d0, d1); !slices.Equal(got, want) {
		bad := 0
		for i := range got {
			if got[i] != want[i] {
				bad++
			}
		}
		t.Fatalf("MatMul %d×%d×%d l=%d: %d of %d wrong", m, k, n, p.r.Bits, bad, len(want))
	}
	wantBytes, err := MatMulBytes(m, k, n, p.r.Bits)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.bytes() - before; got != wantBytes {
		t.Fatalf("MatMul %d×%d×%d l=%d: %d bytes, formula %d", m, k, n, p.r.Bits, got, wantBytes)
	}
}

func TestMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, l := range []int{32, 37, 41, 44} {
		p := newPair(t, l, Options{})
		shapes := [][3]int{{1, 1, 1}, {3, 5, 2}, {17, 300, 1}}
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
	w := values(p.r, rng, c.M*(c.C/c.Groups)*c.KH*c.KW)
	x := values(p.r, rng, c.N*c.C*c.H*c.W)
	rng.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	x0, x1 := share(p.r, rng, x)
	n := c.N * c.M * c.OH * c.OW
	d0, d1 := make([]uint64, n), make([]uint64, n)
	before := p.bytes()
	ctx := context.Background()
	testenv.MustBoth(t, func() error { return p.s0.Conv2D(ctx, d0, w, c, x0) },
		func() error { return p.s1.Conv2D(ctx, d1, nil, c, x1) })
	want := refConv(p.r, w, c, x)
	if got := reconstruct(p.r, d0, d1); !slices.Equal(got, want) {
		bad := 0
		for i := range got {
			if got[i] != want[i] {
				bad++
			}
		}
		t.Fatalf("Conv2D %+v l=%d: %d of %d wrong", c, p.r.Bits, bad, len(want))
	}
	wantBytes, err := ConvBytes(c, p.r.Bits)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.bytes() - before; got != wantBytes {
		t.Fatalf("Conv2D %+v l=%d: %d bytes, formula %d", c, p.r.Bits, got, wantBytes)
	}
}

func conv(n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, g, padEndH, padEndW int) ring.ConvGeom {
	return ring.ConvGeom{N: n, C: c, H: h, W: w, M: m, KH: kh, KW: kw, SH: sh, SW: sw, PH: ph, PW: pw, DH: dh, DW: dw, Groups: g,
		OH: outSize(h, kh, sh, ph+padEndH, dh), OW: outSize(w, kw, sw, pw+padEndW, dw)}
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
		{"1d", conv(1, 3, 1, 20, 2, 1, 5, 1, 2, 0, 2, 1, 1, 1, 0, 2)},
		{"1x1", conv(1, 5, 4, 4, 3, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0)},
		// 2·100·100 = 20000 padded input positions > N: several spatial and channel blocks.
		{"larger-than-N", conv(1, 2, 98, 98, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1)},
	}
	for _, l := range []int{32, 37, 41, 44} {
		p := newPair(t, l, Options{})
		for _, c := range cases {
			if testing.Short() && l != 37 && c.name == "larger-than-N" {
				continue
			}
			t.Run(fmt.Sprintf("l%d/%s", l, c.name), func(t *testing.T) { runConv(t, p, rng, c.g) })
		}
	}
}
