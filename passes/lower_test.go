package passes

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// lowerCase is a small graph whose fixed-point lowering is compared with the float interpreter.
type lowerCase struct {
	name  string
	input ir.Shape
	build func(b *gb) string
}

func lowerCases() []lowerCase {
	conv := func(group int, k, s, p, d []int, c, m int, bias bool) func(b *gb) string {
		return func(b *gb) string {
			in := []string{"x", b.konst(append(ir.Shape{m, c / group}, k...), 0.5)}
			if bias {
				in = append(in, b.konst(ir.Shape{m}, 1))
			}
			return b.node(ir.Conv, convAttrs(group, k, s, p, d), in...)
		}
	}
	pool := func(op ir.Op, k, s, p []int, ceil, cip int) func(b *gb) string {
		return func(b *gb) string {
			a := poolAttrs(k, s, p, ceil)
			if op == ir.AveragePool {
				a["count_include_pad"] = ir.IntAttr(cip)
			}
			return b.node(op, a, "x")
		}
	}
	unary := func(op ir.Op, a ir.Attrs) func(b *gb) string {
		return func(b *gb) string { return b.node(op, a, "x") }
	}
	return []lowerCase{
		{"conv pads bias", ir.Shape{1, 2, 6, 6}, conv(1, []int{3, 3}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}, 2, 3, true)},
		{"conv groups stride dilation", ir.Shape{2, 4, 7, 7}, conv(2, []int{2, 3}, []int{2, 1}, []int{0, 1, 1, 0}, []int{2, 1}, 4, 6, false)},
		{"conv 1d", ir.Shape{1, 3, 9}, conv(1, []int{3}, []int{2}, []int{1, 1}, []int{1}, 3, 2, true)},
		{"gemm", ir.Shape{3, 5}, func(b *gb) string {
			return b.node(ir.Gemm, gemmAttrs(0.5, 2, 0, 1), "x", b.konst(ir.Shape{4, 5}, 1), b.konst(ir.Shape{4}, 1))
		}},
		{"gemm transA", ir.Shape{5, 3}, func(b *gb) string {
			return b.node(ir.Gemm, gemmAttrs(1, 1, 1, 0), "x", b.konst(ir.Shape{5, 4}, 1), b.konst(ir.Shape{3, 4}, 1))
		}},
		{"gemm constant A", ir.Shape{5, 3}, func(b *gb) string {
			return b.node(ir.Gemm, gemmAttrs(1, 1, 0, 0), b.konst(ir.Shape{4, 5}, 1), "x", b.konst(ir.Shape{1, 3}, 1))
		}},
		{"gemm constant A transB", ir.Shape{3, 5}, func(b *gb) string {
			return b.node(ir.Gemm, gemmAttrs(1, 1, 1, 1), b.konst(ir.Shape{5, 4}, 1), "x")
		}},
		{"matmul", ir.Shape{1, 8}, func(b *gb) string { return b.node(ir.MatMul, nil, "x", b.konst(ir.Shape{8, 3}, 1)) }},
		{"add sub tensors", ir.Shape{1, 3, 4}, func(b *gb) string {
			r := b.node(ir.Relu, nil, "x")
			a := b.node(ir.Add, nil, "x", r)
			return b.node(ir.Sub, nil, a, b.node(ir.Relu, nil, a))
		}},
		{"add constants", ir.Shape{2, 3}, func(b *gb) string {
			a := b.node(ir.Add, nil, b.konst(ir.Shape{3}, 2), "x")
			return b.node(ir.Sub, nil, a, b.konst(ir.Shape{2, 1}, 2))
		}},
		{"mul div constants", ir.Shape{2, 3}, func(b *gb) string {
			m := b.node(ir.Mul, nil, b.konst(ir.Shape{3}, 2), "x")
			return b.node(ir.Div, nil, m, b.konstOf(ir.Shape{}, 3))
		}},
		{"sum", ir.Shape{4}, func(b *gb) string {
			return b.node(ir.Sum, nil, "x", b.node(ir.Relu, nil, "x"), b.konst(ir.Shape{4}, 1))
		}},
		{"relu", ir.Shape{10}, unary(ir.Relu, nil)},
		{"clip both", ir.Shape{20}, unary(ir.Clip, ir.Attrs{"min": ir.FloatAttr(-0.3), "max": ir.FloatAttr(0.5)})},
		{"relu6", ir.Shape{20}, unary(ir.Clip, ir.Attrs{"min": ir.FloatAttr(0), "max": ir.FloatAttr(0.6)})},
		{"clip lo", ir.Shape{20}, unary(ir.Clip, ir.Attrs{"min": ir.FloatAttr(-0.2), "max": ir.FloatAttr(float32(math.Inf(1)))})},
		{"clip hi", ir.Shape{20}, unary(ir.Clip, ir.Attrs{"min": ir.FloatAttr(float32(math.Inf(-1))), "max": ir.FloatAttr(0.1)})},
		{"leaky relu", ir.Shape{20}, unary(ir.LeakyRelu, ir.Attrs{"alpha": ir.FloatAttr(0.1)})},
		{"maxpool pads ceil", ir.Shape{1, 2, 5, 5}, pool(ir.MaxPool, []int{2, 2}, []int{2, 2}, []int{1, 1, 0, 0}, 1, 0)},
		{"avgpool include pad", ir.Shape{1, 2, 5, 5}, pool(ir.AveragePool, []int{3, 3}, []int{2, 2}, []int{1, 1, 1, 1}, 0, 1)},
		{"avgpool exclude pad", ir.Shape{1, 2, 5, 5}, pool(ir.AveragePool, []int{3, 3}, []int{2, 2}, []int{1, 1, 1, 1}, 0, 0)},
		{"avgpool ceil", ir.Shape{1, 1, 6, 6}, pool(ir.AveragePool, []int{3, 3}, []int{2, 2}, []int{0, 0, 0, 0}, 1, 0)},
		{"maxpool 1d", ir.Shape{1, 2, 7}, pool(ir.MaxPool, []int{3}, []int{2}, []int{1, 1}, 0, 0)},
		{"global pools", ir.Shape{1, 3, 4, 4}, func(b *gb) string {
			return b.node(ir.Add, nil, b.node(ir.GlobalAveragePool, nil, "x"), b.node(ir.GlobalMaxPool, nil, "x"))
		}},
		{"batchnorm unfolded", ir.Shape{1, 3, 2, 2}, func(b *gb) string {
			r := b.node(ir.Relu, nil, "x")
			return b.node(ir.BatchNormalization, ir.Attrs{"epsilon": ir.FloatAttr(1e-5)}, append([]string{r}, b.bnParams(3)...)...)
		}},
		{"shape ops", ir.Shape{1, 2, 3, 1}, func(b *gb) string {
			s := b.node(ir.Squeeze, ir.Attrs{"axes": ir.IntsAttr([]int{3})}, "x")
			u := b.node(ir.Unsqueeze, ir.Attrs{"axes": ir.IntsAttr([]int{0})}, s)
			tr := b.node(ir.Transpose, ir.Attrs{"perm": ir.IntsAttr([]int{0, 3, 2, 1})}, u)
			rs := b.node(ir.Reshape, ir.Attrs{"shape": ir.IntsAttr([]int{3, 2})}, tr)
			return b.node(ir.Flatten, ir.Attrs{"axis": ir.IntAttr(0)}, rs)
		}},
		{"concat pad", ir.Shape{1, 2, 3}, func(b *gb) string {
			p1 := b.node(ir.Pad, ir.Attrs{"mode": ir.StringAttr("constant"), "value": ir.FloatAttr(-0.75), "pads": ir.IntsAttr([]int{0, 0, 1, 0, 1, 2})}, "x")
			p2 := b.node(ir.Pad, ir.Attrs{"mode": ir.StringAttr("reflect"), "value": ir.FloatAttr(0), "pads": ir.IntsAttr([]int{0, 1, 2, 0, 0, 1})}, "x")
			p3 := b.node(ir.Pad, ir.Attrs{"mode": ir.StringAttr("edge"), "value": ir.FloatAttr(0), "pads": ir.IntsAttr([]int{0, 0, 1, 0, 1, 2})}, "x")
			return b.node(ir.Concat, ir.Attrs{"axis": ir.IntAttr(1)}, p1, p2, p3)
		}},
	}
}

func TestLowerMatchesFloat(t *testing.T) {
	const scale = 14
	for _, c := range lowerCases() {
		t.Run(c.name, func(t *testing.T) {
			b := newGB(11, c.input)
			out := c.build(b)
			g := b.done(t, out)
			cg, _, err := clean(g, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, peep := range []bool{false, true} {
				p, err := build(cg, 64, scale, peep)
				if err != nil {
					t.Fatal(err)
				}
				rng := rand.New(rand.NewPCG(5, 5))
				for i := 0; i < 4; i++ {
					x := randInput(rng, c.input, 1)
					want := runFloat(t, g, x)
					got := runFixed(t, p, x)
					if len(got) != len(want) {
						t.Fatalf("output has %d values, want %d", len(got), len(want))
					}
					if d := maxAbsDiff(got, want); d > 0.01 {
						t.Errorf("peephole=%v: fixed-point output differs from float by %g\nfixed %v\nfloat %v", peep, d, got, want)
					}
				}
			}
		})
	}
}

func TestLowerArgMax(t *testing.T) {
	b := newGB(12, ir.Shape{2, 5})
	out := b.node(ir.ArgMax, ir.Attrs{"axis": ir.IntAttr(1), "keepdims": ir.IntAttr(1), "select_last_index": ir.IntAttr(0)}, "x")
	g := b.done(t, out)
	p, err := build(g, 32, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{0.5, 1, 1, -3, 0.2, -1, -2, -0.5, -0.5, -0.7}
	raw, scale := runFixedRaw(t, p, x)
	if scale != 0 || !equalInts(raw, []int64{1, 2}) {
		t.Errorf("argmax = %v at scale %d, want [1 2] (ties to the lowest index)", raw, scale)
	}
}

func TestLowerEncoding(t *testing.T) {
	// Weights at s, bias at 2s added before the truncation back to s. Constants are rounded to
	// nearest (-0.3 * 2^3 = -2.4 -> -2; floor would give -3).
	b := newGB(13, ir.Shape{1, 4})
	out := b.node(ir.Gemm, gemmAttrs(1, 1, 0, 1), "x", b.konstOf(ir.Shape{2, 4}, 0.5, -0.3, 1, 2, -1, 0, 0.125, 3),
		b.konstOf(ir.Shape{2}, 0.75, -1.5))
	g := b.done(t, out)
	p, err := lower(g, lowerOptions{Bits: 40, Scale: 3})
	if err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, in := range p.Instrs {
		ops = append(ops, in.Op.String())
	}
	if got := strings.Join(ops, " "); got != "input reshape matmul reshape addconst trunc output" {
		t.Errorf("instructions: %s", got)
	}
	w, bias := p.Weights[0], p.Weights[1]
	if w.Scale != 3 || !equalInts(w.Data, []int64{4, -2, 8, 16, -8, 0, 1, 24}) {
		t.Errorf("weights %v at scale %d", w.Data, w.Scale)
	}
	if bias.Scale != 6 || !equalInts(bias.Data, []int64{48, -96}) {
		t.Errorf("bias %v at scale %d", bias.Data, bias.Scale)
	}
	for _, in := range p.Instrs {
		if in.Op == fixed.OpTrunc && in.Shift != 3 {
			t.Errorf("trunc by %d", in.Shift)
		}
	}
}

func TestLowerScaleUpResidual(t *testing.T) {
	// y = conv(x) + x: the conv product (scale 2s) is added to x scaled up by s, and one
	// truncation serves the sum.
	b := newGB(14, ir.Shape{1, 2, 4, 4})
	c := b.node(ir.Conv, convAttrs(1, []int{3, 3}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}), "x", b.konst(ir.Shape{2, 2, 3, 3}, 0.3), b.konst(ir.Shape{2}, 0.3))
	y := b.node(ir.Add, nil, c, "x")
	g := b.done(t, b.node(ir.Relu, nil, y))
	p, err := build(g, 64, 12, false)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[fixed.Opcode]int{}
	for _, in := range p.Instrs {
		counts[in.Op]++
	}
	if counts[fixed.OpScaleUp] != 1 || counts[fixed.OpTrunc] != 1 || counts[fixed.OpAdd] != 1 {
		t.Errorf("counts %v", counts)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	x := randInput(rng, g.Inputs[0].Shape, 1)
	if d := maxAbsDiff(runFixed(t, p, x), runFloat(t, g, x)); d > 0.01 {
		t.Errorf("residual differs by %g", d)
	}
}

func TestLowerErrors(t *testing.T) {
	for _, c := range []struct {
		name  string
		build func(b *gb) string
		want  string
	}{
		{"exp", func(b *gb) string { return b.node(ir.Exp, nil, "x") }, "Exp"},
		{"div by tensor", func(b *gb) string { return b.node(ir.Div, nil, b.konst(ir.Shape{1, 4}, 1), "x") }, "Div by a runtime tensor"},
		{"matmul tensors broadcast", func(b *gb) string {
			return b.node(ir.MatMul, nil, "x", b.node(ir.Reshape, ir.Attrs{"shape": ir.IntsAttr([]int{1, 4, 1})}, "x"))
		}, "batch broadcasting are not supported"},
		{"const minus tensor", func(b *gb) string { return b.node(ir.Sub, nil, b.konst(ir.Shape{1, 4}, 1), "x") }, "Sub of a runtime tensor from a constant"},
		{"leaky alpha", func(b *gb) string { return b.node(ir.LeakyRelu, ir.Attrs{"alpha": ir.FloatAttr(2)}, "x") }, "alpha"},
	} {
		b := newGB(15, ir.Shape{1, 4})
		out := c.build(b)
		g := b.done(t, out)
		cg, _, err := clean(g, false)
		if err != nil {
			t.Fatal(err)
		}
		_, err = lower(cg, lowerOptions{Bits: 32, Scale: 8})
		if err == nil {
			t.Errorf("%s: lowered", c.name)
			continue
		}
		if !errors.Is(err, ErrNoLowering) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "node \"") {
			t.Errorf("%s: error %q should wrap ErrNoLowering, name the node and mention %q", c.name, err, c.want)
		}
	}
	b := newGB(16, ir.Shape{1, 4})
	g := b.done(t, b.node(ir.Relu, nil, "x"))
	if _, err := lower(g, lowerOptions{Bits: 65, Scale: 8}); err == nil {
		t.Error("bitwidth 65 accepted")
	}
	if _, err := lower(g, lowerOptions{Bits: 32, Scale: 40}); err == nil {
		t.Error("scale 40 accepted")
	}
}
