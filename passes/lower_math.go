package passes

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// math lowers Sigmoid and Tanh to the fixed-point math opcodes (docs/fixed-point.md, "Math
// functions"), at the program's scale. A bare Exp is not lowered: the fixed-point exp is
// exp(min(x, 0)), and nothing proves an arbitrary input non-positive. Softmax (lower_reduce.go)
// emits OpExp itself, on x − max(x), which is non-positive by construction.
func (l *lowerer) math(n *ir.Node) error {
	var op fixed.Opcode
	switch n.Op {
	case ir.Sigmoid:
		op = fixed.OpSigmoid
	case ir.Tanh:
		op = fixed.OpTanh
	default:
		return fmt.Errorf("%w: %s (the fixed-point exp is exp(min(x, 0)) and is lowered only where its input is known to be non-positive; only Softmax's own x − max(x) is known to be)", ErrNoLowering, n.Op)
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
