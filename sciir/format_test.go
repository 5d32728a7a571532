package sciir

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// testProgram builds a small program that uses every immediate encoding of the file format.
func testProgram(t testing.TB) *fixed.Program {
	p := &fixed.Program{Bits: 37, Scale: 6}
	add := func(in *fixed.Instr, shape ...ir.Shape) int {
		t.Helper()
		if !in.Op.UsesWeight() {
			in.Weight = -1
		}
		if len(shape) > 0 {
			sc := p.Tensors[in.In[0]].Scale
			if in.Op == fixed.OpArgMax {
				sc = 0
			}
			in.Out = p.AddTensor("t", shape[0], sc)
		} else {
			s, sc, err := p.InferInstr(in)
			if err != nil {
				t.Fatalf("%s: %v", in.Op, err)
			}
			in.Out = p.AddTensor("t", s, sc)
		}
		in.Source = "node " + in.Op.String()
		p.Instrs = append(p.Instrs, in)
		return in.Out
	}
	x := p.AddTensor("x", ir.Shape{1, 2, 6, 6}, 6)
	p.Inputs = []fixed.IO{{Name: "image", Tensor: x, Party: 1}}
	p.Instrs = append(p.Instrs, &fixed.Instr{Op: fixed.OpInput, Out: x, Weight: -1})
	w := p.AddWeight("conv.w", ir.Shape{4, 1, 3, 3}, 6, seq(36, -17))
	c := add(&fixed.Instr{Op: fixed.OpConv, In: []int{x}, Weight: w, Group: 2,
		Win: ir.Window{Kernel: []int{3, 3}, Strides: []int{1, 1}, Pads: []int{1, 1, 1, 1}, Dilations: []int{1, 1}}})
	b := p.AddWeight("conv.b", ir.Shape{4, 1, 1}, 12, []int64{1 << 40, -(1 << 40), 3, -3})
	c = add(&fixed.Instr{Op: fixed.OpAddConst, In: []int{c}, Weight: b})
	m := add(&fixed.Instr{Op: fixed.OpMaxPool, In: []int{c},
		Win: ir.Window{Kernel: []int{2, 2}, Strides: []int{2, 2}, Pads: []int{0, 0, 1, 1}, Dilations: []int{1, 1}, CeilMode: true}})
	r := add(&fixed.Instr{Op: fixed.OpReLU, In: []int{m}})
	tr := add(&fixed.Instr{Op: fixed.OpTrunc, In: []int{r}, Shift: 6, NonNeg: true})
	pd := add(&fixed.Instr{Op: fixed.OpPad, In: []int{tr}, Pads: []int{0, 0, 1, 1, 0, 0, 1, 1}, PadMode: fixed.PadConstant, PadValue: -9})
	s := add(&fixed.Instr{Op: fixed.OpSumPool, In: []int{pd},
		Win: ir.Window{Kernel: []int{2, 2}, Strides: []int{2, 2}, Pads: []int{0, 0, 0, 0}, Dilations: []int{1, 1}}})
	d := add(&fixed.Instr{Op: fixed.OpDiv, In: []int{s}, Divisors: []int{4, 3, 2, 1}})
	tp := add(&fixed.Instr{Op: fixed.OpTranspose, In: []int{d}, Perm: []int{0, 2, 3, 1}})
	fl := add(&fixed.Instr{Op: fixed.OpReshape, In: []int{tp}}, ir.Shape{16, 1})
	mw := p.AddWeight("fc.w", ir.Shape{3, 16}, 6, seq(48, 5))
	mm := add(&fixed.Instr{Op: fixed.OpMatMul, In: []int{fl}, Weight: mw})
	up := add(&fixed.Instr{Op: fixed.OpScaleUp, In: []int{fl}, Shift: 6})
	_ = up
	mc := p.AddWeight("scale", ir.Shape{}, 6, []int64{-64})
	mu := add(&fixed.Instr{Op: fixed.OpMulConst, In: []int{mm}, Weight: mc})
	sb := add(&fixed.Instr{Op: fixed.OpSub, In: []int{mu, mu}})
	ad := add(&fixed.Instr{Op: fixed.OpAdd, In: []int{mu, sb}})
	cc := add(&fixed.Instr{Op: fixed.OpConcat, In: []int{ad, mu}, Axis: 0})
	am := add(&fixed.Instr{Op: fixed.OpArgMax, In: []int{cc}, Axis: 0}, ir.Shape{1})
	p.Outputs = []fixed.IO{{Name: "logits", Tensor: cc, Party: 1}, {Name: "class", Tensor: am, Party: 0}}
	p.Instrs = append(p.Instrs,
		&fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{cc}, Weight: -1, Index: 0},
		&fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{am}, Weight: -1, Index: 1})
	p.Compact()
	// Slots are assigned by the compiler's slots pass (passes.AssignSlots); the file format only
	// records them. Every tensor its own, numbered backwards so that slot != tensor id.
	for i := range p.Tensors {
		p.Tensors[i].Slot = len(p.Tensors) - 1 - i
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

func seq(n int, step int64) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = int64(i)*step - 1000*step
	}
	return v
}

func testFile(t testing.TB) *File {
	return &File{Program: testProgram(t), Backend: "sciot", Meta: Meta{
		Compiler: "test", Source: "m.onnx", SourceSHA256: strings.Repeat("ab", 32),
		Preprocess: &Preprocess{Width: 6, Height: 6, Channels: 1, Layout: "NCHW", Scale: 1.0 / 255,
			Mean: []float64{0.5}, Std: []float64{0.25}, Resize: "bilinear"},
		Autotune: &Autotune{Samples: 10, Labelled: true, Headroom: 1, Bits: 37, Scale: 6, FloatAcc: 0.9,
			Rows: []TuneRecord{{Bits: 37, Scale: 6, Accuracy: 0.9, Agreement: 1, BitsUsed: 36}}},
		Passes: []string{"folded 1 BatchNormalization"},
	}}
}

func TestRoundTrip(t *testing.T) {
	f := testFile(t)
	full, err := Marshal(f, true)
	if err != nil {
		t.Fatal(err)
	}
	id := f.ID
	got, err := Unmarshal(full)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id {
		t.Errorf("ID after reading %x, written %x", got.ID, id)
	}
	var a, b bytes.Buffer
	if err := got.Program.WriteText(&a); err != nil {
		t.Fatal(err)
	}
	if err := f.Program.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Errorf("program changed in the round trip:\n%s\nwant\n%s", a.String(), b.String())
	}
	for i, w := range got.Program.Weights {
		if !reflect.DeepEqual(w.Data, f.Program.Weights[i].Data) || !w.Shape.Equal(f.Program.Weights[i].Shape) {
			t.Errorf("weight %d changed", i)
		}
	}
	for i, in := range got.Program.Instrs {
		if in.Source != f.Program.Instrs[i].Source || in.NonNeg != f.Program.Instrs[i].NonNeg {
			t.Errorf("instruction %d changed", i)
		}
	}
	if !reflect.DeepEqual(got.Meta, f.Meta) || got.Backend != "sciot" {
		t.Errorf("metadata changed: %+v", got.Meta)
	}
	// Writing again gives the same bytes (the format is deterministic).
	again, err := Marshal(got, true)
	if err != nil || !bytes.Equal(again, full) {
		t.Errorf("re-encoding differs (err %v)", err)
	}
}

func TestClientCopy(t *testing.T) {
	f := testFile(t)
	full, err := Marshal(f, true)
	if err != nil {
		t.Fatal(err)
	}
	client, err := Marshal(f, false)
	if err != nil {
		t.Fatal(err)
	}
	c, err := Unmarshal(client)
	if err != nil {
		t.Fatal(err)
	}
	if c.ID != f.ID {
		t.Errorf("client copy has ID %x, full copy %x", c.ID, f.ID)
	}
	if c.Program.HasWeights() {
		t.Error("client copy has weights")
	}
	// The client copy is the full file without the weights section.
	if !bytes.Equal(client[:len(client)-16], full[:len(client)-16]) {
		t.Error("client copy is not a prefix of the full copy up to the END section")
	}
	// No weight tensor's encoding (as stored in the full copy) occurs in the client copy.
	for _, w := range f.Program.Weights {
		width := weightWidth(w.Data)
		var enc []byte
		for _, v := range w.Data {
			enc = binary.LittleEndian.AppendUint64(enc, uint64(v))[:len(enc)+width]
		}
		if !bytes.Contains(full, enc) {
			t.Fatalf("weight %s not found in the full copy: test is broken", w.Name)
		}
		if bytes.Contains(client, enc) {
			t.Errorf("weight %s occurs in the client copy", w.Name)
		}
	}
	if _, err := Marshal(&File{Program: c.Program}, true); err == nil {
		t.Error("writing a weightless program with weights succeeded")
	}
}

// rechecksum recomputes every section's CRC after a test edits a payload.
func rechecksum(b []byte) []byte {
	b = bytes.Clone(b)
	off := 12
	for off+16 <= len(b) {
		n := int(binary.LittleEndian.Uint64(b[off+4:]))
		end := off + 12 + n
		if end+4 > len(b) {
			break
		}
		binary.LittleEndian.PutUint32(b[end:], crc32.Checksum(b[off:end], castagnoli))
		off = end + 4
	}
	return b
}

func TestReadErrors(t *testing.T) {
	f := testFile(t)
	full, err := Marshal(f, true)
	if err != nil {
		t.Fatal(err)
	}
	check := func(name string, b []byte, want string) {
		t.Helper()
		_, err := Unmarshal(b)
		if err == nil {
			t.Errorf("%s: accepted", name)
			return
		}
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %q, want one mentioning %q", name, err, want)
		}
	}
	check("empty", nil, "bad signature")
	check("onnx", []byte("\x08\x07\x12\x04onnx"), "bad signature")
	mangled := bytes.Clone(full)
	mangled[4] = '\n'
	check("text mode", mangled, "text mode")
	next := bytes.Clone(full)
	next[8] = Version + 1
	check("version", next, fmt.Sprintf("unsupported format version %d", Version+1))
	v0 := bytes.Clone(full)
	v0[8] = 0
	check("version 0", v0, "unsupported format version 0")
	flip := bytes.Clone(full)
	flip[len(flip)-100] ^= 0x40 // inside the weights
	check("bit flip", flip, "corrupted")
	check("truncated", full[:len(full)-3], "truncated")
	check("missing end", full[:len(full)-16], "END section is missing")
	check("trailing", append(bytes.Clone(full), 0), "after the END")

	// Every truncation is an error, never a panic.
	for n := 0; n < len(full); n++ {
		if _, err := Unmarshal(full[:n]); err == nil {
			t.Fatalf("truncation to %d bytes accepted", n)
		}
	}

	// An unknown opcode (with valid checksums).
	inst := bytes.Index(full, []byte(tagInst))
	bad := bytes.Clone(full)
	bad[inst+12+4] = 200 // first instruction's opcode
	check("unknown opcode", rechecksum(bad), "unknown opcode 200")

	// An unknown ring kind, and Z_n.
	head := bytes.Index(full, []byte(tagHead))
	bad = bytes.Clone(full)
	bad[head+12] = ringPrime
	binary.LittleEndian.PutUint64(bad[head+13:], 16) // Z_n needs an odd n
	check("even prime-ring modulus", rechecksum(bad), "must be odd")

	// Weights of another program.
	other := testFile(t)
	other.Meta.Source = "other.onnx"
	ofull, err := Marshal(other, true)
	if err != nil {
		t.Fatal(err)
	}
	client, _ := Marshal(f, false)
	wdat := bytes.Index(ofull, []byte(tagWdat))
	spliced := append(bytes.Clone(client[:len(client)-16]), ofull[wdat:]...)
	check("spliced weights", spliced, "belong to another program")

	// A semantically invalid program with valid checksums: the input's scale disagrees.
	inpt := bytes.Index(full, []byte(tagInpt))
	bad = bytes.Clone(full)
	bad[inpt+12+4+2+len("image")+4+1] = 9
	check("io scale", rechecksum(bad), "scale")
}

func TestWeightWidth(t *testing.T) {
	for _, c := range []struct {
		v    []int64
		want int
	}{
		{nil, 1}, {[]int64{0}, 1}, {[]int64{127, -128}, 1}, {[]int64{128}, 2}, {[]int64{-129}, 2},
		{[]int64{1 << 40}, 6}, {[]int64{math.MaxInt64}, 8}, {[]int64{math.MinInt64, 3}, 8},
	} {
		if got := weightWidth(c.v); got != c.want {
			t.Errorf("weightWidth(%v) = %d, want %d", c.v, got, c.want)
		}
	}
	// Extreme values survive the round trip.
	f := testFile(t)
	f.Program.Weights[1].Data = []int64{math.MinInt64, math.MaxInt64, -1, 0}
	b, err := Marshal(f, true)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(g.Program.Weights[1].Data, f.Program.Weights[1].Data) {
		t.Errorf("extreme weights read back as %v", g.Program.Weights[1].Data)
	}
}

func TestDisasm(t *testing.T) {
	f := testFile(t)
	for _, withWeights := range []bool{true, false} {
		b, err := Marshal(f, withWeights)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := Disasm(&out, b); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		for _, want := range []string{f.IDString(), "HEAD", "ring Z_2^37  scale 6", "conv %0, w0 group=2",
			"trunc %4 by 6 nonneg", "constant pads=0,0,1,1,0,0,1,1 value=-9", "div %7 by 4,3,2,1",
			"argmax %16 axis=0", "-> out1", "autotune on 10 samples", "preprocess 6x6"} {
			if !strings.Contains(s, want) {
				t.Errorf("disasm (weights %v) lacks %q:\n%s", withWeights, want, s)
			}
		}
		if strings.Contains(s, "client copy") == withWeights {
			t.Errorf("disasm does not say which copy it is")
		}
	}
	if err := Disasm(&bytes.Buffer{}, []byte("nope")); err == nil {
		t.Error("disasm of garbage succeeded")
	}
}

func TestReadFile(t *testing.T) {
	f := testFile(t)
	path := filepath.Join(t.TempDir(), "m.sciir")
	b, err := Marshal(f, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if g.ID != f.ID || !g.Program.HasWeights() {
		t.Error("file round trip")
	}
	if _, err := ReadFile(path + ".missing"); err == nil {
		t.Error("missing file read")
	}
	os.WriteFile(path, []byte("garbage"), 0o644)
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("garbage file: %v", err)
	}
}

// TestCheckCopyName: the full program never goes to a file named like a client copy; the
// client copy may.
func TestCheckCopyName(t *testing.T) {
	f := testFile(t)
	if err := CheckCopyName("m.Client.SCIIR", f, true); err == nil || !strings.Contains(err.Error(), "client copy's name") {
		t.Fatalf("weights under a client name: %v", err)
	}
	if err := CheckCopyName("m.client.sciir", f, false); err != nil {
		t.Fatal(err)
	}
	if err := CheckCopyName("m.sciir", f, true); err != nil {
		t.Fatal(err)
	}
}

// TestEngineRoundTrip: the engine recorded on matmul and conv instructions survives the file and
// the disassembly shows it.
func TestEngineRoundTrip(t *testing.T) {
	f := testFile(t)
	n := 0
	for _, in := range f.Program.Instrs {
		switch in.Op {
		case fixed.OpMatMul:
			in.Engine = fixed.EngineHE
			n++
		case fixed.OpConv:
			in.Engine = fixed.EngineOT
			n++
		}
	}
	if n == 0 {
		t.Fatal("the test program has no linear layer")
	}
	var b bytes.Buffer
	if err := Write(&b, f, true); err != nil {
		t.Fatal(err)
	}
	g, err := Unmarshal(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range f.Program.Instrs {
		if g.Program.Instrs[i].Engine != in.Engine {
			t.Errorf("instruction %d: engine %v, want %v", i, g.Program.Instrs[i].Engine, in.Engine)
		}
	}
	if g.ID == (testFileID(t)) {
		t.Error("the engine choice is not part of the program ID")
	}
	bad := f.Program.Clone()
	for _, in := range bad.Instrs {
		if in.Op == fixed.OpReLU || in.Op == fixed.OpTrunc {
			in.Engine = fixed.EngineHE
			break
		}
	}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "only matmul, conv and bmatmul") {
		t.Errorf("engine on a nonlinear instruction: %v", err)
	}
}

func testFileID(t *testing.T) [32]byte {
	var b bytes.Buffer
	if err := Write(&b, testFile(t), true); err != nil {
		t.Fatal(err)
	}
	g, err := Unmarshal(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return g.ID
}
