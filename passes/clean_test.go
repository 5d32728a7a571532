package passes

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/irtext"
)

func countOps(g *ir.Graph, op ir.Op) int {
	n := 0
	for _, nd := range g.Nodes {
		if nd.Op == op {
			n++
		}
	}
	return n
}

// bnParams adds BatchNormalization parameters for c channels (positive variance).
func (b *gb) bnParams(c int) []string {
	gamma := b.konst(ir.Shape{c}, 2)
	beta := b.konst(ir.Shape{c}, 1)
	mean := b.konst(ir.Shape{c}, 1)
	v := b.konst(ir.Shape{c}, 1)
	for i := range b.g.Consts[v].Data {
		b.g.Consts[v].Data[i] = b.g.Consts[v].Data[i]*b.g.Consts[v].Data[i] + 0.1
	}
	return []string{gamma, beta, mean, v}
}

func checkSameFloat(t *testing.T, a, b *ir.Graph, tol float64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(9, 9))
	for i := 0; i < 3; i++ {
		x := randInput(rng, a.Inputs[0].Shape, 1)
		if d := maxAbsDiff(runFloat(t, a, x), runFloat(t, b, x)); d > tol {
			t.Errorf("cleaned graph differs from the original by %g", d)
		}
	}
}

func TestFoldBatchNormIntoConvAndGemm(t *testing.T) {
	for _, withBias := range []bool{false, true} {
		for _, transB := range []int{0, 1} {
			b := newGB(1, ir.Shape{1, 3, 6, 6})
			w := b.konst(ir.Shape{4, 3, 3, 3}, 0.5)
			in := []string{"x", w}
			if withBias {
				in = append(in, b.konst(ir.Shape{4}, 0.5))
			}
			c := b.node(ir.Conv, convAttrs(1, []int{3, 3}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}), in...)
			bn := b.node(ir.BatchNormalization, ir.Attrs{"epsilon": ir.FloatAttr(1e-5)}, append([]string{c}, b.bnParams(4)...)...)
			f := b.node(ir.Flatten, ir.Attrs{"axis": ir.IntAttr(1)}, bn)
			fw := b.konst(ir.Shape{144, 5}, 0.1)
			if transB == 1 {
				fw = b.konst(ir.Shape{5, 144}, 0.1)
			}
			fc := b.node(ir.Gemm, gemmAttrs(1.5, 1, 0, transB), f, fw)
			bn2 := b.node(ir.BatchNormalization, ir.Attrs{"epsilon": ir.FloatAttr(1e-3)}, append([]string{fc}, b.bnParams(5)...)...)
			g := b.done(t, bn2)
			cg, log, err := clean(g, false)
			if err != nil {
				t.Fatal(err)
			}
			if n := countOps(cg, ir.BatchNormalization); n != 0 {
				t.Errorf("bias=%v transB=%d: %d BatchNormalization nodes left; log %v", withBias, transB, n, log)
			}
			if !strings.Contains(strings.Join(log, "\n"), "folded 2 BatchNormalization") {
				t.Errorf("log %v", log)
			}
			if cg.Outputs[0] != g.Outputs[0] {
				t.Errorf("output renamed to %q", cg.Outputs[0])
			}
			checkSameFloat(t, g, cg, 1e-4)
			if countOps(g, ir.BatchNormalization) != 2 {
				t.Error("Clean modified its input graph")
			}
		}
	}
}

func TestFuseBiasAndMatMul(t *testing.T) {
	b := newGB(2, ir.Shape{1, 2, 5, 5})
	c := b.node(ir.Conv, convAttrs(1, []int{3, 3}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}), "x", b.konst(ir.Shape{3, 2, 3, 3}, 0.5))
	a := b.node(ir.Add, nil, b.konst(ir.Shape{3, 1, 1}, 1), c) // constant first
	f := b.node(ir.Flatten, ir.Attrs{"axis": ir.IntAttr(1)}, a)
	m := b.node(ir.MatMul, nil, f, b.konst(ir.Shape{27, 4}, 0.2))
	o := b.node(ir.Add, nil, m, b.konst(ir.Shape{1, 4}, 1))
	g := b.done(t, o)
	cg, log, err := clean(g, false)
	if err != nil {
		t.Fatal(err)
	}
	if countOps(cg, ir.Add) != 0 || countOps(cg, ir.MatMul) != 0 || countOps(cg, ir.Gemm) != 1 {
		t.Errorf("got %d Add, %d MatMul, %d Gemm; log %v", countOps(cg, ir.Add), countOps(cg, ir.MatMul), countOps(cg, ir.Gemm), log)
	}
	checkSameFloat(t, g, cg, 1e-4)
}

func TestDropIdentitySoftmaxAndFold(t *testing.T) {
	b := newGB(3, ir.Shape{1, 6})
	// A weight computed from constants: Transpose(const) must be folded.
	wt := b.node(ir.Transpose, ir.Attrs{"perm": ir.IntsAttr([]int{1, 0})}, b.konst(ir.Shape{4, 6}, 1))
	id := b.node(ir.Identity, nil, "x")
	m := b.node(ir.Gemm, gemmAttrs(1, 1, 0, 0), id, wt)
	r := b.node(ir.Relu, nil, m)
	d := b.node(ir.Identity, nil, r)
	s := b.node(ir.Softmax, ir.Attrs{"axis": ir.IntAttr(1)}, d)
	g := b.done(t, s)
	cg, log, err := clean(g, false)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(log, "\n")
	for _, want := range []string{"folded 1 constant", "dropped 2 Identity", "dropped the trailing Softmax"} {
		if !strings.Contains(text, want) {
			t.Errorf("log lacks %q: %v", want, log)
		}
	}
	if countOps(cg, ir.Softmax)+countOps(cg, ir.Identity)+countOps(cg, ir.Transpose) != 0 {
		t.Errorf("left: %s", irtext.Format(cg))
	}
	if cg.Outputs[0] != s {
		t.Errorf("output renamed to %q, want %q", cg.Outputs[0], s)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for i := 0; i < 5; i++ {
		x := randInput(rng, g.Inputs[0].Shape, 1)
		if argmaxFloat(runFloat(t, g, x)) != argmaxFloat(runFloat(t, cg, x)) {
			t.Error("argmax changed by dropping the Softmax")
		}
	}
	// Kept on request.
	kg, _, err := clean(g, true)
	if err != nil || countOps(kg, ir.Softmax) != 1 {
		t.Errorf("KeepSoftmax: %v", err)
	}
	// A Softmax in the middle is not touched.
	b = newGB(4, ir.Shape{1, 6})
	s = b.node(ir.Softmax, ir.Attrs{"axis": ir.IntAttr(1)}, "x")
	r = b.node(ir.Relu, nil, s)
	mg, _, err := clean(b.done(t, r), false)
	if err != nil || countOps(mg, ir.Softmax) != 1 {
		t.Errorf("inner Softmax: %v", err)
	}
}
