package sciir

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// bcircProgram is x [8, 1] → matmul by a 4×8 weight with 4×4 circulant blocks (block size
// recorded when block > 0) → output.
func bcircProgram(block int, spectral bool) *fixed.Program {
	p := &fixed.Program{Bits: 32, Scale: 0}
	x := p.AddTensor("x", ir.Shape{8, 1}, 0)
	y := p.AddTensor("y", ir.Shape{4, 1}, 0)
	first := [][]int64{{1, -2, 3, 0}, {5, 0, -7, 2}}
	w := make([]int64, 32)
	for i := 0; i < 4; i++ {
		for j := 0; j < 8; j++ {
			w[i*8+j] = first[j/4][((j%4)-i+4)%4]
		}
	}
	wi := p.AddWeight("w", ir.Shape{4, 8}, 0, w)
	p.Inputs = []fixed.IO{{Name: "x", Tensor: x, Party: 1}}
	p.Outputs = []fixed.IO{{Name: "y", Tensor: y, Party: 1}}
	p.Instrs = []*fixed.Instr{
		{Op: fixed.OpInput, Out: x, Weight: -1},
		{Op: fixed.OpMatMul, Out: y, In: []int{x}, Weight: wi, Block: block, Spectral: spectral, Source: "fc"},
		{Op: fixed.OpOutput, Out: -1, In: []int{y}, Weight: -1},
	}
	return p
}

// TestBlockCirculantRoundTrip: a matmul with a recorded block size is written as version 8 and
// read back with it and its evaluation flag; disasm shows them; without one the older version is
// kept; a bad flag byte is refused, and a recorded structure the weights lack fails validation.
func TestBlockCirculantRoundTrip(t *testing.T) {
	for _, spectral := range []bool{false, true} {
		p := bcircProgram(4, spectral)
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		b, err := Marshal(&File{Program: p}, true)
		if err != nil {
			t.Fatal(err)
		}
		if v := binary.LittleEndian.Uint16(b[8:]); v != 8 {
			t.Fatalf("written as version %d, want 8", v)
		}
		got, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if in := got.Program.Instrs[1]; in.Block != 4 || in.Spectral != spectral || in.Source != "fc" {
			t.Fatalf("matmul read back as %s", got.Program.InstrText(in))
		}
		b2, err := Marshal(got, true)
		if err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("written again: %v (equal %v)", err, bytes.Equal(b, b2))
		}
		var out bytes.Buffer
		if err := Disasm(&out, b); err != nil {
			t.Fatal(err)
		}
		how := "dense"
		if spectral {
			how = "frequency domain"
		}
		for _, want := range []string{"matmul %0, w0 block-circulant 4x4 (fhe: " + how + ")", "sciir version 8"} {
			if !strings.Contains(out.String(), want) {
				t.Errorf("disasm lacks %q:\n%s", want, out.String())
			}
		}
		if spectral {
			// The flag byte follows the engine and block bytes at the end of the instruction.
			i := bytes.Index(b, []byte("fc"))
			flag := i + 2 + 1 + 1
			if b[flag] != 1 || b[flag-1] != 4 {
				t.Fatalf("block bytes not where expected: %v", b[flag-2:flag+1])
			}
			bad := append([]byte(nil), b...)
			bad[flag] = 9
			if _, err := Unmarshal(rechecksum(bad)); err == nil || !strings.Contains(err.Error(), "frequency-domain flag") {
				t.Errorf("bad flag: %v", err)
			}
		}
	}
	old := bcircProgram(0, false)
	ob, err := Marshal(&File{Program: old}, true)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(ob[8:]); v != 2 {
		t.Fatalf("a program without block-circulant matmuls written as version %d, want 2", v)
	}
	wrong := bcircProgram(4, false)
	wrong.Weights[0].Data[1]++
	if err := wrong.Validate(); err == nil || !strings.Contains(err.Error(), "not") {
		t.Errorf("a broken structure passed validation: %v", err)
	}
}
