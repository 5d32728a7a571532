package golden

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/linear"
)

// convAttrs adds a convolution with explicit (possibly asymmetric) padding and any rank.
func (b *builder) convAttrs(x string, m int, kernel, strides, pads, dil []int, group int) string {
	c := b.shape(x)[1]
	fanIn := c / group
	for _, k := range kernel {
		fanIn *= k
	}
	ws := append(ir.Shape{m, c / group}, kernel...)
	w := b.konst("W", ws, math.Sqrt(6/float64(fanIn)))
	return b.node(ir.Conv, ir.Attrs{"group": ir.IntAttr(group), "kernel_shape": ir.IntsAttr(kernel),
		"strides": ir.IntsAttr(strides), "pads": ir.IntsAttr(pads), "dilations": ir.IntsAttr(dil)},
		x, w, b.konst("B", ir.Shape{m}, 0.1))
}

// convNet is a network whose convolutions cover the geometries the OT convolution must handle:
// batch 2; strided, dilated, grouped and depthwise convolutions with symmetric and asymmetric
// padding; a stride larger than the kernel (input elements no window reads); and 1×1
// convolutions, which stay matrix products with the im2col matrix.
func convNet(seed uint64) (*ir.Graph, error) {
	b := newBuilder("conv-geometries", seed, ir.Shape{2, 4, 13, 11})
	x := "input"
	x = b.node(ir.Relu, nil, b.convAttrs(x, 6, []int{3, 3}, []int{2, 1}, []int{1, 0, 2, 1}, []int{1, 1}, 2)) // grouped, asymmetric padding, strided rows
	x = b.convAttrs(x, 6, []int{3, 2}, []int{1, 1}, []int{2, 1, 2, 1}, []int{2, 2}, 6)                       // depthwise, dilated
	x = b.node(ir.Relu, nil, b.conv(x, 8, 1, 1, 0, 1, 1, true))                                              // 1×1: a matrix product
	x = b.convAttrs(x, 5, []int{2, 2}, []int{3, 3}, []int{0, 0, 0, 0}, []int{1, 1}, 1)                       // stride 3 > kernel 2
	x = b.convAttrs(x, 4, []int{1, 1}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}, 1)                       // 1×1 with padding
	x = b.node(ir.Relu, nil, b.conv(x, 6, 2, 1, 1, 1, 2, true))                                              // grouped, even kernel, padded
	return b.done(b.gemm(b.flatten(x), 5))
}

// conv1DNet is a 1-D convolutional network ([batch, channels, length]).
func conv1DNet(seed uint64) (*ir.Graph, error) {
	b := newBuilder("conv1d", seed, ir.Shape{2, 3, 20})
	x := b.node(ir.Relu, nil, b.convAttrs("input", 4, []int{5}, []int{2}, []int{2, 1}, []int{1}, 1))
	x = b.convAttrs(x, 4, []int{3}, []int{1}, []int{2, 2}, []int{2}, 4)
	return b.done(b.gemm(b.flatten(x), 3))
}

// TestConvGeometriesSecure runs convNet and conv1DNet securely (1 and 2 streams, per-bit and
// one-batch linear layers) and requires the outputs to equal the cleartext run bitwise; it also
// checks that every convolution that linear.ConvDirect accepts ran as Conv2D and the others as
// matrix products.
func TestConvGeometriesSecure(t *testing.T) {
	for _, tc := range []struct {
		name string
		net  func(uint64) (*ir.Graph, error)
	}{{"2d", convNet}, {"1d", conv1DNet}} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.net(5)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			var samples []dataset.Sample
			for i := 0; i < 3; i++ {
				x := make([]float32, g.Inputs[0].Shape.Size())
				for j := range x {
					x[j] = float32(2*rng.Float64() - 1)
				}
				samples = append(samples, dataset.Sample{Name: fmt.Sprint(i), Input: x, Label: -1})
			}
			prog, tune := compileTuned(t, g, samples, 8)
			inputs := encodeInputs(t, prog.server, inputsOf(samples))
			clear := runClear(t, prog.server, inputs)
			for _, opt := range []secureOptions{{streams: 1}, {streams: 2, oneBatch: true}} {
				// The convolutions the backend should run itself, by the formulas.
				direct, lowered, dense := 0, 0, 0
				for _, in := range prog.server.Instrs {
					switch in.Op {
					case fixed.OpMatMul:
						dense++
					case fixed.OpConv:
						if linear.ConvDirectFor(convShapeOf(prog.server, in), tune.Bits, opt.oneBatch) {
							direct++
						} else {
							lowered += in.Group
						}
					}
				}
				if direct == 0 || (tc.name == "2d" && lowered == 0) {
					t.Fatalf("%d direct and %d lowered convolutions: the network does not cover both paths", direct, lowered)
				}
				sec := runSecure(t, prog, inputs, opt)
				compareRuns(t, clear, sec)
				for party, c := range sec.calls {
					if want := direct * len(inputs); c.conv2D != want {
						t.Errorf("party %d: %d Conv2D calls, want %d", party, c.conv2D, want)
					}
					if want := (lowered + dense) * len(inputs); c.matMul != want {
						t.Errorf("party %d: %d MatMul calls, want %d", party, c.matMul, want)
					}
				}
				checkLinearTraffic(t, prog.server, sec, len(inputs), opt)
				logProfile(t, fmt.Sprintf("%s l=%d streams=%d one-batch=%v", tc.name, tune.Bits, opt.streams, opt.oneBatch), sec, len(inputs))
			}
		})
	}
}
