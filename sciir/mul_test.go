package sciir

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// TestMulRoundTrip writes and reads a program with the product of two shared tensors (opcode 20,
// appended to format version 1), broadcast on both operands.
func TestMulRoundTrip(t *testing.T) {
	p := &fixed.Program{Bits: 32, Scale: 5}
	x := p.AddTensor("x", ir.Shape{3, 1}, 5)
	y := p.AddTensor("y", ir.Shape{1, 4}, 5)
	m := p.AddTensor("m", ir.Shape{3, 4}, 10)
	tr := p.AddTensor("t", ir.Shape{3, 4}, 5)
	p.Inputs = []fixed.IO{{Name: "x", Tensor: x, Party: 1}, {Name: "y", Tensor: y, Party: 0}}
	p.Outputs = []fixed.IO{{Name: "t", Tensor: tr, Party: 1}}
	p.Instrs = []*fixed.Instr{
		{Op: fixed.OpInput, Out: x, Weight: -1, Index: 0},
		{Op: fixed.OpInput, Out: y, Weight: -1, Index: 1},
		{Op: fixed.OpMul, Out: m, In: []int{x, y}, Weight: -1, Source: "se_gate"},
		{Op: fixed.OpTrunc, Out: tr, In: []int{m}, Weight: -1, Shift: 5},
		{Op: fixed.OpOutput, Out: -1, In: []int{tr}, Weight: -1, Index: 0},
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(&File{Program: p, Backend: "sciot"}, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	in := got.Program.Instrs[2]
	if in.Op != fixed.OpMul || len(in.In) != 2 || in.In[0] != x || in.In[1] != y || in.Source != "se_gate" {
		t.Fatalf("mul instruction read back as %s", got.Program.InstrText(in))
	}
	if got.Program.Tensors[m].Scale != 10 {
		t.Fatalf("product scale %d", got.Program.Tensors[m].Scale)
	}
	var out bytes.Buffer
	if err := Disasm(&out, b); err != nil {
		t.Fatal(err)
	}
	if want := "= mul %0, %1"; !strings.Contains(out.String(), want) {
		t.Fatalf("disassembly lacks %q:\n%s", want, out.String())
	}
	// The opcode's file value is 20 (file format: never renumbered).
	if fixed.OpMul != 20 || fixed.OpMul.String() != "mul" {
		t.Fatalf("OpMul = %d (%s)", fixed.OpMul, fixed.OpMul)
	}
	// A product whose scales overflow the maximum is rejected.
	bad := *p
	bad.Tensors = append([]fixed.Tensor(nil), p.Tensors...)
	bad.Tensors[x].Scale, bad.Tensors[y].Scale = fixed.MaxScale, fixed.MaxScale
	if _, _, err := bad.InferInstr(p.Instrs[2]); err == nil {
		t.Fatal("product above the maximum scale accepted")
	}
}
