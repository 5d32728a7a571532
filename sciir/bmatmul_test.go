package sciir

import (
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// TestBatchMatMulRoundTrip writes a program with bmatmul (as version 5), reads it back and
// disassembles it; the same bytes labelled version 4 are refused.
func TestBatchMatMulRoundTrip(t *testing.T) {
	p := bmatmulProgram(fixed.EngineDefault)
	y := p.Instrs[1].Out
	checkVersionRoundTrip(t, p, 5, "= bmatmul %0, %1")
	// Mismatched operands are refused by the checker.
	p.Tensors[y].Shape = ir.Shape{3, 4, 5}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "batched matmul") {
		t.Errorf("bmatmul of [2,3,4] and [3,4,5]: got %v", err)
	}
}

// bmatmulProgram is x [2,3,4] (party 1) times y [2,4,5] (party 0), both shared, by engine e.
func bmatmulProgram(e fixed.Engine) *fixed.Program {
	p := &fixed.Program{Bits: 32, Scale: 8}
	x := p.AddTensor("x", ir.Shape{2, 3, 4}, 8)
	y := p.AddTensor("y", ir.Shape{2, 4, 5}, 8)
	z := p.AddTensor("z", ir.Shape{2, 3, 5}, 16)
	p.Inputs = []fixed.IO{{Name: "x", Tensor: x, Party: 1}, {Name: "y", Tensor: y, Party: 0}}
	p.Outputs = []fixed.IO{{Name: "z", Tensor: z, Party: 1}}
	p.Instrs = []*fixed.Instr{
		{Op: fixed.OpInput, Out: x, Weight: -1},
		{Op: fixed.OpInput, Out: y, Weight: -1, Index: 1},
		{Op: fixed.OpBatchMatMul, Out: z, In: []int{x, y}, Weight: -1, Engine: e},
		{Op: fixed.OpOutput, Out: -1, In: []int{z}, Weight: -1},
	}
	return p
}
