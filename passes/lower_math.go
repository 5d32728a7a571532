package passes

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// math lowers Sigmoid and Tanh to the fixed-point math opcodes (docs/fixed-point.md, "Math
// functions"), at the program's scale. Exp is lowered only where its input is known to be
// non-positive — the fixed-point exp is exp(min(x, 0)): Exp(Sub(x, ReduceMax(x, keepdims=1)))
// (lower_expsum.go); Softmax (lower_reduce.go) emits OpExp itself on x − max(x).
func (l *lowerer) math(n *ir.Node) error {
	var op fixed.Opcode
	switch n.Op {
	case ir.Sigmoid:
		op = fixed.OpSigmoid
	case ir.Tanh:
		op = fixed.OpTanh
	case ir.Exp:
		if _, ok := l.maxShifted(n.Inputs[0]); !ok {
			return fmt.Errorf("%w: %s (the fixed-point exp is exp(min(x, 0)) and is lowered only where its input is known to be non-positive: Softmax's own x − max(x), or Exp(Sub(x, ReduceMax(x, keepdims=1))))", ErrNoLowering, n.Op)
		}
		op = fixed.OpExp
	default:
		return fmt.Errorf("%w: %s is not a math function", ErrNoLowering, n.Op)
	}
	if s := l.p.Scale; s < 1 || l.p.Bits < fxmath.MinBits(s) {
		return fmt.Errorf("%w: %s needs scale ≥ 1 and l ≥ 2s+5 = %d (have l = %d, s = %d)", ErrNoLowering, n.Op, fxmath.MinBits(s), l.p.Bits, s)
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	id, err := l.op(&fixed.Instr{Op: op, In: []int{x}}, n.Outputs[0])
	l.set(n, id)
	return err
}
