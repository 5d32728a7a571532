package linear

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// runConv shares x, runs Conv2D at both parties and returns the reconstructed result.
func runConv(t *testing.T, p *pair, rng *rand.Rand, w []uint64, c ring.ConvGeom, x []uint64) []uint64 {
	t.Helper()
	x0, x1 := ringtest.Share(p.r, rng, x)
	n := c.N * c.M * c.OH * c.OW
	d0, d1 := make([]uint64, n), make([]uint64, n)
	ctx := context.Background()
	testenv.MustBoth(t, func() error { return p.s0.Conv2D(ctx, d0, w, c, x0) },
		func() error { return p.s1.Conv2D(ctx, d1, nil, c, x1) })
	for i := range d0 {
		if d0[i] > p.r.Mask() || d1[i] > p.r.Mask() {
			t.Fatalf("share %d not reduced: %#x / %#x", i, d0[i], d1[i])
		}
	}
	return ringtest.Reconstruct(p.r, d0, d1)
}

func convOperands(r ring.Ring, rng *rand.Rand, c ring.ConvGeom) (w, x []uint64) {
	w = ringtest.Values(r, rng, c.M*c.C/c.Groups*c.KH*c.KW)
	rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
	x = ringtest.Values(r, rng, c.N*c.C*c.H*c.W)
	rng.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	return
}

func TestConvCorrect(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	fixed := []ring.ConvGeom{
		// mnist-8's first layer: 5×5, same padding.
		{N: 1, C: 1, H: 28, W: 28, M: 8, OH: 28, OW: 28, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1, Groups: 1},
		// Batch 2, strided, dilated, grouped, asymmetric padding (end padding 0 rows, 1 column).
		{N: 2, C: 4, H: 7, W: 6, M: 6, OH: 2, OW: 3, KH: 3, KW: 2, SH: 2, SW: 2, PH: 1, PW: 0, DH: 2, DW: 2, Groups: 2},
		// Depthwise with multiplier 2, stride 3 larger than the kernel: some inputs are never read.
		{N: 2, C: 3, H: 8, W: 8, M: 6, OH: 3, OW: 3, KH: 2, KW: 2, SH: 3, SW: 3, PH: 0, PW: 0, DH: 1, DW: 1, Groups: 3},
		// Every window in the padding: no input element is read, the result is zero.
		{N: 1, C: 2, H: 1, W: 1, M: 3, OH: 1, OW: 1, KH: 1, KW: 1, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1},
		// A 1-D convolution.
		{N: 1, C: 2, H: 1, W: 9, M: 2, OH: 1, OW: 4, KH: 1, KW: 3, SH: 1, SW: 2, PH: 0, PW: 2, DH: 1, DW: 2, Groups: 1},
	}
	for li, l := range []int{2, 8, 17, 32, 41, 64} {
		for _, streams := range []int{1, 2} {
			// A small budget and split threshold force several chunks and both streams.
			p := newPair(t, l, Options{Budget: 4096, MinSplit: 64, OneBatch: streams == 2}, streams)
			shapes := slices.Clone(fixed)
			for i := 0; i < 6; i++ {
				shapes = append(shapes, ringtest.RandomConvGeom(rng, 9))
			}
			for si, c := range shapes {
				if err := c.Validate(); err != nil {
					t.Fatalf("shape %d %+v: %v", si, c, err)
				}
				if li > 1 && si == 0 {
					continue // the large case once per stream count is enough
				}
				w, x := convOperands(p.r, rng, c)
				got := runConv(t, p, rng, w, c, x)
				if want := ringtest.Conv(p.r, w, c, x); !slices.Equal(got, want) {
					t.Fatalf("l=%d streams=%d shape %d %+v: wrong convolution", l, streams, si, c)
				}
			}
		}
	}
}

// TestConvCommunication asserts the traffic of Conv2D against ConvBits plus the OT layer's
// per-batch constants (a 24-byte header and an 8-byte acknowledgement per chunk), the padding of
// the IKNP matrix, and the byte rounding of flips and correction frames; and the flights exactly.
func TestConvCommunication(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, tc := range []struct {
		c       ring.ConvGeom
		l       int
		streams int
	}{
		// mnist-8's second layer, 8→16 channels, 14×14, 5×5 same padding, l = 28.
		{ring.ConvGeom{N: 1, C: 8, H: 14, W: 14, M: 16, OH: 14, OW: 14, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1, Groups: 1}, 28, 1},
		// 3×3 same, several frames per chunk, two streams.
		{ring.ConvGeom{N: 1, C: 4, H: 16, W: 16, M: 16, OH: 16, OW: 16, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}, 32, 2},
		// Batch 2, grouped, strided, dilated, odd l (frames end inside a byte).
		{ring.ConvGeom{N: 2, C: 4, H: 9, W: 9, M: 4, OH: 4, OW: 4, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 2, DW: 2, Groups: 2}, 37, 1},
	} {
		c := tc.c
		t.Run(fmt.Sprintf("%dx%dx%dx%d_k%d_l%d_s%d", c.N, c.C, c.H, c.W, c.KH, tc.l, tc.streams), func(t *testing.T) {
			p := newPair(t, tc.l, Options{}, tc.streams)
			w, x := convOperands(p.r, rng, c)
			before := p.stats()
			if got := runConv(t, p, rng, w, c, x); !slices.Equal(got, ringtest.Conv(p.r, w, c, x)) {
				t.Fatal("wrong convolution")
			}
			d := p.stats().Sub(before)
			formula := ConvBits(c, tc.l)
			// Chunks and frames, as the streams cut them.
			ix := newConvIndex(c)
			cg, mg := c.C/c.Groups, c.M/c.Groups
			prod := &convProduct{ix: ix, cg: cg, mg: mg, kk: c.KH * c.KW, p: c.OH * c.OW, nt: len(ix.touched)}
			ce := prod.chunk(tc.l, DefaultBudget)
			E := c.N * cg * len(ix.touched)
			chunks, frames, parts := 0, 0, 0
			for g := 0; g < c.Groups; g++ {
				for _, pt := range p.s0.partsOf(E, c.N*cg*len(ix.k)) {
					parts++
					for c0 := pt[0]; c0 < pt[1]; c0 += ce {
						c1 := min(c0+ce, pt[1])
						chunks++
						for f0 := c0; f0 < c1; frames++ {
							f0, _ = prod.frame(f0, c1, tc.l*(tc.l+1)/2)
						}
					}
				}
			}
			payload := 8 * (d.PayloadSent() - int64(chunks)*(24+8))
			t.Logf("measured %d payload bits (%d chunks, %d frames), formula %d, im2col formula %d (%.1f%% less)",
				8*d.PayloadSent(), chunks, frames, formula, ConvIm2colBits(c, tc.l, false),
				100*(1-float64(formula)/float64(ConvIm2colBits(c, tc.l, false))))
			slack := int64(chunks*(128*63+7) + frames*7)
			if payload < formula || payload > formula+slack {
				t.Errorf("payload %d bits (without batch constants), formula %d, allowed padding %d", payload, formula, slack)
			}
			if want := int64(2*chunks + 2*parts); d.Rounds != want {
				t.Errorf("%d flights, want %d", d.Rounds, want)
			}
			if formula >= ConvIm2colBits(c, tc.l, false) || !p.s0.ConvDirect(c) {
				t.Errorf("the direct convolution is not cheaper than im2col for %+v", c)
			}
		})
	}
}

// TestConvBitsFormula checks ConvBits and ConvIm2colBits on shapes worked by hand.
func TestConvBitsFormula(t *testing.T) {
	const l = 28
	half := int64(l * (l + 1) / 2)
	// mnist-8's first layer: 28×28, 5×5, padding 2. Along an axis, position i is read by
	// min(i, 2) + 1 + min(27−i, 2) offsets: 5 inside, 4 and 3 at the two rows next to each edge,
	// so each axis has 28·5 − 2·(1+2) = 134 reads, and a plane 134² = 17,956 pairs of the im2col
	// matrix's 25·784 = 19,600 entries; every position is read.
	c := ring.ConvGeom{N: 1, C: 1, H: 28, W: 28, M: 8, OH: 28, OW: 28, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1, Groups: 1}
	if got, want := ConvBits(c, l), 784*l*(Lambda+1)+8*17956*half; got != int64(want) {
		t.Errorf("ConvBits = %d, want %d", got, want)
	}
	if got, want := ConvIm2colBits(c, l, false), MatMulBits(8, 25, 784, l); got != want {
		t.Errorf("ConvIm2colBits = %d, want %d", got, want)
	}
	if got, want := ConvIm2colBits(c, l, true), MatMulBits(8, 25, 784, l)+25*784*l; got != int64(want) {
		t.Errorf("ConvIm2colBits one-batch = %d, want %d", got, want)
	}
	// Stride 3 with a 2×2 kernel reads 2 of every 3 rows and columns: 8×8 input, 3×3 output, 6×6
	// positions read once each; groups split the channels.
	c = ring.ConvGeom{N: 2, C: 6, H: 8, W: 8, M: 4, OH: 3, OW: 3, KH: 2, KW: 2, SH: 3, SW: 3, PH: 0, PW: 0, DH: 1, DW: 1, Groups: 2}
	if got, want := ConvBits(c, l), 2*6*36*l*(Lambda+1)+2*6*2*36*half; got != int64(want) {
		t.Errorf("strided ConvBits = %d, want %d", got, want)
	}
	if got, want := ConvIm2colBits(c, l, false), 2*MatMulBits(2, 3*4, 2*9, l); got != want {
		t.Errorf("strided ConvIm2colBits = %d, want %d", got, want)
	}
	// Invalid shapes give 0, not a panic.
	for _, bad := range []ring.ConvGeom{{}, {N: 1, C: 1, H: -3, W: 1, M: 1, OH: 1, OW: 1, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}} {
		if ConvBits(bad, l) != 0 || ConvIm2colBits(bad, l, true) != 0 || ConvDirectFor(bad, l, false) {
			t.Errorf("%+v: non-zero cost or a direct choice for an invalid shape", bad)
		}
	}
}

// TestConvDirectChoice checks the per-layer choice: every kernel with more than one offset, or with
// padding, goes direct; a 1×1 convolution without padding (where the im2col matrix holds every
// read element exactly once) stays a matrix product in both modes.
func TestConvDirectChoice(t *testing.T) {
	for _, one := range []bool{false, true} {
		p := newPair(t, 41, Options{OneBatch: one}, 1)
		base := ring.ConvGeom{N: 1, C: 64, H: 8, W: 8, M: 64, OH: 8, OW: 8, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}
		k3 := base
		k3.KH, k3.KW, k3.PH, k3.PW = 3, 3, 1, 1
		strided := base
		strided.SH, strided.SW, strided.OH, strided.OW = 2, 2, 4, 4
		padded := base
		padded.PH, padded.PW, padded.OH, padded.OW = 1, 1, 10, 10
		bad := base
		bad.Groups = 3
		wide := k3
		wide.M, wide.KH, wide.KW, wide.PH, wide.PW = 8192, 9, 9, 4, 4 // pads of 8192·81 values of 41 bits
		for _, tc := range []struct {
			name string
			c    ring.ConvGeom
			want bool
		}{{"1x1", base, false}, {"3x3", k3, true}, {"1x1 stride 2", strided, false}, {"1x1 padded", padded, true},
			{"invalid", bad, false}, {"too wide", wide, false}} {
			if got := p.s0.ConvDirect(tc.c); got != tc.want {
				t.Errorf("one-batch %v, %s: ConvDirect = %v, want %v (direct %d bits, im2col %d)", one, tc.name, got, tc.want,
					ConvBits(tc.c, 41), ConvIm2colBits(tc.c, 41, one))
			}
		}
		if wide.M*81*41 <= maxPadBits {
			t.Fatal("the wide case's pads fit; make it wider")
		}
	}
}

func TestConvArgumentErrors(t *testing.T) {
	p := newPair(t, 16, Options{}, 1)
	ctx := context.Background()
	c := ring.ConvGeom{N: 1, C: 2, H: 3, W: 3, M: 2, OH: 3, OW: 3, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}
	bad := c
	bad.Groups = 4
	neg := c
	neg.PH = -1
	huge := c
	huge.N, huge.C = 1<<16, 1<<16
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"p0 weights", p.s0.Conv2D(ctx, make([]uint64, 18), make([]uint64, 17), c, make([]uint64, 18)), "weights"},
		{"p1 weights", p.s1.Conv2D(ctx, make([]uint64, 18), make([]uint64, 36), c, make([]uint64, 18)), "only party 0"},
		{"operand", p.s1.Conv2D(ctx, make([]uint64, 18), nil, c, make([]uint64, 17)), "operand"},
		{"result", p.s1.Conv2D(ctx, make([]uint64, 19), nil, c, make([]uint64, 18)), "result"},
		{"groups", p.s1.Conv2D(ctx, nil, nil, bad, nil), "divisible"},
		{"padding", p.s1.Conv2D(ctx, nil, nil, neg, nil), "padding"},
		{"huge", p.s1.Conv2D(ctx, nil, nil, huge, nil), "2^30"},
	}
	for _, tc := range cases {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one mentioning %q", tc.name, tc.err, tc.want)
		}
	}
	// Argument errors leave the session usable.
	rng := rand.New(rand.NewPCG(5, 5))
	w, x := convOperands(p.r, rng, c)
	if got := runConv(t, p, rng, w, c, x); !slices.Equal(got, ringtest.Conv(p.r, w, c, x)) {
		t.Fatal("wrong convolution after argument errors")
	}
}

func TestConvNoReadsNoTraffic(t *testing.T) {
	p := newPair(t, 32, Options{}, 1)
	c := ring.ConvGeom{N: 2, C: 2, H: 1, W: 1, M: 3, OH: 1, OW: 1, KH: 1, KW: 1, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}
	rng := rand.New(rand.NewPCG(6, 6))
	w, x := convOperands(p.r, rng, c)
	before := p.stats()
	got := runConv(t, p, rng, w, c, x)
	if slices.ContainsFunc(got, func(v uint64) bool { return v != 0 }) {
		t.Fatalf("a convolution that reads only padding gave %v", got)
	}
	if d := p.stats().Sub(before); d.BytesSent != 0 {
		t.Fatalf("it sent %d bytes", d.BytesSent)
	}
}
