package interp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

func TestBinaryBroadcasting(t *testing.T) {
	a := []float32{1, 2, 3, 4, 5, 6} // [2,3]
	for _, c := range []struct {
		name string
		op   ir.Op
		bs   ir.Shape
		b    []float32
		ys   ir.Shape
		want []float32
	}{
		{"same shape", ir.Add, ir.Shape{2, 3}, []float32{6, 5, 4, 3, 2, 1}, ir.Shape{2, 3}, []float32{7, 7, 7, 7, 7, 7}},
		{"row", ir.Sub, ir.Shape{3}, []float32{1, 2, 3}, ir.Shape{2, 3}, []float32{0, 0, 0, 3, 3, 3}},
		{"column", ir.Mul, ir.Shape{2, 1}, []float32{2, -1}, ir.Shape{2, 3}, []float32{2, 4, 6, -4, -5, -6}},
		{"scalar", ir.Div, ir.Shape{}, []float32{2}, ir.Shape{2, 3}, []float32{0.5, 1, 1.5, 2, 2.5, 3}},
		{"both ways", ir.Add, ir.Shape{2, 1, 1}, []float32{10, 20}, ir.Shape{2, 2, 3},
			[]float32{11, 12, 13, 14, 15, 16, 21, 22, 23, 24, 25, 26}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := newBuilder().input("a", ir.Shape{2, 3}, a).constant("b", c.bs, c.b).node(c.op, nil, "y", "a", "b")
			expect(t, b.run(t), c.ys, c.want)
		})
	}
	// The broadcast operand on the left: [3] - [2,3] and [2,1] / [1,3].
	b := newBuilder().input("a", ir.Shape{3}, []float32{10, 20, 30}).constant("b", ir.Shape{2, 3}, a).node(ir.Sub, nil, "y", "a", "b")
	expect(t, b.run(t), ir.Shape{2, 3}, []float32{9, 18, 27, 6, 15, 24})
	b = newBuilder().input("a", ir.Shape{2, 1}, []float32{12, 24}).constant("b", ir.Shape{1, 3}, []float32{1, 2, 3}).node(ir.Div, nil, "y", "a", "b")
	expect(t, b.run(t), ir.Shape{2, 3}, []float32{12, 6, 4, 24, 12, 8})
}

// Random broadcasts of rank up to 4 against an index-by-index reference.
func TestBinaryMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	shapes := [][2]ir.Shape{
		{{2, 3, 4, 5}, {3, 1, 5}},
		{{2, 1, 4, 1}, {1, 3, 1, 5}},
		{{1, 1, 1}, {4, 1, 2}},
		{{3, 1, 2, 1, 2}, {3, 2, 1, 2}},
		{{8, 1}, {8}},
	}
	ops := []ir.Op{ir.Add, ir.Sub, ir.Mul, ir.Div}
	for i, s := range shapes {
		op := ops[i%len(ops)]
		a, bd := randData(rng, s[0].Size()), randData(rng, s[1].Size())
		ys, err := ir.Broadcast(s[0], s[1])
		if err != nil {
			t.Fatal(err)
		}
		b := newBuilder().input("a", s[0], a).input("b", s[1], bd).node(op, nil, "y", "a", "b")
		got := b.run(t)
		want := make([]float32, ys.Size())
		for j := range want {
			c := unravel(j, ys)
			x, y := a[bcastIndex(c, s[0])], bd[bcastIndex(c, s[1])]
			switch op {
			case ir.Add:
				want[j] = x + y
			case ir.Sub:
				want[j] = x - y
			case ir.Mul:
				want[j] = x * y
			case ir.Div:
				want[j] = x / y
			}
		}
		expect(t, got, ys, want)
	}
}

// bcastIndex is the flat index into a tensor of shape s read at output coordinates c.
func bcastIndex(c []int, s ir.Shape) int {
	off := len(c) - len(s)
	i := 0
	for d := range s {
		x := c[off+d]
		if s[d] == 1 {
			x = 0
		}
		i = i*s[d] + x
	}
	return i
}

func TestSum(t *testing.T) {
	b := newBuilder().input("a", ir.Shape{2, 2}, []float32{1, 2, 3, 4}).
		constant("b", ir.Shape{2}, []float32{10, 20}).
		constant("c", ir.Shape{2, 1}, []float32{100, 200}).
		node(ir.Sum, nil, "y", "a", "b", "c")
	expect(t, b.run(t), ir.Shape{2, 2}, []float32{111, 122, 213, 224})
	// One input: a copy. A later input may widen the result.
	b = newBuilder().input("a", ir.Shape{3}, []float32{1, 2, 3}).node(ir.Sum, nil, "y", "a")
	expect(t, b.run(t), ir.Shape{3}, []float32{1, 2, 3})
	b = newBuilder().input("a", ir.Shape{1}, []float32{1}).constant("b", ir.Shape{2, 2}, []float32{1, 2, 3, 4}).
		node(ir.Sum, nil, "y", "a", "b")
	expect(t, b.run(t), ir.Shape{2, 2}, []float32{2, 3, 4, 5})
}

func TestActivations(t *testing.T) {
	x := []float32{-2, -0.5, 0, 0.5, 3}
	xs := ir.Shape{5}
	run := func(op ir.Op, attrs ir.Attrs) *ir.Tensor {
		return newBuilder().input("x", xs, x).node(op, attrs, "y", "x").run(t)
	}
	expect(t, run(ir.Relu, nil), xs, []float32{0, 0, 0, 0.5, 3})
	expect(t, run(ir.LeakyRelu, ir.Attrs{"alpha": ir.FloatAttr(0.1)}), xs, []float32{-0.2, -0.05, 0, 0.5, 3})
	clip := func(lo, hi float64) ir.Attrs {
		return ir.Attrs{"min": ir.FloatAttr(float32(lo)), "max": ir.FloatAttr(float32(hi))}
	}
	expect(t, run(ir.Clip, clip(-1, 1)), xs, []float32{-1, -0.5, 0, 0.5, 1})
	expect(t, run(ir.Clip, clip(math.Inf(-1), 0.25)), xs, []float32{-2, -0.5, 0, 0.25, 0.25})
	expect(t, run(ir.Clip, clip(0, math.Inf(1))), xs, []float32{0, 0, 0, 0.5, 3})
	// min > max: onnxruntime's min(max(x, lo), hi) gives hi everywhere.
	expect(t, run(ir.Clip, clip(1, -1)), xs, []float32{-1, -1, -1, -1, -1})
	sig := make([]float32, len(x))
	for i, v := range x {
		sig[i] = float32(1 / (1 + math.Exp(-float64(v))))
	}
	expect(t, run(ir.Sigmoid, nil), xs, sig)
	// Saturation without overflow.
	b := newBuilder().input("x", ir.Shape{2}, []float32{-200, 200}).node(ir.Sigmoid, nil, "y", "x")
	expect(t, b.run(t), ir.Shape{2}, []float32{0, 1})
}

func TestBatchNormalization(t *testing.T) {
	// Two channels: y = (x - mean) / sqrt(var + eps) * scale + B.
	b := newBuilder().input("x", ir.Shape{2, 2, 2}, []float32{1, 3, 10, 20, 5, 7, 30, 40}).
		constant("s", ir.Shape{2}, []float32{2, 0.5}).
		constant("b", ir.Shape{2}, []float32{1, -1}).
		constant("m", ir.Shape{2}, []float32{2, 20}).
		constant("v", ir.Shape{2}, []float32{3.99, 99.99}).
		node(ir.BatchNormalization, ir.Attrs{"epsilon": ir.FloatAttr(0.01)}, "y", "x", "s", "b", "m", "v")
	// Channel 0: (x-2)/2*2+1 = x-1. Channel 1: (x-20)/10*0.5-1.
	expect(t, b.run(t), ir.Shape{2, 2, 2}, []float32{0, 2, -1.5, -1, 4, 6, -0.5, 0})
}

func TestLRN(t *testing.T) {
	x := []float32{1, 2, 3}
	xs := ir.Shape{1, 3, 1, 1}
	attrs := func(size int, alpha, beta, bias float32) ir.Attrs {
		return ir.Attrs{"size": ir.IntAttr(size), "alpha": ir.FloatAttr(alpha), "beta": ir.FloatAttr(beta), "bias": ir.FloatAttr(bias)}
	}
	// size 2: window [c, c+1]; alpha/size = 1, bias 1, beta 1: y = x / (1 + sq).
	b := newBuilder().input("x", xs, x).node(ir.LRN, attrs(2, 2, 1, 1), "y", "x")
	expect(t, b.run(t), xs, []float32{1.0 / 6, 2.0 / 14, 3.0 / 10})
	// size 3: window [c-1, c+1]; alpha/size = 0.5, bias 2, beta 0.5.
	b = newBuilder().input("x", xs, x).node(ir.LRN, attrs(3, 1.5, 0.5, 2), "y", "x")
	want := []float32{
		float32(1 / math.Sqrt(2+0.5*5)), float32(2 / math.Sqrt(2+0.5*14)), float32(3 / math.Sqrt(2+0.5*13)),
	}
	expect(t, b.run(t), xs, want)
	// size 4 over 5 channels of 2 positions: window [c-1, c+2].
	x5 := seq(10, 1, 1) // channel c holds (2c+1, 2c+2)
	b = newBuilder().input("x", ir.Shape{1, 5, 2}, x5).node(ir.LRN, attrs(4, 4, 1, 0), "y", "x")
	want = make([]float32, 10)
	for c := 0; c < 5; c++ {
		for i := 0; i < 2; i++ {
			var sq float64
			for cc := max(0, c-1); cc <= min(4, c+2); cc++ {
				v := float64(x5[cc*2+i])
				sq += v * v
			}
			want[c*2+i] = float32(float64(x5[c*2+i]) / sq)
		}
	}
	expect(t, b.run(t), ir.Shape{1, 5, 2}, want)
}

func TestSoftmax(t *testing.T) {
	// Along the last axis, with values that overflow exp without the max shift.
	b := newBuilder().input("x", ir.Shape{2, 3}, []float32{1, 2, 3, 1000, 1001, 1002}).
		node(ir.Softmax, ir.Attrs{"axis": ir.IntAttr(1)}, "y", "x")
	e := []float64{math.Exp(-2), math.Exp(-1), 1}
	s := e[0] + e[1] + e[2]
	p := []float32{float32(e[0] / s), float32(e[1] / s), float32(e[2] / s)}
	expect(t, b.run(t), ir.Shape{2, 3}, append(append([]float32{}, p...), p...))
	// Along a middle axis: [1,2,2], axis 1 pairs (x[0,0,j], x[0,1,j]).
	b = newBuilder().input("x", ir.Shape{1, 2, 2}, []float32{0, 5, 0, 5}).
		node(ir.Softmax, ir.Attrs{"axis": ir.IntAttr(1)}, "y", "x")
	expect(t, b.run(t), ir.Shape{1, 2, 2}, []float32{0.5, 0.5, 0.5, 0.5})
}

func TestArgMax(t *testing.T) {
	x := []float32{2, 5, 5, 1, 2, 7, 0, 1} // [2,4]
	attrs := func(axis, keep, last int) ir.Attrs {
		return ir.Attrs{"axis": ir.IntAttr(axis), "keepdims": ir.IntAttr(keep), "select_last_index": ir.IntAttr(last)}
	}
	run := func(a ir.Attrs) *ir.Tensor {
		return newBuilder().input("x", ir.Shape{2, 4}, x).node(ir.ArgMax, a, "y", "x").run(t)
	}
	expect(t, run(attrs(1, 1, 0)), ir.Shape{2, 1}, []float32{1, 1})
	expect(t, run(attrs(1, 0, 1)), ir.Shape{2}, []float32{2, 1})
	expect(t, run(attrs(0, 1, 0)), ir.Shape{1, 4}, []float32{0, 1, 0, 0})
	expect(t, run(attrs(0, 0, 1)), ir.Shape{4}, []float32{1, 1, 0, 1})
}
