package onnx

import (
	"fmt"
	"slices"

	"github.com/cryptflow-go/cryptflow/ir"
)

// expand imports Expand (opset 8 and later): its input broadcast, numpy-style, against the shape
// given as its second input, which must be a constant. A constant input is folded (PyTorch's
// exporter expands an LSTM's or GRU's zero initial state to the batch this way, from the
// input's Shape); a runtime input is accepted when the broadcast leaves its shape unchanged (an
// Identity). Broadcasting a runtime tensor to a larger shape is refused: HLIL has no broadcast
// operator.
func (im *importer) expand(n *Node) error {
	out, err := arityOutput(n, 2, 2)
	if err != nil {
		return err
	}
	dims, err := im.intsInput(n, 1, "shape")
	if err != nil {
		return err
	}
	in, err := im.shape(n.Inputs[0])
	if err != nil {
		return err
	}
	for _, d := range dims {
		if d < 0 {
			return fmt.Errorf("shape %v has a negative dimension", dims)
		}
	}
	shape, err := ir.Broadcast(in, ir.Shape(dims))
	if err != nil {
		return fmt.Errorf("input of shape %v cannot be expanded to %v: %w", in, dims, err)
	}
	if err := checkSize(shape, im.limit); err != nil {
		return err
	}
	if c := im.constOf(n.Inputs[0]); c != nil {
		keep := func(x, _ float32) float32 { return x }
		keepInt := func(x, _ int64) int64 { return x }
		return im.setConst(out, c.mapData(shape.Clone(),
			func(f []float32) []float32 { return binaryData(f, c.shape, []float32{0}, ir.Shape{}, shape, keep) },
			func(i []int64) []int64 { return binaryData(i, c.shape, []int64{0}, ir.Shape{}, shape, keepInt) }))
	}
	if !slices.Equal(shape, in) {
		return fmt.Errorf("%w: Expand of the runtime tensor %q from %v to %v (HLIL has no broadcast operator; only constants are expanded)",
			ErrUnsupported, n.Inputs[0], in, shape)
	}
	return im.identity(&Node{Name: n.Name, OpType: n.OpType, Inputs: n.Inputs[:1], Outputs: n.Outputs[:1]})
}
