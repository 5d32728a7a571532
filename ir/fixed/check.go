package fixed

import (
	"fmt"
	"slices"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// MaxElems bounds the number of elements of any tensor or weight of a fixed-point program, so
// that a corrupted program file cannot make the VM allocate without limit.
const MaxElems = 1 << 28

// MaxRank bounds the rank of every tensor and weight of a fixed-point program.
const MaxRank = 16

// MaxScale bounds every scale of a fixed-point program.
const MaxScale = 62

// checkedShapeSize returns the element count of s, rejecting negative dimensions and sizes above
// MaxElems.
func checkedShapeSize(s ir.Shape) (int, error) {
	if len(s) > MaxRank {
		return 0, fmt.Errorf("shape %v has rank %d > %d", s, len(s), MaxRank)
	}
	n := 1
	for _, d := range s {
		if d < 0 {
			return 0, fmt.Errorf("shape %v has a negative dimension", s)
		}
		if d != 0 && n > MaxElems/d {
			return 0, fmt.Errorf("shape %v has more than %d elements", s, MaxElems)
		}
		n *= d
	}
	return n, nil
}

// Validate checks that p is a well-formed program: every id in range, every tensor defined once
// before use, shapes and scales consistent with each instruction's semantics, inputs and outputs
// matched to their instructions, weight data of the right size (or absent), and, when slots are
// assigned, no two simultaneously live tensors sharing a slot. The VM runs only validated programs;
// the program-file reader calls Validate on everything it decodes.
func (p *Program) Validate() error {
	if p.Bits < 1 || p.Bits > 64 {
		return fmt.Errorf("ring bitwidth %d is not in 1..64", p.Bits)
	}
	if err := p.checkModulus(); err != nil {
		return err
	}
	if p.Scale < 0 || p.Scale > MaxScale {
		return fmt.Errorf("scale %d is not in 0..%d", p.Scale, MaxScale)
	}
	for i, t := range p.Tensors {
		if _, err := checkedShapeSize(t.Shape); err != nil {
			return fmt.Errorf("tensor %d (%s): %w", i, t.Name, err)
		}
		if t.Scale < 0 || t.Scale > MaxScale {
			return fmt.Errorf("tensor %d (%s): scale %d is not in 0..%d", i, t.Name, t.Scale, MaxScale)
		}
	}
	for i, w := range p.Weights {
		n, err := checkedShapeSize(w.Shape)
		if err != nil {
			return fmt.Errorf("weight %d (%s): %w", i, w.Name, err)
		}
		if w.Scale < 0 || w.Scale > MaxScale {
			return fmt.Errorf("weight %d (%s): scale %d is not in 0..%d", i, w.Name, w.Scale, MaxScale)
		}
		if w.Data != nil && len(w.Data) != n {
			return fmt.Errorf("weight %d (%s): %d values for shape %v", i, w.Name, len(w.Data), w.Shape)
		}
	}
	defined := make([]bool, len(p.Tensors))
	inputSeen := make([]bool, len(p.Inputs))
	outputSeen := make([]bool, len(p.Outputs))
	for i, in := range p.Instrs {
		if in == nil {
			return fmt.Errorf("instruction %d is nil", i)
		}
		if err := p.checkInstr(in, defined, inputSeen, outputSeen); err != nil {
			return fmt.Errorf("instruction %d (%s%s): %w", i, in.Op, sourceSuffix(in), err)
		}
		if in.Op != OpOutput {
			defined[in.Out] = true
		}
	}
	for i, io := range p.Inputs {
		if io.Bounded {
			if err := p.checkRange(io.Lo, io.Hi); err != nil {
				return fmt.Errorf("input %d (%q): %w", i, io.Name, err)
			}
		}
		if !inputSeen[i] {
			return fmt.Errorf("input %d (%q) has no input instruction", i, io.Name)
		}
	}
	for i, io := range p.Outputs {
		if io.Bounded {
			return fmt.Errorf("output %d (%q) has a value range: only inputs have one", i, io.Name)
		}
		if !outputSeen[i] {
			return fmt.Errorf("output %d (%q) has no output instruction", i, io.Name)
		}
	}
	return p.checkSlots()
}

func sourceSuffix(in *Instr) string {
	if in.Source == "" {
		return ""
	}
	return " from " + in.Source
}

func (p *Program) checkInstr(in *Instr, defined, inputSeen, outputSeen []bool) error {
	if !in.Op.Valid() {
		return fmt.Errorf("unknown opcode %d", uint8(in.Op))
	}
	if !in.Engine.Valid() {
		return fmt.Errorf("unknown engine %d", uint8(in.Engine))
	}
	if in.Engine != EngineDefault && in.Op != OpMatMul && in.Op != OpConv && in.Op != OpBatchMatMul {
		return fmt.Errorf("%s records engine %s, but only matmul, conv and bmatmul choose one", in.Op, in.Engine)
	}
	if err := p.checkBlock(in); err != nil {
		return err
	}
	for _, t := range in.In {
		if t < 0 || t >= len(p.Tensors) {
			return fmt.Errorf("operand tensor %d out of range (%d tensors)", t, len(p.Tensors))
		}
		if !defined[t] {
			return fmt.Errorf("operand tensor %d (%s) is read before it is defined", t, p.Tensors[t].Name)
		}
	}
	if in.Op == OpOutput {
		if in.Out != -1 {
			return fmt.Errorf("output instruction defines tensor %d", in.Out)
		}
	} else {
		if in.Out < 0 || in.Out >= len(p.Tensors) {
			return fmt.Errorf("result tensor %d out of range (%d tensors)", in.Out, len(p.Tensors))
		}
		if defined[in.Out] {
			return fmt.Errorf("tensor %d (%s) is defined twice", in.Out, p.Tensors[in.Out].Name)
		}
	}
	if in.Op.UsesWeight() {
		if in.Weight < 0 || in.Weight >= len(p.Weights) {
			return fmt.Errorf("weight %d out of range (%d weights)", in.Weight, len(p.Weights))
		}
	} else if in.Weight != -1 {
		return fmt.Errorf("has weight %d but %s takes none", in.Weight, in.Op)
	}
	switch in.Op {
	case OpInput:
		if len(in.In) != 0 {
			return fmt.Errorf("has %d operands, want 0", len(in.In))
		}
		if in.Index < 0 || in.Index >= len(p.Inputs) || inputSeen[in.Index] {
			return fmt.Errorf("input index %d is out of range or used twice", in.Index)
		}
		io := p.Inputs[in.Index]
		if io.Tensor != in.Out {
			return fmt.Errorf("input %d (%q) is tensor %d, instruction defines %d", in.Index, io.Name, io.Tensor, in.Out)
		}
		if io.Party != 0 && io.Party != 1 {
			return fmt.Errorf("input %q owned by party %d", io.Name, io.Party)
		}
		inputSeen[in.Index] = true
		return nil
	case OpOutput:
		if len(in.In) != 1 {
			return fmt.Errorf("has %d operands, want 1", len(in.In))
		}
		if in.Index < 0 || in.Index >= len(p.Outputs) || outputSeen[in.Index] {
			return fmt.Errorf("output index %d is out of range or used twice", in.Index)
		}
		io := p.Outputs[in.Index]
		if io.Tensor != in.In[0] {
			return fmt.Errorf("output %d (%q) is tensor %d, instruction reveals %d", in.Index, io.Name, io.Tensor, in.In[0])
		}
		if io.Party != 0 && io.Party != 1 {
			return fmt.Errorf("output %q revealed to party %d", io.Name, io.Party)
		}
		outputSeen[in.Index] = true
		return nil
	}
	shape, scale, err := p.InferInstr(in)
	if err != nil {
		return err
	}
	out := p.Tensors[in.Out]
	if !shape.Equal(out.Shape) {
		return fmt.Errorf("result tensor %d (%s) has shape %v, the operation gives %v", in.Out, out.Name, out.Shape, shape)
	}
	if scale != out.Scale {
		return fmt.Errorf("result tensor %d (%s) has scale %d, the operation gives %d", in.Out, out.Name, out.Scale, scale)
	}
	return nil
}

// InferInstr returns the shape and scale of the result of instruction in (not OpInput or OpOutput)
// from its operands, checking the operation's constraints. Operand and weight ids must be in range.
func (p *Program) InferInstr(in *Instr) (ir.Shape, int, error) {
	arity := func(lo, hi int) error {
		if len(in.In) < lo || len(in.In) > hi {
			return fmt.Errorf("has %d operands, want %d..%d", len(in.In), lo, hi)
		}
		return nil
	}
	nIn := map[Opcode]int{OpAdd: 2, OpSub: 2, OpMul: 2, OpBatchMatMul: 2}
	if in.Op != OpConcat {
		want := 1
		if n, ok := nIn[in.Op]; ok {
			want = n
		}
		if err := arity(want, want); err != nil {
			return nil, 0, err
		}
	} else if err := arity(1, 1<<16-1); err != nil {
		return nil, 0, err
	}
	x := p.Tensors[in.In[0]]
	var w *Weight
	if in.Op.UsesWeight() {
		w = &p.Weights[in.Weight]
	}
	switch in.Op {
	case OpMatMul:
		if len(w.Shape) != 2 || len(x.Shape) != 2 || w.Shape[1] != x.Shape[0] {
			return nil, 0, fmt.Errorf("matmul of weight %v and operand %v", w.Shape, x.Shape)
		}
		return ir.Shape{w.Shape[0], x.Shape[1]}, x.Scale + w.Scale, checkScale(x.Scale + w.Scale)
	case OpConv:
		s, err := fixedConvShape(in, x.Shape, w.Shape)
		return s, x.Scale + w.Scale, firstErr(err, checkScale(x.Scale+w.Scale))
	case OpAddConst, OpMulConst:
		b, err := ir.Broadcast(x.Shape, w.Shape)
		if err != nil || !b.Equal(x.Shape) {
			return nil, 0, fmt.Errorf("constant of shape %v does not broadcast to %v", w.Shape, x.Shape)
		}
		if in.Op == OpAddConst {
			if w.Scale != x.Scale {
				return nil, 0, fmt.Errorf("constant at scale %d added to operand at scale %d", w.Scale, x.Scale)
			}
			return x.Shape.Clone(), x.Scale, nil
		}
		return x.Shape.Clone(), x.Scale + w.Scale, checkScale(x.Scale + w.Scale)
	case OpAdd, OpSub:
		y := p.Tensors[in.In[1]]
		if x.Scale != y.Scale {
			return nil, 0, fmt.Errorf("operands at scales %d and %d", x.Scale, y.Scale)
		}
		b, err := ir.Broadcast(x.Shape, y.Shape)
		return b, x.Scale, err
	case OpMul:
		y := p.Tensors[in.In[1]]
		b, err := ir.Broadcast(x.Shape, y.Shape)
		if err != nil {
			return nil, 0, err
		}
		return b, x.Scale + y.Scale, checkScale(x.Scale + y.Scale)
	case OpBatchMatMul:
		s, err := BatchMatMulShape(x.Shape, p.Tensors[in.In[1]].Shape)
		if err != nil {
			return nil, 0, err
		}
		y := p.Tensors[in.In[1]]
		return s, x.Scale + y.Scale, checkScale(x.Scale + y.Scale)
	case OpScaleUp:
		if in.Shift < 0 || in.Shift > MaxScale {
			return nil, 0, fmt.Errorf("shift %d is not in 0..%d", in.Shift, MaxScale)
		}
		return x.Shape.Clone(), x.Scale + in.Shift, checkScale(x.Scale + in.Shift)
	case OpTrunc:
		if in.Shift < 0 || in.Shift > x.Scale {
			return nil, 0, fmt.Errorf("shift %d is not in 0..%d (the operand's scale)", in.Shift, x.Scale)
		}
		return x.Shape.Clone(), x.Scale - in.Shift, nil
	case OpReLU:
		if in.Bits != 0 && (in.Bits < 2 || in.Bits >= p.Bits || p.Modulus != 0) {
			if p.Modulus != 0 {
				return nil, 0, fmt.Errorf("relu on the low %d bits in a program over Z_n (only Z_2^l has low bits)", in.Bits)
			}
			return nil, 0, fmt.Errorf("relu on the low %d bits: want 2..%d (below the ring's %d)", in.Bits, p.Bits-1, p.Bits)
		}
		return x.Shape.Clone(), x.Scale, nil
	case OpExp, OpSigmoid, OpTanh, OpRecip, OpRsqrt, OpLog:
		if x.Scale != p.Scale {
			return nil, 0, fmt.Errorf("%s of an operand at scale %d: math functions work at the program's scale %d", in.Op, x.Scale, p.Scale)
		}
		if p.Bits < fxmath.MinBits(p.Scale) || p.Scale < 1 {
			return nil, 0, fmt.Errorf("%s needs scale ≥ 1 and a ring of at least 2s+5 = %d bits (have l = %d, s = %d)", in.Op, fxmath.MinBits(p.Scale), p.Bits, p.Scale)
		}
		return x.Shape.Clone(), x.Scale, nil
	case OpMaxPool, OpSumPool:
		s, err := fixedPoolShape(in, x.Shape)
		return s, x.Scale, err
	case OpDiv:
		n := x.Shape.Size()
		if len(in.Divisors) == 0 || n%len(in.Divisors) != 0 {
			return nil, 0, fmt.Errorf("%d divisors for %d elements", len(in.Divisors), n)
		}
		for _, d := range in.Divisors {
			if d < 1 {
				return nil, 0, fmt.Errorf("divisor %d < 1", d)
			}
		}
		return x.Shape.Clone(), x.Scale, nil
	case OpArgMax:
		if in.Axis < 0 || in.Axis >= len(x.Shape) || x.Shape[in.Axis] == 0 {
			return nil, 0, fmt.Errorf("axis %d of shape %v", in.Axis, x.Shape)
		}
		keep := x.Shape.Clone()
		keep[in.Axis] = 1
		out := p.Tensors[in.Out].Shape
		if out.Equal(keep) {
			return keep, 0, nil
		}
		drop := slices.Delete(x.Shape.Clone(), in.Axis, in.Axis+1)
		return drop, 0, nil
	case OpReshape:
		out := p.Tensors[in.Out].Shape
		if out.Size() != x.Shape.Size() {
			return nil, 0, fmt.Errorf("cannot reshape %v to %v", x.Shape, out)
		}
		return out.Clone(), x.Scale, nil
	case OpGather:
		if len(in.Select) != len(x.Shape) {
			return nil, 0, fmt.Errorf("%d index lists for an operand of rank %d", len(in.Select), len(x.Shape))
		}
		out := x.Shape.Clone()
		for a, s := range in.Select {
			if len(s) == 0 {
				continue
			}
			for _, v := range s {
				if v < 0 || v >= x.Shape[a] {
					return nil, 0, fmt.Errorf("index %d out of range for axis %d of size %d", v, a, x.Shape[a])
				}
			}
			out[a] = len(s)
		}
		return out, x.Scale, nil
	case OpTranspose:
		if err := ir.CheckPerm(in.Perm, len(x.Shape)); err != nil {
			return nil, 0, err
		}
		out := make(ir.Shape, len(x.Shape))
		for i, a := range in.Perm {
			out[i] = x.Shape[a]
		}
		return out, x.Scale, nil
	case OpConcat:
		if in.Axis < 0 || in.Axis >= len(x.Shape) {
			return nil, 0, fmt.Errorf("axis %d of shape %v", in.Axis, x.Shape)
		}
		out := x.Shape.Clone()
		for _, t := range in.In[1:] {
			y := p.Tensors[t]
			if y.Scale != x.Scale {
				return nil, 0, fmt.Errorf("operands at scales %d and %d", x.Scale, y.Scale)
			}
			if len(y.Shape) != len(out) {
				return nil, 0, fmt.Errorf("operands of ranks %d and %d", len(out), len(y.Shape))
			}
			for a := range out {
				if a != in.Axis && y.Shape[a] != out[a] {
					return nil, 0, fmt.Errorf("operand shapes %v and %v differ off axis %d", x.Shape, y.Shape, in.Axis)
				}
			}
			out[in.Axis] += y.Shape[in.Axis]
		}
		_, err := checkedShapeSize(out)
		return out, x.Scale, err
	case OpPad:
		r := len(x.Shape)
		if len(in.Pads) != 2*r {
			return nil, 0, fmt.Errorf("%d pads for rank %d", len(in.Pads), r)
		}
		if int(in.PadMode) >= len(padModeNames) {
			return nil, 0, fmt.Errorf("unknown pad mode %d", in.PadMode)
		}
		out := make(ir.Shape, r)
		for a := 0; a < r; a++ {
			b, e, n := in.Pads[a], in.Pads[r+a], x.Shape[a]
			if b < 0 || e < 0 || b > MaxElems || e > MaxElems {
				return nil, 0, fmt.Errorf("pads %v must be non-negative and bounded", in.Pads)
			}
			if (b > 0 || e > 0) && in.PadMode != PadConstant && n == 0 {
				return nil, 0, fmt.Errorf("%s padding of an empty axis %d", in.PadMode, a)
			}
			if in.PadMode == PadReflect && (b >= n || e >= n) && (b > 0 || e > 0) {
				return nil, 0, fmt.Errorf("reflect pads %v must be smaller than axis %d of size %d", in.Pads, a, n)
			}
			out[a] = n + b + e
		}
		_, err := checkedShapeSize(out)
		return out, x.Scale, err
	}
	return nil, 0, fmt.Errorf("opcode %s has no result shape", in.Op)
}

func checkScale(s int) error {
	if s > MaxScale {
		return fmt.Errorf("result scale %d exceeds %d", s, MaxScale)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// checkFixedWindow checks a window for k spatial dimensions.
func checkFixedWindow(w ir.Window, k int) error {
	if len(w.Kernel) != k || len(w.Strides) != k || len(w.Dilations) != k || len(w.Pads) != 2*k {
		return fmt.Errorf("window kernel=%v strides=%v dilations=%v pads=%v does not fit %d spatial dimensions",
			w.Kernel, w.Strides, w.Dilations, w.Pads, k)
	}
	for i := 0; i < k; i++ {
		if w.Kernel[i] < 1 || w.Strides[i] < 1 || w.Dilations[i] < 1 ||
			w.Kernel[i] > 1<<16 || w.Strides[i] > 1<<16 || w.Dilations[i] > 1<<16 {
			return fmt.Errorf("window kernel=%v strides=%v dilations=%v must be in 1..65536", w.Kernel, w.Strides, w.Dilations)
		}
		if w.Pads[i] < 0 || w.Pads[k+i] < 0 || w.Pads[i] > 1<<16 || w.Pads[k+i] > 1<<16 {
			return fmt.Errorf("window pads %v must be in 0..65536", w.Pads)
		}
	}
	return nil
}

func windowOut(w ir.Window, spatial ir.Shape) (ir.Shape, error) {
	out := make(ir.Shape, len(spatial))
	for i, n := range spatial {
		o, err := w.OutSize(i, n)
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	return out, nil
}

func fixedConvShape(in *Instr, x, wt ir.Shape) (ir.Shape, error) {
	if len(x) < 3 || len(x) > 4 || len(wt) != len(x) {
		return nil, fmt.Errorf("conv of operand %v and weight %v: want equal ranks 3 or 4", x, wt)
	}
	k := len(x) - 2
	if err := checkFixedWindow(in.Win, k); err != nil {
		return nil, err
	}
	g := in.Group
	if g < 1 || x[1]%g != 0 || wt[0]%g != 0 || wt[1] != x[1]/g {
		return nil, fmt.Errorf("group %d does not fit operand %v and weight %v", g, x, wt)
	}
	for i := 0; i < k; i++ {
		if wt[2+i] != in.Win.Kernel[i] {
			return nil, fmt.Errorf("kernel %v does not match weight %v", in.Win.Kernel, wt)
		}
	}
	sp, err := windowOut(in.Win, x[2:])
	if err != nil {
		return nil, err
	}
	out := append(ir.Shape{x[0], wt[0]}, sp...)
	_, err = checkedShapeSize(out)
	return out, err
}

func fixedPoolShape(in *Instr, x ir.Shape) (ir.Shape, error) {
	if len(x) < 3 || len(x) > 4 {
		return nil, fmt.Errorf("pool of operand %v: want rank 3 or 4", x)
	}
	k := len(x) - 2
	if err := checkFixedWindow(in.Win, k); err != nil {
		return nil, err
	}
	sp, err := windowOut(in.Win, x[2:])
	if err != nil {
		return nil, err
	}
	out := append(ir.Shape{x[0], x[1]}, sp...)
	_, err = checkedShapeSize(out)
	return out, err
}

// LiveRanges returns, for every tensor, the index of the instruction that defines it and of the
// last instruction that reads it (the definition itself when nothing reads it). Tensors that no
// instruction defines get (-1, -1).
func (p *Program) LiveRanges() (def, last []int) {
	def = p.Defs()
	last = slices.Clone(def)
	for i, in := range p.Instrs {
		for _, t := range in.In {
			if t >= 0 && t < len(last) && i > last[t] {
				last[t] = i
			}
		}
	}
	return def, last
}

// checkSlots verifies a slot assignment: all tensors assigned or none; no instruction writes a slot
// it reads; tensors sharing a slot have disjoint live ranges.
func (p *Program) checkSlots() error {
	assigned := 0
	for _, t := range p.Tensors {
		if t.Slot >= 0 {
			assigned++
		} else if t.Slot != -1 {
			return fmt.Errorf("tensor %s has slot %d", t.Name, t.Slot)
		}
		if t.Slot >= len(p.Tensors) {
			return fmt.Errorf("tensor %s has slot %d, more than the %d tensors", t.Name, t.Slot, len(p.Tensors))
		}
	}
	if assigned == 0 {
		return nil
	}
	if assigned != len(p.Tensors) {
		return fmt.Errorf("%d of %d tensors have slots: assign all or none", assigned, len(p.Tensors))
	}
	_, last := p.LiveRanges()
	// owner[slot] is the tensor currently occupying the slot.
	owner := make([]int, len(p.Tensors))
	for i := range owner {
		owner[i] = -1
	}
	for i, in := range p.Instrs {
		if in.Op == OpOutput {
			continue
		}
		s := p.Tensors[in.Out].Slot
		if o := owner[s]; o >= 0 && last[o] >= i {
			return fmt.Errorf("instruction %d (%s) writes tensor %d into slot %d while tensor %d still lives there",
				i, in.Op, in.Out, s, o)
		}
		owner[s] = in.Out
	}
	return nil
}

// BatchMatMulShape returns the result shape of OpBatchMatMul on operands of shapes a [..., M, K]
// and b [..., K, N]: both at least 2-D, with equal leading dimensions.
func BatchMatMulShape(a, b ir.Shape) (ir.Shape, error) {
	r := len(a)
	if r < 2 || len(b) != r || !a[:r-2].Equal(b[:r-2]) || a[r-1] != b[r-2] {
		return nil, fmt.Errorf("batched matmul of %v and %v (want [..., M, K] and [..., K, N] with the same leading dimensions)", a, b)
	}
	return append(a[:r-1].Clone(), b[r-1]), nil
}

// BatchMatMulDims returns the batch size and the matrix dimensions M, K, N of OpBatchMatMul on
// operands of shapes a and b (valid for BatchMatMulShape).
func BatchMatMulDims(a, b ir.Shape) (batch, m, k, n int) {
	r := len(a)
	return a[:r-2].Size(), a[r-2], a[r-1], b[r-1]
}

// checkRange checks an input's value range [lo, hi]: not empty, within the signed values of the
// ring (Z_2^l only).
func (p *Program) checkRange(lo, hi int64) error {
	if p.Modulus != 0 {
		return fmt.Errorf("a value range in a program over Z_n")
	}
	if lo > hi {
		return fmt.Errorf("empty value range [%d, %d]", lo, hi)
	}
	if p.Bits < 64 {
		half := int64(1) << (p.Bits - 1)
		if lo < -half || hi >= half {
			return fmt.Errorf("value range [%d, %d] outside the signed values of Z_2^%d", lo, hi, p.Bits)
		}
	}
	return nil
}
