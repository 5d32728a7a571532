package sciir

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// checkVersionRoundTrip writes p (which must validate), expects it written as version v, reads it
// back unchanged, finds each of wants in its disassembly, and expects the same bytes labelled
// version v−1 to be refused with a version error.
func checkVersionRoundTrip(t *testing.T, p *fixed.Program, v int, wants ...string) {
	t.Helper()
	if err := versionRoundTrip(t, p, v, wants...); !strings.Contains(err.Error(), fmt.Sprintf("version %d file", v-1)) {
		t.Errorf("the program labelled version %d: got %v", v-1, err)
	}
}

// versionRoundTrip is checkVersionRoundTrip without the version error's text: it returns the
// error of reading the bytes labelled version v−1 (which must be a format error).
func versionRoundTrip(t *testing.T, p *fixed.Program, v int, wants ...string) error {
	t.Helper()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(&File{Program: p, Backend: "sciot"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if got := binary.LittleEndian.Uint16(b[len(Magic):]); int(got) != v {
		t.Errorf("written as version %d, want %d", got, v)
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
	for _, s := range append([]string{fmt.Sprintf("sciir version %d", v)}, wants...) {
		if !strings.Contains(d.String(), s) {
			t.Errorf("disassembly lacks %q:\n%s", s, d.String())
		}
	}
	tags, payloads := splitSections(b)
	_, err = Unmarshal(joinSections(byte(v-1), tags, payloads))
	if !errors.Is(err, ErrFormat) {
		t.Fatalf("the program labelled version %d: got %v", v-1, err)
	}
	return err
}

// TestVersion6RoundTrip: log and gather (version 6) are written, read back and disassembled, and
// refused in a version 5 file; a gather with an index out of range is refused by the checker.
func TestVersion6RoundTrip(t *testing.T) {
	p := &fixed.Program{Bits: 32, Scale: 12}
	x := p.AddTensor("x", ir.Shape{2, 3, 4}, 12)
	g := p.AddTensor("g", ir.Shape{2, 2, 4}, 12)
	y := p.AddTensor("y", ir.Shape{2, 2, 4}, 12)
	p.Inputs = []fixed.IO{{Name: "x", Tensor: x, Party: 1}}
	p.Outputs = []fixed.IO{{Name: "y", Tensor: y, Party: 1}}
	p.Instrs = []*fixed.Instr{
		{Op: fixed.OpInput, Out: x, Weight: -1},
		{Op: fixed.OpGather, Out: g, In: []int{x}, Weight: -1, Select: [][]int{{}, {2, 0}, {}}},
		{Op: fixed.OpLog, Out: y, In: []int{g}, Weight: -1},
		{Op: fixed.OpOutput, Out: -1, In: []int{y}, Weight: -1},
	}
	checkVersionRoundTrip(t, p, 6, "= gather %0 axis1=2,0", "= log %1")
	p.Instrs[1].Select[1] = []int{3, 0}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("gather of index 3 of 3: got %v", err)
	}
}

// TestBatchMatMulEngineRoundTrip: a bmatmul with a planned engine is written as version 6 (the
// engine byte), read back with it; without one it stays version 5 (TestBatchMatMulRoundTrip). A
// version 5 reader finds a byte it does not expect: a format error.
func TestBatchMatMulEngineRoundTrip(t *testing.T) {
	versionRoundTrip(t, bmatmulProgram(fixed.EngineHE), 6, "= bmatmul %0, %1 by he")
}
