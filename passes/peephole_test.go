package passes

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// cnn is conv -> relu -> maxpool -> conv -> relu -> avgpool -> flatten -> gemm -> relu -> gemm.
func cnn(t testing.TB, seed uint64) *ir.Graph {
	b := newGB(seed, ir.Shape{1, 2, 8, 8})
	c1 := b.node(ir.Conv, convAttrs(1, []int{3, 3}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}), "x", b.konst(ir.Shape{4, 2, 3, 3}, 0.5), b.konst(ir.Shape{4}, 0.2))
	r1 := b.node(ir.Relu, nil, c1)
	m1 := b.node(ir.MaxPool, poolAttrs([]int{2, 2}, []int{2, 2}, []int{0, 0, 0, 0}, 0), r1)
	c2 := b.node(ir.Conv, convAttrs(1, []int{3, 3}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}), m1, b.konst(ir.Shape{4, 4, 3, 3}, 0.3))
	r2 := b.node(ir.Relu, nil, c2)
	a := poolAttrs([]int{2, 2}, []int{2, 2}, []int{0, 0, 0, 0}, 0)
	a["count_include_pad"] = ir.IntAttr(0)
	p2 := b.node(ir.AveragePool, a, r2)
	f := b.node(ir.Flatten, ir.Attrs{"axis": ir.IntAttr(1)}, p2)
	g1 := b.node(ir.Gemm, gemmAttrs(1, 1, 0, 1), f, b.konst(ir.Shape{6, 4}, 0.5), b.konst(ir.Shape{6}, 0.1))
	r3 := b.node(ir.Relu, nil, g1)
	g2 := b.node(ir.Gemm, gemmAttrs(1, 1, 0, 1), r3, b.konst(ir.Shape{3, 6}, 0.5), b.konst(ir.Shape{3}, 0.1))
	return b.done(t, g2)
}

func TestPeepholeRewrites(t *testing.T) {
	g := cnn(t, 21)
	p, err := lower(g, lowerOptions{Bits: 40, Scale: 10})
	if err != nil {
		t.Fatal(err)
	}
	q, rep, err := peephole(p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Swapped != 1 || rep.Hoisted < 3 || rep.MarkedNonNeg != 3 {
		t.Errorf("report %+v", rep)
	}
	b, a := rep.Before, rep.After
	// conv1's ReLU now runs on the pooled [1,4,4,4] instead of [1,4,8,8].
	if b.ReLU != 4*64+4*4+6 || a.ReLU != 4*16+4*4+6 {
		t.Errorf("ReLU elements %d -> %d", b.ReLU, a.ReLU)
	}
	if a.Trunc >= b.Trunc || a.TruncNonNeg == 0 || b.TruncNonNeg != 0 {
		t.Errorf("truncations %d (%d nonneg) -> %d (%d nonneg)", b.Trunc, b.TruncNonNeg, a.Trunc, a.TruncNonNeg)
	}
	if a.Comparisons != b.Comparisons || a.MACs != b.MACs {
		t.Errorf("comparisons %d -> %d, MACs %d -> %d", b.Comparisons, a.Comparisons, b.MACs, a.MACs)
	}
	if len(rep.Lines()) != 5 || !strings.Contains(rep.Lines()[1], "ReLU elements") {
		t.Errorf("lines %q", rep.Lines())
	}
	// The input program is untouched.
	if tally(p) != b {
		t.Error("Peephole modified its input")
	}
	// The first layer now reads: conv, addconst, maxpool, relu, trunc nonneg.
	var ops []string
	for _, in := range q.Instrs[:6] {
		s := in.Op.String()
		if in.NonNeg {
			s += "+"
		}
		ops = append(ops, s)
	}
	if got := strings.Join(ops, " "); got != "input conv addconst maxpool relu trunc+" {
		t.Errorf("first layer: %s", got)
	}
}

// TestPeepholeExact checks that optimised and unoptimised programs give bit-identical outputs,
// also in small rings where intermediate values wrap around.
func TestPeepholeExact(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		g := cnn(t, 30+seed)
		for _, bits := range []int{12, 20, 48} {
			p, err := lower(g, lowerOptions{Bits: bits, Scale: 8})
			if err != nil {
				t.Fatal(err)
			}
			q, _, err := peephole(p)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, uint64(bits)))
			for i := 0; i < 5; i++ {
				x := randInput(rng, g.Inputs[0].Shape, 2)
				a, _ := runFixedRaw(t, p, x)
				b, _ := runFixedRaw(t, q, x)
				if !equalInts(a, b) {
					t.Fatalf("seed %d l=%d: unoptimised %v, optimised %v", seed, bits, a, b)
				}
			}
		}
	}
}

func TestPeepholeKeepsSharedValues(t *testing.T) {
	// The ReLU result is also an output: MaxPool(ReLU) must not be rewritten.
	b := newGB(40, ir.Shape{1, 1, 4, 4})
	r := b.node(ir.Relu, nil, "x")
	m := b.node(ir.MaxPool, poolAttrs([]int{2, 2}, []int{2, 2}, []int{0, 0, 0, 0}, 0), r)
	g := b.done(t, m, r)
	p, err := lower(g, lowerOptions{Bits: 32, Scale: 8})
	if err != nil {
		t.Fatal(err)
	}
	_, rep, err := peephole(p)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Swapped != 0 {
		t.Errorf("swapped a ReLU whose result is an output: %+v", rep)
	}
}

func TestNonNegative(t *testing.T) {
	g := cnn(t, 50)
	p, err := lower(g, lowerOptions{Bits: 40, Scale: 10})
	if err != nil {
		t.Fatal(err)
	}
	nn := nonNegative(p)
	for i, in := range p.Instrs {
		if in.Op == fixed.OpOutput {
			continue
		}
		switch in.Op {
		case fixed.OpReLU, fixed.OpMaxPool, fixed.OpSumPool, fixed.OpDiv:
			if !nn[in.Out] {
				t.Errorf("instruction %d (%s) not known non-negative", i, in.Op)
			}
		case fixed.OpConv, fixed.OpMatMul, fixed.OpAddConst:
			if nn[in.Out] {
				t.Errorf("instruction %d (%s) marked non-negative", i, in.Op)
			}
		}
	}
}
