package fhe

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	fheproto "github.com/cryptflow-go/cryptflow/protocols/fhe"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
)

// LayerTime is the server's time on one instruction (composition of its linear map, and the
// homomorphic work it triggered: applying a composed map, a square, the final re-randomisation)
// and the operations of that work on one CRT component.
type LayerTime struct {
	Source string
	Op     fixed.Opcode
	Time   time.Duration
	Ops    Ops
}

// Ops counts homomorphic operations (protocols/fhe's Stats).
type Ops = fheproto.Stats

// Evaluate runs program p (with its weights: the server's copy) on the encrypted inputs (l.Vectors(i)
// vectors for input i, in input order) and returns one encrypted, re-randomised result per output,
// with the per-instruction times.
func Evaluate(ctx context.Context, p *fixed.Program, l *Layout, ev *fheproto.Evaluator, inputs []*fheproto.Vector) ([]*fheproto.Vector, []LayerTime, error) {
	if !p.HasWeights() {
		return nil, nil, fmt.Errorf("fhe: the server needs the program's weights")
	}
	if len(l.In) != len(p.Inputs) || len(inputs) != l.vectorCount() {
		return nil, nil, fmt.Errorf("fhe: %d encrypted input vectors for %d program inputs taking %d", len(inputs), len(p.Inputs), l.vectorCount())
	}
	r, err := p.Ring()
	if err != nil {
		return nil, nil, err
	}
	x := newExecutor(ctx, p, l, ev, r, inputs)
	for _, v := range inputs {
		if v == nil || len(v.Ct) != len(l.Params.T) {
			return nil, nil, fmt.Errorf("fhe: an encrypted input has the wrong number of components")
		}
		if v.Level() != l.Params.MaxLevel() {
			return nil, nil, fmt.Errorf("fhe: an encrypted input is at level %d, not the fresh level %d", v.Level(), l.Params.MaxLevel())
		}
	}
	outs := make([]*fheproto.Vector, len(p.Outputs))
	var times []LayerTime
	for _, in := range p.Instrs {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		start, before := time.Now(), ev.Stats
		if err := x.exec(in, inputs, outs); err != nil {
			return nil, nil, fmt.Errorf("fhe: instruction %s (%s): %w", in.Op, in.Source, err)
		}
		a := ev.Stats
		ops := fheproto.Stats{Rotations: a.Rotations - before.Rotations, PlainMuls: a.PlainMuls - before.PlainMuls,
			CtMuls: a.CtMuls - before.CtMuls, Rescales: a.Rescales - before.Rescales, Encodes: a.Encodes - before.Encodes}
		times = append(times, LayerTime{Source: in.Source, Op: in.Op, Time: time.Since(start), Ops: ops})
	}
	return outs, times, nil
}

type executor struct {
	ctx   context.Context // the evaluation's: a cancelled one stops a linear map midway
	p     *fixed.Program
	l     *Layout
	ev    *fheproto.Evaluator
	r     ring.Ring
	c     composer
	forms []*form
	vecs  []*fheproto.Vector
	lens  []int
	pos   [][]int32 // each vector's layout (nil: row-major)
	// periods: each vector's period, pow2 of its length but for a wide layout's (twice that)
	periods []int
	phase   map[int]phaseInfo // the vectors in the phase-blocked layout (chooseLayoutNext)
	// Inputs: input i's encrypted vectors are inVecs[firstVec[i]:][:l.Vectors(i)]; an input in its
	// convolution representation has no form, only its vectors (convRep: tensor → their indices
	// in vecs), which the one convolution reading it uses directly (convGathered).
	inVecs   []*fheproto.Vector
	firstVec []int
	convRep  map[int][]int
}

// newExecutor prepares the walk over p with the encrypted input vectors (l.Vectors(i) for input i,
// in input order; len(inputs) must be l.vectorCount()).
func newExecutor(ctx context.Context, p *fixed.Program, l *Layout, ev *fheproto.Evaluator, r ring.Ring, inputs []*fheproto.Vector) *executor {
	x := &executor{ctx: ctx, p: p, l: l, ev: ev, r: r, c: composer{r: r}, forms: make([]*form, len(p.Tensors)), convRep: map[int][]int{}}
	for i := range l.In {
		x.firstVec = append(x.firstVec, len(x.inVecs))
		x.inVecs = append(x.inVecs, inputs[len(x.inVecs):len(x.inVecs)+l.Vectors(i)]...)
	}
	return x
}

func (x *executor) srcLen(i int) int { return x.lens[i] }

func (x *executor) newVec(v *fheproto.Vector, n int, pos []int32) *form {
	return x.newVecPeriod(v, n, pos, pow2(n))
}

// newVecPeriod is newVec for a vector whose period is not pow2(n): a product in a wide layout
// (wideLayout, layout.go) has period 2·pow2(n).
func (x *executor) newVecPeriod(v *fheproto.Vector, n int, pos []int32, period int) *form {
	x.vecs = append(x.vecs, v)
	x.lens = append(x.lens, n)
	x.pos = append(x.pos, pos)
	x.periods = append(x.periods, period)
	return &form{n: n, terms: []term{{src: len(x.vecs) - 1, m: identity(n)}}}
}

func (x *executor) weight(in *fixed.Instr) []uint64 {
	w := x.p.Weights[in.Weight].Data
	out := make([]uint64, len(w))
	for i, v := range w {
		out[i] = x.r.FromSigned(v)
	}
	return out
}

func (x *executor) exec(in *fixed.Instr, inputs, outs []*fheproto.Vector) error {
	p := x.p
	size := func(t int) int { return p.Tensors[t].Shape.Size() }
	var f *form
	for k, id := range in.In {
		if _, ok := x.convRep[id]; ok && (in.Op != fixed.OpConv || k != 0) {
			return fmt.Errorf("internal: an input in its convolution representation is read by %s", in.Op)
		}
	}
	switch in.Op {
	case fixed.OpInput:
		if gather := x.l.InGather[in.Index]; gather != nil {
			var srcs []int
			for g := range gather {
				x.newVec(x.inVecs[x.firstVec[in.Index]+g], len(gather[g]), nil)
				srcs = append(srcs, len(x.vecs)-1)
			}
			x.convRep[in.Out] = srcs
			f = &form{n: size(in.Out)}
			break
		}
		f = x.newVec(x.inVecs[x.firstVec[in.Index]], size(in.Out), x.l.InPos[in.Index])
	case fixed.OpOutput:
		v, err := x.materialize(x.forms[in.In[0]], nil)
		if err != nil {
			return err
		}
		if err := x.ev.Finish(v); err != nil {
			return err
		}
		outs[in.Index] = v
		return nil
	case fixed.OpReshape:
		f = x.forms[in.In[0]]
	case fixed.OpScaleUp:
		f = x.c.scale(x.forms[in.In[0]], x.r.Reduce(1<<uint(in.Shift)))
	case fixed.OpAddConst, fixed.OpMulConst:
		src := x.forms[in.In[0]]
		w := x.weight(in)
		b := vm.BroadcastIndex(p.Weights[in.Weight].Shape, p.Tensors[in.In[0]].Shape)
		if in.Op == fixed.OpAddConst {
			f = &form{n: src.n, terms: src.terms, c: make([]uint64, src.n)}
			for i := range f.c {
				if src.c != nil {
					f.c[i] = src.c[i]
				}
				f.c[i] = x.r.Add(f.c[i], w[b[i]])
			}
		} else {
			L := make(matrix, src.n)
			for i := range L {
				if v := w[b[i]]; v != 0 {
					L[i] = []entry{{col: int32(i), v: v}}
				}
			}
			f = x.c.apply(L, src, x.srcLen)
		}
	case fixed.OpAdd, fixed.OpSub:
		ip, err := vm.PlanIndex(p, in)
		if err != nil {
			return err
		}
		a := x.gathered(x.forms[in.In[0]], ip.Idx)
		b := x.gathered(x.forms[in.In[1]], ip.Idx2)
		s := uint64(1)
		if in.Op == fixed.OpSub {
			s = x.r.Neg(1)
		}
		f = x.c.sum(a, b, s, x.srcLen)
	case fixed.OpMul:
		ip, err := vm.PlanIndex(p, in)
		if err != nil {
			return err
		}
		fa := x.gathered(x.forms[in.In[0]], ip.Idx)
		var pos []int32
		var ph *phaseInfo
		if k, ok := x.plain(fa); ok && inPeriod(x.pos[k], x.lens[k]) {
			pos = x.pos[k]
		} else if mm := frequencyReader(p, in.Out); mm != nil { // bcirc.go
			pos = x.transformLayout(fa, p.Tensors[in.Out].Shape, mm)
		} else {
			pos, ph = x.chooseLayoutNext(fa, p.Tensors[in.Out].Shape, nextStride(p, in.Out))
		}
		a, err := x.materialize(fa, pos)
		if err != nil {
			return err
		}
		b := a
		if in.In[1] != in.In[0] || ip.Idx2 != nil || ip.Idx != nil {
			if b, err = x.materialize(x.gathered(x.forms[in.In[1]], ip.Idx2), pos); err != nil {
				return err
			}
		}
		v, err := x.ev.Mul(a, b)
		if err != nil {
			return err
		}
		f = x.newVecPeriod(v, size(in.Out), pos, layoutPeriod(size(in.Out), pos))
		if ph != nil {
			if x.phase == nil {
				x.phase = map[int]phaseInfo{}
			}
			x.phase[len(x.vecs)-1] = *ph
		}
	case fixed.OpTranspose:
		ip, err := vm.PlanIndex(p, in)
		if err != nil {
			return err
		}
		f = x.gathered(x.forms[in.In[0]], ip.Idx)
	case fixed.OpPad:
		ip, err := vm.PlanIndex(p, in)
		if err != nil {
			return err
		}
		f = x.gathered(x.forms[in.In[0]], ip.Idx)
		if in.PadValue != 0 {
			if f.c == nil {
				f.c = make([]uint64, f.n)
			}
			pv := x.r.FromSigned(in.PadValue)
			for i, j := range ip.Idx {
				if j < 0 {
					f.c[i] = x.r.Add(f.c[i], pv)
				}
			}
		}
	case fixed.OpSumPool:
		ip, err := vm.PlanIndex(p, in)
		if err != nil {
			return err
		}
		L := make(matrix, size(in.Out))
		for o := range L {
			for _, j := range ip.Idx[o*ip.D : o*ip.D+ip.D] {
				if j >= 0 {
					L[o] = append(L[o], entry{col: j, v: 1})
				}
			}
		}
		f = x.c.apply(L, x.forms[in.In[0]], x.srcLen)
	case fixed.OpMatMul:
		if p.FrequencyDomain(in) {
			var err error
			if f, err = x.frequencyDomain(in, x.forms[in.In[0]]); err != nil {
				return err
			}
			break
		}
		w := x.weight(in)
		ws := p.Weights[in.Weight].Shape
		M, K := ws[0], ws[1]
		N := p.Tensors[in.In[0]].Shape[1]
		L := make(matrix, M*N)
		for m := 0; m < M; m++ {
			for n := 0; n < N; n++ {
				for k := 0; k < K; k++ {
					if v := w[m*K+k]; v != 0 {
						L[m*N+n] = append(L[m*N+n], entry{col: int32(k*N + n), v: v})
					}
				}
			}
		}
		f = x.c.apply(L, x.forms[in.In[0]], x.srcLen)
	case fixed.OpConv:
		if srcs, ok := x.convRep[in.In[0]]; ok {
			var err error
			if f, err = x.convGathered(in, srcs); err != nil {
				return err
			}
			break
		}
		L, err := x.convMatrix(in)
		if err != nil {
			return err
		}
		f = x.c.apply(L, x.forms[in.In[0]], x.srcLen)
	case fixed.OpConcat:
		out := p.Tensors[in.Out].Shape
		outer := out[:in.Axis].Size()
		innerOut := out[in.Axis:].Size()
		off := 0
		for _, id := range in.In {
			inner := p.Tensors[id].Shape[in.Axis:].Size()
			L := make(matrix, out.Size())
			for o := 0; o < outer; o++ {
				for k := 0; k < inner; k++ {
					L[o*innerOut+off+k] = []entry{{col: int32(o*inner + k), v: 1}}
				}
			}
			g := x.c.apply(L, x.forms[id], x.srcLen)
			if f == nil {
				f = g
			} else {
				f = x.c.sum(f, g, 1, x.srcLen)
			}
			off += inner
		}
	default:
		return fmt.Errorf("%s is not a polynomial: the fhe mode cannot evaluate it", in.Op)
	}
	x.forms[in.Out] = f
	return nil
}

// gathered returns the form of out[i] = f[idx[i]] (-1: zero); idx nil is f itself.
func (x *executor) gathered(f *form, idx []int32) *form {
	if idx == nil {
		return f
	}
	L := make(matrix, len(idx))
	for i, j := range idx {
		if j >= 0 {
			L[i] = []entry{{col: j, v: 1}}
		}
	}
	return x.c.apply(L, f, x.srcLen)
}

// convMatrix is the convolution as a matrix, from the Machine's im2col table: output
// [n, g·mg + c, q] = Σ_t W[g·mg + c, t] · x[n, g·C/G·inPlane + idx[t·P + q]].
func (x *executor) convMatrix(in *fixed.Instr) (matrix, error) {
	p := x.p
	ip, err := vm.PlanIndex(p, in)
	if err != nil {
		return nil, err
	}
	w := x.weight(in)
	M := p.Weights[in.Weight].Shape[0]
	xs := p.Tensors[in.In[0]].Shape
	N, C := xs[0], xs[1]
	G := in.Group
	mg, kg, P := M/G, ip.D, ip.P
	L := make(matrix, p.Tensors[in.Out].Shape.Size())
	for n := 0; n < N; n++ {
		for g := 0; g < G; g++ {
			base := n*C*ip.InPlane + g*(C/G)*ip.InPlane
			for c := 0; c < mg; c++ {
				oc := g*mg + c
				for q := 0; q < P; q++ {
					var row []entry
					for t := 0; t < kg; t++ {
						j := ip.Idx[t*P+q]
						if j < 0 {
							continue
						}
						if v := w[oc*kg+t]; v != 0 {
							row = append(row, entry{col: int32(base + int(j)), v: v})
						}
					}
					L[(n*M+oc)*P+q] = row
				}
			}
		}
	}
	return L, nil
}

// convGathered is the form of a convolution of an input in its convolution representation
// (inputGather): output (k, q) reads, for tap t = g·K + u, slot gatherSlot(base, q, u) of vector
// g (base from gatherBase), so its matrix on vector g has weight W[k, t] there.
func (x *executor) convGathered(in *fixed.Instr, srcs []int) (*form, error) {
	p := x.p
	ip, err := vm.PlanIndex(p, in)
	if err != nil {
		return nil, err
	}
	w := x.weight(in)
	K := p.Weights[in.Weight].Shape[0]
	taps, P := ip.D, ip.P
	if in.Group != 1 || len(srcs) != (taps+K-1)/K || K*P != p.Tensors[in.Out].Shape.Size() {
		return nil, fmt.Errorf("internal: the convolution does not match its input's convolution representation")
	}
	base := gatherBase(p, in)
	V := x.periods[srcs[0]]
	f := &form{n: K * P}
	for g, src := range srcs {
		L := make(matrix, K*P)
		for k := 0; k < K; k++ {
			for q := 0; q < P; q++ {
				var row []entry
				for u := 0; u < K && g*K+u < taps; u++ {
					t := g*K + u
					if ip.Idx[t*P+q] < 0 {
						continue
					}
					if v := w[k*taps+t]; v != 0 {
						row = append(row, entry{col: int32(gatherSlot(base, q, u, K, V)), v: v})
					}
				}
				L[k*P+q] = row
			}
		}
		f.terms = append(f.terms, term{src: src, m: L})
	}
	return f, nil
}

// plain reports whether form f is one encrypted vector as it is, and which.
func (x *executor) plain(f *form) (int, bool) {
	if len(f.terms) != 1 || f.c != nil {
		return 0, false
	}
	t := f.terms[0]
	if s, ok := scaledIdentity(t.m, x.lens[t.src]); ok && s == 1 && x.lens[t.src] == f.n {
		return t.src, true
	}
	return 0, false
}

// materialize evaluates a form into one encrypted vector in layout pos (nil: row-major): as it
// is (one identity term in that layout), as a scaled sum (no level), or by the diagonal method
// with the plan of mapPlan (one level). Entry (r, j) of a term's matrix (output r reads source
// element j), with r at position r' in pos and j at j' in the source's layout, goes to the folded
// diagonal d = (j' - r') mod m at position (j' - d) mod Q, Q the plan's period and m = pow2(n):
// after the folds, position r' of the result holds Σ_j M[r][j]·x[j].
func (x *executor) materialize(f *form, pos []int32) (*fheproto.Vector, error) {
	if len(f.terms) == 0 {
		return nil, fmt.Errorf("a value that does not depend on the encrypted input (a constant) is not supported")
	}
	if k, ok := x.plain(f); ok && sameLayout(x.pos[k], pos) {
		return x.vecs[k], nil
	}
	at := func(r int) int {
		if pos == nil {
			return r
		}
		return int(pos[r])
	}
	m := layoutPeriod(f.n, pos)
	var cst []uint64
	if f.c != nil {
		cst = make([]uint64, m)
		for r, v := range f.c {
			cst[at(r)] = v
		}
	}
	trivial := true
	var scaled []fheproto.ScaledTerm
	for _, t := range f.terms {
		s, ok := scaledIdentity(t.m, x.lens[t.src])
		if !ok || x.lens[t.src] != f.n || !sameLayout(x.pos[t.src], pos) {
			trivial = false
			break
		}
		scaled = append(scaled, fheproto.ScaledTerm{X: x.vecs[t.src], C: s})
	}
	if trivial {
		return x.ev.Scale(scaled, cst)
	}
	var periods []int
	for _, t := range f.terms {
		periods = append(periods, x.periods[t.src])
	}
	plan, _ := mapPlan(m, periods)
	Q := plan.Period
	terms := make([]fheproto.Term, 0, len(f.terms))
	for _, t := range f.terms {
		src := x.pos[t.src]
		diags := map[int][]uint64{}
		var order []int
		for r, row := range t.m {
			rp := at(r)
			for _, e := range row {
				j := int(e.col)
				if src != nil {
					j = int(src[e.col])
				}
				d := ((j-rp)%m + m) % m
				v, ok := diags[d]
				if !ok {
					v = make([]uint64, Q)
					diags[d] = v
					order = append(order, d)
				}
				i := ((j-d)%Q + Q) % Q
				v[i] = x.r.Add(v[i], e.v)
			}
		}
		slices.Sort(order)
		tm := fheproto.Term{X: x.vecs[t.src]}
		for _, d := range order {
			tm.Diags = append(tm.Diags, fheproto.Diag{D: d, V: diags[d]})
		}
		terms = append(terms, tm)
	}
	return x.ev.Linear(x.ctx, terms, cst, plan)
}
