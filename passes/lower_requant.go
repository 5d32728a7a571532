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
	scalarW := func(tag string, sc int, v int64) int { return l.p.AddWeight(out+"_"+tag, ir.Shape{}, sc, []int64{v}) }
	if p.FixV {
		// Corrections keyed on V, added to V as multiples of 2^shift before the rounding (which
		// they then pass through unchanged): V += fix_add·2^k·hat(V − fix_at), at scale k.
		for j := 0; j < p.J; j++ {
			relu := func(off int64, tag string) (int, error) {
				name := fmt.Sprintf("%s_vfix%d_%s", out, j, tag)
				u, err := l.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{acc}, Weight: l.p.AddWeight(name, ir.Shape{}, p.Shift, []int64{-int64(p.FixAt[j]) + off})}, name)
				if err != nil {
					return 0, err
				}
				return l.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{u}}, name+"_relu")
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
			tag := fmt.Sprintf("%s_vfix%d", out, j)
			u, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{r1, r0}}, tag+"_u")
			if err != nil {
				return err
			}
			v, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{r0, rm}}, tag+"_v")
			if err != nil {
				return err
			}
			h, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{u, v}}, tag+"_hat")
			if err != nil {
				return err
			}
			hc, err := l.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{h}, Weight: l.p.AddWeight(tag+"_add", ir.Shape{}, 0, []int64{int64(p.FixAdd[j]) << uint(p.Shift)})}, tag)
			if err != nil {
				return err
			}
			if acc, err = l.op(&fixed.Instr{Op: fixed.OpAdd, In: []int{acc, hc}}, tag+"_acc"); err != nil {
				return err
			}
		}
	}
	t := acc
	emit := func(in *fixed.Instr, tag string) (int, error) { return l.op(in, out+"_"+tag) }
	switch {
	case p.Shift > 0 && p.RNE:
		// Round half to even: h = V + 2^(k−1); q = floor(h/2^k) (= round half up); h is an exact
		// multiple of 2^k (V an exact half) iff floor(h/2^k) − floor((h−1)/2^k) = 1; then an odd q
		// is one too high: y = q − ReLU(tie + odd − 1), odd = q − 2·floor(q/2).
		h, err := emit(&fixed.Instr{Op: fixed.OpAddConst, In: []int{acc}, Weight: scalarW("half", p.Shift, int64(1)<<uint(p.Shift-1))}, "half")
		if err != nil {
			return err
		}
		q, err := emit(&fixed.Instr{Op: fixed.OpTrunc, In: []int{h}, Shift: p.Shift}, "round")
		if err != nil {
			return err
		}
		h1, err := emit(&fixed.Instr{Op: fixed.OpAddConst, In: []int{h}, Weight: scalarW("below", p.Shift, -1)}, "below")
		if err != nil {
			return err
		}
		q1, err := emit(&fixed.Instr{Op: fixed.OpTrunc, In: []int{h1}, Shift: p.Shift}, "round_below")
		if err != nil {
			return err
		}
		tie, err := emit(&fixed.Instr{Op: fixed.OpSub, In: []int{q, q1}}, "tie")
		if err != nil {
			return err
		}
		// floor(q/2) = floor(h/2^(k+1)): h relabelled at scale k+1 (a product by 1 at scale 1).
		hs, err := emit(&fixed.Instr{Op: fixed.OpMulConst, In: []int{h}, Weight: scalarW("relabel", 1, 1)}, "half_relabel")
		if err != nil {
			return err
		}
		qh, err := emit(&fixed.Instr{Op: fixed.OpTrunc, In: []int{hs}, Shift: p.Shift + 1}, "halfq")
		if err != nil {
			return err
		}
		q2, err := emit(&fixed.Instr{Op: fixed.OpMulConst, In: []int{qh}, Weight: scalarW("two", 0, 2)}, "evenq")
		if err != nil {
			return err
		}
		odd, err := emit(&fixed.Instr{Op: fixed.OpSub, In: []int{q, q2}}, "odd")
		if err != nil {
			return err
		}
		both, err := emit(&fixed.Instr{Op: fixed.OpAdd, In: []int{tie, odd}}, "tie_odd")
		if err != nil {
			return err
		}
		both1, err := emit(&fixed.Instr{Op: fixed.OpAddConst, In: []int{both}, Weight: scalarW("one", 0, -1)}, "tie_odd_1")
		if err != nil {
			return err
		}
		down, err := emit(&fixed.Instr{Op: fixed.OpReLU, In: []int{both1}}, "down")
		if err != nil {
			return err
		}
		if t, err = emit(&fixed.Instr{Op: fixed.OpSub, In: []int{q, down}}, "rne"); err != nil {
			return err
		}
	case p.Shift > 0:
		if t, err = l.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{acc}, Shift: p.Shift}, out+"_floor"); err != nil {
			return err
		}
	}
	// Point corrections: hat(d) = ReLU(d+1) − 2·ReLU(d) + ReLU(d−1) is 1 at d = 0 and 0 at every
	// other integer; with two inputs the indicator of a pair is ReLU(hat_a + hat_b − 1). So
	// t += fix_add·indicator adds each correction exactly where the inputs are its point.
	if p.J > 0 && !p.FixV {
		nin := len(n.Inputs)
		xs := make([]int, nin)
		for i := range xs {
			if xs[i], err = l.input(n, i); err != nil {
				return err
			}
		}
		for j := 0; j < p.J; j++ {
			var hats []int
			for i := 0; i < nin; i++ {
				relu := func(off int, tag string) (int, error) { // ReLU(x_i − at + off)
					v := make([]int64, p.C)
					for c := range v {
						v[c] = -int64(p.FixAt[(j*p.C+c)*nin+i]) + int64(off)
					}
					name := fmt.Sprintf("%s_fix%d_%d_%s", out, j, i, tag)
					w := l.p.AddWeight(name, wshape, 0, v)
					u, err := l.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{xs[i]}, Weight: w}, name)
					if err != nil {
						return 0, err
					}
					return l.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{u}}, name+"_relu")
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
				tag := fmt.Sprintf("fix%d_%d", j, i)
				u, err := emit(&fixed.Instr{Op: fixed.OpSub, In: []int{r1, r0}}, tag+"_u")
				if err != nil {
					return err
				}
				v, err := emit(&fixed.Instr{Op: fixed.OpSub, In: []int{r0, rm}}, tag+"_v")
				if err != nil {
					return err
				}
				h, err := emit(&fixed.Instr{Op: fixed.OpSub, In: []int{u, v}}, tag+"_hat")
				if err != nil {
					return err
				}
				hats = append(hats, h)
			}
			ind := hats[0]
			if len(hats) == 2 {
				s, err := emit(&fixed.Instr{Op: fixed.OpAdd, In: []int{hats[0], hats[1]}}, fmt.Sprintf("fix%d_sum", j))
				if err != nil {
					return err
				}
				s1, err := emit(&fixed.Instr{Op: fixed.OpAddConst, In: []int{s}, Weight: scalarW(fmt.Sprintf("fix%d_one", j), 0, -1)}, fmt.Sprintf("fix%d_sum1", j))
				if err != nil {
					return err
				}
				if ind, err = emit(&fixed.Instr{Op: fixed.OpReLU, In: []int{s1}}, fmt.Sprintf("fix%d_both", j)); err != nil {
					return err
				}
			}
			add := make([]int64, p.C)
			for c := range add {
				add[c] = int64(p.FixAdd[j*p.C+c])
			}
			w := l.p.AddWeight(fmt.Sprintf("%s_fix%d_add", out, j), wshape, 0, add)
			hc, err := emit(&fixed.Instr{Op: fixed.OpMulConst, In: []int{ind}, Weight: w}, fmt.Sprintf("fix%d", j))
			if err != nil {
				return err
			}
			if t, err = emit(&fixed.Instr{Op: fixed.OpAdd, In: []int{t, hc}}, fmt.Sprintf("fixed%d", j)); err != nil {
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
