package passes

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// softmaxRef is float64 softmax (log softmax with log) of the decoded fixed-point inputs v (at
// scale s) of one row.
func softmaxRef(v []int64, s int, log bool) []float64 {
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
	for i, x := range v {
		if log {
			out[i] = math.Ldexp(float64(x), -s) - m - math.Log(sum)
		} else {
			out[i] /= sum
		}
	}
	return out
}

// softmaxULP compiles Softmax over the last axis of [rows, width] at (l, s), runs it in the clear
// on random rows with values uniform in [−a, a], and returns the max and mean error against
// float64 softmax of the encoded inputs, in units of 2^−s.
func softmaxULP(t *testing.T, op ir.Op, bits, scale, rows, width int, a float32, seed uint64) (worst, mean float64) {
	t.Helper()
	b := newGB(seed, ir.Shape{rows, width})
	g := b.done(t, b.node(op, ir.Attrs{"axis": ir.IntAttr(1)}, "x"))
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
		ref := softmaxRef(enc[r*width:(r+1)*width], scale, op == ir.LogSoftmax)
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
func TestSoftmaxULP(t *testing.T) { testSoftmaxULP(t, ir.Softmax, 10) }

// TestLogSoftmaxULP measures the lowered log softmax the same way (docs/fixed-point.md,
// "LogSoftmax"): y = z − log(S) inherits log's error (≤ 1.5 ULP) plus the sum's relative error
// in units of 2^−s, which grows with the number of terms (each exp is floored, ~0.3 ULP low on
// average): at most 16 ULP.
func TestLogSoftmaxULP(t *testing.T) { testSoftmaxULP(t, ir.LogSoftmax, 16) }

func testSoftmaxULP(t *testing.T, op ir.Op, bound float64) {
	for _, c := range []struct{ bits, scale int }{{32, 12}, {20, 6}, {40, 16}, {64, 12}} {
		var line string
		worstAll := 0.0
		for _, w := range []int{2, 10, 100, 1000} {
			rows := max(4, 20000/w)
			wWorst, wMean := 0.0, 0.0
			for _, a := range []float32{1, 4, 16} {
				worst, mean := softmaxULP(t, op, c.bits, c.scale, rows, w, a, uint64(w)+uint64(a))
				wWorst, wMean = max(wWorst, worst), wMean+mean/3
			}
			worstAll = max(worstAll, wWorst)
			line += fmt.Sprintf(" | %.2f / %.2f", wWorst, wMean)
		}
		t.Logf("%s l=%d s=%d max / mean ULP for widths 2, 10, 100, 1000%s |", op, c.bits, c.scale, line)
		if worstAll > bound {
			t.Errorf("%s l=%d s=%d: %.3f ULP", op, c.bits, c.scale, worstAll)
		}
	}
}

// TestSoftmaxLowering checks the lowered forms — Softmax: one row max, exp, recip and one
// product; LogSoftmax: row max, exp, log and a subtraction, no reciprocal or product; none of the
// graph operators left — over a middle axis mid-graph and as the output (dropped unless kept), in
// the clear against the float graph.
func TestSoftmaxLowering(t *testing.T) {
	for _, op := range []ir.Op{ir.Softmax, ir.LogSoftmax} {
		b := newGB(7, ir.Shape{2, 5, 3})
		mid := b.node(op, ir.Attrs{"axis": ir.IntAttr(1)}, "x")
		flat := b.node(ir.Reshape, ir.Attrs{"shape": ir.IntsAttr([]int{2, 15})}, mid)
		h := b.node(ir.Add, nil, b.node(ir.MatMul, nil, flat, b.konst(ir.Shape{15, 4}, 1)), b.konst(ir.Shape{4}, 0.5))
		g := b.done(t, b.node(op, ir.Attrs{"axis": ir.IntAttr(1)}, h))
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
			want := map[fixed.Opcode]int{fixed.OpExp: n, fixed.OpMaxPool: n, fixed.OpRecip: n, fixed.OpMul: n, fixed.OpLog: 0}
			if op == ir.LogSoftmax {
				want[fixed.OpRecip], want[fixed.OpMul], want[fixed.OpLog] = 0, 0, n
			}
			for code, k := range want {
				if ops[code] != k {
					t.Fatalf("%s keepSoftmax=%v: %d %s in program %v, want %d", op, keep, ops[code], code, ops, k)
				}
			}
			x := randInput(rand.New(rand.NewPCG(1, 2)), ir.Shape{2, 5, 3}, 3)
			if d := maxAbsDiff(runFixed(t, p, x), runFloat(t, cg, x)); d > 0.01 {
				t.Errorf("%s keepSoftmax=%v: max |fixed − float| %g", op, keep, d)
			}
		}
		if _, err := build(g, 28, 12, false); err == nil {
			t.Errorf("%s lowered at l = 28 < 2s+5", op)
		}
	}
}
