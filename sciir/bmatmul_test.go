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
	p := &fixed.Program{Bits: 32, Scale: 8}
	x := p.AddTensor("x", ir.Shape{2, 3, 4}, 8)
	y := p.AddTensor("y", ir.Shape{2, 4, 5}, 8)
	z := p.AddTensor("z", ir.Shape{2, 3, 5}, 16)
	p.Inputs = []fixed.IO{{Name: "x", Tensor: x, Party: 1}, {Name: "y", Tensor: y, Party: 0}}
	p.Outputs = []fixed.IO{{Name: "z", Tensor: z, Party: 1}}
	p.Instrs = []*fixed.Instr{
		{Op: fixed.OpInput, Out: x, Weight: -1},
		{Op: fixed.OpInput, Out: y, Weight: -1, Index: 1},
		{Op: fixed.OpBatchMatMul, Out: z, In: []int{x, y}, Weight: -1},
		{Op: fixed.OpOutput, Out: -1, In: []int{z}, Weight: -1},
	}
	checkVersionRoundTrip(t, p, 5, "= bmatmul %0, %1")
	// Mismatched operands are refused by the checker.
	p.Tensors[y].Shape = ir.Shape{3, 4, 5}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "batched matmul") {
		t.Errorf("bmatmul of [2,3,4] and [3,4,5]: got %v", err)
	}
}
