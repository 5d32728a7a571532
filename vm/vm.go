package vm

import (
	"context"
	"errors"
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
)

// ErrNoWeights is returned when party 0 is asked to run a program without weight data (a client
// copy of the program file).
var ErrNoWeights = errors.New("the program has no weights (a client copy); party 0 needs the full program file")

// Output is one result of a run.
type Output struct {
	Name     string
	Party    int         // the party the output is revealed to
	Scale    int         // fixed-point scale of Value
	Value    ring.Tensor // the plaintext when Revealed, else this party's share
	Revealed bool        // whether Value holds the plaintext at this party
}

// Machine runs one fixed-point program on one backend. It owns the tensor slots and scratch
// buffers, which every Run reuses; a Machine is not safe for concurrent use (make one per
// goroutine; the program and a Clear backend may be shared).
type Machine struct {
	prog  *fixed.Program
	be    Backend
	r     ring.Ring
	party int
	// wbuf and cbuf hold, at party 0, the weight tensor and the expanded constant of the running
	// instruction in the ring (see weight and constant): converted per use, so the machine does not
	// hold a second copy of every weight (ResNet50: 196 MB) or of every broadcast constant (85 MB).
	wbuf, cbuf []uint64
	plans      []plan
	slots      [][]uint64
	scratch    []uint64
	// Observe, when set, is called after every instruction with the tensor it produced (a view
	// into a slot: copy what must outlive the call). The autotuner uses it to track magnitudes.
	// A ReLU fused with its truncation (ReLUTruncBackend) does not compute its own tensor: Observe
	// sees that slot as it was, then the truncation's result.
	Observe func(tensor int, value ring.Tensor)
}

// New prepares a Machine for program p (which must pass p.Validate) on backend b. Party 0 needs
// the weights; the backend's ring must be the program's.
func New(p *fixed.Program, b Backend) (*Machine, error) {
	if p == nil || b == nil {
		return nil, fmt.Errorf("vm: nil program or backend")
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("vm: invalid program: %w", err)
	}
	r := b.Ring()
	want, err := p.Ring()
	if err != nil {
		return nil, fmt.Errorf("vm: %w", err)
	}
	if !r.Valid() || r != want {
		return nil, fmt.Errorf("vm: backend ring %v does not match the program's %v", r, want)
	}
	party := b.Party()
	if party != 0 && party != 1 {
		return nil, fmt.Errorf("vm: backend reports party %d", party)
	}
	m := &Machine{prog: p, be: b, r: r, party: party}
	if _, ok := b.(MathBackend); !ok {
		for i, in := range p.Instrs {
			if _, isMath := in.Op.MathFunc(); isMath {
				return nil, fmt.Errorf("vm: instruction %d (%s): the backend (%T) does not implement the math functions", i, in.Op, b)
			}
		}
	}
	if _, ok := b.(SharedMatMulBackend); !ok {
		for i, in := range p.Instrs {
			if in.Op == fixed.OpBatchMatMul {
				return nil, fmt.Errorf("vm: instruction %d (%s from %s): the backend (%T) cannot multiply two shared matrices", i, in.Op, in.Source, b)
			}
		}
	}
	if party == 0 && !p.HasWeights() {
		return nil, ErrNoWeights
	}
	if party == 0 {
		// The low-bit comparisons' bounds follow from the weights: the party holding them checks.
		if err := p.CheckBounds(); err != nil {
			return nil, fmt.Errorf("vm: %w", err)
		}
	}
	m.allocSlots()
	m.plans = make([]plan, len(p.Instrs))
	scratch, wmax, cmax := 0, 0, 0
	for i, in := range p.Instrs {
		pl, need, err := m.makePlan(in)
		if err != nil {
			return nil, fmt.Errorf("vm: instruction %d (%s): %w", i, in.Op, err)
		}
		m.plans[i] = pl
		scratch = max(scratch, need)
		if party != 0 {
			continue
		}
		switch in.Op {
		case fixed.OpMatMul, fixed.OpConv:
			wmax = max(wmax, len(p.Weights[in.Weight].Data))
		case fixed.OpAddConst, fixed.OpMulConst:
			cmax = max(cmax, p.Tensors[in.In[0]].Shape.Size())
		}
	}
	m.fuseReLUTrunc()
	m.scratch = make([]uint64, scratch)
	if party == 0 {
		m.wbuf, m.cbuf = make([]uint64, wmax), make([]uint64, cmax)
	}
	return m, nil
}

func (m *Machine) allocSlots() {
	p := m.prog
	assigned := len(p.Tensors) > 0 && p.Tensors[0].Slot >= 0
	size := make([]int, len(p.Tensors))
	for i, t := range p.Tensors {
		s := i
		if assigned {
			s = t.Slot
		}
		size[s] = max(size[s], t.Shape.Size())
	}
	m.slots = make([][]uint64, len(size))
	for s, n := range size {
		if n > 0 {
			m.slots[s] = make([]uint64, n)
		}
	}
}

// tensor returns the slot view of tensor id.
func (m *Machine) tensor(id int) ring.Tensor {
	t := &m.prog.Tensors[id]
	s := id
	if t.Slot >= 0 {
		s = t.Slot
	}
	n := t.Shape.Size()
	return ring.Tensor{Shape: t.Shape, Data: m.slots[s][:n]}
}

// Run executes the program once. inputs holds one tensor per program input, in the program's
// order, as ring elements at the input's scale. A party that does not own an input passes it with
// nil Data (its share then starts as zeros); the cleartext backend, which plays both parties, gets
// every input's value. The returned outputs are copies.
func (m *Machine) Run(ctx context.Context, inputs []ring.Tensor) ([]Output, error) {
	p := m.prog
	if len(inputs) != len(p.Inputs) {
		return nil, fmt.Errorf("vm: %d inputs given, the program has %d", len(inputs), len(p.Inputs))
	}
	outs := make([]Output, len(p.Outputs))
	for i, in := range p.Instrs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := m.exec(ctx, i, in, inputs, outs); err != nil {
			if in.Source != "" {
				return nil, fmt.Errorf("vm: instruction %d (%s from %s): %w", i, in.Op, in.Source, err)
			}
			return nil, fmt.Errorf("vm: instruction %d (%s): %w", i, in.Op, err)
		}
		if m.Observe != nil && in.Op != fixed.OpOutput {
			m.Observe(in.Out, m.tensor(in.Out))
		}
	}
	return outs, nil
}

func (m *Machine) exec(ctx context.Context, i int, in *fixed.Instr, inputs []ring.Tensor, outs []Output) error {
	p := m.prog
	b := m.be
	r := m.r
	var dst ring.Tensor
	if in.Op != fixed.OpOutput {
		dst = m.tensor(in.Out)
	}
	var x ring.Tensor
	if len(in.In) > 0 {
		x = m.tensor(in.In[0])
	}
	pl := &m.plans[i]
	switch in.Op {
	case fixed.OpInput:
		io := p.Inputs[in.Index]
		src := inputs[in.Index]
		switch {
		case src.Data != nil:
			if !ir.Shape(src.Shape).Equal(dst.Shape) || len(src.Data) != len(dst.Data) {
				return fmt.Errorf("input %q has shape %v (%d values), the program wants %v",
					io.Name, src.Shape, len(src.Data), dst.Shape)
			}
			for j, v := range src.Data {
				dst.Data[j] = r.Reduce(v)
			}
			if io.Bounded {
				for j, v := range dst.Data {
					if sv := r.Signed(v); sv < io.Lo || sv > io.Hi {
						return fmt.Errorf("input %q: element %d is %d, outside the input's range [%d, %d] (a quantized model's input holds its quantized integers; give the float input to quantize it)",
							io.Name, j, sv, io.Lo, io.Hi)
					}
				}
			}
		case io.Party == m.party:
			return fmt.Errorf("input %q belongs to this party (%d) but no value was given", io.Name, m.party)
		default:
			clear(dst.Data)
		}
		return b.Input(ctx, io.Party, dst)
	case fixed.OpOutput:
		io := p.Outputs[in.Index]
		v := x.Clone()
		ok, err := b.Reveal(ctx, io.Party, v)
		if err != nil {
			return err
		}
		outs[in.Index] = Output{Name: io.Name, Party: io.Party, Scale: p.Tensors[in.In[0]].Scale, Value: v, Revealed: ok}
		return nil
	case fixed.OpMatMul:
		w := p.Weights[in.Weight].Shape
		return b.MatMul(ctx, in.Engine, dst, m.weight(in.Weight), w[0], w[1], x.Shape[1], x)
	case fixed.OpConv:
		return m.conv(ctx, in, pl, dst, x)
	case fixed.OpAddConst:
		if m.party == 0 {
			r.AddVec(dst.Data, x.Data, m.constant(in).Data)
		} else {
			copy(dst.Data, x.Data)
		}
		return nil
	case fixed.OpMulConst:
		var c *ring.Tensor
		if m.party == 0 {
			c = m.constant(in)
		}
		return b.MulConst(ctx, dst, c, x)
	case fixed.OpAdd, fixed.OpSub:
		y := m.tensor(in.In[1])
		a, c := x.Data, y.Data
		if pl.idx != nil {
			a = m.scratch[:len(dst.Data)]
			gather(a, x.Data, pl.idx, 0)
		}
		if pl.idx2 != nil {
			c = m.scratch[len(dst.Data) : 2*len(dst.Data)]
			gather(c, y.Data, pl.idx2, 0)
		}
		if in.Op == fixed.OpAdd {
			r.AddVec(dst.Data, a, c)
		} else {
			r.SubVec(dst.Data, a, c)
		}
		return nil
	case fixed.OpMul:
		y := m.tensor(in.In[1])
		a, c := x, y
		if pl.idx != nil {
			a = ring.Tensor{Shape: dst.Shape, Data: m.scratch[:len(dst.Data)]}
			gather(a.Data, x.Data, pl.idx, 0)
		}
		if pl.idx2 != nil {
			c = ring.Tensor{Shape: dst.Shape, Data: m.scratch[len(dst.Data) : 2*len(dst.Data)]}
			gather(c.Data, y.Data, pl.idx2, 0)
		}
		return b.Mul(ctx, dst, a, c)
	case fixed.OpScaleUp:
		r.ScaleVec(dst.Data, x.Data, uint64(1)<<uint(in.Shift))
		return nil
	case fixed.OpTrunc:
		if pl.fusedTail {
			return nil // run with the ReLU before it
		}
		if in.Shift == 0 {
			copy(dst.Data, x.Data)
			return nil
		}
		return b.Trunc(ctx, dst, x, in.Shift, in.NonNeg)
	case fixed.OpReLU:
		if pl.fused {
			next := p.Instrs[i+1]
			bits := in.Bits
			if bits <= 0 {
				bits = r.Bits
			}
			return b.(ReLUTruncBackend).ReLUTrunc(ctx, m.tensor(next.Out), x, bits, next.Shift)
		}
		if lb, ok := b.(LowReLUBackend); ok && in.Bits > 0 {
			return lb.ReLULow(ctx, dst, x, in.Bits)
		}
		return b.ReLU(ctx, dst, x)
	case fixed.OpExp, fixed.OpSigmoid, fixed.OpTanh, fixed.OpRecip, fixed.OpRsqrt, fixed.OpLog:
		f, _ := in.Op.MathFunc()
		mb, ok := b.(MathBackend)
		if !ok {
			return fmt.Errorf("the backend (%T) does not implement the math functions", b)
		}
		return mb.Math(ctx, f, dst, x, p.Tensors[in.In[0]].Scale)
	case fixed.OpMaxPool:
		rows, d := len(dst.Data), pl.d
		g := ring.Tensor{Shape: []int{rows, d}, Data: m.scratch[:rows*d]}
		gather(g.Data, x.Data, pl.idx, 0)
		return b.MaxRows(ctx, dst, g, rows, d)
	case fixed.OpSumPool:
		d := pl.d
		if r.Modulus() != 0 {
			for o := range dst.Data {
				var s uint64
				for _, j := range pl.idx[o*d : o*d+d] {
					if j >= 0 {
						s = r.Add(s, x.Data[j])
					}
				}
				dst.Data[o] = s
			}
			return nil
		}
		mask := r.Mask()
		for o := range dst.Data {
			var s uint64
			for _, j := range pl.idx[o*d : o*d+d] {
				if j >= 0 {
					s += x.Data[j]
				}
			}
			dst.Data[o] = s & mask
		}
		return nil
	case fixed.OpDiv:
		return m.div(ctx, in, pl, dst, x)
	case fixed.OpArgMax:
		rows := len(dst.Data)
		d := len(x.Data) / max(rows, 1)
		src := x
		if pl.idx != nil {
			src = ring.Tensor{Shape: []int{rows, d}, Data: m.scratch[:len(x.Data)]}
			gather(src.Data, x.Data, pl.idx, 0)
		}
		return b.ArgMaxRows(ctx, dst, src, rows, d)
	case fixed.OpReshape:
		copy(dst.Data, x.Data)
		return nil
	case fixed.OpTranspose, fixed.OpGather:
		gather(dst.Data, x.Data, pl.idx, 0)
		return nil
	case fixed.OpPad:
		var fill uint64
		if m.party == 0 {
			fill = r.FromSigned(in.PadValue)
		}
		gather(dst.Data, x.Data, pl.idx, fill)
		return nil
	case fixed.OpConcat:
		m.concat(in, dst)
		return nil
	case fixed.OpBatchMatMul:
		mb, ok := b.(SharedMatMulBackend)
		if !ok {
			return fmt.Errorf("the backend (%T) cannot multiply two shared matrices", b)
		}
		batch, mm, k, n := fixed.BatchMatMulDims(p.Tensors[in.In[0]].Shape, p.Tensors[in.In[1]].Shape)
		return mb.MatMulShared(ctx, in.Engine, dst, x, m.tensor(in.In[1]), batch, mm, k, n)
	}
	return fmt.Errorf("unknown opcode %d", uint8(in.Op))
}

// weight returns weight tensor w in the ring, in wbuf (valid until the next call), or nil at
// party 1.
func (m *Machine) weight(w int) *ring.Tensor {
	if m.party != 0 {
		return nil
	}
	src := m.prog.Weights[w]
	t := &ring.Tensor{Shape: src.Shape, Data: m.wbuf[:len(src.Data)]}
	m.r.FromSignedVec(t.Data, src.Data)
	return t
}

// gather sets dst[i] = src[idx[i]], or fill where idx[i] < 0.
func gather(dst, src []uint64, idx []int32, fill uint64) {
	dst = dst[:len(idx)]
	for i, j := range idx {
		if j >= 0 {
			dst[i] = src[j]
		} else {
			dst[i] = fill
		}
	}
}

func (m *Machine) conv(ctx context.Context, in *fixed.Instr, pl *plan, dst, x ring.Tensor) error {
	if pl.native {
		return m.be.(ConvBackend).Conv2D(ctx, in.Engine, dst, m.weight(in.Weight), x, pl.conv)
	}
	wt := m.prog.Weights[in.Weight].Shape
	full := m.weight(in.Weight)
	g := in.Group
	mg := wt[0] / g // output channels per group
	kg := pl.d      // C/g * kernel size
	P := pl.p       // output positions per image
	N := x.Shape[0]
	C := x.Shape[1]
	inPlane := len(x.Data) / max(N*C, 1) // spatial size of the input
	cols := N * P
	col := ring.Tensor{Shape: []int{kg, cols}, Data: m.scratch[:kg*cols]}
	// With one image the per-group result is contiguous in dst; otherwise compute [mg, N*P] into
	// scratch and scatter into NCHW order.
	var res ring.Tensor
	if N > 1 {
		res = ring.Tensor{Shape: []int{mg, cols}, Data: m.scratch[kg*cols : kg*cols+mg*cols]}
	}
	for gi := 0; gi < g; gi++ {
		// im2col: row t of col is (channel, kernel offset), column n*P+q is image n, position q.
		chanOff := gi * (C / g) * inPlane
		for t := 0; t < kg; t++ {
			rowIdx := pl.idx[t*P : t*P+P]
			for n := 0; n < N; n++ {
				base := n*C*inPlane + chanOff
				out := col.Data[t*cols+n*P : t*cols+n*P+P]
				for q, j := range rowIdx {
					if j >= 0 {
						out[q] = x.Data[base+int(j)]
					} else {
						out[q] = 0
					}
				}
			}
		}
		var w *ring.Tensor
		if full != nil {
			w = &ring.Tensor{Shape: []int{mg, kg}, Data: full.Data[gi*mg*kg : (gi+1)*mg*kg]}
		}
		if N == 1 {
			out := ring.Tensor{Shape: []int{mg, P}, Data: dst.Data[gi*mg*P : (gi+1)*mg*P]}
			if err := m.be.MatMul(ctx, in.Engine, out, w, mg, kg, P, col); err != nil {
				return err
			}
			continue
		}
		if err := m.be.MatMul(ctx, in.Engine, res, w, mg, kg, cols, col); err != nil {
			return err
		}
		M := wt[0]
		for c := 0; c < mg; c++ {
			for n := 0; n < N; n++ {
				copy(dst.Data[(n*M+gi*mg+c)*P:(n*M+gi*mg+c+1)*P], res.Data[c*cols+n*P:c*cols+n*P+P])
			}
		}
	}
	return nil
}

func (m *Machine) div(ctx context.Context, in *fixed.Instr, pl *plan, dst, x ring.Tensor) error {
	if len(pl.groups) == 1 {
		return m.be.Div(ctx, dst, x, pl.groups[0].d)
	}
	n := len(x.Data)
	src := m.scratch[:n]
	res := m.scratch[n : 2*n]
	for _, grp := range pl.groups {
		k := len(grp.idx)
		gather(src[:k], x.Data, grp.idx, 0)
		if err := m.be.Div(ctx, ring.Tensor{Shape: []int{k}, Data: res[:k]}, ring.Tensor{Shape: []int{k}, Data: src[:k]}, grp.d); err != nil {
			return err
		}
		for i, j := range grp.idx {
			dst.Data[j] = res[i]
		}
	}
	return nil
}

func (m *Machine) concat(in *fixed.Instr, dst ring.Tensor) {
	outShape := dst.Shape
	outer := ir.Shape(outShape[:in.Axis]).Size()
	innerOut := ir.Shape(outShape[in.Axis:]).Size()
	off := 0
	for _, id := range in.In {
		x := m.tensor(id)
		inner := ir.Shape(x.Shape[in.Axis:]).Size()
		for o := 0; o < outer; o++ {
			copy(dst.Data[o*innerOut+off:o*innerOut+off+inner], x.Data[o*inner:(o+1)*inner])
		}
		off += inner
	}
}
