package passes

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// TestLowerLayerNorm lowers LayerNormalization (last axis and last two axes, with and without
// an affine part) at l = 40, s = 12 and compares the clear run with the float graph on inputs of
// several spreads (row variances from about 0.05 to 50, inside the widened rsqrt domain var + ε ≥
// 2^−2k = 1/64), reporting the largest error in ULP; it grows with the variance, as rsqrt's result
// at scale s loses relative precision.
func TestLowerLayerNorm(t *testing.T) {
	for _, c := range []struct {
		name   string
		axis   int
		affine bool
	}{{"last axis", 2, true}, {"last two axes", 1, false}} {
		b := newGB(9, ir.Shape{2, 3, 16})
		ins := []string{"x"}
		norm := ir.Shape{3, 16}[c.axis-1:]
		if c.affine {
			ins = append(ins, b.konst(norm, 1.5), b.konst(norm, 0.5))
		} else {
			ones := ir.NewTensor(norm)
			for i := range ones.Data {
				ones.Data[i] = 1
			}
			b.g.Consts["ones"] = ones
			ins = append(ins, "ones")
		}
		g := b.done(t, b.node(ir.LayerNormalization, ir.Attrs{"axis": ir.IntAttr(c.axis), "epsilon": ir.FloatAttr(1e-5)}, ins...))
		cg, _, err := clean(g, false)
		if err != nil {
			t.Fatal(err)
		}
		p, err := build(cg, 40, 12, true)
		if err != nil {
			t.Fatal(err)
		}
		ops := map[fixed.Opcode]int{}
		for _, in := range p.Instrs {
			ops[in.Op]++
		}
		if ops[fixed.OpRsqrt] != 1 || ops[fixed.OpDiv] != 2 {
			t.Fatalf("%s: program %v", c.name, ops)
		}
		rng := rand.New(rand.NewPCG(5, 6))
		for _, a := range []float32{0.5, 1, 4, 12} {
			x := randInput(rng, ir.Shape{2, 3, 16}, a)
			want := runFloat(t, g, x)
			got := runFixed(t, p, x)
			d := maxAbsDiff(got, want)
			t.Logf("%s, inputs in ±%g: largest error %.1f ULP (%.4f)", c.name, a, d*4096, d)
			if d > 0.035 || math.IsNaN(d) {
				t.Errorf("%s ±%g: fixed %v, float %v", c.name, a, got[:6], want[:6])
			}
		}
	}
}

// TestLowerErf sweeps the fixed-point erf (tanh(a·c + b·c³), c = clip(x, ±3)) over x ∈ [−5, 5]
// at l = 32, s = 12 and l = 40, s = 16 against math.Erf of the encoded input.
func TestLowerErf(t *testing.T) {
	for _, c := range []struct{ bits, scale int }{{32, 12}, {40, 16}} {
		n := 4001
		b := newGB(1, ir.Shape{1, n})
		g := b.done(t, b.node(ir.Erf, nil, "x"))
		p, err := build(g, c.bits, c.scale, true)
		if err != nil {
			t.Fatal(err)
		}
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(-5 + 10*float64(i)/float64(n-1))
		}
		got, sc := runFixedRaw(t, p, x)
		worst, mean := 0.0, 0.0
		for i, v := range got {
			xe := math.Floor(math.Ldexp(float64(x[i]), c.scale))
			e := math.Abs(float64(v) - math.Ldexp(math.Erf(math.Ldexp(xe, -c.scale)), sc))
			worst, mean = max(worst, e), mean+e/float64(n)
		}
		t.Logf("erf l=%d s=%d: max %.2f ULP, mean %.2f ULP (%.1e absolute)", c.bits, c.scale, worst, mean, math.Ldexp(worst, -c.scale))
		if math.Ldexp(worst, -c.scale) > 7e-4 {
			t.Errorf("erf l=%d s=%d: error %g", c.bits, c.scale, math.Ldexp(worst, -c.scale))
		}
	}
}

// TestLowerLayerNormValidatedVariance: a row whose variance lies below the default rsqrt domain
// (2^−2k = 1/64 at s = 12) is clamped without validation samples, and normalised accurately when
// the samples show its variance (k raised to cover half of it: layerNormShiftFor, here 7 instead
// of 3, which costs the other row's rsqrt four significant bits: its error grows from about 7 to
// about 130 ULP).
func TestLowerLayerNormValidatedVariance(t *testing.T) {
	b := newGB(10, ir.Shape{2, 16})
	g := b.done(t, b.node(ir.LayerNormalization, ir.Attrs{"axis": ir.IntAttr(1), "epsilon": ir.FloatAttr(1e-5)},
		"x", b.konst(ir.Shape{16}, 1.5), b.konst(ir.Shape{16}, 0.5)))
	cg, _, err := clean(g, false)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 8))
	sample := func() []float32 {
		x := randInput(rng, ir.Shape{2, 16}, 1)
		for i := range 16 {
			x[i] *= 0.02 // row 0: variance about 1.3·10^−4
		}
		return x
	}
	var samples []dataset.Sample
	for i := range 4 {
		samples = append(samples, dataset.Sample{Name: fmt.Sprint(i), Input: sample(), Label: -1})
	}
	errOf := func(opts Options) float64 {
		st, _, err := drive(&buildTable, cg, opts)
		if err != nil {
			t.Fatal(err)
		}
		x := sample()
		return maxAbsDiff(runFixed(t, st.p, x), runFloat(t, g, x))
	}
	plain := errOf(Options{Bits: 48, Scale: 12, Check: true})
	tuned := errOf(Options{Bits: 48, Scale: 12, Check: true, Samples: samples})
	t.Logf("largest error without samples %.4f, with %.4f", plain, tuned)
	if plain < 0.5 {
		t.Errorf("without samples the small-variance row should be clamped (error %.4f)", plain)
	}
	if tuned > 0.05 {
		t.Errorf("with samples the error is %.4f", tuned)
	}
	if k := layerNormShiftFor(12, 1.3e-4, 1e-5); k != 7 {
		t.Errorf("layerNormShiftFor(12, 1.3e-4, 1e-5) = %d, want 7 (2^-14 ≤ half of 1.4e-4)", k)
	}
	if k := layerNormShiftFor(12, 1, 1e-5); k != 3 {
		t.Errorf("layerNormShiftFor(12, 1, ε) = %d, want the default 3", k)
	}
	if k := layerNormShiftFor(12, 0, 0); k != 3 {
		t.Errorf("layerNormShiftFor(12, 0, 0) = %d, want the default 3", k)
	}
}
