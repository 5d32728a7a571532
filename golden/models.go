package golden

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/cryptflow-go/cryptflow/ir"
)

// builder assembles an HLIL graph node by node, inferring each node's shape as it goes.
type builder struct {
	g   *ir.Graph
	rng *rand.Rand
	n   int
	err error
}

func newBuilder(name string, seed uint64, input ir.Shape) *builder {
	g := ir.NewGraph(name)
	g.Inputs = []ir.Value{{Name: "input", DType: ir.Float32, Shape: input.Clone()}}
	g.Values["input"] = &ir.Value{Name: "input", DType: ir.Float32, Shape: input.Clone()}
	return &builder{g: g, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (b *builder) fresh(prefix string) string {
	b.n++
	return fmt.Sprintf("%s_%d", prefix, b.n)
}

// konst adds a constant with values uniform in [-a, a].
func (b *builder) konst(prefix string, shape ir.Shape, a float64) string {
	name := b.fresh(prefix)
	t := ir.NewTensor(shape)
	for i := range t.Data {
		t.Data[i] = float32((2*b.rng.Float64() - 1) * a)
	}
	b.g.Consts[name] = t
	return name
}

// konstIn adds a constant with values uniform in [lo, hi].
func (b *builder) konstIn(prefix string, shape ir.Shape, lo, hi float64) string {
	name := b.fresh(prefix)
	t := ir.NewTensor(shape)
	for i := range t.Data {
		t.Data[i] = float32(lo + (hi-lo)*b.rng.Float64())
	}
	b.g.Consts[name] = t
	return name
}

// node appends a node and infers its shape; errors are kept until done.
func (b *builder) node(op ir.Op, attrs ir.Attrs, in ...string) string {
	out := b.fresh(string(op))
	if attrs == nil {
		attrs = ir.Attrs{}
	}
	n := &ir.Node{Name: out, Op: op, Inputs: in, Outputs: []string{out}, Attrs: attrs}
	b.g.Nodes = append(b.g.Nodes, n)
	if b.err == nil {
		if err := ir.InferNode(b.g, n); err != nil {
			b.err = fmt.Errorf("%s: %w", n, err)
		}
	}
	return out
}

func (b *builder) shape(v string) ir.Shape {
	s, ok := b.g.ShapeOf(v)
	if !ok {
		return nil
	}
	return s
}

func (b *builder) done(outs ...string) (*ir.Graph, error) {
	if b.err != nil {
		return nil, b.err
	}
	b.g.Outputs = outs
	if err := b.g.InferShapes(); err != nil {
		return nil, err
	}
	return b.g, nil
}

// conv adds a 2-D convolution with He-uniform weights (variance 2/fan-in) and a small bias.
func (b *builder) conv(x string, m, k, stride, pad, dil, group int, bias bool) string {
	c := b.shape(x)[1]
	fanIn := c / group * k * k
	w := b.konst("W", ir.Shape{m, c / group, k, k}, math.Sqrt(6/float64(fanIn)))
	in := []string{x, w}
	if bias {
		in = append(in, b.konst("B", ir.Shape{m}, 0.1))
	}
	return b.node(ir.Conv, ir.Attrs{"group": ir.IntAttr(group), "kernel_shape": ir.IntsAttr([]int{k, k}),
		"strides": ir.IntsAttr([]int{stride, stride}), "pads": ir.IntsAttr([]int{pad, pad, pad, pad}),
		"dilations": ir.IntsAttr([]int{dil, dil})}, in...)
}

func (b *builder) pool(op ir.Op, x string, k, stride, pad int, countPad bool) string {
	a := ir.Attrs{"kernel_shape": ir.IntsAttr([]int{k, k}), "strides": ir.IntsAttr([]int{stride, stride}),
		"pads": ir.IntsAttr([]int{pad, pad, pad, pad}), "dilations": ir.IntsAttr([]int{1, 1}), "ceil_mode": ir.IntAttr(0)}
	if op == ir.AveragePool {
		cip := 0
		if countPad {
			cip = 1
		}
		a["count_include_pad"] = ir.IntAttr(cip)
	}
	return b.node(op, a, x)
}

// gemm adds a fully connected layer y = x·Wᵀ + b (x is [N, in]).
func (b *builder) gemm(x string, out int) string {
	in := b.shape(x)[1]
	w := b.konst("W", ir.Shape{out, in}, math.Sqrt(6/float64(in)))
	bias := b.konst("B", ir.Shape{out}, 0.1)
	return b.node(ir.Gemm, ir.Attrs{"alpha": ir.FloatAttr(1), "beta": ir.FloatAttr(1),
		"transA": ir.IntAttr(0), "transB": ir.IntAttr(1)}, x, w, bias)
}

func (b *builder) flatten(x string) string {
	return b.node(ir.Flatten, ir.Attrs{"axis": ir.IntAttr(1)}, x)
}

// MiniONN returns the MiniONN CIFAR-10 network as evaluated in CrypTFlow2 Table 5 (and Delphi):
// seven 3×3 / 1×1 convolutions 3→64→64→avgpool→64→64→avgpool→64→64(1×1)→16(1×1), a ReLU after
// each, then a fully connected layer from 16·8·8 to 10 logits. The weights are random
// (He-uniform, from seed); the input is [batch, 3, 32, 32].
func MiniONN(seed uint64, batch int) (*ir.Graph, error) {
	if batch < 1 {
		return nil, fmt.Errorf("minionn: batch %d", batch)
	}
	b := newBuilder("minionn-cifar10", seed, ir.Shape{batch, 3, 32, 32})
	x := "input"
	convRelu := func(m, k, pad int) {
		x = b.node(ir.Relu, nil, b.conv(x, m, k, 1, pad, 1, 1, true))
	}
	avg := func() { x = b.pool(ir.AveragePool, x, 2, 2, 0, false) }
	convRelu(64, 3, 1)
	convRelu(64, 3, 1)
	avg()
	convRelu(64, 3, 1)
	convRelu(64, 3, 1)
	avg()
	convRelu(64, 3, 1)
	convRelu(64, 1, 0)
	convRelu(16, 1, 0)
	logits := b.gemm(b.flatten(x), 10)
	return b.done(logits)
}

// RandomCNN returns a small random convolutional network for golden tests: an input of random
// batch (1 or 2), channels and size, then 2–5 random blocks (convolutions with random kernel,
// stride, padding, dilation and groups; ReLU; max and average pooling; standalone batch
// normalisation; residual additions; channel concatenation; constant padding; per-channel
// scaling; global average pooling), then one or two fully connected layers. Every random choice
// comes from seed.
func RandomCNN(seed uint64) (*ir.Graph, error) {
	rng := rand.New(rand.NewPCG(seed, 7))
	n := 1 + rng.IntN(2)
	c := 1 + rng.IntN(3)
	h := 6 + rng.IntN(7)
	b := newBuilder(fmt.Sprintf("random-cnn-%d", seed), seed, ir.Shape{n, c, h, h})
	x := "input"
	spatial := func() int { return b.shape(x)[2] }
	blocks := 2 + rng.IntN(4)
	global := false
	for i := 0; i < blocks && b.err == nil; i++ {
		ch := b.shape(x)[1]
		switch k := rng.IntN(10); {
		case k <= 2 && !global: // convolution (+ ReLU)
			m := 2 + rng.IntN(5)
			group := 1
			if ch > 1 && m%ch == 0 && rng.IntN(3) == 0 {
				group = ch // depthwise with multiplier
			} else if ch%2 == 0 && m%2 == 0 && rng.IntN(3) == 0 {
				group = 2
			}
			kk := 1 + rng.IntN(min(3, spatial()))
			dil := 1
			if kk > 1 && 2*(kk-1)+1 <= spatial() && rng.IntN(3) == 0 {
				dil = 2
			}
			stride := 1 + rng.IntN(2)
			pad := rng.IntN(kk)
			x = b.conv(x, m, kk, stride, pad, dil, group, rng.IntN(4) != 0)
			if rng.IntN(4) != 0 {
				x = b.node(ir.Relu, nil, x)
			}
		case k == 3 && !global && spatial() >= 3: // max pooling
			kk := 2 + rng.IntN(2)
			x = b.pool(ir.MaxPool, x, kk, 1+rng.IntN(2), rng.IntN(2), false)
		case k == 4 && !global && spatial() >= 3: // average pooling
			x = b.pool(ir.AveragePool, x, 2, 1+rng.IntN(2), rng.IntN(2), rng.IntN(2) == 0)
		case k == 5: // standalone batch normalisation after a ReLU (not folded)
			x = b.node(ir.Relu, nil, x)
			x = b.node(ir.BatchNormalization, ir.Attrs{"epsilon": ir.FloatAttr(1e-5)}, x,
				b.konstIn("gamma", ir.Shape{ch}, 0.5, 1.5), b.konst("beta", ir.Shape{ch}, 0.5),
				b.konst("mean", ir.Shape{ch}, 0.2), b.konstIn("var", ir.Shape{ch}, 0.5, 2))
		case k == 6 && !global: // residual block
			y := b.conv(x, ch, 3, 1, 1, 1, 1, true)
			x = b.node(ir.Relu, nil, b.node(ir.Add, nil, x, y))
		case k == 7: // concatenation with a rectified copy, or a per-channel scale
			if rng.IntN(2) == 0 {
				x = b.node(ir.Concat, ir.Attrs{"axis": ir.IntAttr(1)}, x, b.node(ir.Relu, nil, x))
			} else {
				x = b.node(ir.Mul, nil, x, b.konst("scale", ir.Shape{ch, 1, 1}, 1.5))
			}
		case k == 8 && !global: // constant padding (top and right), with a non-zero value
			x = b.node(ir.Pad, ir.Attrs{"mode": ir.StringAttr("constant"),
				"pads": ir.IntsAttr([]int{0, 0, 1, 0, 0, 0, 0, 1}), "value": ir.FloatAttr(0.25)}, x)
		case k == 9 && !global:
			x = b.node(ir.GlobalAveragePool, nil, x)
			global = true
		}
	}
	x = b.flatten(x)
	if rng.IntN(2) == 0 {
		x = b.node(ir.Relu, nil, b.gemm(x, 4+rng.IntN(8)))
	}
	logits := b.gemm(x, 3+rng.IntN(8))
	if rng.IntN(3) == 0 {
		return b.done(logits, b.node(ir.ArgMax, ir.Attrs{"axis": ir.IntAttr(1), "keepdims": ir.IntAttr(0),
			"select_last_index": ir.IntAttr(0)}, logits))
	}
	return b.done(logits)
}
