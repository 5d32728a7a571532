package sciir

import (
	"bytes"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// lowBitsProgram is input x ∈ [0, 255] → addconst −128 → relu on the low 8 bits, over Z_2^64.
func lowBitsProgram(bits int, bounded bool) *fixed.Program {
	p := &fixed.Program{Bits: 64}
	x := p.AddTensor("x", ir.Shape{2, 3}, 0)
	c := p.AddTensor("c", ir.Shape{2, 3}, 0)
	r := p.AddTensor("r", ir.Shape{2, 3}, 0)
	w := p.AddWeight("zp", ir.Shape{}, 0, []int64{-128})
	p.Inputs = []fixed.IO{{Name: "x", Tensor: x, Party: 1, Bounded: bounded, Lo: 0, Hi: 255}}
	p.Outputs = []fixed.IO{{Name: "r", Tensor: r, Party: 1}}
	p.Instrs = []*fixed.Instr{
		{Op: fixed.OpInput, Out: x, Weight: -1},
		{Op: fixed.OpAddConst, Out: c, In: []int{x}, Weight: w},
		{Op: fixed.OpReLU, Out: r, In: []int{c}, Weight: -1, Bits: bits, Source: "clip"},
		{Op: fixed.OpOutput, Out: -1, In: []int{r}, Weight: -1},
	}
	return p
}

// TestLowBitsRoundTrip: a program with a low-bit relu and a bounded input is written as version
// 7 and read back with both; disasm shows them; one without either keeps version 2 and reads as
// before (no width byte); a bad range flag is refused.
func TestLowBitsRoundTrip(t *testing.T) {
	p := lowBitsProgram(8, true)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := p.CheckBounds(); err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(&File{Program: p}, true)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(b[8:]); v != 7 {
		t.Fatalf("written as version %d, want 7", v)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if in := got.Program.Instrs[2]; in.Bits != 8 || in.Source != "clip" {
		t.Fatalf("relu read back as %s", got.Program.InstrText(in))
	}
	if io := got.Program.Inputs[0]; !io.Bounded || io.Lo != 0 || io.Hi != 255 {
		t.Fatalf("input read back as %+v", io)
	}
	b2, err := Marshal(got, true)
	if err != nil || !bytes.Equal(b, b2) {
		t.Fatalf("written again: %v (equal %v)", err, bytes.Equal(b, b2))
	}
	var out bytes.Buffer
	if err := Disasm(&out, b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"= relu %1 low 8 bits", "from party 1 in [0, 255]", "sciir version 7"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("disasm lacks %q:\n%s", want, out.String())
		}
	}
	// Without bounds: the older layout and version.
	old := lowBitsProgram(0, false)
	ob, err := Marshal(&File{Program: old}, true)
	if err != nil {
		t.Fatal(err)
	}
	if v := binary.LittleEndian.Uint16(ob[8:]); v != 2 {
		t.Fatalf("a program without bounds written as version %d, want 2", v)
	}
	if _, err := Unmarshal(ob); err != nil {
		t.Fatal(err)
	}
	// A corrupted range flag (re-checksummed) is a format error.
	i := bytes.Index(b, []byte(tagInpt))
	bad := append([]byte(nil), b...)
	// section header (12), count u32, name (u16 length + "x"), tensor u32, party u8, scale u8, flag u8.
	flag := i + 12 + 4 + 2 + 1 + 4 + 1 + 1
	if bad[flag] != 1 {
		t.Fatalf("range flag not where expected (byte %d = %d)", flag, bad[flag])
	}
	bad[flag] = 7
	if _, err := Unmarshal(rechecksum(bad)); err == nil || !strings.Contains(err.Error(), "range flag") {
		t.Errorf("bad range flag: %v", err)
	}
	// A width the bound does not support is caught by the check with the weights.
	wrong := lowBitsProgram(7, true)
	if err := wrong.CheckBounds(); err == nil {
		t.Errorf("relu on 7 bits of [-128, 127] passed CheckBounds")
	}
}
