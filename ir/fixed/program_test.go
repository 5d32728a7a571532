package fixed

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

// fixedChain is input -> conv -> addconst -> trunc -> relu -> output.
func fixedChain() *Program {
	p := &Program{Bits: 32, Scale: 8}
	x := p.AddTensor("x", ir.Shape{1, 1, 4, 4}, 8)
	w := p.AddWeight("w", ir.Shape{2, 1, 3, 3}, 8, make([]int64, 18))
	b := p.AddWeight("b", ir.Shape{2, 1, 1}, 16, []int64{1, 2})
	c := p.AddTensor("c", ir.Shape{1, 2, 2, 2}, 16)
	a := p.AddTensor("a", ir.Shape{1, 2, 2, 2}, 16)
	tr := p.AddTensor("t", ir.Shape{1, 2, 2, 2}, 8)
	r := p.AddTensor("r", ir.Shape{1, 2, 2, 2}, 8)
	win := ir.Window{Kernel: []int{3, 3}, Strides: []int{1, 1}, Pads: []int{0, 0, 0, 0}, Dilations: []int{1, 1}}
	p.Inputs = []IO{{Name: "x", Tensor: x, Party: 1}}
	p.Outputs = []IO{{Name: "y", Tensor: r, Party: 1}}
	p.Instrs = []*Instr{
		{Op: OpInput, Out: x, Weight: -1},
		{Op: OpConv, Out: c, In: []int{x}, Weight: w, Group: 1, Win: win},
		{Op: OpAddConst, Out: a, In: []int{c}, Weight: b},
		{Op: OpTrunc, Out: tr, In: []int{a}, Weight: -1, Shift: 8},
		{Op: OpReLU, Out: r, In: []int{tr}, Weight: -1},
		{Op: OpOutput, Out: -1, In: []int{r}, Weight: -1},
	}
	return p
}

func TestFixedValidate(t *testing.T) {
	if err := fixedChain().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		mutate func(p *Program)
		want   string
	}{
		{"bits", func(p *Program) { p.Bits = 65 }, "bitwidth"},
		{"opcode", func(p *Program) { p.Instrs[4].Op = 99 }, "unknown opcode 99"},
		{"read before define", func(p *Program) { p.Instrs[1].In[0] = 3 }, "read before it is defined"},
		{"operand range", func(p *Program) { p.Instrs[1].In[0] = 42 }, "out of range"},
		{"defined twice", func(p *Program) { p.Instrs[2].Out = 1 }, "defined twice"},
		{"shape", func(p *Program) { p.Tensors[1].Shape = ir.Shape{1, 2, 3, 3} }, "the operation gives [1,2,2,2]"},
		{"scale", func(p *Program) { p.Weights[1].Scale = 8 }, "added to operand at scale 16"},
		{"trunc shift", func(p *Program) { p.Instrs[3].Shift = 20 }, "shift 20"},
		{"weight missing", func(p *Program) { p.Instrs[1].Weight = -1 }, "weight -1"},
		{"stray weight", func(p *Program) { p.Instrs[4].Weight = 0 }, "takes none"},
		{"weight data", func(p *Program) { p.Weights[0].Data = []int64{1} }, "1 values"},
		{"output tensor", func(p *Program) { p.Outputs[0].Tensor = 3 }, "output 0"},
		{"input party", func(p *Program) { p.Inputs[0].Party = 2 }, "party 2"},
		{"missing output instr", func(p *Program) { p.Instrs = p.Instrs[:5] }, "no output instruction"},
		{"group", func(p *Program) { p.Instrs[1].Group = 2 }, "group 2"},
		{"window", func(p *Program) { p.Instrs[1].Win.Strides = []int{0, 1} }, "must be in 1..65536"},
		{"huge", func(p *Program) { p.Tensors[0].Shape = ir.Shape{1 << 20, 1 << 20} }, "more than"},
		{"partial slots", func(p *Program) { p.Tensors[0].Slot = 0 }, "assign all or none"},
		{"nil instr", func(p *Program) { p.Instrs[2] = nil }, "is nil"},
	} {
		p := fixedChain()
		c.mutate(p)
		err := p.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
		}
	}
}

func TestFixedCompactAndClone(t *testing.T) {
	p := fixedChain()
	// An unused tensor and weight, and tensors listed out of definition order.
	p.AddTensor("dead", ir.Shape{3}, 0)
	p.AddWeight("dead", ir.Shape{1}, 0, []int64{0})
	p.Tensors[0], p.Tensors[4] = p.Tensors[4], p.Tensors[0]
	swap := func(v int) int {
		switch v {
		case 0:
			return 4
		case 4:
			return 0
		}
		return v
	}
	for _, in := range p.Instrs {
		for j := range in.In {
			in.In[j] = swap(in.In[j])
		}
		if in.Out >= 0 {
			in.Out = swap(in.Out)
		}
	}
	p.Inputs[0].Tensor, p.Outputs[0].Tensor = 4, 0
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	c := p.Clone()
	c.Compact()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if len(c.Tensors) != 5 || len(c.Weights) != 2 || c.Tensors[0].Name != "x" || c.Inputs[0].Tensor != 0 {
		t.Errorf("compacted: %d tensors, %d weights, first %q", len(c.Tensors), len(c.Weights), c.Tensors[0].Name)
	}
	if len(p.Tensors) != 6 {
		t.Error("Compact of a clone changed the original")
	}
	s := c.StripWeights()
	if s.HasWeights() || !c.HasWeights() {
		t.Error("StripWeights")
	}
}

func TestFixedText(t *testing.T) {
	p := fixedChain()
	p.Instrs[3].NonNeg = true
	var b bytes.Buffer
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ring Z_2^32  scale 8", `in0 "x" = %0 [1,1,4,4] s8 from party 1`,
		"%1 = conv %0, w0 group=1 kernel=3,3", "%3 = trunc %2 by 8 nonneg", "output %4 -> out0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	if mustPadMode(t, "reflect") != PadReflect || Opcode(77).String() != "opcode(77)" {
		t.Error("names")
	}
}

func mustPadMode(t *testing.T, s string) PadMode {
	m, err := ParsePadMode(s)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParsePadMode("mirror"); err == nil {
		t.Error("unknown pad mode accepted")
	}
	return m
}
