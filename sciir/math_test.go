package sciir

import (
	"encoding/binary"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// mathProgram is x -> exp, sigmoid, tanh, recip, rsqrt, each revealed.
func mathProgram() *fixed.Program {
	p := &fixed.Program{Bits: 32, Scale: 12}
	x := p.AddTensor("x", ir.Shape{1, 4}, 12)
	p.Inputs = []fixed.IO{{Name: "x", Tensor: x, Party: 1}}
	p.Instrs = append(p.Instrs, &fixed.Instr{Op: fixed.OpInput, Out: x, Weight: -1})
	for i, op := range []fixed.Opcode{fixed.OpExp, fixed.OpSigmoid, fixed.OpTanh, fixed.OpRecip, fixed.OpRsqrt} {
		y := p.AddTensor(op.String(), ir.Shape{1, 4}, 12)
		p.Instrs = append(p.Instrs, &fixed.Instr{Op: op, Out: y, In: []int{x}, Weight: -1},
			&fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{y}, Weight: -1, Index: i})
		p.Outputs = append(p.Outputs, fixed.IO{Name: op.String(), Tensor: y, Party: 1})
	}
	return p
}

// TestMathOpcodesRoundTrip writes a program with the math opcodes (as version 3), reads it back
// and disassembles it; the same bytes labelled version 2 are refused.
func TestMathOpcodesRoundTrip(t *testing.T) {
	checkVersionRoundTrip(t, mathProgram(), 3, "= sigmoid %0", "= rsqrt %0")
	// A program without math opcodes is still written as version 2.
	old, err := Marshal(testFile(t), true)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(old[len(Magic):]); v != 2 {
		t.Errorf("program without math opcodes written as version %d, want 2", v)
	}
}
