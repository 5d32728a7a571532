package golden

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/cryptflow-go/cryptflow/ir"
)

// RandomPolyNet returns a random small polynomial network for the fhe mode (athosc --backend
// fhe): batch 1, a few blocks of convolution (any stride and padding, optional bias), square
// activation x·x, constant padding, per-channel scaling, residual addition, concatenation or
// sum-free reshaping, then one or two fully connected layers with a square between them. Every
// layer is a polynomial, so the whole network is one; the weights are random (from seed) and
// small so that the values stay in a few dozen bits at small scales. With mlp set there is no
// convolution: the input [1, k] goes through Gemm, square, Gemm (the shape of LoLa's dense layers).
func RandomPolyNet(seed uint64, mlp bool) (*ir.Graph, error) {
	rng := rand.New(rand.NewPCG(seed, 21))
	if mlp {
		b := newBuilder(fmt.Sprintf("random-poly-mlp-%d", seed), seed, ir.Shape{1, 4 + rng.IntN(12)})
		h := b.gemm("input", 3+rng.IntN(10))
		return b.done(b.gemm(b.node(ir.Mul, nil, h, h), 2+rng.IntN(6)))
	}
	c := 1 + rng.IntN(2)
	h := 4 + rng.IntN(4)
	b := newBuilder(fmt.Sprintf("random-poly-cnn-%d", seed), seed, ir.Shape{1, c, h, h})
	x := "input"
	square := func(v string) string { return b.node(ir.Mul, nil, v, v) }
	blocks := 1 + rng.IntN(2)
	for i := 0; i < blocks && b.err == nil; i++ {
		ch := b.shape(x)[1]
		switch rng.IntN(5) {
		case 0, 1:
			kk := 1 + rng.IntN(min(3, b.shape(x)[2]))
			x = square(b.conv(x, 1+rng.IntN(3), kk, 1+rng.IntN(2), rng.IntN(kk), 1, 1, rng.IntN(3) != 0))
		case 2:
			x = b.node(ir.Add, nil, x, b.conv(x, ch, 3, 1, 1, 1, 1, true))
		case 3:
			x = b.node(ir.Pad, ir.Attrs{"mode": ir.StringAttr("constant"),
				"pads": ir.IntsAttr([]int{0, 0, 1, 0, 0, 0, 0, 1}), "value": ir.FloatAttr(0.25)}, x)
			x = b.node(ir.Mul, nil, x, b.konst("scale", ir.Shape{ch, 1, 1}, 1.5))
		case 4:
			x = b.node(ir.Concat, ir.Attrs{"axis": ir.IntAttr(1)}, x, square(x))
		}
	}
	x = b.flatten(x)
	if rng.IntN(2) == 0 {
		x = square(b.gemm(x, 3+rng.IntN(6)))
	}
	return b.done(b.gemm(x, 2+rng.IntN(6)))
}

// ConvRepPolyCNN is a polynomial CNN whose first convolution has many output maps for its taps:
// input [1, 3, 12, 12], a 4×4 stride-2 convolution (pad 1) to 40 maps, x², a dense layer to 4
// outputs. The fhe mode uploads its input in LoLa's convolution representation (two vectors:
// 48 taps for blocks of 40 maps; vm/fhe), as it does LoLa CIFAR-10's.
func ConvRepPolyCNN(seed uint64) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("conv-rep-poly-cnn-%d", seed), seed, ir.Shape{1, 3, 12, 12})
	h := b.conv("input", 40, 4, 2, 1, 1, 1, true)
	return b.done(b.gemm(b.flatten(b.node(ir.Mul, nil, h, h)), 4))
}

// StridedPairPolyCNN is LoLa CIFAR-10's network in small: input [1, 3, 12, 12], a 4×4 stride-2
// convolution (pad 1) to 40 maps, x², a 2×2 stride-2 convolution to 60 maps, x², a dense layer to
// 4 outputs. The fhe mode uploads its input in the convolution representation, writes the first
// square phase-blocked and the second wide (vm/fhe, chooseLayoutNext).
func StridedPairPolyCNN(seed uint64) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("strided-pair-poly-cnn-%d", seed), seed, ir.Shape{1, 3, 12, 12})
	h := b.conv("input", 40, 4, 2, 1, 1, 1, true)
	h = b.conv(b.node(ir.Mul, nil, h, h), 60, 2, 2, 0, 1, 1, true)
	return b.done(b.gemm(b.flatten(b.node(ir.Mul, nil, h, h)), 4))
}

// WidePolyCNN is a small LoLa-CIFAR-shaped polynomial CNN: input [1, 3, 8, 8], a 4×4 stride-2
// convolution (pad 1) to 16 maps, x², a dense layer to 4 outputs. Its first convolution has more
// (output map, input channel, tap) triples than half its output's period, so the fhe mode
// encrypts its input channel-minor (vm/fhe).
func WidePolyCNN(seed uint64) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("wide-poly-cnn-%d", seed), seed, ir.Shape{1, 3, 8, 8})
	h := b.conv("input", 16, 4, 2, 1, 1, 1, true)
	return b.done(b.gemm(b.flatten(b.node(ir.Mul, nil, h, h)), 4))
}

// BlockCirculantPolyNet is a small LoLa-shaped polynomial network whose large dense layer has
// block-circulant weights with k×k blocks (Falcon): input [1, 1, 10, 10], a 3×3 stride-2
// convolution (pad 1) to 3 maps, x², a block-circulant dense layer from 75 to hidden outputs
// (the 75 inputs are the top-left corner of ceil(75/k)·k columns), x², a dense layer to 4
// outputs. Its block-circulant weights include the edge values: one block all zero, one block
// with every entry at the largest magnitude ±a, and a last row block cut short when hidden is
// not a multiple of k.
func BlockCirculantPolyNet(seed uint64, k, hidden int) (*ir.Graph, error) {
	if k < 2 || hidden < 1 {
		return nil, fmt.Errorf("block-circulant net: block size %d, hidden %d", k, hidden)
	}
	b := newBuilder(fmt.Sprintf("bcirc-poly-net-%d-k%d", seed, k), seed, ir.Shape{1, 1, 10, 10})
	h := b.conv("input", 3, 3, 2, 1, 1, 1, true)
	x := b.flatten(b.node(ir.Mul, nil, h, h))
	x = b.blockCirculantGemm(x, hidden, k)
	return b.done(b.gemm(b.node(ir.Mul, nil, x, x), 4))
}

// blockCirculantGemm adds a Gemm from x's columns to out outputs whose weight is block-circulant
// with k×k blocks (row i of a block is its first row rotated right by i), values uniform in
// [-a, a], block (0, 1) zero and block (0, 0) at ±a.
func (b *builder) blockCirculantGemm(x string, out, k int) string {
	in := b.shape(x)[1]
	nbIn, nbOut := (in+k-1)/k, (out+k-1)/k
	a := math.Sqrt(6 / float64(in))
	first := make([]float32, nbOut*nbIn*k)
	for i := range first {
		first[i] = float32((2*b.rng.Float64() - 1) * a)
	}
	for t := 0; t < k; t++ {
		first[t] = float32(a)
		if t%2 == 1 {
			first[t] = float32(-a)
		}
		if nbIn > 1 {
			first[k+t] = 0
		}
	}
	name := b.fresh("Wbc")
	w := ir.NewTensor(ir.Shape{out, in})
	for i := 0; i < out; i++ {
		for j := 0; j < in; j++ {
			I, J := i/k, j/k
			w.Data[i*in+j] = first[(I*nbIn+J)*k+((j%k)-(i%k)+k)%k]
		}
	}
	b.g.Consts[name] = w
	bias := b.konst("B", ir.Shape{out}, 0.1)
	return b.node(ir.Gemm, ir.Attrs{"alpha": ir.FloatAttr(1), "beta": ir.FloatAttr(1),
		"transA": ir.IntAttr(0), "transB": ir.IntAttr(1)}, x, name, bias)
}

// BlockCirculantPolyMLP is a polynomial MLP whose first layer is a square n×n block-circulant
// matrix with k×k blocks (edge values as in BlockCirculantPolyNet): input [1, n], the
// block-circulant dense layer, x², a dense layer to 4 outputs. A square layer is where the
// frequency domain pays in the fhe mode: its dense map cannot be folded.
func BlockCirculantPolyMLP(seed uint64, n, k int) (*ir.Graph, error) {
	if k < 2 || n < k {
		return nil, fmt.Errorf("block-circulant mlp: block size %d, width %d", k, n)
	}
	b := newBuilder(fmt.Sprintf("bcirc-poly-mlp-%d-n%d-k%d", seed, n, k), seed, ir.Shape{1, n})
	x := b.blockCirculantGemm("input", n, k)
	return b.done(b.gemm(b.node(ir.Mul, nil, x, x), 4))
}
