package passes

import (
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// The fixed-point erf is defined as erf(x) := tanh(erfA·c + erfB·c³) with c = clip(x, −3, 3)
// (docs/fixed-point.md, "Erf"): a tanh-based approximation whose deviation from the true erf is
// below 3.0e−4 for every real x (2.2e−5 of it from the clip), evaluated with exact fixed-point
// steps, so the secure result equals the cleartext one bit for bit.
const (
	erfA   = 1.1294
	erfB   = 0.1
	erfCap = 3
)

// erf lowers Erf: c = −3 + ReLU(x + 3) − ReLU(x − 3); u = floor(floor(floor(erfB·c)·c)·c) with a
// truncation after each product but the last; v = erfA·c; y = tanh(floor((u + v)/2^s)). The
// products are ordered so that every intermediate stays below 4 at scale 2s (l ≥ 2s + 5 fits).
func (l *lowerer) erf(n *ir.Node) error {
	s := l.p.Scale
	if s < 1 || l.p.Bits < fxmath.MinBits(s) {
		return noLowering("Erf needs scale ≥ 1 and l ≥ 2s+5 = %d for its tanh (have l = %d, s = %d)", fxmath.MinBits(s), l.p.Bits, s)
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	out := n.Outputs[0]
	scalar := func(v float32) *ir.Tensor { return &ir.Tensor{Shape: ir.Shape{}, Data: []float32{v}} }
	shiftRelu := func(c float32, tag string) (int, error) {
		t, err := l.addConst(x, scalar(c), out+"_"+tag, out+"_"+tag)
		if err != nil {
			return 0, err
		}
		return l.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{t}}, out+"_relu_"+tag)
	}
	lo, err := shiftRelu(erfCap, "lo")
	if err != nil {
		return err
	}
	hi, err := shiftRelu(-erfCap, "hi")
	if err != nil {
		return err
	}
	c, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{lo, hi}}, out+"_clip")
	if err != nil {
		return err
	}
	if c, err = l.addConst(c, scalar(-erfCap), out+"_min", out+"_clip"); err != nil {
		return err
	}
	trunc := func(t int) (int, error) {
		return l.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{t}, Shift: l.p.Tensors[t].Scale - s}, out+"_t")
	}
	wb, err := l.weight(out+"_erf_b", scalar(erfB), s)
	if err != nil {
		return err
	}
	u, err := l.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{c}, Weight: wb}, out+"_bc")
	if err != nil {
		return err
	}
	for i := 0; i < 2; i++ {
		if u, err = trunc(u); err != nil {
			return err
		}
		if u, err = l.op(&fixed.Instr{Op: fixed.OpMul, In: []int{u, c}}, out+"_bc3"); err != nil {
			return err
		}
	}
	wa, err := l.weight(out+"_erf_a", scalar(erfA), s)
	if err != nil {
		return err
	}
	v, err := l.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{c}, Weight: wa}, out+"_ac")
	if err != nil {
		return err
	}
	arg, err := l.op(&fixed.Instr{Op: fixed.OpAdd, In: []int{u, v}}, out+"_arg")
	if err != nil {
		return err
	}
	if arg, err = trunc(arg); err != nil {
		return err
	}
	y, err := l.op(&fixed.Instr{Op: fixed.OpTanh, In: []int{arg}}, out)
	if err != nil {
		return err
	}
	l.set(n, y)
	return nil
}
