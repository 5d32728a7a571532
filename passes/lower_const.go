package passes

import (
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// constTensor materialises constant c as a shared runtime tensor at scale sc, with local
// instructions only: a zero is made from runtime tensor ref (ref − ref, whose shares are each
// party's share minus itself), summed to one element ([1, 1, N] → [1, 1, 1] by one `sumpool`
// window), padded with zeros to c's size, reshaped to c's shape, and c is added by party 0
// (`addconst`). The result is exactly the encoded constant round(c·2^sc), held as shares (c, 0).
func (l *lowerer) constTensor(cname string, c *ir.Tensor, ref, sc int, name string) (int, error) {
	zero, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{ref, ref}}, name+"_zero")
	if err != nil {
		return 0, err
	}
	n := l.p.Tensors[zero].Shape.Size()
	rows := l.p.AddTensor(name+"_zero_rows", ir.Shape{1, 1, n}, l.p.Tensors[zero].Scale)
	l.emit(&fixed.Instr{Op: fixed.OpReshape, In: []int{zero}, Out: rows})
	win := ir.Window{Kernel: []int{n}, Strides: []int{1}, Pads: []int{0, 0}, Dilations: []int{1}}
	one, err := l.op(&fixed.Instr{Op: fixed.OpSumPool, In: []int{rows}, Win: win}, name+"_zero1")
	if err != nil {
		return 0, err
	}
	if l.p.Tensors[one].Scale != sc {
		// Only the scale label changes: the value is zero.
		if l.p.Tensors[one].Scale < sc {
			one, err = l.op(&fixed.Instr{Op: fixed.OpScaleUp, In: []int{one}, Shift: sc - l.p.Tensors[one].Scale}, name+"_zero1")
		} else {
			one, err = l.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{one}, Shift: l.p.Tensors[one].Scale - sc}, name+"_zero1")
		}
		if err != nil {
			return 0, err
		}
	}
	m := c.Shape.Size()
	flat := one
	if m > 1 {
		if flat, err = l.op(&fixed.Instr{Op: fixed.OpPad, In: []int{one}, Pads: []int{0, 0, 0, 0, 0, m - 1},
			PadMode: fixed.PadConstant}, name+"_zeros"); err != nil {
			return 0, err
		}
	}
	shaped := l.p.AddTensor(name+"_zeros", c.Shape.Clone(), sc)
	l.emit(&fixed.Instr{Op: fixed.OpReshape, In: []int{flat}, Out: shaped})
	w, err := l.weight(cname, c, sc)
	if err != nil {
		return 0, err
	}
	return l.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{shaped}, Weight: w}, name)
}
