package golden

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
)

// bn adds a BatchNormalization of x with random statistics (γ in [0.5, 1.5], β in ±0.2, mean in
// ±0.2, variance in [0.5, 2]); after a Conv the compiler folds it into the weights.
func (b *builder) bn(x string) string {
	c := b.shape(x)[1]
	return b.node(ir.BatchNormalization, ir.Attrs{"epsilon": ir.FloatAttr(1e-5)}, x,
		b.konstIn("gamma", ir.Shape{c}, 0.5, 1.5), b.konst("beta", ir.Shape{c}, 0.2),
		b.konst("mean", ir.Shape{c}, 0.2), b.konstIn("var", ir.Shape{c}, 0.5, 2))
}

// concat adds a channel concatenation.
func (b *builder) concat(xs ...string) string {
	return b.node(ir.Concat, ir.Attrs{"axis": ir.IntAttr(1)}, xs...)
}

// fire adds a SqueezeNet fire module: a 1×1 squeeze convolution to s channels, ReLU, then
// parallel 1×1 and 3×3 (padding 1) expand convolutions to e channels each, each followed by a
// ReLU, concatenated along the channels (2·e channels out).
func (b *builder) fire(x string, s, e int) string {
	sq := b.node(ir.Relu, nil, b.conv(x, s, 1, 1, 0, 1, 1, true))
	e1 := b.node(ir.Relu, nil, b.conv(sq, e, 1, 1, 0, 1, 1, true))
	e3 := b.node(ir.Relu, nil, b.conv(sq, e, 3, 1, 1, 1, 1, true))
	return b.concat(e1, e3)
}

// bottleneck adds a ResNet bottleneck block: 1×1 convolution to w channels, BatchNorm, ReLU;
// 3×3 convolution (padding 1), BatchNorm, ReLU; 1×1 convolution to out channels, BatchNorm;
// added to a projection shortcut (1×1 convolution of x to out channels, BatchNorm); ReLU. The
// convolutions have no bias, as in ResNet: the BatchNorms supply it when folded.
func (b *builder) bottleneck(x string, w, out int) string {
	y := b.node(ir.Relu, nil, b.bn(b.conv(x, w, 1, 1, 0, 1, 1, false)))
	y = b.node(ir.Relu, nil, b.bn(b.conv(y, w, 3, 1, 1, 1, 1, false)))
	y = b.bn(b.conv(y, out, 1, 1, 0, 1, 1, false))
	sc := b.bn(b.conv(x, out, 1, 1, 0, 1, 1, false))
	return b.node(ir.Relu, nil, b.node(ir.Add, nil, y, sc))
}

// denseBlock adds a DenseNet dense block of the given number of layers: each is BatchNorm,
// ReLU, 1×1 convolution to 4·k channels, BatchNorm, ReLU, 3×3 convolution (padding 1) to k
// channels, and its output is concatenated with its input (growth rate k). The first BatchNorm
// of a layer follows a Concat, so it cannot be folded and stays a per-channel affine map.
func (b *builder) denseBlock(x string, layers, k int) string {
	for i := 0; i < layers; i++ {
		y := b.node(ir.Relu, nil, b.bn(x))
		y = b.conv(y, 4*k, 1, 1, 0, 1, 1, false)
		y = b.node(ir.Relu, nil, b.bn(y))
		y = b.conv(y, k, 3, 1, 1, 1, 1, false)
		x = b.concat(x, y)
	}
	return x
}

// transition adds a DenseNet transition layer: BatchNorm, ReLU, 1×1 convolution to out
// channels, and 2×2 average pooling with stride 2.
func (b *builder) transition(x string, out int) string {
	y := b.node(ir.Relu, nil, b.bn(x))
	y = b.conv(y, out, 1, 1, 0, 1, 1, false)
	return b.pool(ir.AveragePool, y, 2, 2, 0, false)
}

// ImageNetBlocks returns a reduced ImageNet-shaped network holding one block of each of the
// three ImageNet architectures the project benchmarks, with random weights from seed, on an
// input [1, 3, size, size] (56 is the spatial size at which these blocks first run in
// SqueezeNet, ResNet50 and DenseNet121; size must be even and at least 4):
//
//   - stem: 3×3 convolution (padding 1) to 16 channels, BatchNorm, ReLU;
//   - a SqueezeNet fire module: squeeze to 8 channels, expand to 8 + 8, Concat (16 channels);
//   - a ResNet bottleneck block: 1×1 to 8, 3×3, 1×1 to 32 channels, each with BatchNorm, a
//     projection shortcut (1×1 convolution 16 → 32 with BatchNorm), Add, ReLU (32 channels);
//   - a DenseNet dense block of two layers with growth rate 4 (bottleneck width 16) whose
//     outputs are concatenated with their inputs (40 channels), and a transition to 20 channels
//     with 2×2 average pooling (size/2 × size/2);
//   - global average pooling and a fully connected layer to 10 logits.
//
// So the secure runtime's Concat, Add, AveragePool and GlobalAveragePool paths, folded and
// unfolded BatchNorm, and 1×1 and 3×3 convolutions all run at ImageNet spatial sizes.
func ImageNetBlocks(seed uint64, size int) (*ir.Graph, error) {
	if size < 4 || size%2 != 0 {
		return nil, fmt.Errorf("imagenet blocks: spatial size %d (even, at least 4)", size)
	}
	b := newBuilder(fmt.Sprintf("imagenet-blocks-%d-%d", size, seed), seed, ir.Shape{1, 3, size, size})
	x := b.node(ir.Relu, nil, b.bn(b.conv("input", 16, 3, 1, 1, 1, 1, false)))
	x = b.fire(x, 8, 8)
	x = b.bottleneck(x, 8, 32)
	x = b.denseBlock(x, 2, 4)
	x = b.transition(x, 20)
	x = b.node(ir.GlobalAveragePool, nil, x)
	logits := b.gemm(b.flatten(x), 10)
	return b.done(logits)
}
