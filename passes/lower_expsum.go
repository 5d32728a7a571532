package passes

import (
	"slices"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// The expanded softmax that ONNX's function body (and exporters that decompose Softmax) write:
//
//	m = ReduceMax(x, A, keepdims=1); z = Sub(x, m); e = Exp(z); S = ReduceSum(e, B, keepdims=1);
//	y = Div(e, S)
//
// The lowering recognises the two facts the fixed-point functions need: z ≤ 0 (so Exp is the
// fixed-point exp(min(z, 0)) exactly), and S ≥ 1 when A ⊆ B (every sum group contains a whole
// max group, whose maximum contributes exp(0) = 1 exactly), so Div(·, S) is a product by
// recip(S). The result is the same instruction sequence as a Softmax node gives, bit for bit.

// producer returns the node that defines value name, or nil.
func (l *lowerer) producer(name string) *ir.Node {
	for _, n := range l.g.Nodes {
		if slices.Contains(n.Outputs, name) {
			return n
		}
	}
	return nil
}

// maxShifted reports whether z is Sub(x, ReduceMax(x, axes, keepdims=1)) and returns the axes.
func (l *lowerer) maxShifted(z string) ([]int, bool) {
	sub := l.producer(z)
	if sub == nil || sub.Op != ir.Sub || len(sub.Inputs) != 2 {
		return nil, false
	}
	m := l.producer(sub.Inputs[1])
	if m == nil || m.Op != ir.ReduceMax || m.Inputs[0] != sub.Inputs[0] {
		return nil, false
	}
	if keep, err := m.Attrs.Int("keepdims"); err != nil || keep == 0 {
		return nil, false
	}
	axes, err := m.Attrs.Ints("axes")
	return axes, err == nil
}

// sumOfShiftedExps reports whether s is ReduceSum(Exp(z), B, keepdims=1) with z max-shifted over
// axes A ⊆ B: then s ≥ 1 elementwise, exactly, in fixed point.
func (l *lowerer) sumOfShiftedExps(s string) bool {
	sum := l.producer(s)
	if sum == nil || sum.Op != ir.ReduceSum {
		return false
	}
	if keep, err := sum.Attrs.Int("keepdims"); err != nil || keep == 0 {
		return false
	}
	b, err := sum.Attrs.Ints("axes")
	if err != nil {
		return false
	}
	e := l.producer(sum.Inputs[0])
	if e == nil || e.Op != ir.Exp {
		return false
	}
	a, ok := l.maxShifted(e.Inputs[0])
	if !ok {
		return false
	}
	for _, ax := range a {
		if !slices.Contains(b, ax) {
			return false
		}
	}
	return true
}

// divBySum lowers Div(num, S) for a sum of max-shifted exps S: y = num·recip(S) (scale 2s).
func (l *lowerer) divBySum(n *ir.Node) error {
	num, err := l.input(n, 0)
	if err != nil {
		return err
	}
	den, err := l.input(n, 1)
	if err != nil {
		return err
	}
	r, err := l.op(&fixed.Instr{Op: fixed.OpRecip, In: []int{den}}, n.Outputs[0]+"_recip")
	if err != nil {
		return err
	}
	y, err := l.op(&fixed.Instr{Op: fixed.OpMul, In: []int{num, r}}, n.Outputs[0])
	if err != nil {
		return err
	}
	if !l.p.Tensors[y].Shape.Equal(l.g.Values[n.Outputs[0]].Shape) {
		return noLowering("Div of shapes %v and %v", l.p.Tensors[num].Shape, l.p.Tensors[den].Shape)
	}
	l.set(n, y)
	return nil
}
