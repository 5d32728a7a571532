package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// weightedFile is a one-layer program with a weight: x·W.
func weightedFile(t *testing.T) *sciir.File {
	t.Helper()
	p := &fixed.Program{Bits: 32, Scale: 4}
	x := p.AddTensor("x", ir.Shape{4, 1}, 4)
	p.Inputs = []fixed.IO{{Name: "x", Tensor: x, Party: 1}}
	p.Instrs = append(p.Instrs, &fixed.Instr{Op: fixed.OpInput, Out: x, Weight: -1})
	w := p.AddWeight("w", ir.Shape{2, 4}, 4, []int64{1, -2, 3, -4, 5, -6, 7, -8})
	mm := &fixed.Instr{Op: fixed.OpMatMul, In: []int{x}, Weight: w}
	s, sc, err := p.InferInstr(mm)
	if err != nil {
		t.Fatal(err)
	}
	mm.Out = p.AddTensor("y", s, sc)
	p.Instrs = append(p.Instrs, mm, &fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{mm.Out}, Weight: -1})
	p.Outputs = []fixed.IO{{Name: "y", Tensor: mm.Out, Party: 1}}
	for i := range p.Tensors {
		p.Tensors[i].Slot = i
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return &sciir.File{Program: p, Backend: "sciot"}
}

// TestWriteProgram: the program round-trips; the full program never goes to a file named like a
// client copy, and a refused or failed write leaves the previous file untouched.
func TestWriteProgram(t *testing.T) {
	f := weightedFile(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "m.sciir")
	if err := WriteProgram(path, f, true); err != nil {
		t.Fatal(err)
	}
	if g, err := sciir.ReadFile(path); err != nil || g.ID != f.ID || !g.Program.HasWeights() {
		t.Fatalf("round trip: %v", err)
	}
	if err := WriteProgram(filepath.Join(dir, "no", "dir.sciir"), f, true); err == nil {
		t.Error("write into a missing directory succeeded")
	}
	client := filepath.Join(dir, "m.client.sciir")
	if err := os.WriteFile(client, []byte("previous"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteProgram(client, f, true); err == nil || !strings.Contains(err.Error(), "client copy's name") {
		t.Fatalf("weights under a client name: %v", err)
	}
	if b, _ := os.ReadFile(client); string(b) != "previous" {
		t.Fatal("the refused write changed the file")
	}
	if err := WriteProgram(client, f, false); err != nil {
		t.Fatal(err)
	}
	if g, err := sciir.ReadFile(client); err != nil || g.Program.HasWeights() {
		t.Fatalf("client copy: %v", err)
	}
}
