package fixed

import (
	"fmt"
	"math/bits"
	"slices"
)

// Interval is a closed range [Lo, Hi] of signed integers that every element of a tensor lies in,
// or, with Full, no known range (any value of the ring).
type Interval struct {
	Lo, Hi int64
	Full   bool
}

// boundLimit caps the magnitude of a tracked bound: a range reaching beyond ±2^62 is treated as
// unknown (Full), so that the sum or difference of two bounds never overflows int64 (|a ± b| ≤
// 2^63 − 2 after the check on each: see span's callers, which add at most two bounded values).
const boundLimit = int64(1)<<62 - 1

// Bits returns the smallest width b ≥ 2 such that the interval lies in the signed b-bit values
// [−2^(b−1), 2^(b−1)), or 0 for a Full interval.
func (iv Interval) Bits() int {
	if iv.Full {
		return 0
	}
	b := 2
	for ; b < 64; b++ {
		half := int64(1) << (b - 1)
		if iv.Lo >= -half && iv.Hi < half {
			break
		}
	}
	return b
}

func (iv Interval) String() string {
	if iv.Full {
		return "unbounded"
	}
	return fmt.Sprintf("[%d, %d]", iv.Lo, iv.Hi)
}

// span returns [lo, hi], or Full when either end is beyond the tracked limit.
func span(lo, hi int64) Interval {
	if lo < -boundLimit || hi > boundLimit || lo > hi {
		return Interval{Full: true}
	}
	return Interval{Lo: lo, Hi: hi}
}

// union is the smallest interval holding both.
func union(a, b Interval) Interval {
	if a.Full || b.Full {
		return Interval{Full: true}
	}
	return Interval{Lo: min(a.Lo, b.Lo), Hi: max(a.Hi, b.Hi)}
}

// mulBound returns a·b, or false when |a·b| exceeds the tracked limit.
func mulBound(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	ua, ub := uint64(a), uint64(b)
	if a < 0 {
		ua = uint64(-a)
	}
	if b < 0 {
		ub = uint64(-b)
	}
	hi, lo := bits.Mul64(ua, ub)
	if hi != 0 || lo > uint64(boundLimit) {
		return 0, false
	}
	if (a < 0) != (b < 0) {
		return -int64(lo), true
	}
	return int64(lo), true
}

// scaleBy returns {w·x : x ∈ iv}.
func scaleBy(iv Interval, w int64) Interval {
	if iv.Full {
		return iv
	}
	a, ok1 := mulBound(iv.Lo, w)
	b, ok2 := mulBound(iv.Hi, w)
	if !ok1 || !ok2 {
		return Interval{Full: true}
	}
	return span(min(a, b), max(a, b))
}

// floorDiv is floor(a/d) for d ≥ 1.
func floorDiv(a, d int64) int64 {
	q := a / d
	if a%d != 0 && a < 0 {
		q--
	}
	return q
}

// bound is a tensor's bound: one interval for all elements (len(iv) == 1), or one per index
// along axis (len(iv) == the axis's dimension). Intervals are never Full inside a per-axis bound:
// an unbounded tensor is the single Full interval.
type bound struct {
	axis int
	iv   []Interval
}

func scalarBound(iv Interval) bound { return bound{iv: []Interval{iv}} }

var unbounded = scalarBound(Interval{Full: true})

// all is the union of the bound's intervals.
func (b bound) all() Interval {
	r := b.iv[0]
	for _, v := range b.iv[1:] {
		r = union(r, v)
	}
	return r
}

// perAxis reports whether b varies along an axis.
func (b bound) perAxis() bool { return len(b.iv) > 1 }

// at is the interval at index i along b's axis (the only one for a scalar bound).
func (b bound) at(i int) Interval {
	if len(b.iv) == 1 {
		return b.iv[0]
	}
	return b.iv[i]
}

// mapB applies f to every interval; a Full result makes the whole bound unbounded.
func (b bound) mapB(f func(Interval) Interval) bound {
	out := bound{axis: b.axis, iv: make([]Interval, len(b.iv))}
	for i, v := range b.iv {
		if out.iv[i] = f(v); out.iv[i].Full {
			return unbounded
		}
	}
	return out
}

// zip combines a and b index by index when both vary along the same axis of one length (or one
// is scalar), else their unions.
func zip(a, b bound, f func(x, y Interval) Interval) bound {
	if a.perAxis() && b.perAxis() && (a.axis != b.axis || len(a.iv) != len(b.iv)) {
		a, b = scalarBound(a.all()), scalarBound(b.all())
	}
	n, axis := max(len(a.iv), len(b.iv)), a.axis
	if b.perAxis() {
		axis = b.axis
	}
	out := bound{axis: axis, iv: make([]Interval, n)}
	for i := range out.iv {
		x, y := a.at(i), b.at(i)
		if x.Full || y.Full {
			return unbounded
		}
		if out.iv[i] = f(x, y); out.iv[i].Full {
			return unbounded
		}
	}
	return out
}

// weightAxis returns, for weight w broadcast against a tensor of shape ts (numpy rules), the
// tensor axis along which it varies (its values are then in order along that axis), −1 for a
// weight that varies along no axis (one value), or ok = false when it varies along several.
func (p *Program) weightAxis(w int, ts []int) (axis int, ok bool) {
	ws := p.Weights[w].Shape
	axis = -1
	for i, d := range ws {
		if d > 1 {
			if axis >= 0 {
				return 0, false
			}
			axis = len(ts) - len(ws) + i
		}
	}
	return axis, true
}

// constBound is the bound of weight w broadcast against shape ts: per axis when it varies along
// one, else the range of its values.
func (p *Program) constBound(w int, ts []int) bound {
	data := p.Weights[w].Data
	if axis, ok := p.weightAxis(w, ts); ok && axis >= 0 {
		b := bound{axis: axis, iv: make([]Interval, len(data))}
		for i, v := range data {
			b.iv[i] = Interval{Lo: v, Hi: v}
		}
		return b
	}
	lo, hi := p.weightRange(w)
	return scalarBound(Interval{Lo: lo, Hi: hi})
}

// Bounds returns, for every tensor of p, an interval holding each of its elements' signed values
// in every run whose inputs lie in their recorded ranges (IO.Bounded; an input without one is
// unbounded). It follows the exact integer semantics of each opcode in Z_2^l with the weights'
// values (party 0's: p must have its weights), by interval arithmetic kept per channel where
// an axis carries per-channel constants (a convolution's output channels and the constants
// broadcast along them), plus one relation that plain intervals lose and quantized programs rely
// on: a difference of two ReLUs of constant offsets of one tensor, ReLU(t + a) − ReLU(t + b) (the
// clip of a requantization, the steps of its point corrections), is bounded by evaluating that
// function of t at the ends of t's range and at its two kinks, per channel. A range that could
// leave the signed l-bit values (the ring would wrap) or ±2^62 is unbounded, as are the results
// of the math functions. docs/fixed-point.md, "Comparisons on the low bits".
func (p *Program) Bounds() ([]Interval, error) {
	bs, err := p.bounds()
	if err != nil {
		return nil, err
	}
	out := make([]Interval, len(bs))
	for i, b := range bs {
		out[i] = b.all()
	}
	return out, nil
}

func (p *Program) bounds() ([]bound, error) {
	if !p.HasWeights() {
		return nil, fmt.Errorf("bounds: the program has no weights (a client copy): the bounds follow from party 0's weights")
	}
	bs := make([]bound, len(p.Tensors))
	for i := range bs {
		bs[i] = unbounded
	}
	if p.Modulus != 0 {
		return bs, nil
	}
	defs := p.Defs()
	ringMin, ringMax := -boundLimit, boundLimit
	if p.Bits < 63 {
		ringMin, ringMax = -(int64(1) << (p.Bits - 1)), int64(1)<<(p.Bits-1)-1
	}
	for _, in := range p.Instrs {
		if in.Op == OpOutput {
			continue
		}
		b := p.instrBound(in, bs, defs)
		if all := b.all(); all.Full || all.Lo < ringMin || all.Hi > ringMax {
			b = unbounded
		}
		bs[in.Out] = b
	}
	return bs, nil
}

// weightRange returns the smallest and largest value of weight w.
func (p *Program) weightRange(w int) (lo, hi int64) {
	d := p.Weights[w].Data
	if len(d) == 0 {
		return 0, 0
	}
	lo, hi = d[0], d[0]
	for _, v := range d[1:] {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

// dot returns the range of Σ_j w_j·x_j for x_j ∈ x(j).
func dot(w []int64, x func(j int) Interval) Interval {
	var lo, hi int64
	for j, v := range w {
		t := scaleBy(x(j), v)
		if t.Full {
			return t
		}
		lo += t.Lo
		hi += t.Hi
		if lo < -boundLimit || hi > boundLimit {
			return Interval{Full: true}
		}
	}
	return span(lo, hi)
}

// tracked reports whether iv is within the tracked limit (so that a sum of two cannot overflow).
func tracked(iv Interval) bool {
	return !iv.Full && iv.Lo >= -boundLimit && iv.Hi <= boundLimit
}

func addIv(a, b Interval) Interval {
	if !tracked(a) || !tracked(b) {
		return Interval{Full: true}
	}
	return span(a.Lo+b.Lo, a.Hi+b.Hi)
}

func subIv(a, b Interval) Interval {
	if !tracked(a) || !tracked(b) {
		return Interval{Full: true}
	}
	return span(a.Lo-b.Hi, a.Hi-b.Lo)
}
func mulIv(a, b Interval) Interval { return union(scaleBy(a, b.Lo), scaleBy(a, b.Hi)) }

func (p *Program) instrBound(in *Instr, bs []bound, defs []int) bound {
	arg := func(i int) bound { return bs[in.In[i]] }
	shape := func(t int) []int { return p.Tensors[t].Shape }
	switch in.Op {
	case OpInput:
		if io := p.Inputs[in.Index]; io.Bounded {
			return scalarBound(span(io.Lo, io.Hi))
		}
		return unbounded
	case OpMatMul:
		// W[m,k] × X[k,n]: per output row; X's bound per row k when it varies along axis 0.
		x := arg(0)
		if x.all().Full {
			return unbounded
		}
		if x.perAxis() && x.axis != 0 {
			x = scalarBound(x.all())
		}
		w := p.Weights[in.Weight]
		m, k := w.Shape[0], w.Shape[1]
		out := bound{axis: 0, iv: make([]Interval, m)}
		for i := 0; i < m; i++ {
			if out.iv[i] = dot(w.Data[i*k:(i+1)*k], x.at); out.iv[i].Full {
				return unbounded
			}
		}
		return out
	case OpConv:
		// Per output channel; the input's bound per input channel when it varies along axis 1.
		x := arg(0)
		if x.all().Full {
			return unbounded
		}
		if x.perAxis() && x.axis != 1 {
			x = scalarBound(x.all())
		}
		for _, pad := range in.Win.Pads {
			if pad != 0 { // padded positions read 0
				x = x.mapB(func(v Interval) Interval { return union(v, Interval{}) })
				break
			}
		}
		w := p.Weights[in.Weight]
		m, cg := w.Shape[0], w.Shape[1]
		per := w.Shape.Size() / max(m, 1)
		ksz := per / max(cg, 1)
		mg := m / max(in.Group, 1)
		out := bound{axis: 1, iv: make([]Interval, m)}
		for o := 0; o < m; o++ {
			base := (o / max(mg, 1)) * cg // the group's first input channel
			out.iv[o] = dot(w.Data[o*per:(o+1)*per], func(j int) Interval { return x.at(base + j/ksz) })
			if out.iv[o].Full {
				return unbounded
			}
		}
		return out
	case OpAddConst:
		return zip(arg(0), p.constBound(in.Weight, shape(in.Out)), addIv)
	case OpMulConst:
		return zip(arg(0), p.constBound(in.Weight, shape(in.Out)), mulIv)
	case OpAdd:
		if !slices.Equal(shape(in.In[0]), shape(in.In[1])) {
			return scalarBound(addIv(arg(0).all(), arg(1).all()))
		}
		return zip(arg(0), arg(1), addIv)
	case OpSub:
		if r, ok := p.reluDiff(in, bs, defs); ok {
			return r
		}
		if !slices.Equal(shape(in.In[0]), shape(in.In[1])) {
			return scalarBound(subIv(arg(0).all(), arg(1).all()))
		}
		return zip(arg(0), arg(1), subIv)
	case OpScaleUp:
		return arg(0).mapB(func(v Interval) Interval { return scaleBy(v, int64(1)<<in.Shift) })
	case OpTrunc:
		d := int64(1) << in.Shift
		return arg(0).mapB(func(v Interval) Interval { return span(floorDiv(v.Lo, d), floorDiv(v.Hi, d)) })
	case OpReLU:
		return arg(0).mapB(func(v Interval) Interval { return span(max(v.Lo, 0), max(v.Hi, 0)) })
	case OpMaxPool:
		return arg(0)
	case OpSumPool:
		k := int64(1)
		for _, d := range in.Win.Kernel {
			k *= int64(d)
		}
		return arg(0).mapB(func(v Interval) Interval { return scaleBy(union(v, Interval{}), k) })
	case OpReshape:
		// The per-axis bound survives when the dimensions up to its axis are unchanged.
		x := arg(0)
		if xs, os := shape(in.In[0]), shape(in.Out); x.perAxis() && (x.axis >= len(os) || !slices.Equal(xs[:x.axis+1], os[:x.axis+1])) {
			return scalarBound(x.all())
		}
		return x
	case OpTranspose:
		x := arg(0)
		if x.perAxis() {
			x.axis = slices.Index(in.Perm, x.axis)
		}
		return x
	case OpDiv:
		x := arg(0).all()
		if x.Full {
			return unbounded
		}
		var r Interval
		for i, d := range in.Divisors {
			q := span(floorDiv(x.Lo, int64(d)), floorDiv(x.Hi, int64(d)))
			if i == 0 {
				r = q
			} else {
				r = union(r, q)
			}
		}
		return scalarBound(r)
	case OpArgMax:
		return scalarBound(span(0, int64(shape(in.In[0])[in.Axis]-1)))
	case OpConcat:
		r := arg(0).all()
		for i := range in.In[1:] {
			r = union(r, arg(i+1).all())
		}
		return scalarBound(r)
	case OpPad:
		x := arg(0)
		if x.perAxis() && (in.Pads[x.axis] != 0 || in.Pads[len(in.Pads)/2+x.axis] != 0) {
			x = scalarBound(x.all())
		}
		if in.PadMode == PadConstant {
			return x.mapB(func(v Interval) Interval { return union(v, span(in.PadValue, in.PadValue)) })
		}
		return x
	case OpMul:
		return scalarBound(mulIv(arg(0).all(), arg(1).all()))
	case OpBatchMatMul:
		a, b := arg(0).all(), arg(1).all()
		if a.Full || b.Full {
			return unbounded
		}
		sa := shape(in.In[0])
		return scalarBound(scaleBy(mulIv(a, b), int64(sa[len(sa)-1])))
	}
	return unbounded // math functions
}

// reluDiff bounds Sub(ReLU(t + a), ReLU(t + b)) — both ReLUs of constant offsets (OpAddConst,
// or none) of the same tensor t — by the function of t it is, per channel: f(t) = max(t+a, 0) −
// max(t+b, 0) is linear between its kinks −a and −b, so its extremes over t's range are at the
// range's ends or a kink inside it.
func (p *Program) reluDiff(in *Instr, bs []bound, defs []int) (bound, bool) {
	side := func(x int) (t int, off bound, ok bool) {
		d := defs[x]
		if d < 0 || p.Instrs[d].Op != OpReLU {
			return 0, bound{}, false
		}
		u := p.Instrs[d].In[0]
		if du := defs[u]; du >= 0 && p.Instrs[du].Op == OpAddConst {
			ac := p.Instrs[du]
			return ac.In[0], p.constBound(ac.Weight, p.Tensors[u].Shape), true
		}
		return u, scalarBound(Interval{}), true
	}
	ta, oa, ok1 := side(in.In[0])
	tb, ob, ok2 := side(in.In[1])
	if !ok1 || !ok2 || ta != tb || bs[ta].all().Full {
		return bound{}, false
	}
	t := bs[ta]
	// The offsets and t must vary along one axis (or not at all).
	axis, n := -1, 1
	for _, b := range []bound{t, oa, ob} {
		if !b.perAxis() {
			continue
		}
		if axis >= 0 && (b.axis != axis || len(b.iv) != n) {
			return bound{}, false
		}
		axis, n = b.axis, len(b.iv)
	}
	out := bound{axis: max(axis, 0), iv: make([]Interval, n)}
	for i := range out.iv {
		tv, ca, cb := t.at(i), oa.at(i).Lo, ob.at(i).Lo
		if ca < -boundLimit || ca > boundLimit || cb < -boundLimit || cb > boundLimit {
			return bound{}, false
		}
		f := func(x int64) int64 { return max(x+ca, 0) - max(x+cb, 0) }
		r := Interval{Full: true}
		for _, x := range []int64{tv.Lo, tv.Hi, -ca, -cb} {
			if x < tv.Lo || x > tv.Hi {
				continue
			}
			v := f(x)
			if r.Full {
				r = Interval{Lo: v, Hi: v}
			} else {
				r.Lo, r.Hi = min(r.Lo, v), max(r.Hi, v)
			}
		}
		out.iv[i] = r
	}
	return out, true
}

// LowBitReLUs sets the Bits of every OpReLU of p to the signed width of its operand's bound
// (Bounds) when that is below the ring's, and clears it otherwise. It returns the number of ReLU
// elements that compare on fewer bits than the ring's. p must have its weights.
func (p *Program) LowBitReLUs() (int, error) {
	iv, err := p.Bounds()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, in := range p.Instrs {
		if in.Op != OpReLU {
			continue
		}
		in.Bits = 0
		if p.Modulus != 0 {
			continue
		}
		if b := iv[in.In[0]].Bits(); b > 0 && b < p.Bits {
			in.Bits = b
			n += p.Tensors[in.Out].Shape.Size()
		}
	}
	return n, nil
}

// CheckBounds verifies every low-bit ReLU of p (OpReLU with Bits): its operand's bound (Bounds)
// must lie in the signed Bits-bit values. A program without its weights (a client copy) cannot
// be checked: CheckBounds then returns nil.
func (p *Program) CheckBounds() error {
	low := false
	for _, in := range p.Instrs {
		low = low || (in.Op == OpReLU && in.Bits != 0)
	}
	if !low || !p.HasWeights() {
		return nil
	}
	iv, err := p.Bounds()
	if err != nil {
		return err
	}
	for i, in := range p.Instrs {
		if in.Op != OpReLU || in.Bits == 0 {
			continue
		}
		x := iv[in.In[0]]
		if x.Full {
			return fmt.Errorf("instruction %d (relu%s) compares on the low %d bits, but its operand is unbounded", i, sourceSuffix(in), in.Bits)
		}
		if b := x.Bits(); b > in.Bits {
			return fmt.Errorf("instruction %d (relu%s) compares on the low %d bits, but its operand's bound is %v (%d bits)",
				i, sourceSuffix(in), in.Bits, x, b)
		}
	}
	return nil
}
