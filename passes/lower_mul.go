package passes

import (
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// mulShared lowers Mul of two runtime tensors to OpMul: both operands at scale s (truncated first
// if they are at a product scale), the product at 2s with numpy broadcasting, left at that scale
// like a linear layer's product (a truncation follows when a consumer needs scale s). The squeeze-
// and-excitation gate x·σ(·) and HardSwish's x·HardSigmoid(x) lower this way.
func (l *lowerer) mulShared(n *ir.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	y, err := l.input(n, 1)
	if err != nil {
		return err
	}
	id, err := l.op(&fixed.Instr{Op: fixed.OpMul, In: []int{x, y}}, n.Outputs[0])
	if err != nil {
		return err
	}
	if want, ok := l.g.Values[n.Outputs[0]]; ok && !l.p.Tensors[id].Shape.Equal(want.Shape) {
		return noLowering("Mul of shapes %v and %v gives %v, the graph says %v",
			l.p.Tensors[x].Shape, l.p.Tensors[y].Shape, l.p.Tensors[id].Shape, want.Shape)
	}
	l.set(n, id)
	return nil
}
