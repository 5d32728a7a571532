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
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(&File{Program: p, Backend: "sciot"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(b[len(Magic):]); v != 5 {
		t.Errorf("written as version %d, want 5", v)
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
	if !strings.Contains(d.String(), "= bmatmul %0, %1") {
		t.Errorf("disassembly lacks the bmatmul:\n%s", d.String())
	}
	tags, payloads := splitSections(b)
	_, err = Unmarshal(joinSections(4, tags, payloads))
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "version 4 file") {
		t.Errorf("bmatmul in a version 4 file: got %v", err)
	}
	// Mismatched operands are refused by the checker.
	p.Tensors[y].Shape = ir.Shape{3, 4, 5}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "batched matmul") {
		t.Errorf("bmatmul of [2,3,4] and [3,4,5]: got %v", err)
	}
}
