package passes

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// requant lowers ir.Requant (docs/fixed-point.md, "Quantized operators"): the inputs are integer
// tensors at scale 0 (the program scale of a quantized model); each is multiplied by its integer
// multipliers (`mulconst`, weight at scale shift), the products are added, the offset is added
// at scale shift (`addconst`), an exact `trunc` by shift gives floor(·/2^shift), and the clip to
// [min, max] is min + ReLU(t − min) − ReLU(t − max). Every step is exact in the ring as long as
// |Σ x·mult + add| < 2^(l−1), which the front end guarantees for l = 64 from the operands' bounds.
func (l *lowerer) requant(n *ir.Node) error {
	if l.s != 0 {
		return noLowering("Requant (a quantized operator) needs the program scale 0, not %d: quantized models run on their integers", l.s)
	}
	xs := l.g.Values[n.Inputs[0]].Shape
	p, err := ir.ReadRequant(n.Attrs, len(n.Inputs), xs)
	if err != nil {
		return err
	}
	out := n.Outputs[0]
	wshape := ir.Shape{p.C}
	if p.C > 1 {
		for range xs[p.Axis+1:] {
			wshape = append(wshape, 1)
		}
	}
	acc := -1
	for i := range n.Inputs {
		x, err := l.input(n, i)
		if err != nil {
			return err
		}
		m := make([]int64, p.C)
		for c, v := range p.Mult[i] {
			m[c] = int64(v)
		}
		w := l.p.AddWeight(fmt.Sprintf("%s_mult%d", out, i), wshape, p.Shift, m)
		t, err := l.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{x}, Weight: w}, fmt.Sprintf("%s_prod%d", out, i))
		if err != nil {
			return err
		}
		if acc < 0 {
			acc = t
		} else if acc, err = l.op(&fixed.Instr{Op: fixed.OpAdd, In: []int{acc, t}}, out+"_sum"); err != nil {
			return err
		}
	}
	add := make([]int64, p.C)
	for c, v := range p.Add {
		add[c] = int64(v)
	}
	w := l.p.AddWeight(out+"_add", wshape, p.Shift, add)
	if acc, err = l.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{acc}, Weight: w}, out+"_acc"); err != nil {
		return err
	}
	t := acc
	if p.Shift > 0 {
		if t, err = l.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{acc}, Shift: p.Shift}, out+"_floor"); err != nil {
			return err
		}
	}
	// Point corrections: hat(d) = ReLU(d+1) − 2·ReLU(d) + ReLU(d−1) is 1 at d = 0 and 0 at every
	// other integer, so t += fix_add·hat(x − fix_at) adds the correction exactly where x is the point.
	if p.J > 0 {
		x, err := l.input(n, 0)
		if err != nil {
			return err
		}
		perC := func(v []int, neg bool, off int) []int64 {
			o := make([]int64, len(v))
			for i, e := range v {
				o[i] = int64(e) + int64(off)
				if neg {
					o[i] = -o[i]
				}
			}
			return o
		}
		for j := 0; j < p.J; j++ {
			at := p.FixAt[j*p.C : (j+1)*p.C]
			relu := func(off int, tag string) (int, error) { // ReLU(x − at + off)
				w := l.p.AddWeight(fmt.Sprintf("%s_fix%d_%s", out, j, tag), wshape, 0, perC(at, true, -off))
				u, err := l.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{x}, Weight: w}, fmt.Sprintf("%s_fix%d_%s", out, j, tag))
				if err != nil {
					return 0, err
				}
				return l.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{u}}, fmt.Sprintf("%s_fix%d_relu_%s", out, j, tag))
			}
			r1, err := relu(1, "p")
			if err != nil {
				return err
			}
			r0, err := relu(0, "z")
			if err != nil {
				return err
			}
			rm, err := relu(-1, "m")
			if err != nil {
				return err
			}
			u, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{r1, r0}}, fmt.Sprintf("%s_fix%d_u", out, j))
			if err != nil {
				return err
			}
			v, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{r0, rm}}, fmt.Sprintf("%s_fix%d_v", out, j))
			if err != nil {
				return err
			}
			h, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{u, v}}, fmt.Sprintf("%s_fix%d_hat", out, j))
			if err != nil {
				return err
			}
			w := l.p.AddWeight(fmt.Sprintf("%s_fix%d_add", out, j), wshape, 0, perC(p.FixAdd[j*p.C:(j+1)*p.C], false, 0))
			hc, err := l.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{h}, Weight: w}, fmt.Sprintf("%s_fix%d", out, j))
			if err != nil {
				return err
			}
			if t, err = l.op(&fixed.Instr{Op: fixed.OpAdd, In: []int{t, hc}}, fmt.Sprintf("%s_fixed%d", out, j)); err != nil {
				return err
			}
		}
	}
	// shifted returns ReLU(t − c).
	shifted := func(c int, tag string) (int, error) {
		w := l.p.AddWeight(out+"_"+tag, ir.Shape{}, 0, []int64{int64(-c)})
		u, err := l.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{t}, Weight: w}, out+"_"+tag)
		if err != nil {
			return 0, err
		}
		return l.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{u}}, out+"_relu_"+tag)
	}
	rlo, err := shifted(p.Min, "lo")
	if err != nil {
		return err
	}
	rhi, err := shifted(p.Max, "hi")
	if err != nil {
		return err
	}
	d, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{rlo, rhi}}, out+"_clip")
	if err != nil {
		return err
	}
	res := d
	if p.Min != 0 {
		w := l.p.AddWeight(out+"_min", ir.Shape{}, 0, []int64{int64(p.Min)})
		if res, err = l.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{d}, Weight: w}, out); err != nil {
			return err
		}
	}
	l.set(n, res)
	return nil
}
