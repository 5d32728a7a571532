package heplan

import (
	"math/bits"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

func conv(n, c, h, w, m, kh, kw, sh, sw, ph, pw, dh, dw, g, padEndH, padEndW int) ring.ConvGeom {
	return ring.ConvGeom{N: n, C: c, H: h, W: w, M: m, KH: kh, KW: kw, SH: sh, SW: sw, PH: ph, PW: pw, DH: dh, DW: dw, Groups: g,
		OH: ringtest.OutSize(h, kh, sh, ph+padEndH, dh), OW: ringtest.OutSize(w, kw, sw, pw+padEndW, dw)}
}

// TestParams checks the parameter table: every l of 1..64 has parameters within the HE-standard
// bound, with one reply prime up to l = 46 and two above.
func TestParams(t *testing.T) {
	for l := 1; l <= 64; l++ {
		p, err := ParamsFor(l)
		if err == nil && (p.R == 1) != (l <= 46) {
			t.Errorf("l=%d: %d reply primes", l, p.R)
		}
		if err != nil {
			t.Fatalf("l=%d: %v", l, err)
		}
		if p.LogQ() > MaxLogQ(p.LogN) {
			t.Errorf("l=%d: logQ %d over the bound %d for N=2^%d", l, p.LogQ(), MaxLogQ(p.LogN), p.LogN)
		}
	}
}

// TestPlanShapes checks the packing decisions the conv tests rely on: depthwise channels share an
// input ciphertext, a group can straddle two channel blocks, and an input larger than N is split.
func TestPlanShapes(t *testing.T) {
	p, err := ParamsFor(37)
	if err != nil {
		t.Fatal(err)
	}
	// 40 channels of 8×8 (padded): one input block could hold all of them, or 40 output
	// channels fit in one reply; the plan packs both ways instead of 40 + 40 ciphertexts.
	pl, err := ConvPlan(p, conv(1, 40, 6, 6, 40, 3, 3, 1, 1, 1, 1, 1, 1, 40, 1, 1))
	if err != nil || pl.Inputs+len(pl.Outputs) > 10 || len(pl.Outputs[0].Need) <= 36 {
		t.Fatalf("depthwise 40×6×6: %d inputs, %d outputs of %d coefficients (%v)", pl.Inputs, len(pl.Outputs), len(pl.Outputs[0].Need), err)
	}
	pl, err = ConvPlan(p, conv(1, 6, 50, 50, 3, 3, 3, 1, 1, 1, 1, 1, 1, 3, 1, 1))
	if err != nil {
		t.Fatal(err)
	}
	straddle := false
	for _, o := range pl.Outputs {
		straddle = straddle || len(o.In) > 1
	}
	if !straddle {
		t.Fatalf("groups of 2 channels of 52×52: no output reads two channel blocks (%d inputs)", pl.Inputs)
	}
	pl, err = ConvPlan(p, conv(1, 2, 98, 98, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1))
	if err != nil || pl.Inputs < 3 {
		t.Fatalf("2×100×100 padded input: %d input ciphertexts (%v), want ≥ 3", pl.Inputs, err)
	}
	if pl.Products == 0 || pl.Bytes <= 0 {
		t.Fatalf("plan without products or traffic: %+v", pl.Products)
	}
}

// TestBytesFormula checks ConvBytes and MatMulBytes against the closed form on shapes whose
// packing is forced: one upload and one reply.
func TestBytesFormula(t *testing.T) {
	for _, l := range []int{16, 37} {
		p, err := ParamsFor(l)
		if err != nil {
			t.Fatal(err)
		}
		N := p.N()
		sum := 0
		for _, q := range p.Q {
			sum += bits.Len64(q)
		}
		up := int64(4 + 16 + N*sum/8)
		w0, w1 := p.W0, p.W1
		reply := func(n int) int64 { return int64(4 + N*w1/8 + (n*w0+7)/8) }
		mm, err := MatMulBytes(1, 1, 1, l)
		if err != nil || mm != up+reply(1) {
			t.Errorf("l=%d MatMulBytes(1,1,1) = %d (%v), want %d", l, mm, err, up+reply(1))
		}
		// 5 outputs of one row each, one input block: one upload, one reply of 5 coefficients.
		mm, err = MatMulBytes(5, 7, 1, l)
		if err != nil || mm != up+reply(5) {
			t.Errorf("l=%d MatMulBytes(5,7,1) = %d (%v), want %d", l, mm, err, up+reply(5))
		}
		// 3×3 kernel over 2×6×6 with stride 2, pad 1: one upload, one reply of 4 channels × 9 outputs.
		g := conv(1, 2, 6, 6, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1)
		cb, err := ConvBytes(g, l)
		if err != nil || cb != up+reply(36) {
			t.Errorf("l=%d ConvBytes(%+v) = %d (%v), want %d", l, g, cb, err, up+reply(36))
		}
		if got := int64(p.UploadBytes() + 4); got != up {
			t.Errorf("l=%d UploadBytes %d, want %d", l, got-4, up-4)
		}
	}
}

// TestCostMatchesPlan checks ConvCost and MatMulCost, which skip building the index arrays,
// against the plans ConvPlan builds.
func TestCostMatchesPlan(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, l := range []int{16, 37, 64} {
		p, err := ParamsFor(l)
		if err != nil {
			t.Fatal(err)
		}
		geoms := []ring.ConvGeom{MatMulGeom(17, 300, 1), MatMulGeom(1001, 512, 1), MatMulGeom(3, 9000, 2)}
		for i := 0; i < 20; i++ {
			geoms = append(geoms, ringtest.RandomConvGeom(rng, 20))
		}
		for _, g := range geoms {
			pl, err := ConvPlan(p, g)
			if err != nil {
				t.Fatalf("l=%d %+v: %v", l, g, err)
			}
			c, err := ConvCost(g, l)
			if err != nil {
				t.Fatal(err)
			}
			if c.Bytes != pl.Bytes || c.Uploads != pl.Inputs || c.Replies != len(pl.Outputs) || c.Products != pl.Products || c.Weights != pl.Weights {
				t.Fatalf("l=%d %+v: ConvCost %+v, plan %d bytes, %d uploads, %d replies, %d products, %d weights",
					l, g, c, pl.Bytes, pl.Inputs, len(pl.Outputs), pl.Products, pl.Weights)
			}
		}
	}
}

// TestConvPlanBlocks checks that forced block sizes outside the layout are refused and that the
// chosen blocks give the chosen plan.
func TestConvPlanBlocks(t *testing.T) {
	p, err := ParamsFor(37)
	if err != nil {
		t.Fatal(err)
	}
	g := conv(1, 4, 14, 14, 8, 3, 3, 1, 1, 1, 1, 1, 1, 2, 1, 1)
	for _, b := range []Blocks{{0, 16, 16, 1}, {4, 16, 16, 9}, {5, 16, 16, 1}, {4, 2, 16, 1}, {4, 16, 2, 1}, {4, 16, 16, 9}, {8, 16, 16, 8}} {
		if _, err := ConvPlanBlocks(p, g, b); err == nil {
			t.Errorf("blocks %+v: no error", b)
		}
	}
	pl, err := ConvPlanBlocks(p, g, Blocks{C: 4, H: 16, W: 16, K: 8})
	if err != nil || pl.Inputs != 1 || len(pl.Outputs) != 1 {
		t.Fatalf("K·S = N: %d inputs, %d outputs (%v)", pl.Inputs, len(pl.Outputs), err)
	}
	bad := g
	bad.Groups = 3
	if _, err := ConvPlanBlocks(p, bad, Blocks{C: 1, H: 3, W: 3, K: 1}); err == nil {
		t.Error("invalid geometry: no error")
	}
}

// TestNTTPrimes checks the prime search on small cases against trial division.
func TestNTTPrimes(t *testing.T) {
	ps, err := nttPrimesBelow(20, 64, 5)
	if err != nil {
		t.Fatal(err)
	}
	prev := uint64(1<<20 + 1)
	for _, q := range ps {
		if q%64 != 1 || q >= prev {
			t.Fatalf("primes %v: %d is not ≡ 1 mod 64 below the previous", ps, q)
		}
		for d := uint64(2); d*d <= q; d++ {
			if q%d == 0 {
				t.Fatalf("%d is divisible by %d", q, d)
			}
		}
		// No prime ≡ 1 mod 64 skipped in between.
		for c := q + 64; c < prev; c += 64 {
			composite := false
			for d := uint64(2); d*d <= c; d++ {
				if c%d == 0 {
					composite = true
					break
				}
			}
			if !composite {
				t.Fatalf("prime %d skipped", c)
			}
		}
		prev = q
	}
	if _, err := nttPrimesBelow(8, 64, 10); err == nil {
		t.Error("10 primes of 8 bits ≡ 1 mod 64: no error")
	}
}

// TestTaplessPhasesDropped checks that a kernel smaller than its stride packs only the phases that
// meet a tap: a 1×1 convolution at stride 2 (rows and columns apart) costs exactly what the same
// convolution costs on the subsampled input at stride 1 (and a 2×2 kernel at stride 3 what the
// 1×1 convolution of its four phases costs), with every weight placed once.
func TestTaplessPhasesDropped(t *testing.T) {
	p, err := ParamsFor(37)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sub, strided ring.ConvGeom }{
		{conv(1, 64, 14, 14, 32, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0), conv(1, 64, 28, 28, 32, 1, 1, 2, 2, 0, 0, 1, 1, 1, 0, 0)},
		{conv(1, 16, 9, 5, 8, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 0), conv(1, 16, 9, 15, 8, 1, 1, 1, 3, 0, 0, 1, 1, 1, 0, 0)},
		// 2×2 at stride 3 meets phases 0 and 1 of 3 along each axis: 4 phases of 6 channels, a 1×1
		// convolution of 24 channels in 2 groups over the 4×4 phase images.
		{conv(2, 24, 4, 4, 6, 1, 1, 1, 1, 0, 0, 1, 1, 2, 0, 0), conv(2, 6, 12, 12, 6, 2, 2, 3, 3, 0, 0, 1, 1, 2, 0, 0)},
	} {
		a, err := ConvCost(c.sub, 37)
		if err != nil {
			t.Fatal(err)
		}
		b, err := ConvCost(c.strided, 37)
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Errorf("%+v: cost %+v, on the subsampled input %+v", c.strided, b, a)
		}
		pl, err := ConvPlan(p, c.strided)
		if err != nil {
			t.Fatal(err)
		}
		used := map[[2]int32]bool{}
		for i := 0; i < pl.Weights; i++ {
			for _, e := range pl.WElem[pl.WStart[i]:pl.WStart[i+1]] {
				used[[2]int32{int32(i), e}] = true
			}
		}
		if len(used) != c.strided.M*(c.strided.C/c.strided.Groups)*c.strided.KH*c.strided.KW {
			t.Errorf("%+v: %d weights placed", c.strided, len(used))
		}
	}
}
