package vm

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
)

// plan is the precomputed index data of one instruction, built once by New so that Run does no
// index arithmetic beyond table lookups.
type plan struct {
	idx  []int32 // gather map (meaning depends on the opcode)
	idx2 []int32 // second operand's broadcast map (OpAdd/OpSub/OpMul)
	d    int     // window size (pools), rows of the im2col matrix per group (conv)
	p    int     // output positions per plane
	// planes and inPlane: pools map one (image, channel) plane at a time.
	planes, inPlane int
	groups          []divGroup // OpDiv with several divisors
	// conv is the geometry of an OpConv; native means the backend runs it (ConvBackend.Conv2D)
	// and idx is not built.
	conv   ring.ConvGeom
	native bool
	// fused marks an OpReLU whose truncation (the next instruction) the backend runs with it
	// (ReLUTruncBackend); fusedTail marks that truncation, which then does nothing.
	fused, fusedTail bool
}

type divGroup struct {
	d   int
	idx []int32 // element positions with this divisor
}

// makePlan builds the plan of one instruction and returns the scratch space (in elements) it needs.
func (m *Machine) makePlan(in *fixed.Instr) (plan, int, error) {
	p := m.prog
	var pl plan
	switch in.Op {
	case fixed.OpConv:
		x := p.Tensors[in.In[0]].Shape
		geo, err := newWindowGeom(in.Win, x[2:], p.Tensors[in.Out].Shape[2:])
		if err != nil {
			return pl, 0, err
		}
		if pl.conv, err = p.ConvGeom(in); err != nil {
			return pl, 0, err
		}
		if cb, ok := m.be.(ConvBackend); ok && cb.UseConv2D(pl.conv, in.Engine) {
			pl.native = true
			return pl, 0, nil
		}
		cg := x[1] / in.Group
		pl.d = cg * geo.d
		pl.p = geo.p
		pl.idx = make([]int32, pl.d*pl.p)
		inPlane := geo.inSize
		for c := 0; c < cg; c++ {
			for k := 0; k < geo.d; k++ {
				row := pl.idx[(c*geo.d+k)*geo.p : (c*geo.d+k+1)*geo.p]
				for q := range row {
					j := geo.at(q, k)
					if j >= 0 {
						j += int32(c * inPlane)
					}
					row[q] = j
				}
			}
		}
		cols := x[0] * pl.p
		need := pl.d * cols
		if x[0] > 1 {
			need += pl.conv.M / in.Group * cols
		}
		return pl, need, nil
	case fixed.OpMaxPool, fixed.OpSumPool:
		x := p.Tensors[in.In[0]].Shape
		out := p.Tensors[in.Out].Shape
		geo, err := newWindowGeom(in.Win, x[2:], out[2:])
		if err != nil {
			return pl, 0, err
		}
		pl.d, pl.p, pl.inPlane, pl.planes = geo.d, geo.p, geo.inSize, x[0]*x[1]
		pl.idx = make([]int32, pl.planes*geo.p*geo.d)
		one := pl.idx[:geo.p*geo.d]
		for q := 0; q < geo.p; q++ {
			first := int32(-1)
			for k := 0; k < geo.d; k++ {
				j := geo.at(q, k)
				one[q*geo.d+k] = j
				if first < 0 && j >= 0 {
					first = j
				}
			}
			if in.Op == fixed.OpMaxPool {
				if first < 0 {
					return pl, 0, fmt.Errorf("output position %d has a window with no input element", q)
				}
				// Padding takes no part in a maximum: repeat one of the window's own elements
				// (max is idempotent, so the result is exact).
				for k := 0; k < geo.d; k++ {
					if one[q*geo.d+k] < 0 {
						one[q*geo.d+k] = first
					}
				}
			}
		}
		// Replicate the per-plane map over all (image, channel) planes with offsets, so that Run
		// does a single gather.
		for pn := 1; pn < pl.planes; pn++ {
			dst := pl.idx[pn*len(one) : (pn+1)*len(one)]
			off := int32(pn * pl.inPlane)
			for i, j := range one {
				if j >= 0 {
					dst[i] = j + off
				} else {
					dst[i] = -1
				}
			}
		}
		if in.Op == fixed.OpMaxPool {
			return pl, len(pl.idx), nil
		}
		return pl, 0, nil
	case fixed.OpAdd, fixed.OpSub, fixed.OpMul:
		out := p.Tensors[in.Out].Shape
		a := p.Tensors[in.In[0]].Shape
		b := p.Tensors[in.In[1]].Shape
		if !a.Equal(out) {
			pl.idx = broadcastIndex(a, out)
		}
		if !b.Equal(out) {
			pl.idx2 = broadcastIndex(b, out)
		}
		return pl, 2 * out.Size(), nil
	case fixed.OpArgMax:
		x := p.Tensors[in.In[0]].Shape
		if in.Axis != len(x)-1 {
			perm := make([]int, 0, len(x))
			for a := range x {
				if a != in.Axis {
					perm = append(perm, a)
				}
			}
			perm = append(perm, in.Axis)
			pl.idx = transposeIndex(x, perm)
		}
		return pl, x.Size(), nil
	case fixed.OpTranspose:
		pl.idx = transposeIndex(p.Tensors[in.In[0]].Shape, in.Perm)
		return pl, 0, nil
	case fixed.OpGather:
		sel := make([][]int, len(in.Select))
		for a, s := range in.Select {
			if len(s) > 0 {
				sel[a] = s
			}
		}
		idx := ir.SelectionIndex(p.Tensors[in.In[0]].Shape, sel)
		pl.idx = make([]int32, len(idx))
		for i, v := range idx {
			pl.idx[i] = int32(v)
		}
		return pl, 0, nil
	case fixed.OpPad:
		idx, err := padIndex(p.Tensors[in.In[0]].Shape, in.Pads, in.PadMode)
		pl.idx = idx
		return pl, 0, err
	case fixed.OpDiv:
		n := p.Tensors[in.In[0]].Shape.Size()
		byD := map[int][]int32{}
		var order []int
		for i := 0; i < n; i++ {
			d := in.Divisors[i%len(in.Divisors)]
			if _, ok := byD[d]; !ok {
				order = append(order, d)
			}
			byD[d] = append(byD[d], int32(i))
		}
		if len(order) <= 1 {
			d := 1
			if len(order) == 1 {
				d = order[0]
			}
			pl.groups = []divGroup{{d: d}}
			return pl, 0, nil
		}
		for _, d := range order {
			pl.groups = append(pl.groups, divGroup{d: d, idx: byD[d]})
		}
		return pl, 2 * n, nil
	}
	return pl, 0, nil
}

// windowGeom maps (output position, kernel offset) to an input offset within one plane.
type windowGeom struct {
	d, p, inSize int
	// 2-D geometry (1-D windows are treated as height 1).
	ih, iw, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw int
}

func newWindowGeom(w ir.Window, in, out ir.Shape) (windowGeom, error) {
	g := windowGeom{kh: 1, kw: 1, sh: 1, sw: 1, dh: 1, dw: 1, ih: 1, oh: 1}
	switch len(in) {
	case 1:
		g.iw, g.ow = in[0], out[0]
		g.kw, g.sw, g.pw, g.dw = w.Kernel[0], w.Strides[0], w.Pads[0], w.Dilations[0]
	case 2:
		g.ih, g.iw, g.oh, g.ow = in[0], in[1], out[0], out[1]
		g.kh, g.kw = w.Kernel[0], w.Kernel[1]
		g.sh, g.sw = w.Strides[0], w.Strides[1]
		g.ph, g.pw = w.Pads[0], w.Pads[1]
		g.dh, g.dw = w.Dilations[0], w.Dilations[1]
	default:
		return g, fmt.Errorf("%d spatial dimensions (want 1 or 2)", len(in))
	}
	g.d, g.p, g.inSize = g.kh*g.kw, g.oh*g.ow, g.ih*g.iw
	if g.d*g.p > fixed.MaxElems {
		return g, fmt.Errorf("window table of %d x %d entries is too large", g.p, g.d)
	}
	return g, nil
}

// at returns the input offset for output position q and kernel offset k, or -1 in the padding.
func (g *windowGeom) at(q, k int) int32 {
	oy, ox := q/g.ow, q%g.ow
	ky, kx := k/g.kw, k%g.kw
	iy := oy*g.sh - g.ph + ky*g.dh
	ix := ox*g.sw - g.pw + kx*g.dw
	if iy < 0 || iy >= g.ih || ix < 0 || ix >= g.iw {
		return -1
	}
	return int32(iy*g.iw + ix)
}

func strides(s ir.Shape) []int {
	st := make([]int, len(s))
	n := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = n
		n *= s[i]
	}
	return st
}

// walk calls f for every multi-index of shape out in row-major order, with the index vector.
func walk(out ir.Shape, f func(i int, idx []int)) {
	n := out.Size()
	if n == 0 {
		return
	}
	idx := make([]int, len(out))
	for i := 0; i < n; i++ {
		f(i, idx)
		for a := len(out) - 1; a >= 0; a-- {
			idx[a]++
			if idx[a] < out[a] {
				break
			}
			idx[a] = 0
		}
	}
}

// broadcastIndex maps each element of out to the element of a tensor of shape src that numpy
// broadcasting reads.
func broadcastIndex(src, out ir.Shape) []int32 {
	idx := make([]int32, out.Size())
	broadcastWalk(src, out, func(i, j int) { idx[i] = int32(j) })
	return idx
}

// broadcastWalk calls f(i, j) for each element i of out with the element j of a tensor of shape
// src that numpy broadcasting reads for it.
func broadcastWalk(src, out ir.Shape, f func(i, j int)) {
	st := strides(src)
	off := len(out) - len(src)
	walk(out, func(i int, ix []int) {
		j := 0
		for a := range src {
			if src[a] != 1 {
				j += ix[off+a] * st[a]
			}
		}
		f(i, j)
	})
}

// transposeIndex maps each element of the transposed tensor to its source offset.
func transposeIndex(src ir.Shape, perm []int) []int32 {
	st := strides(src)
	out := make(ir.Shape, len(perm))
	for i, a := range perm {
		out[i] = src[a]
	}
	idx := make([]int32, out.Size())
	walk(out, func(i int, ix []int) {
		j := 0
		for a, p := range perm {
			j += ix[a] * st[p]
		}
		idx[i] = int32(j)
	})
	return idx
}

// padIndex maps each element of the padded tensor to its source offset, or -1 for constant padding.
func padIndex(src ir.Shape, pads []int, mode fixed.PadMode) ([]int32, error) {
	r := len(src)
	out := make(ir.Shape, r)
	maps := make([][]int, r)
	for a := 0; a < r; a++ {
		b, n := pads[a], src[a]
		out[a] = n + b + pads[r+a]
		maps[a] = make([]int, out[a])
		for o := range maps[a] {
			i := o - b
			switch {
			case i >= 0 && i < n:
			case mode == fixed.PadConstant:
				i = -1
			case mode == fixed.PadEdge:
				i = min(max(i, 0), n-1)
			case mode == fixed.PadWrap:
				i = ((i % n) + n) % n
			case mode == fixed.PadReflect:
				if n == 1 {
					i = 0
					break
				}
				period := 2 * (n - 1)
				i = ((i % period) + period) % period
				if i >= n {
					i = period - i
				}
			default:
				return nil, fmt.Errorf("unknown pad mode %v", mode)
			}
			maps[a][o] = i
		}
	}
	st := strides(src)
	idx := make([]int32, out.Size())
	walk(out, func(i int, ix []int) {
		j := 0
		for a := range ix {
			s := maps[a][ix[a]]
			if s < 0 {
				j = -1
				break
			}
			j += s * st[a]
		}
		idx[i] = int32(j)
	})
	return idx, nil
}

// constant returns the weight of an OpAddConst/OpMulConst in the ring, broadcast to the operand's
// shape, in cbuf (valid until the next call; party 0 only).
func (m *Machine) constant(in *fixed.Instr) *ring.Tensor {
	x := m.prog.Tensors[in.In[0]].Shape
	src := m.prog.Weights[in.Weight]
	t := &ring.Tensor{Shape: x, Data: m.cbuf[:x.Size()]}
	if src.Shape.Equal(x) {
		m.r.FromSignedVec(t.Data, src.Data)
		return t
	}
	broadcastWalk(src.Shape, x, func(i, j int) { t.Data[i] = m.r.FromSigned(src.Data[j]) })
	return t
}

// fuseReLUTrunc marks the ReLU–truncation pairs the backend runs fused (ReLUTruncPairs).
func (m *Machine) fuseReLUTrunc() {
	fb, ok := m.be.(ReLUTruncBackend)
	if !ok {
		return
	}
	for _, i := range ReLUTruncPairs(m.prog, fb.UseReLUTrunc) {
		m.plans[i].fused, m.plans[i+1].fusedTail = true, true
	}
}

// ReLUTruncPairs returns the instructions i of p that a backend whose UseReLUTrunc is use runs
// fused with instruction i+1 (ReLUTruncBackend): an OpReLU whose result is read only by the next
// instruction, an OpTrunc of it with NonNeg and a shift > 0, when use accepts the operand's width
// (the ReLU's Bits, or the ring's) and the shift. Cost estimates use it to count what the VM runs.
func ReLUTruncPairs(p *fixed.Program, use func(bits, s int) bool) []int {
	uses := p.Uses()
	var out []int
	for i, in := range p.Instrs[:max(len(p.Instrs)-1, 0)] {
		next := p.Instrs[i+1]
		if in.Op != fixed.OpReLU || next.Op != fixed.OpTrunc || !next.NonNeg || next.Shift <= 0 ||
			len(next.In) != 1 || next.In[0] != in.Out || len(uses[in.Out]) != 1 {
			continue
		}
		bits := in.Bits
		if bits <= 0 {
			bits = p.Bits
		}
		if use(bits, next.Shift) {
			out = append(out, i)
		}
	}
	return out
}
