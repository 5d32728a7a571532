package passes

import (
	"fmt"
	"slices"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// reduceKeep reduces runtime tensor x (any scale) over axes (valid, sorted, distinct) with
// OpMaxPool (max) or OpSumPool (sum), and returns the result in the keepdims shape (the reduced
// axes of x's shape set to 1), at x's scale. The reduced axes are moved last by a (local)
// transpose, the tensor is viewed as [1, rows, width] and pooled by one 1-D window of the whole
// width: rows of `width` elements, so the max is the secure row max of the max-pool machinery and
// the sum is local.
func (l *lowerer) reduceKeep(x int, axes []int, max bool, name string) (int, error) {
	xs := l.p.Tensors[x].Shape
	var keep, red []int
	rows, width := 1, 1
	for a, d := range xs {
		if slices.Contains(axes, a) {
			red = append(red, a)
			width *= d
		} else {
			keep = append(keep, a)
			rows *= d
		}
	}
	perm := append(slices.Clone(keep), red...)
	t := x
	var err error
	if !slices.IsSorted(perm) {
		if t, err = l.op(&fixed.Instr{Op: fixed.OpTranspose, In: []int{x}, Perm: perm}, name+"_perm"); err != nil {
			return 0, err
		}
	}
	sc := l.p.Tensors[x].Scale
	flat := l.p.AddTensor(name+"_rows", ir.Shape{1, rows, width}, sc)
	l.emit(&fixed.Instr{Op: fixed.OpReshape, In: []int{t}, Out: flat})
	op := fixed.OpSumPool
	if max {
		op = fixed.OpMaxPool
	}
	win := ir.Window{Kernel: []int{width}, Strides: []int{1}, Pads: []int{0, 0}, Dilations: []int{1}}
	pooled, err := l.op(&fixed.Instr{Op: op, In: []int{flat}, Win: win}, name+"_pool")
	if err != nil {
		return 0, err
	}
	out := l.p.AddTensor(name, ir.ReducedShape(xs, axes, true), sc)
	l.emit(&fixed.Instr{Op: fixed.OpReshape, In: []int{pooled}, Out: out})
	return out, nil
}

// reduce lowers ReduceSum (window sum, local), ReduceMean (the sum, then OpDiv by the public
// element count: floor(sum/count), exact) and ReduceMax (secure row max), at the program scale.
func (l *lowerer) reduce(n *ir.Node) error {
	axes, err := n.Attrs.Ints("axes")
	if err != nil {
		return err
	}
	keep, err := n.Attrs.Int("keepdims")
	if err != nil {
		return err
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	out := n.Outputs[0]
	id, err := l.reduceKeep(x, axes, n.Op == ir.ReduceMax, out+"_keep")
	if err != nil {
		return err
	}
	if n.Op == ir.ReduceMean {
		count := 1
		for _, a := range axes {
			count *= l.p.Tensors[x].Shape[a]
		}
		if count > 1 {
			if id, err = l.op(&fixed.Instr{Op: fixed.OpDiv, In: []int{id}, Divisors: []int{count}}, out+"_mean"); err != nil {
				return err
			}
		}
	}
	if keep == 0 {
		r := l.p.AddTensor(out, l.g.Values[out].Shape, l.p.Tensors[id].Scale)
		id = l.emit(&fixed.Instr{Op: fixed.OpReshape, In: []int{id}, Out: r})
	}
	l.set(n, id)
	return nil
}

// softmax lowers Softmax along one axis exactly (docs/fixed-point.md, "Softmax"):
//
//	m = max_axis x (secure row max), z = x − m ≤ 0, e = exp(z) (the fixed-point exp, whose domain
//	is exactly z ≤ 0), S = Σ_axis e, r = recip(S), y = e·r (secret × secret), left at scale 2s.
//
// The invariant that makes recip applicable: the maximal element has z = 0 exactly and
// exp(0) = 2^s exactly (every exp table gives 2^T at digit 0), so S ≥ 2^s, i.e. S ≥ 1 — recip's
// domain. S ≤ width·2^s, and e·r ≤ 2^s·2^s < 2^(l−1) since l ≥ 2s + 5.
//
// LogSoftmax shares the steps up to S and ends y = z − log(S) (the fixed-point log, whose domain
// is S ≥ 1 by the same invariant), at scale s: no product, no truncation.
func (l *lowerer) softmax(n *ir.Node) error {
	if s := l.p.Scale; s < 1 || l.p.Bits < fxmath.MinBits(s) {
		return noLowering("%s needs scale ≥ 1 and l ≥ 2s+5 = %d for its exp and %s (have l = %d, s = %d)", n.Op, fxmath.MinBits(s),
			map[bool]string{false: "reciprocal", true: "log"}[n.Op == ir.LogSoftmax], l.p.Bits, s)
	}
	axis, err := n.Attrs.Int("axis")
	if err != nil {
		return err
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	out := n.Outputs[0]
	m, err := l.reduceKeep(x, []int{axis}, true, out+"_max")
	if err != nil {
		return err
	}
	z, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{x, m}}, out+"_shifted")
	if err != nil {
		return err
	}
	e, err := l.op(&fixed.Instr{Op: fixed.OpExp, In: []int{z}}, out+"_exp")
	if err != nil {
		return err
	}
	sum, err := l.reduceKeep(e, []int{axis}, false, out+"_sum")
	if err != nil {
		return err
	}
	if n.Op == ir.LogSoftmax {
		ls, err := l.op(&fixed.Instr{Op: fixed.OpLog, In: []int{sum}}, out+"_log")
		if err != nil {
			return err
		}
		y, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{z, ls}}, out)
		if err != nil {
			return err
		}
		if !l.p.Tensors[y].Shape.Equal(l.g.Values[out].Shape) {
			return fmt.Errorf("log softmax: internal error: result shape %v, graph %v", l.p.Tensors[y].Shape, l.g.Values[out].Shape)
		}
		l.set(n, y)
		return nil
	}
	r, err := l.op(&fixed.Instr{Op: fixed.OpRecip, In: []int{sum}}, out+"_recip")
	if err != nil {
		return err
	}
	y, err := l.op(&fixed.Instr{Op: fixed.OpMul, In: []int{e, r}}, out)
	if err != nil {
		return err
	}
	if !l.p.Tensors[y].Shape.Equal(l.g.Values[out].Shape) {
		return fmt.Errorf("softmax: internal error: result shape %v, graph %v", l.p.Tensors[y].Shape, l.g.Values[out].Shape)
	}
	l.set(n, y)
	return nil
}
