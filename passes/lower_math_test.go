package passes

import (
	"math"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// TestLowerSigmoidTanh lowers MatMul+Add -> Sigmoid -> MatMul+Add -> Tanh at l = 32, s = 12, checks the math
// opcodes and runs the program in the clear against the float graph (within the documented
// error plus the linear layers' quantisation).
func TestLowerSigmoidTanh(t *testing.T) {
	b := newGB(31, ir.Shape{1, 4})
	h := b.node(ir.Sigmoid, nil, b.node(ir.Add, nil, b.node(ir.MatMul, nil, "x", b.konst(ir.Shape{4, 3}, 1)), b.konst(ir.Shape{3}, 1)))
	out := b.node(ir.Tanh, nil, b.node(ir.Add, nil, b.node(ir.MatMul, nil, h, b.konst(ir.Shape{3, 2}, 1)), b.konst(ir.Shape{2}, 1)))
	g := b.done(t, out)
	cg, _, err := clean(g, false)
	if err != nil {
		t.Fatal(err)
	}
	p, err := build(cg, 32, 12, false)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[fixed.Opcode]int{}
	for _, in := range p.Instrs {
		ops[in.Op]++
	}
	if ops[fixed.OpSigmoid] != 1 || ops[fixed.OpTanh] != 1 {
		t.Fatalf("want one sigmoid and one tanh, got %v", ops)
	}
	x := []float32{0.5, -1.25, 2, 0.1}
	want := runFloat(t, g, x)
	got, sc := runFixedRaw(t, p, x)
	for i := range want {
		if d := math.Abs(float64(got[i])/math.Ldexp(1, sc) - float64(want[i])); d > 0.01 {
			t.Errorf("output %d: fixed %g, float %g", i, float64(got[i])/math.Ldexp(1, sc), want[i])
		}
	}
	if _, err := build(cg, 28, 12, false); err == nil {
		t.Error("sigmoid lowered at l = 28 < 2s+5")
	}
}
