package interp

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

func TestTranspose(t *testing.T) {
	b := newBuilder().input("x", ir.Shape{2, 3}, seq(6, 1, 1)).node(ir.Transpose, ir.Attrs{"perm": ints(1, 0)}, "y", "x")
	expect(t, b.run(t), ir.Shape{3, 2}, []float32{1, 4, 2, 5, 3, 6})

	rng := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct {
		xs   ir.Shape
		perm []int
	}{
		{ir.Shape{2, 3, 4, 5}, []int{0, 2, 3, 1}},
		{ir.Shape{2, 3, 4, 5}, []int{3, 1, 0, 2}},
		{ir.Shape{1, 3, 1, 4}, []int{2, 3, 0, 1}},
		{ir.Shape{2, 3, 4}, []int{0, 1, 2}},
		{ir.Shape{2, 2, 2, 2, 3}, []int{4, 0, 3, 1, 2}},
	} {
		x := randData(rng, c.xs.Size())
		got := newBuilder().input("x", c.xs, x).node(ir.Transpose, ir.Attrs{"perm": ir.IntsAttr(c.perm)}, "y", "x").run(t)
		ys := make(ir.Shape, len(c.perm))
		for i, p := range c.perm {
			ys[i] = c.xs[p]
		}
		want := make([]float32, len(x))
		for i := range want {
			oc := unravel(i, ys)
			ic := make([]int, len(oc))
			for d, p := range c.perm {
				ic[p] = oc[d]
			}
			want[i] = x[ravel(ic, c.xs)]
		}
		expect(t, got, ys, want)
	}
}

func TestConcat(t *testing.T) {
	b := newBuilder().input("a", ir.Shape{2, 1}, []float32{1, 2}).
		constant("b", ir.Shape{2, 2}, []float32{3, 4, 5, 6}).
		constant("e", ir.Shape{2, 0}, []float32{}).
		input("c", ir.Shape{2, 1}, []float32{7, 8}).
		node(ir.Concat, ir.Attrs{"axis": ir.IntAttr(1)}, "y", "a", "e", "b", "c")
	expect(t, b.run(t), ir.Shape{2, 4}, []float32{1, 3, 4, 7, 2, 5, 6, 8})
	b = newBuilder().input("a", ir.Shape{1, 2}, []float32{1, 2}).constant("b", ir.Shape{2, 2}, []float32{3, 4, 5, 6}).
		node(ir.Concat, ir.Attrs{"axis": ir.IntAttr(0)}, "y", "a", "b")
	expect(t, b.run(t), ir.Shape{3, 2}, []float32{1, 2, 3, 4, 5, 6})
}

func padAttrs(mode string, value float32, pads ...int) ir.Attrs {
	return ir.Attrs{"mode": ir.StringAttr(mode), "value": ir.FloatAttr(value), "pads": ir.IntsAttr(pads)}
}

func TestPad(t *testing.T) {
	// ONNX's edge example, and reflect within the limit that shape inference sets (pads smaller
	// than the axis).
	x := []float32{1, 1.2, 2.3, 3.4, 4.5, 5.7}
	xs := ir.Shape{3, 2}
	run := func(xs ir.Shape, x []float32, a ir.Attrs) *ir.Tensor {
		return newBuilder().input("x", xs, x).node(ir.Pad, a, "y", "x").run(t)
	}
	expect(t, run(xs, x, padAttrs("reflect", 0, 0, 1, 0, 1)), ir.Shape{3, 4}, []float32{1.2, 1, 1.2, 1, 3.4, 2.3, 3.4, 2.3, 5.7, 4.5, 5.7, 4.5})
	expect(t, run(xs, x, padAttrs("edge", 0, 0, 2, 0, 0)), ir.Shape{3, 4}, []float32{1, 1, 1, 1.2, 2.3, 2.3, 2.3, 3.4, 4.5, 4.5, 4.5, 5.7})
	expect(t, run(xs, x, padAttrs("wrap", 0, 0, 1, 0, 1)), ir.Shape{3, 4}, []float32{1.2, 1, 1.2, 1, 3.4, 2.3, 3.4, 2.3, 5.7, 4.5, 5.7, 4.5})
	expect(t, run(ir.Shape{2, 2}, []float32{1, 2, 3, 4}, padAttrs("constant", 9, 1, 0, 0, 1)), ir.Shape{3, 3}, []float32{9, 9, 9, 1, 2, 9, 3, 4, 9})
	// Wrap further than the axis is long; reflect up to its limit.
	expect(t, run(ir.Shape{2}, []float32{1, 2}, padAttrs("wrap", 0, 3, 2)), ir.Shape{7}, []float32{2, 1, 2, 1, 2, 1, 2})
	expect(t, run(ir.Shape{3}, []float32{1, 2, 3}, padAttrs("reflect", 0, 2, 2)), ir.Shape{7}, []float32{3, 2, 1, 2, 3, 2, 1})

	// Negative pads crop first; the mode then extends what is left.
	x5 := []float32{1, 2, 3, 4, 5}
	s5 := ir.Shape{5}
	expect(t, run(s5, x5, padAttrs("constant", 0, -1, 2)), ir.Shape{6}, []float32{2, 3, 4, 5, 0, 0})
	expect(t, run(s5, x5, padAttrs("edge", 0, -1, 2)), ir.Shape{6}, []float32{2, 3, 4, 5, 5, 5})
	expect(t, run(s5, x5, padAttrs("reflect", 0, -1, 2)), ir.Shape{6}, []float32{2, 3, 4, 5, 4, 3})
	expect(t, run(s5, x5, padAttrs("wrap", 0, -1, 2)), ir.Shape{6}, []float32{2, 3, 4, 5, 2, 3})
	expect(t, run(s5, x5, padAttrs("reflect", 0, 2, -2)), ir.Shape{5}, []float32{3, 2, 1, 2, 3})
	expect(t, run(ir.Shape{2, 3}, seq(6, 1, 1), padAttrs("constant", 0, -1, 1, 0, -1)), ir.Shape{1, 3}, []float32{0, 4, 5})

	// Reflecting an axis cropped to one element is undefined.
	b := newBuilder().input("x", ir.Shape{3}, []float32{1, 2, 3}).node(ir.Pad, padAttrs("reflect", 0, -2, 1), "y", "x")
	b.outputs("y")
	if _, err := New(b.g); err == nil || !strings.Contains(err.Error(), "reflect") {
		t.Fatalf("want a reflect error, got %v", err)
	}
}

func TestViews(t *testing.T) {
	x := seq(24, 0, 1)
	xs := ir.Shape{2, 3, 4}
	for _, c := range []struct {
		op    ir.Op
		attrs ir.Attrs
		ys    ir.Shape
	}{
		{ir.Flatten, ir.Attrs{"axis": ir.IntAttr(1)}, ir.Shape{2, 12}},
		{ir.Flatten, ir.Attrs{"axis": ir.IntAttr(0)}, ir.Shape{1, 24}},
		{ir.Reshape, ir.Attrs{"shape": ints(4, 6)}, ir.Shape{4, 6}},
		{ir.Unsqueeze, ir.Attrs{"axes": ints(0, 3)}, ir.Shape{1, 2, 3, 1, 4}},
		{ir.Identity, nil, xs},
	} {
		got := newBuilder().input("x", xs, x).node(c.op, c.attrs, "y", "x").run(t)
		expect(t, got, c.ys, x)
	}
	b := newBuilder().input("x", ir.Shape{1, 3, 1}, []float32{1, 2, 3}).node(ir.Squeeze, ir.Attrs{"axes": ints(0, 2)}, "y", "x")
	expect(t, b.run(t), ir.Shape{3}, []float32{1, 2, 3})
}

// Constants may have empty dimensions; the kernels must handle empty operands and results.
func TestEmptyTensors(t *testing.T) {
	b := newBuilder().input("x", ir.Shape{1, 2}, []float32{1, 2}).constant("e", ir.Shape{0, 2}, []float32{}).
		node(ir.Add, nil, "y", "x", "e")
	expect(t, b.run(t), ir.Shape{0, 2}, []float32{})
	b = newBuilder().input("x", ir.Shape{3}, []float32{1, 2, 3}).node(ir.Pad, padAttrs("constant", 0, -2, -1), "y", "x")
	expect(t, b.run(t), ir.Shape{0}, []float32{})
	// An empty inner dimension: the product is all zeros, plus C for Gemm.
	b = newBuilder().input("x", ir.Shape{1, 2}, []float32{1, 2}).constant("e", ir.Shape{2, 0}, []float32{}).
		constant("f", ir.Shape{0, 3}, []float32{}).node(ir.MatMul, nil, "y", "e", "f")
	expect(t, b.run(t), ir.Shape{2, 3}, make([]float32, 6))
	b = newBuilder().input("c", ir.Shape{3}, []float32{1, 2, 3}).constant("e", ir.Shape{2, 0}, []float32{}).
		constant("f", ir.Shape{0, 3}, []float32{}).node(ir.Gemm, gemmAttrs(1, 2, 0, 0), "y", "e", "f", "c")
	expect(t, b.run(t), ir.Shape{2, 3}, []float32{2, 4, 6, 2, 4, 6})
	b = newBuilder().input("x", ir.Shape{2}, []float32{1, 2}).constant("e", ir.Shape{0, 2, 3}, []float32{}).
		node(ir.Transpose, ir.Attrs{"perm": ints(2, 0, 1)}, "y", "e").node(ir.Relu, nil, "z", "x")
	b.outputs("y")
	expect(t, b.run(t), ir.Shape{3, 0, 2}, []float32{})
}
