package interp

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

func convAttrs(group int, kernel, strides, pads, dil []int) ir.Attrs {
	return ir.Attrs{
		"group": ir.IntAttr(group), "kernel_shape": ir.IntsAttr(kernel), "strides": ir.IntsAttr(strides),
		"pads": ir.IntsAttr(pads), "dilations": ir.IntsAttr(dil),
	}
}

func ones(n int) []float32 { return seq(n, 1, 0) }

// The values of ONNX's basic_conv and conv_with_strides node tests, computed by hand.
func TestConvONNXExamples(t *testing.T) {
	for _, c := range []struct {
		name    string
		xs      ir.Shape
		strides []int
		pads    []int
		ys      ir.Shape
		want    []float32
	}{
		{"padding", ir.Shape{1, 1, 5, 5}, []int{1, 1}, []int{1, 1, 1, 1}, ir.Shape{1, 1, 5, 5}, []float32{
			12, 21, 27, 33, 24, 33, 54, 63, 72, 51, 63, 99, 108, 117, 81, 93, 144, 153, 162, 111, 72, 111, 117, 123, 84}},
		{"no padding", ir.Shape{1, 1, 5, 5}, []int{1, 1}, []int{0, 0, 0, 0}, ir.Shape{1, 1, 3, 3}, []float32{
			54, 63, 72, 99, 108, 117, 144, 153, 162}},
		{"strides and padding", ir.Shape{1, 1, 7, 5}, []int{2, 2}, []int{1, 1, 1, 1}, ir.Shape{1, 1, 4, 3}, []float32{
			12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124}},
		{"strides, asymmetric padding", ir.Shape{1, 1, 7, 5}, []int{2, 2}, []int{1, 0, 1, 0}, ir.Shape{1, 1, 4, 2}, []float32{
			21, 33, 99, 117, 189, 207, 171, 183}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder().input("x", c.xs, seq(c.xs.Size(), 0, 1)).
				constant("w", ir.Shape{1, 1, 3, 3}, ones(9)).
				node(ir.Conv, convAttrs(1, []int{3, 3}, c.strides, c.pads, []int{1, 1}), "y", "x", "w")
			expect(t, b.run(t), c.ys, c.want)
		})
	}
}

func TestConvGroupsAndBias(t *testing.T) {
	// Depthwise: each channel scaled by its own 1x1 weight, plus a bias.
	b := newBuilder().input("x", ir.Shape{1, 2, 2, 2}, seq(8, 1, 1)).
		constant("w", ir.Shape{2, 1, 1, 1}, []float32{2, -3}).
		constant("b", ir.Shape{2}, []float32{0.5, 1}).
		node(ir.Conv, convAttrs(2, []int{1, 1}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}), "y", "x", "w", "b")
	expect(t, b.run(t), ir.Shape{1, 2, 2, 2}, []float32{2.5, 4.5, 6.5, 8.5, -14, -17, -20, -23})

	// Two groups of two input channels, one output channel each, 1x1 kernel: out0 = x0 + x1,
	// out1 = x2 - x3.
	b = newBuilder().input("x", ir.Shape{1, 4, 1, 2}, []float32{1, 2, 10, 20, 100, 200, 1000, 2000}).
		constant("w", ir.Shape{2, 2, 1, 1}, []float32{1, 1, 1, -1}).
		node(ir.Conv, convAttrs(2, []int{1, 1}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}), "y", "x", "w")
	expect(t, b.run(t), ir.Shape{1, 2, 1, 2}, []float32{11, 22, -900, -1800})
}

func TestConv1DDilated(t *testing.T) {
	// y[i] = x[i] - x[i+2], and with pads (1, 2) the taps that fall outside read 0.
	b := newBuilder().input("x", ir.Shape{1, 1, 5}, []float32{1, 2, 4, 8, 16}).
		constant("w", ir.Shape{1, 1, 2}, []float32{1, -1}).
		node(ir.Conv, convAttrs(1, []int{2}, []int{1}, []int{1, 2}, []int{2}), "y", "x", "w")
	// Padded input: 0 1 2 4 8 16 0 0; y[o] = p[o] - p[o+2] for o = 0..5.
	expect(t, b.run(t), ir.Shape{1, 1, 6}, []float32{-2, -3, -6, -12, 8, 16})
}

// Random convolutions of every shape feature against the direct reference.
func TestConvMatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		xs                    ir.Shape
		m, group              int
		kernel, strides, pads []int
		dil                   []int
		bias                  bool
	}{
		{ir.Shape{2, 3, 7, 6}, 4, 1, []int{3, 2}, []int{1, 1}, []int{1, 0, 1, 1}, []int{1, 1}, true},
		{ir.Shape{1, 4, 9, 9}, 6, 2, []int{3, 3}, []int{2, 3}, []int{2, 1, 0, 2}, []int{2, 1}, true},
		{ir.Shape{1, 6, 8, 8}, 6, 6, []int{3, 3}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}, true},  // depthwise
		{ir.Shape{1, 3, 8, 8}, 6, 3, []int{3, 3}, []int{2, 2}, []int{1, 1, 1, 1}, []int{1, 1}, false}, // depthwise x2
		{ir.Shape{2, 5, 4, 4}, 3, 1, []int{1, 1}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}, true},  // 1x1: no im2col
		{ir.Shape{1, 2, 5, 5}, 3, 1, []int{1, 1}, []int{2, 2}, []int{1, 1, 1, 1}, []int{1, 1}, false}, // strided 1x1
		{ir.Shape{3, 2, 11}, 4, 2, []int{3}, []int{2}, []int{2, 1}, []int{2}, true},                   // 1-D
		{ir.Shape{1, 2, 4, 5, 6}, 3, 1, []int{2, 3, 2}, []int{1, 2, 2}, []int{1, 0, 1, 0, 1, 1}, []int{2, 1, 1}, true},
		{ir.Shape{1, 1, 3, 3}, 1, 1, []int{3, 3}, []int{4, 4}, []int{2, 2, 2, 2}, []int{1, 1}, false}, // windows mostly padding
	} {
		t.Run(fmt.Sprintf("%v_k%v_s%v_p%v_d%v_g%d", c.xs, c.kernel, c.strides, c.pads, c.dil, c.group), func(t *testing.T) {
			ws := append(ir.Shape{c.m, c.xs[1] / c.group}, c.kernel...)
			x, w := randData(rng, c.xs.Size()), randData(rng, ws.Size())
			b := newBuilder().input("x", c.xs, x).constant("w", ws, w)
			var bias []float32
			ins := []string{"x", "w"}
			if c.bias {
				bias = randData(rng, c.m)
				b.constant("b", ir.Shape{c.m}, bias)
				ins = append(ins, "b")
			}
			b.node(ir.Conv, convAttrs(c.group, c.kernel, c.strides, c.pads, c.dil), "y", ins...)
			got := b.run(t)
			want := naiveConv(x, c.xs, w, ws, bias, c.group, c.strides, c.pads, c.dil, got.Shape)
			expect(t, got, got.Shape, want)
		})
	}
}

func gemmAttrs(alpha, beta float32, ta, tb int) ir.Attrs {
	return ir.Attrs{"alpha": ir.FloatAttr(alpha), "beta": ir.FloatAttr(beta), "transA": ir.IntAttr(ta), "transB": ir.IntAttr(tb)}
}

func TestGemm(t *testing.T) {
	A := []float32{1, 2, 3, 4, 5, 6} // [2,3]
	B := []float32{1, 0, 0, 1, 1, 1} // [3,2]
	// A*B = [[1+3, 2+3], [4+6, 5+6]] = [[4,5],[10,11]]
	for _, c := range []struct {
		name  string
		attrs ir.Attrs
		as    ir.Shape
		a     []float32
		bs    ir.Shape
		b     []float32
		cs    ir.Shape
		c     []float32
		want  []float32
	}{
		{"plain", gemmAttrs(1, 1, 0, 0), ir.Shape{2, 3}, A, ir.Shape{3, 2}, B, nil, nil, []float32{4, 5, 10, 11}},
		{"alpha, C row", gemmAttrs(2, 1, 0, 0), ir.Shape{2, 3}, A, ir.Shape{3, 2}, B, ir.Shape{2}, []float32{1, -1}, []float32{9, 9, 21, 21}},
		{"beta, C column", gemmAttrs(1, 0.5, 0, 0), ir.Shape{2, 3}, A, ir.Shape{3, 2}, B, ir.Shape{2, 1}, []float32{2, 4}, []float32{5, 6, 12, 13}},
		{"C scalar", gemmAttrs(1, 1, 0, 0), ir.Shape{2, 3}, A, ir.Shape{3, 2}, B, ir.Shape{}, []float32{10}, []float32{14, 15, 20, 21}},
		{"C full, beta 0", gemmAttrs(1, 0, 0, 0), ir.Shape{2, 3}, A, ir.Shape{3, 2}, B, ir.Shape{2, 2}, []float32{9, 9, 9, 9}, []float32{4, 5, 10, 11}},
		{"transA", gemmAttrs(1, 1, 1, 0), ir.Shape{3, 2}, []float32{1, 4, 2, 5, 3, 6}, ir.Shape{3, 2}, B, nil, nil, []float32{4, 5, 10, 11}},
		{"transB", gemmAttrs(1, 1, 0, 1), ir.Shape{2, 3}, A, ir.Shape{2, 3}, []float32{1, 0, 1, 0, 1, 1}, nil, nil, []float32{4, 5, 10, 11}},
		{"both", gemmAttrs(1, 1, 1, 1), ir.Shape{3, 2}, []float32{1, 4, 2, 5, 3, 6}, ir.Shape{2, 3}, []float32{1, 0, 1, 0, 1, 1}, ir.Shape{1, 2}, []float32{1, 2}, []float32{5, 7, 11, 13}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder().input("a", c.as, c.a).constant("b", c.bs, c.b)
			ins := []string{"a", "b"}
			if c.cs != nil {
				b.constant("c", c.cs, c.c)
				ins = append(ins, "c")
			}
			b.node(ir.Gemm, c.attrs, "y", ins...)
			expect(t, b.run(t), ir.Shape{2, 2}, c.want)
		})
	}
}

// TestMatMul checks numpy semantics: 1-D promotion and batch broadcasting.
func TestMatMul(t *testing.T) {
	// 1-D · 1-D is a scalar.
	b := newBuilder().input("a", ir.Shape{3}, []float32{1, 2, 3}).constant("b", ir.Shape{3}, []float32{4, 5, 6}).
		node(ir.MatMul, nil, "y", "a", "b")
	expect(t, b.run(t), ir.Shape{}, []float32{32})

	// Matrix · vector and vector · matrix.
	b = newBuilder().input("a", ir.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6}).constant("b", ir.Shape{3}, []float32{1, 0, -1}).
		node(ir.MatMul, nil, "y", "a", "b")
	expect(t, b.run(t), ir.Shape{2}, []float32{-2, -2})
	b = newBuilder().input("a", ir.Shape{2}, []float32{1, -1}).constant("b", ir.Shape{2, 3}, []float32{1, 2, 3, 4, 5, 6}).
		node(ir.MatMul, nil, "y", "a", "b")
	expect(t, b.run(t), ir.Shape{3}, []float32{-3, -3, -3})

	// Batch broadcasting in both directions: [2,1,2,3] x [3,3,2] -> [2,3,2,2].
	rng := rand.New(rand.NewPCG(3, 4))
	as, bs := ir.Shape{2, 1, 2, 3}, ir.Shape{3, 3, 2}
	a, bb := randData(rng, as.Size()), randData(rng, bs.Size())
	b = newBuilder().input("a", as, a).input("b", bs, bb).node(ir.MatMul, nil, "y", "a", "b")
	want := make([]float32, 0, 24)
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			for r := 0; r < 2; r++ {
				for col := 0; col < 2; col++ {
					var s float32
					for k := 0; k < 3; k++ {
						s += a[i*6+r*3+k] * bb[j*6+k*2+col]
					}
					want = append(want, s)
				}
			}
		}
	}
	expect(t, b.run(t), ir.Shape{2, 3, 2, 2}, want)

	// Batched A times one matrix B folds the batch into rows: [2,2,3] x [3,1].
	b = newBuilder().input("a", ir.Shape{2, 2, 3}, seq(12, 1, 1)).constant("b", ir.Shape{3, 1}, []float32{1, 1, 1}).
		node(ir.MatMul, nil, "y", "a", "b")
	expect(t, b.run(t), ir.Shape{2, 2, 1}, []float32{6, 15, 24, 33})

	// A 1-D operand against a batch: [3] x [2,3,2] -> [2,2].
	b = newBuilder().input("a", ir.Shape{3}, []float32{1, 1, 1}).constant("b", ir.Shape{2, 3, 2}, seq(12, 0, 1)).
		node(ir.MatMul, nil, "y", "a", "b")
	expect(t, b.run(t), ir.Shape{2, 2}, []float32{6, 9, 24, 27})
}
