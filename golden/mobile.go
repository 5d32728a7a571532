package golden

import (
	"fmt"
	"math"

	"github.com/cryptflow-go/cryptflow/ir"
)

// scalar adds a constant scalar.
func (b *builder) scalar(prefix string, v float32) string {
	name := b.fresh(prefix)
	b.g.Consts[name] = &ir.Tensor{Shape: ir.Shape{}, Data: []float32{v}}
	return name
}

// clip adds Clip(x, lo, hi).
func (b *builder) clip(x string, lo, hi float32) string {
	return b.node(ir.Clip, ir.Attrs{"min": ir.FloatAttr(lo), "max": ir.FloatAttr(hi)}, x)
}

// hardSigmoid adds ONNX's HardSigmoid(x) = max(0, min(1, α·x + β)) in the form the importer gives
// it: Clip(Add(Mul(x, α), β), 0, 1).
func (b *builder) hardSigmoid(x string, alpha, beta float32) string {
	m := b.node(ir.Mul, nil, x, b.scalar("alpha", alpha))
	return b.clip(b.node(ir.Add, nil, m, b.scalar("beta", beta)), 0, 1)
}

// hardSwish adds HardSwish(x) = x·HardSigmoid(x) with α = 1/6, β = 1/2: a product of two runtime
// tensors.
func (b *builder) hardSwish(x string) string {
	return b.node(ir.Mul, nil, x, b.hardSigmoid(x, 1.0/6, 0.5))
}

// squeezeExcite adds a squeeze-and-excitation block on x ([N, C, H, W]): GlobalAveragePool → 1×1
// conv to C/r channels → ReLU → 1×1 conv back to C → HardSigmoid (α = 0.2, β = 0.5, ONNX's
// defaults), and the product of that gate ([N, C, 1, 1], broadcast) with x.
func (b *builder) squeezeExcite(x string, reduced int) string {
	c := b.shape(x)[1]
	s := b.node(ir.GlobalAveragePool, nil, x)
	s = b.node(ir.Relu, nil, b.conv(s, reduced, 1, 1, 0, 1, 1, true))
	s = b.hardSigmoid(b.conv(s, c, 1, 1, 0, 1, 1, true), 0.2, 0.5)
	return b.node(ir.Mul, nil, x, s)
}

// MobileSE returns a small MobileNetV3-style network for golden tests, with random weights from
// seed: input [1, 3, 8, 8]; 3×3 convolution to 8 channels, HardSwish; depthwise 3×3 convolution,
// ReLU6; a squeeze-and-excitation block (reduction to 4 channels, HardSigmoid gate); 1×1
// convolution to 8 channels, HardSwish; global average pooling and a fully connected layer to
// 5 logits. HardSigmoid, HardSwish and ReLU6 are written as the importers write them (Mul, Add,
// Clip), so the network multiplies secret tensors three times.
func MobileSE(seed uint64) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("mobile-se-%d", seed), seed, ir.Shape{1, 3, 8, 8})
	x := b.hardSwish(b.conv("input", 8, 3, 1, 1, 1, 1, true))
	x = b.clip(b.conv(x, 8, 3, 1, 1, 1, 8, true), 0, 6)
	x = b.squeezeExcite(x, 4)
	x = b.hardSwish(b.conv(x, 8, 1, 1, 0, 1, 1, true))
	x = b.node(ir.GlobalAveragePool, nil, x)
	logits := b.gemm(b.flatten(x), 5)
	return b.done(logits)
}

// infBound is an infinite Clip bound (omitted as an ONNX input).
func infBound(v float32) bool { return math.IsInf(float64(v), 0) }
