// Package fhe is the fhe mode's executor (athosc --backend fhe): it evaluates a fixed-point
// program over Z_n (n the CRT product of the plaintext primes) on BGV ciphertexts with the
// evaluator of protocols/fhe. It does not implement vm.Backend: a non-interactive evaluation
// changes the data's representation between layers (LoLa), so it walks the program itself. The
// linear instructions are composed, with the Machine's own gather tables (vm.PlanIndex), into one
// affine map of the ciphertexts they read, applied by the (folded) diagonal method only where a
// square (a product of two runtime tensors) or an output needs the value, with each vector in a
// layout that suits the map (layout.go); up to Layout.Lanes inferences share every ciphertext.
// The results are bitwise the cleartext run's (vm/cleartext over Z_n).
package fhe

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	fheproto "github.com/cryptflow-go/cryptflow/protocols/fhe"
	"github.com/cryptflow-go/cryptflow/vm"
)

// Layout is the public shape of an fhe evaluation that both parties derive from the program (the
// client from its copy without weights): the BGV parameters, the packing (every inference is one
// lane of Period elements; Stride lanes per row, so one ciphertext carries Lanes = 2·Stride
// inferences), the rotations the evaluation keys must cover, and the sizes of the inputs and
// outputs.
type Layout struct {
	Params    *fheproto.Params
	Period    int       // lane length: a power of two >= every tensor's size, <= N/2
	Stride    int       // lanes per row: N/2 / Period
	Lanes     int       // inferences per ciphertext: 2·Stride (both rows)
	Rotations []int     // column rotations (multiples of Stride): exactly those the plan may use
	In, Out   []int     // element counts of the inputs and outputs
	InPos     [][]int32 // each input's layout (inputLayout; nil: row-major)
	// InGather is, per input, nil or its convolution representation (inputGather, layout.go):
	// several vectors, slot s of vector g holding element InGather[i][g][s] (-1: zero); the input
	// is then uploaded as len(InGather[i]) ciphertexts of period len(InGather[i][g]).
	InGather [][][]int32
}

// Vectors is the number of encrypted vectors input i is uploaded as.
func (l *Layout) Vectors(i int) int {
	if g := l.InGather[i]; g != nil {
		return len(g)
	}
	return 1
}

// vectorCount is the number of encrypted vectors all inputs are uploaded as.
func (l *Layout) vectorCount() int {
	n := 0
	for i := range l.In {
		n += l.Vectors(i)
	}
	return n
}

// inputPeriod is the period input i's vectors are encrypted with.
func (l *Layout) inputPeriod(i int) int {
	if g := l.InGather[i]; g != nil {
		return len(g[0])
	}
	return pow2(l.In[i])
}

// NewLayout derives the layout of program p, which must carry fhe parameters.
func NewLayout(p *fixed.Program) (*Layout, error) {
	f := p.FHE
	if f == nil || p.Modulus == 0 {
		return nil, fmt.Errorf("fhe: the program was not compiled for the fhe mode (athosc --backend fhe)")
	}
	if _, err := p.FHEDepth(); err != nil {
		return nil, fmt.Errorf("fhe: %w", err)
	}
	prm, err := fheproto.NewParams(f.LogN, f.T, f.LogQ, f.LogP, f.OutLevel)
	if err != nil {
		return nil, err
	}
	if prm.Modulus() != p.Modulus {
		return nil, fmt.Errorf("fhe: the plaintext primes multiply to %d, the program is over Z_%d", prm.Modulus(), p.Modulus)
	}
	l := &Layout{Params: prm}
	biggest, name := 1, ""
	for _, t := range p.Tensors {
		if n := t.Shape.Size(); n > biggest {
			biggest, name = n, t.Name
		}
	}
	if biggest > prm.Slots() {
		return nil, fmt.Errorf("fhe: tensor %s has %d elements, more than the %d slots of one ciphertext row (N/2); packing a tensor into several ciphertexts is not implemented", name, biggest, prm.Slots())
	}
	l.Period = pow2(biggest)
	l.Stride = prm.Slots() / l.Period
	l.Lanes = 2 * l.Stride
	rots, err := planRotations(p)
	if err != nil {
		return nil, err
	}
	for _, r := range rots {
		l.Rotations = append(l.Rotations, r*l.Stride)
	}
	for _, io := range p.Inputs {
		l.In = append(l.In, p.Tensors[io.Tensor].Shape.Size())
		gather := inputGather(p, io.Tensor)
		l.InGather = append(l.InGather, gather)
		if gather != nil {
			l.InPos = append(l.InPos, nil)
		} else {
			l.InPos = append(l.InPos, inputLayout(p, io.Tensor))
		}
	}
	for _, io := range p.Outputs {
		l.Out = append(l.Out, p.Tensors[io.Tensor].Shape.Size())
	}
	return l, nil
}

// pow2 is the smallest power of two >= n (1 for n <= 1).
func pow2(n int) int {
	if n <= 1 {
		return 1
	}
	return 1 << uint(bits.Len(uint(n-1)))
}

// mapPlan is the plan of a linear map to n elements from vectors of the given lengths (every
// vector of length k has period pow2(k)): diagonals cyclic over the largest period, folded to
// m = pow2(n) diagonals (a map to fewer elements than it reads needs at most m diagonals, then
// log2(period/m) rotate-and-adds), giant steps of about sqrt(m).
func mapPlan(n int, srcLens []int) (plan fheproto.LinearPlan, m int) {
	m = pow2(n)
	q := m
	for _, k := range srcLens {
		q = max(q, pow2(k))
	}
	plan.Period = q
	plan.Giant = 1 << uint((bits.Len(uint(m))-1+1)/2)
	for f := m; f < q; f *= 2 {
		plan.Folds = append(plan.Folds, f)
	}
	return plan, m
}

// planKeys adds to set the element rotations a map's plan may use: baby steps by 1, giant steps,
// folds.
func planKeys(set map[int]bool, plan fheproto.LinearPlan, m int) {
	if plan.Giant > 1 {
		set[1] = true
	}
	if plan.Giant < m {
		set[plan.Giant] = true
	}
	for _, f := range plan.Folds {
		set[f] = true
	}
}

// shape is a tensor's value as the executor will hold it, without the numbers: the lengths of
// the encrypted vectors it is a linear function of, and whether that function may be other than
// a scaled identity of vectors of its own length.
type shape struct {
	srcs    []int
	general bool
	laid    bool // some source may be in a layout other than row-major (layout.go)
}

// planRotations walks the program as Evaluate does, on shapes only (the client has no weights),
// and returns the element rotations of every linear map it will apply, ascending.
func planRotations(p *fixed.Program) ([]int, error) {
	size := func(t int) int { return p.Tensors[t].Shape.Size() }
	forms := make([]*shape, len(p.Tensors))
	set := map[int]bool{}
	materialize := func(f *shape, n int) {
		general := f.general || f.laid // a change of layout is a general map
		for _, k := range f.srcs {
			general = general || k != n
		}
		if general {
			plan, m := mapPlan(n, f.srcs)
			planKeys(set, plan, m)
		}
	}
	union := func(fs ...*shape) *shape {
		out := &shape{}
		for _, f := range fs {
			if f == nil {
				continue
			}
			out.general = out.general || f.general
			out.laid = out.laid || f.laid
			for _, k := range f.srcs {
				if !slices.Contains(out.srcs, k) {
					out.srcs = append(out.srcs, k)
				}
			}
		}
		return out
	}
	for _, in := range p.Instrs {
		var f *shape
		switch in.Op {
		case fixed.OpInput:
			if g := inputGather(p, in.Out); g != nil {
				f = &shape{laid: true}
				for range g {
					f.srcs = append(f.srcs, len(g[0]))
				}
				break
			}
			f = &shape{srcs: []int{size(in.Out)}, laid: inputLayout(p, in.Out) != nil}
		case fixed.OpOutput:
			if forms[in.In[0]] == nil {
				return nil, fmt.Errorf("fhe: output %s reads an undefined tensor", in.Source)
			}
			materialize(forms[in.In[0]], size(in.In[0]))
			continue
		case fixed.OpReshape, fixed.OpScaleUp, fixed.OpAddConst:
			f = forms[in.In[0]]
		case fixed.OpMul:
			ip, err := vm.PlanIndex(p, in)
			if err != nil {
				return nil, fmt.Errorf("fhe: %s (%s): %w", in.Op, in.Source, err)
			}
			// The product is in its first operand's layout or in one chooseLayout picks; both
			// operands are written in it.
			both := union(forms[in.In[0]], forms[in.In[1]])
			sh := p.Tensors[in.Out].Shape
			laid := both.laid || len(sh) == 4 && sh[0] == 1 && sh[1] >= 2
			for k, id := range in.In[:2] {
				g := union(forms[id])
				if k == 0 && ip.Idx != nil || k == 1 && ip.Idx2 != nil {
					g.general = true
				}
				g.laid = laid
				materialize(g, size(in.Out))
			}
			f = &shape{srcs: []int{size(in.Out)}, laid: laid}
		case fixed.OpMatMul:
			if !p.FrequencyDomain(in) {
				f = union(forms[in.In[0]])
				f.general = true
				break
			}
			// bcirc.go: the transform (nbIn·k elements) and the eigenvalue map (nbOut·k) are
			// applied, the inverse transform stays a general map of the latter.
			k := in.Block
			ws := p.Weights[in.Weight].Shape
			nIn, nOut := (ws[1]+k-1)/k*k, (ws[0]+k-1)/k*k
			g := union(forms[in.In[0]])
			g.general = true
			materialize(g, nIn)
			materialize(&shape{srcs: []int{nIn}, general: true}, nOut)
			f = &shape{srcs: []int{nOut}, general: true}
		case fixed.OpAdd, fixed.OpSub:
			f = union(forms[in.In[0]], forms[in.In[1]])
			if !p.Tensors[in.In[0]].Shape.Equal(p.Tensors[in.In[1]].Shape) {
				f.general = true
			}
		default:
			var ins []*shape
			for _, id := range in.In {
				ins = append(ins, forms[id])
			}
			f = union(ins...)
			f.general = true
		}
		if f == nil {
			return nil, fmt.Errorf("fhe: %s (%s) reads an undefined tensor", in.Op, in.Source)
		}
		forms[in.Out] = f
	}
	var out []int
	for r := range set {
		out = append(out, r)
	}
	slices.Sort(out)
	return out, nil
}

// placeVectors returns input i's values (one inference) as the vectors it is uploaded as: its
// convolution representation, or one vector in its layout (place).
func (l *Layout) placeVectors(i int, x []uint64) [][]uint64 {
	gather := l.InGather[i]
	if gather == nil {
		return [][]uint64{l.place(i, x)}
	}
	out := make([][]uint64, len(gather))
	for g, idx := range gather {
		out[g] = make([]uint64, len(idx))
		for s, j := range idx {
			if j >= 0 {
				out[g][s] = x[j]
			}
		}
	}
	return out
}

// place returns input i's values (one inference) in the input's layout: one period P, zeros at
// the positions no element takes (a position beyond P names the slot mod P: layout.go).
func (l *Layout) place(i int, x []uint64) []uint64 {
	pos := l.InPos[i]
	if pos == nil {
		return x
	}
	P := pow2(len(x))
	out := make([]uint64, P)
	for j, v := range x {
		out[int(pos[j])%P] = v
	}
	return out
}
