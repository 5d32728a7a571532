package passes

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// TestLowerReduce lowers ReduceSum/ReduceMean/ReduceMax over various axes (with and without
// keepdims), a Concat with a constant operand, and x³ as products, and compares the clear run
// with the float graph.
func TestLowerReduce(t *testing.T) {
	red := func(op ir.Op, keep int, axes ...int) func(b *gb) string {
		return func(b *gb) string {
			return b.node(op, ir.Attrs{"axes": ir.IntsAttr(axes), "keepdims": ir.IntAttr(keep)}, "x")
		}
	}
	for _, c := range []struct {
		name  string
		build func(b *gb) string
		op    fixed.Opcode // must appear
		tol   float64
	}{
		{"sum 0,2 keep", red(ir.ReduceSum, 1, 0, 2), fixed.OpSumPool, 0.01},
		{"sum all", red(ir.ReduceSum, 0, 0, 1, 2), fixed.OpSumPool, 0.01},
		{"mean 1", red(ir.ReduceMean, 0, 1), fixed.OpDiv, 0.002},
		{"mean 0,2 keep", red(ir.ReduceMean, 1, 0, 2), fixed.OpDiv, 0.002},
		{"max 2", red(ir.ReduceMax, 0, 2), fixed.OpMaxPool, 0.001},
		{"max 0,1 keep", red(ir.ReduceMax, 1, 0, 1), fixed.OpMaxPool, 0.001},
		{"concat const", func(b *gb) string {
			return b.node(ir.Concat, ir.Attrs{"axis": ir.IntAttr(1)}, b.konst(ir.Shape{2, 2, 4}, 2), "x", b.konst(ir.Shape{2, 1, 4}, 2))
		}, fixed.OpConcat, 0.001},
		{"cube", func(b *gb) string { return b.node(ir.Mul, nil, b.node(ir.Mul, nil, "x", "x"), "x") }, fixed.OpMul, 0.01},
	} {
		b := newGB(21, ir.Shape{2, 3, 4})
		g := b.done(t, c.build(b))
		cg, _, err := clean(g, false)
		if err != nil {
			t.Fatal(err)
		}
		p, err := build(cg, 32, 12, true)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		found := false
		for _, in := range p.Instrs {
			found = found || in.Op == c.op
		}
		if !found {
			t.Errorf("%s: no %s instruction", c.name, c.op)
		}
		x := randInput(rand.New(rand.NewPCG(3, 4)), ir.Shape{2, 3, 4}, 2)
		want := runFloat(t, g, x)
		got := runFixed(t, p, x)
		if len(got) != len(want) {
			t.Fatalf("%s: %d outputs, want %d", c.name, len(got), len(want))
		}
		if d := maxAbsDiff(got, want); d > c.tol || math.IsNaN(d) {
			t.Errorf("%s: fixed %v, float %v (max diff %g)", c.name, got, want, d)
		}
	}
}

// TestReduceMeanFloor checks that ReduceMean is floor(sum/count) on the encoded values, exactly.
func TestReduceMeanFloor(t *testing.T) {
	b := newGB(1, ir.Shape{1, 3})
	g := b.done(t, b.node(ir.ReduceMean, ir.Attrs{"axes": ir.IntsAttr([]int{1}), "keepdims": ir.IntAttr(0)}, "x"))
	p, err := build(g, 32, 4, true)
	if err != nil {
		t.Fatal(err)
	}
	// Encoded at scale 4: −1 → −16, 0.0625 → 1, 0.125 → 2; sum −13, floor(−13/3) = −5.
	got, sc := runFixedRaw(t, p, []float32{-1, 0.0625, 0.125})
	if sc != 4 || len(got) != 1 || got[0] != -5 {
		t.Fatalf("got %v at scale %d, want [-5] at 4", got, sc)
	}
}
