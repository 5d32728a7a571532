package passes

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// softmaxRef is float64 softmax of the decoded fixed-point inputs v (at scale s) of one row.
func softmaxRef(v []int64, s int) []float64 {
	m := math.Inf(-1)
	for _, x := range v {
		m = math.Max(m, math.Ldexp(float64(x), -s))
	}
	out := make([]float64, len(v))
	sum := 0.0
	for i, x := range v {
		out[i] = math.Exp(math.Ldexp(float64(x), -s) - m)
		sum += out[i]
	}
	for i := range out {
		out[i] /= sum
	}
	return out
}

// softmaxULP compiles Softmax over the last axis of [rows, width] at (l, s), runs it in the clear
// on random rows with values uniform in [−a, a], and returns the max and mean error against
// float64 softmax of the encoded inputs, in units of 2^−s.
func softmaxULP(t *testing.T, bits, scale, rows, width int, a float32, seed uint64) (worst, mean float64) {
	t.Helper()
	b := newGB(seed, ir.Shape{rows, width})
	g := b.done(t, b.node(ir.Softmax, ir.Attrs{"axis": ir.IntAttr(1)}, "x"))
	cg, _, err := clean(g, true)
	if err != nil {
		t.Fatal(err)
	}
	p, err := build(cg, bits, scale, true)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, uint64(width)))
	x := randInput(rng, ir.Shape{rows, width}, a)
	got, sc := runFixedRaw(t, p, x)
	if sc != scale {
		t.Fatalf("output at scale %d", sc)
	}
	// The encoded inputs, as the VM sees them: floor(x·2^s).
	enc := make([]int64, len(x))
	for i, v := range x {
		enc[i] = int64(math.Floor(math.Ldexp(float64(v), scale)))
	}
	total := 0.0
	for r := 0; r < rows; r++ {
		ref := softmaxRef(enc[r*width:(r+1)*width], scale)
		for j, f := range ref {
			e := math.Abs(float64(got[r*width+j]) - math.Ldexp(f, scale))
			worst = max(worst, e)
			total += e
		}
	}
	return worst, total / float64(rows*width)
}

// TestSoftmaxULP measures the lowered softmax against float64 (docs/fixed-point.md, "Softmax")
// and requires at most 10 ULP (the
// error grows with the number of terms of the sum that are not negligible: each exp is floored).
func TestSoftmaxULP(t *testing.T) {
	for _, c := range []struct{ bits, scale int }{{32, 12}, {20, 6}, {40, 16}, {64, 12}} {
		var line string
		worstAll := 0.0
		for _, w := range []int{2, 10, 100, 1000} {
			rows := max(4, 20000/w)
			wWorst, wMean := 0.0, 0.0
			for _, a := range []float32{1, 4, 16} {
				worst, mean := softmaxULP(t, c.bits, c.scale, rows, w, a, uint64(w)+uint64(a))
				wWorst, wMean = max(wWorst, worst), wMean+mean/3
			}
			worstAll = max(worstAll, wWorst)
			line += fmt.Sprintf(" | %.2f / %.2f", wWorst, wMean)
		}
		t.Logf("softmax l=%d s=%d max / mean ULP for widths 2, 10, 100, 1000%s |", c.bits, c.scale, line)
		if worstAll > 10 {
			t.Errorf("softmax l=%d s=%d: %.3f ULP", c.bits, c.scale, worstAll)
		}
	}
}

// TestSoftmaxLowering checks the lowered form (one row max, exp, recip, one product; no Softmax
// left), a softmax over a middle axis and one mid-graph, in the clear against the float graph.
func TestSoftmaxLowering(t *testing.T) {
	b := newGB(7, ir.Shape{2, 5, 3})
	mid := b.node(ir.Softmax, ir.Attrs{"axis": ir.IntAttr(1)}, "x")
	flat := b.node(ir.Reshape, ir.Attrs{"shape": ir.IntsAttr([]int{2, 15})}, mid)
	h := b.node(ir.Add, nil, b.node(ir.MatMul, nil, flat, b.konst(ir.Shape{15, 4}, 1)), b.konst(ir.Shape{4}, 0.5))
	out := b.node(ir.Softmax, ir.Attrs{"axis": ir.IntAttr(1)}, h)
	g := b.done(t, out)
	for _, keep := range []bool{false, true} {
		cg, _, err := clean(g, keep)
		if err != nil {
			t.Fatal(err)
		}
		p, err := build(cg, 32, 12, true)
		if err != nil {
			t.Fatal(err)
		}
		ops := map[fixed.Opcode]int{}
		for _, in := range p.Instrs {
			ops[in.Op]++
		}
		n := 1
		if keep {
			n = 2
		}
		if ops[fixed.OpExp] != n || ops[fixed.OpRecip] != n || ops[fixed.OpMaxPool] != n || ops[fixed.OpMul] != n {
			t.Fatalf("keepSoftmax=%v: program %v", keep, ops)
		}
		x := randInput(rand.New(rand.NewPCG(1, 2)), ir.Shape{2, 5, 3}, 3)
		want := runFloat(t, cg, x)
		got := runFixed(t, p, x)
		if d := maxAbsDiff(got, want); d > 0.005 {
			t.Errorf("keepSoftmax=%v: fixed %v, float %v (max diff %g)", keep, got, want, d)
		}
	}
	if _, err := build(g, 28, 12, false); err == nil {
		t.Error("softmax lowered at l = 28 < 2s+5")
	}
}
