package sciir

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strings"
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
	p := mathProgram()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(&File{Program: p, Backend: "sciot"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(b[len(Magic):]); v != 3 {
		t.Errorf("written as version %d, want 3", v)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	var a, w bytes.Buffer
	_ = got.Program.WriteText(&a)
	_ = p.WriteText(&w)
	if a.String() != w.String() {
		t.Errorf("program changed:\n%s\nwant\n%s", a.String(), w.String())
	}
	var d bytes.Buffer
	if err := Disasm(&d, b); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"sciir version 3", "= sigmoid %0", "= rsqrt %0"} {
		if !strings.Contains(d.String(), s) {
			t.Errorf("disassembly lacks %q:\n%s", s, d.String())
		}
	}
	tags, payloads := splitSections(b)
	_, err = Unmarshal(joinSections(2, tags, payloads))
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "version 2 file") {
		t.Errorf("math opcodes in a version 2 file: got %v", err)
	}
	// A program without math opcodes is still written as version 2.
	old, err := Marshal(testFile(t), true)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(old[len(Magic):]); v != 2 {
		t.Errorf("program without math opcodes written as version %d, want 2", v)
	}
}
