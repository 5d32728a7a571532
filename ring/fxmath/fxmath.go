// Package fxmath defines the fixed-point math functions of the fixed-point programs — exp of
// non-positive inputs, sigmoid, tanh, reciprocal, reciprocal square root and natural log — as integer
// algorithms over Z_{2^l} (docs/fixed-point.md, "Math functions").
//
// Each function is a fixed sequence of steps on whole vectors, every step one of the operations of
// Ops: local additions of public constants and public scalings, ReLU, DReLU, MUX, B2A, exact
// truncation (an arithmetic shift), the exact ring product of two vectors, and table lookup on the
// low bits of a value. The cleartext VM runs the steps with Clear; a two-party backend runs the
// same steps with its protocols for each operation. Because every operation is exact, the two
// agree bit for bit on every input — the definition of a function is its algorithm, including
// what it does outside its domain.
//
// The tables are computed in float64 (math.Exp, division, math.Sqrt) and rounded to the nearest
// integer; TestTablesFarFromTies checks that no entry lies near a rounding tie, so a last-bit
// difference between platforms' math.Exp cannot change them.
package fxmath

import (
	"context"
	"fmt"
	"math"

	"github.com/cryptflow-go/cryptflow/ring"
)

// Func is a math function.
type Func uint8

// The functions. Input and output are at the same scale s.
const (
	// Exp is exp(min(x, 0)): positive inputs give 1.
	Exp Func = 1
	// Sigmoid is 1/(1+exp(−x)), computed as an exactly symmetric function: σ(x) + σ(−x) = 1.
	Sigmoid Func = 2
	// Tanh is tanh(x), computed as an exactly odd function: tanh(−x) = −tanh(x).
	Tanh Func = 3
	// Recip is 1/x for x ≥ 1 (x < 1 is taken as 1).
	Recip Func = 4
	// Rsqrt is 1/sqrt(x) for x ≥ 1 (x < 1 is taken as 1).
	Rsqrt Func = 5
	// Log is ln(x) for x ≥ 1 (x < 1 is taken as 1; the top octave x ≥ 2^(l−2−s) as its lower end).
	Log Func = 6
)

var funcNames = map[Func]string{Exp: "exp", Sigmoid: "sigmoid", Tanh: "tanh", Recip: "recip", Rsqrt: "rsqrt", Log: "log"}

func (f Func) String() string {
	if s, ok := funcNames[f]; ok {
		return s
	}
	return fmt.Sprintf("func(%d)", uint8(f))
}

// Valid reports whether f is a known function.
func (f Func) Valid() bool { _, ok := funcNames[f]; return ok }

// Funcs lists the functions.
func Funcs() []Func { return []Func{Exp, Sigmoid, Tanh, Recip, Rsqrt, Log} }

// Ops are the operations the algorithms are made of, on this party's shares of whole vectors in
// Z_{2^l} (for Clear: the values themselves). Boolean vectors are packed bits, bit i of word
// i/64. dst never aliases an operand.
type Ops interface {
	Ring() ring.Ring
	// Party is 0 or 1; party 0 adds the public constants.
	Party() int
	// ReLU sets dst[i] = x[i] if signed(x[i]) ≥ 0, else 0.
	ReLU(ctx context.Context, dst, x []uint64) error
	// DReLU sets the bits dst to 1{signed(x[i]) ≥ 0}.
	DReLU(ctx context.Context, dst, x []uint64) error
	// MUX sets dst[i] = c[i]·a[i] for the bits c.
	MUX(ctx context.Context, dst, a, c []uint64) error
	// B2A sets dst[i] to the bit c[i] as a ring element.
	B2A(ctx context.Context, dst, c []uint64) error
	// Trunc sets dst[i] = floor(signed(x[i])/2^k); nonNeg promises signed(x[i]) ≥ 0.
	Trunc(ctx context.Context, dst, x []uint64, k int, nonNeg bool) error
	// Mul sets dst[i] = x[i]·y[i] in the ring.
	Mul(ctx context.Context, dst, x, y []uint64) error
	// LUT sets dst[i] = tables[g][idx[i] mod 2^bits] where g = i/(len(idx)/len(tables)): the
	// vector is len(tables) groups of equal length, one per table of 2^bits ring elements.
	LUT(ctx context.Context, dst, idx []uint64, bits int, tables [][]uint64) error
}

// MinBits returns the smallest ring bitwidth the math functions accept at scale s: l ≥ 2s + 5, so
// that the internal scale T is at least s + 1 and products of two values below 4 at scale T fit.
func MinBits(s int) int { return 2*s + 5 }

// Params are the constants of the algorithms for ring Z_{2^L} and scale S.
type Params struct {
	L, S int
	// T is the internal scale: min(S + 3, ⌊(L − 3)/2⌋).
	T int
	// Exp is the exp core for input scale S (exp, sigmoid); Exp2 for S − 1 (tanh: exp(−2|x|)).
	Exp, Exp2 ExpParams
	// RecipBits is the number of mantissa bits after the leading one that index the reciprocal
	// table (2^(RecipBits+1) entries); RecipIters the Newton iterations after it.
	RecipBits, RecipIters int
	// RsqrtBits and RsqrtIters are the same for 1/sqrt (2^(RsqrtBits+2) entries).
	RsqrtBits, RsqrtIters int
	// LogBits is the number of mantissa bits after the leading one that index the log tables
	// (2^(LogBits+1) entries each).
	LogBits int
	// E is the largest binary exponent of an input x ≥ 1 below 2^(L−1−S): E = L − 2 − S.
	E int

	recipTab, rsqrtTab   []uint64
	recipNorm, rsqrtNorm norm
	logTabs              [][]uint64 // ln c, 1/c and c at scale T, c the middle of each interval
	logNorm              norm
}

// ExpParams is the exp core e = exp(−z/2^In) at scale T for 0 ≤ z ≤ Clamp: z's Digits digits of
// DigitBits bits each (the lowest first) index one table each, and the looked-up factors are
// multiplied in a pairwise tree, each product truncated by T.
type ExpParams struct {
	In        int    // the input scale
	Clamp     uint64 // 2^k − 1: exp(−Clamp/2^In)·2^T < 1/2
	Digits    int
	DigitBits int
	Tables    [][]uint64
}

// NewParams returns the parameters for Z_{2^l} at scale s, or an error if the ring is too small
// (l < MinBits(s)) or s < 1.
func NewParams(l, s int) (*Params, error) {
	if s < 1 || l > 64 || l < MinBits(s) {
		return nil, fmt.Errorf("fxmath: the math functions need scale s ≥ 1 and 2s+5 ≤ l ≤ 64 (have l = %d, s = %d)", l, s)
	}
	p := &Params{L: l, S: s, T: min(s+3, (l-3)/2), E: l - 2 - s}
	p.Exp = newExpParams(s, p.T)
	p.Exp2 = newExpParams(s-1, p.T)
	p.RecipBits, p.RecipIters = min(7, p.T), 1
	p.RsqrtBits, p.RsqrtIters = min(6, p.T), 1
	p.recipTab = recipTable(p.T, p.RecipBits)
	p.rsqrtTab = rsqrtTable(p.T, p.RsqrtBits)
	p.recipNorm = p.newNorm(false)
	p.rsqrtNorm = p.newNorm(true)
	p.LogBits = min(7, p.T-1)
	p.logTabs = logTables(p.T, p.LogBits)
	p.logNorm = p.newLogNorm()
	return p, nil
}

func newExpParams(in, t int) ExpParams {
	// The smallest k with exp(−(2^k − 1)/2^in)·2^t < 1/2.
	k := 1
	for math.Exp(-float64(uint64(1)<<k-1)/math.Ldexp(1, in))*math.Ldexp(1, t) >= 0.5 {
		k++
	}
	q := (k + 7) / 8
	d := (k + q - 1) / q
	e := ExpParams{In: in, Clamp: uint64(1)<<k - 1, Digits: q, DigitBits: d}
	for j := 0; j < q; j++ {
		tab := make([]uint64, 1<<d)
		for v := range tab {
			z := float64(uint64(v) << (j * d))
			tab[v] = uint64(math.Round(math.Exp(-z/math.Ldexp(1, in)) * math.Ldexp(1, t)))
		}
		e.Tables = append(e.Tables, tab)
	}
	return e
}

// recipTable: entry i ≥ 2^d is 2^t/m at the middle m = (i + 1/2)/2^d of the mantissas [1, 2)
// whose top bits are i; entry 0 (mantissa 2, reached only by 1 + exp(0)) is 2^(t−1).
func recipTable(t, d int) []uint64 {
	tab := make([]uint64, 2<<d)
	for i := range tab {
		if i < 1<<d {
			tab[i] = uint64(1) << (t - 1)
			continue
		}
		tab[i] = uint64(math.Round(math.Ldexp(1, t+d+1) / float64(2*i+1)))
	}
	return tab
}

// rsqrtTable: entry i ≥ 2^d is 2^t/sqrt(m) at the middle m = (i + 1/2)/2^d of the mantissas [1, 4)
// whose top bits are i; entries below 2^d are unreachable and hold 2^t.
func rsqrtTable(t, d int) []uint64 {
	tab := make([]uint64, 4<<d)
	for i := range tab {
		if i < 1<<d {
			tab[i] = uint64(1) << t
			continue
		}
		tab[i] = uint64(math.Round(math.Ldexp(1, t) / math.Sqrt((float64(i)+0.5)/math.Ldexp(1, d))))
	}
	return tab
}

// logTables: for the mantissas [1, 2) whose top bits after the leading one are i − 2^d, with
// c = (i + 1/2)/2^d the middle of their interval, entry i of the three tables is ln(c)·2^T,
// 2^T/c and c·2^T (exact: T > d). Entries below 2^d are unreachable and hold the values at c = 1.
func logTables(t, d int) [][]uint64 {
	n := 2 << d
	ln, inv, mid := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	for i := range n {
		c := 1.0
		if i >= 1<<d {
			c = (float64(i) + 0.5) / math.Ldexp(1, d)
		}
		ln[i] = uint64(math.Round(math.Log(c) * math.Ldexp(1, t)))
		inv[i] = uint64(math.Round(math.Ldexp(1, t) / c))
		mid[i] = uint64(math.Round(c * math.Ldexp(1, t)))
	}
	return [][]uint64{ln, inv, mid}
}

// newLogNorm is the normalisation for Log: with p = ⌊log2 x⌋, the mantissa m = x·2^(E−p) lies
// in [1, 2) at scale S + E = L − 2 (N2 = 2^(E−p)), and N1 = round(p·ln 2·2^T) is the exponent's
// part of the result. The top exponent p = E is taken as x = 2^E (mantissa 1): x·2^0 would
// reach 2 at scale L − 2 for the one input −2^(L−1) that clamping maps to 2^(L−1).
func (p *Params) newLogNorm() norm {
	e := p.E
	nm := norm{k: e, n1: make([]uint64, e+1), n2: make([]uint64, e+1), g: make([]uint64, e+1)}
	for q := 0; q <= e; q++ {
		nm.n1[q] = uint64(math.Round(float64(q) * math.Ln2 * math.Ldexp(1, p.T)))
		if q < e {
			nm.n2[q] = 1 << (e - q)
		} else {
			nm.g[q] = 1 << (p.S + e)
		}
	}
	for j := 1; j <= e; j++ {
		nm.steps = append(nm.steps, j)
	}
	return nm
}

// norm is the normalisation of x ≥ 1 (at scale S) for Recip and Rsqrt: with p = ⌊log2 x⌋ ∈
// [0, E], the mantissa m = x·N2(p) + G(p) at scale S + K lies in [1, 2) (Recip) or [1, 4)
// (Rsqrt), and the result is r(m)·N1(p) at scale S + T, r at scale T. Every function of p is
// F(0) + Σ_j 1{x ≥ 2^(S+j)}·(F(j) − F(j−1)); steps lists the j where some function changes.
type norm struct {
	k         int
	n1, n2, g []uint64 // indexed by p
	steps     []int
}

func (p *Params) newNorm(sqrt bool) norm {
	s, e := p.S, p.E
	nm := norm{n1: make([]uint64, e+1), n2: make([]uint64, e+1), g: make([]uint64, e+1)}
	if !sqrt {
		// 1/x = 2^−p/m; m = x·2^(S−p) at scale 2S. Beyond p = S the result is below 2^(−S−1):
		// N1 = 0, and the mantissa is set to 1 so that the steps after stay in range.
		nm.k = s
		for q := 0; q <= e; q++ {
			if q <= s && q < e {
				nm.n1[q], nm.n2[q] = 1<<(s-q), 1<<(s-q)
			} else {
				nm.g[q] = 1 << (2 * s)
			}
		}
	} else {
		// 1/sqrt(x) = 2^−h/sqrt(m) with h = ⌊p/2⌋, m = x/2^(2h) ∈ [1, 4) at scale S + K,
		// K = L − 3 − S: m = x·2^(K−2h). The top exponent p = E is taken as x = 2^E (mantissa 1),
		// and h > S gives 0.
		nm.k = p.L - 3 - s
		for q := 0; q <= e; q++ {
			h := q / 2
			switch {
			case h > s:
				nm.g[q] = 1 << (s + nm.k)
			case q == e:
				nm.n1[q] = 1 << (s - h)
				nm.g[q] = 1 << (s + nm.k)
			default:
				nm.n1[q], nm.n2[q] = 1<<(s-h), 1<<(nm.k-2*h)
			}
		}
	}
	for j := 1; j <= e; j++ {
		if nm.n1[j] != nm.n1[j-1] || nm.n2[j] != nm.n2[j-1] || nm.g[j] != nm.g[j-1] {
			nm.steps = append(nm.steps, j)
		}
	}
	return nm
}

// Eval sets dst to f(x) on whole vectors, running the algorithm's steps on o.
func (p *Params) Eval(ctx context.Context, o Ops, f Func, dst, x []uint64) error {
	if len(dst) != len(x) {
		return fmt.Errorf("fxmath: %s: %d results for %d inputs", f, len(dst), len(x))
	}
	if r := o.Ring(); r.Bits != p.L {
		return fmt.Errorf("fxmath: %s: parameters for Z_2^%d used in %v", f, p.L, r)
	}
	if len(x) == 0 {
		return nil
	}
	e := &eval{p: p, o: o, ctx: ctx, r: o.Ring()}
	var y []uint64
	switch f {
	case Exp:
		y = e.exp(x)
	case Sigmoid:
		y = e.sigmoidTanh(x, false)
	case Tanh:
		y = e.sigmoidTanh(x, true)
	case Recip:
		y = e.recip(x, false)
	case Rsqrt:
		y = e.recip(x, true)
	case Log:
		y = e.log(x)
	default:
		return fmt.Errorf("fxmath: unknown function %d", uint8(f))
	}
	if e.err != nil {
		return fmt.Errorf("fxmath: %s: %w", f, e.err)
	}
	copy(dst, y)
	return nil
}

// eval runs one algorithm, keeping the first error (later steps are skipped).
type eval struct {
	p   *Params
	o   Ops
	ctx context.Context
	r   ring.Ring
	err error
}

func (e *eval) do(f func() error) {
	if e.err == nil {
		e.err = f()
	}
}

// Local steps.

// addc returns x + c (party 0 adds).
func (e *eval) addc(x []uint64, c uint64) []uint64 {
	out := make([]uint64, len(x))
	copy(out, x)
	if e.o.Party() == 0 {
		for i := range out {
			out[i] = e.r.Add(out[i], c)
		}
	}
	return out
}

// lin returns a·x + b·y + c (c added by party 0); y may be nil.
func (e *eval) lin(a uint64, x []uint64, b uint64, y []uint64, c uint64) []uint64 {
	out := make([]uint64, len(x))
	for i := range out {
		v := a * x[i]
		if y != nil {
			v += b * y[i]
		}
		out[i] = e.r.Reduce(v)
	}
	if c != 0 {
		return e.addc(out, c)
	}
	return out
}

// Protocol steps.

func (e *eval) relu(x []uint64) []uint64 {
	out := make([]uint64, len(x))
	e.do(func() error { return e.o.ReLU(e.ctx, out, x) })
	return out
}

func (e *eval) drelu(x []uint64) []uint64 {
	out := make([]uint64, (len(x)+63)/64)
	e.do(func() error { return e.o.DReLU(e.ctx, out, x) })
	return out
}

func (e *eval) mux(a, c []uint64) []uint64 {
	out := make([]uint64, len(a))
	e.do(func() error { return e.o.MUX(e.ctx, out, a, c) })
	return out
}

func (e *eval) b2a(c []uint64, n int) []uint64 {
	out := make([]uint64, n)
	e.do(func() error { return e.o.B2A(e.ctx, out, c) })
	return out
}

func (e *eval) trunc(x []uint64, k int) []uint64 {
	out := make([]uint64, len(x))
	e.do(func() error { return e.o.Trunc(e.ctx, out, x, k, true) })
	return out
}

// truncSigned is trunc for operands of either sign.
func (e *eval) truncSigned(x []uint64, k int) []uint64 {
	out := make([]uint64, len(x))
	e.do(func() error { return e.o.Trunc(e.ctx, out, x, k, false) })
	return out
}

// rescale moves a non-negative x from scale from to scale to (truncation or a local shift).
func (e *eval) rescale(x []uint64, from, to int) []uint64 {
	if from >= to {
		return e.trunc(x, from-to)
	}
	return e.lin(uint64(1)<<(to-from), x, 0, nil, 0)
}

func (e *eval) mul(x, y []uint64) []uint64 {
	out := make([]uint64, len(x))
	e.do(func() error { return e.o.Mul(e.ctx, out, x, y) })
	return out
}

func (e *eval) lut(idx []uint64, bits int, tables [][]uint64) []uint64 {
	out := make([]uint64, len(idx))
	e.do(func() error { return e.o.LUT(e.ctx, out, idx, bits, tables) })
	return out
}

// clampTop returns min(a, c) for a ≥ 0 (and c for a = −2^(l−1)): a − ReLU(a − c).
func (e *eval) clampTop(a []uint64, c uint64) []uint64 {
	return e.lin(1, a, e.r.Mask(), e.relu(e.addc(a, e.r.Neg(c))), 0)
}

// expCore returns exp(−z/2^In) at scale T for 0 ≤ z ≤ Clamp.
func (e *eval) expCore(z []uint64, ep *ExpParams) []uint64 {
	n, q, d := len(z), ep.Digits, ep.DigitBits
	idx := make([]uint64, q*n)
	copy(idx, z)
	for j := 1; j < q; j++ {
		copy(idx[j*n:], e.trunc(z, j*d))
	}
	vals := e.lut(idx, d, ep.Tables)
	parts := make([][]uint64, q)
	for j := range parts {
		parts[j] = vals[j*n : (j+1)*n]
	}
	for len(parts) > 1 {
		h := len(parts) / 2
		a, b := make([]uint64, 0, h*n), make([]uint64, 0, h*n)
		for i := 0; i < h; i++ {
			a, b = append(a, parts[2*i]...), append(b, parts[2*i+1]...)
		}
		prod := e.trunc(e.mul(a, b), e.p.T)
		next := make([][]uint64, 0, h+1)
		for i := 0; i < h; i++ {
			next = append(next, prod[i*n:(i+1)*n])
		}
		if len(parts)%2 == 1 {
			next = append(next, parts[len(parts)-1])
		}
		parts = next
	}
	return parts[0]
}

// exp: a = ReLU(−x), z = min(a, Clamp), y = exp(−z) at T truncated to S.
func (e *eval) exp(x []uint64) []uint64 {
	a := e.relu(e.lin(e.r.Mask(), x, 0, nil, 0))
	z := e.clampTop(a, e.p.Exp.Clamp)
	return e.rescale(e.expCore(z, &e.p.Exp), e.p.T, e.p.S)
}

// recipCore returns 1/m at scale T for m ∈ [1, 2] at scale T: a table on the top RecipBits bits
// after the leading one, then Newton iterations r ← r·(2 − m·r).
func (e *eval) recipCore(m []uint64) []uint64 {
	t, d := e.p.T, e.p.RecipBits
	r := e.lut(e.trunc(m, t-d), d+1, [][]uint64{e.p.recipTab})
	for it := 0; it < e.p.RecipIters; it++ {
		pr := e.trunc(e.mul(m, r), t)
		c := e.lin(e.r.Mask(), pr, 0, nil, uint64(2)<<t)
		r = e.trunc(e.mul(r, c), t)
	}
	return r
}

// rsqrtCore returns 1/sqrt(m) at scale T for m ∈ [1, 4) at scale T: a table on the top RsqrtBits
// bits after the leading one (of a mantissa in [1, 2) or [2, 4)), then Newton iterations
// r ← r·(3 − m·r²)/2.
func (e *eval) rsqrtCore(m []uint64) []uint64 {
	t, d := e.p.T, e.p.RsqrtBits
	r := e.lut(e.trunc(m, t-d), d+2, [][]uint64{e.p.rsqrtTab})
	for it := 0; it < e.p.RsqrtIters; it++ {
		a := e.trunc(e.mul(r, r), t)
		b := e.trunc(e.mul(m, a), t)
		c := e.lin(e.r.Mask(), b, 0, nil, uint64(3)<<t)
		r = e.trunc(e.mul(r, c), t+1)
	}
	return r
}

// sigmoidTanh: b = DReLU(x), a = |x| = MUX(b, 2x) − x, z = min(a, Clamp), ε = exp(−z) (tanh:
// exp(−2z)), r = 1/(1 + ε) at T. Sigmoid: V = ⌊(1 − r)·2^S⌋ = σ(−|x|), σ = V + b·(1 − 2V).
// Tanh: U = ⌊(2r − 1)·2^S⌋ = tanh(|x|), tanh = b·2U − U.
func (e *eval) sigmoidTanh(x []uint64, tanh bool) []uint64 {
	p := e.p
	ep := &p.Exp
	if tanh {
		ep = &p.Exp2
	}
	b := e.drelu(x)
	a := e.lin(e.r.Mask(), x, 0, nil, 0)
	a = e.lin(1, e.mux(e.lin(2, x, 0, nil, 0), b), 1, a, 0)
	z := e.clampTop(a, ep.Clamp)
	eps := e.expCore(z, ep)
	r := e.recipCore(e.addc(eps, uint64(1)<<p.T))
	if !tanh {
		v := e.trunc(e.lin(e.r.Mask(), r, 0, nil, uint64(1)<<p.T), p.T-p.S)
		w := e.lin(e.r.Neg(2), v, 0, nil, uint64(1)<<p.S)
		return e.lin(1, v, 1, e.mux(w, b), 0)
	}
	u := e.addc(e.trunc(r, p.T-p.S-1), e.r.Neg(uint64(1)<<p.S))
	return e.lin(e.r.Mask(), u, 1, e.mux(e.lin(2, u, 0, nil, 0), b), 0)
}

// normalize returns, for x clamped to xc = 2^S + ReLU(x − 2^S) (x below 1 taken as 1), the
// mantissa m = xc·N2 + G moved to scale T and N1, from the threshold bits 1{xc ≥ 2^(S+j)} for
// the steps of nm (one DReLU and one B2A batch; N1, N2 and G are local combinations of them).
func (e *eval) normalize(x []uint64, nm *norm) (m, n1 []uint64) {
	p, n := e.p, len(x)
	one := uint64(1) << p.S
	xc := e.addc(e.relu(e.addc(x, e.r.Neg(one))), one)
	diffs := make([]uint64, 0, len(nm.steps)*n)
	for _, j := range nm.steps {
		diffs = append(diffs, e.addc(xc, e.r.Neg(uint64(1)<<(p.S+j)))...)
	}
	c := e.b2a(e.drelu(diffs), len(diffs))
	comb := func(f []uint64) []uint64 {
		out := make([]uint64, n)
		for k, j := range nm.steps {
			dv := f[j] - f[j-1]
			if dv == 0 {
				continue
			}
			for i := range out {
				out[i] += dv * c[k*n+i]
			}
		}
		for i := range out {
			out[i] = e.r.Reduce(out[i])
		}
		return e.addc(out, f[0])
	}
	n1, n2, g := comb(nm.n1), comb(nm.n2), comb(nm.g)
	m = e.lin(1, e.mul(xc, n2), 1, g, 0)
	return e.rescale(m, p.S+nm.k, p.T), n1
}

// log: the mantissa m ∈ [1, 2) at scale T and N1 = p·ln 2 from normalize; the tables on m's top
// LogBits bits after the leading one give ln c, 1/c and c for the middle c of m's interval, and
// ln m = ln c + ln(1 + u) ≈ ln c + u with u = (m − c)/c, |u| ≤ 2^−(LogBits+1) (the error u²/2 is
// below 2^−(2·LogBits+3)); y = ⌊(N1 + ln c + u)·2^S⌋, at scale T before the last truncation.
func (e *eval) log(x []uint64) []uint64 {
	p, n := e.p, len(x)
	m, n1 := e.normalize(x, &p.logNorm)
	i := e.trunc(m, p.T-p.LogBits)
	idx := make([]uint64, 0, 3*n)
	for range 3 {
		idx = append(idx, i...)
	}
	tv := e.lut(idx, p.LogBits+1, p.logTabs)
	lnc, inv, c := tv[:n], tv[n:2*n], tv[2*n:]
	u := e.truncSigned(e.mul(e.lin(1, m, e.r.Mask(), c, 0), inv), p.T)
	y := e.lin(1, n1, 1, lnc, 0)
	y = e.lin(1, y, 1, u, 0)
	return e.truncSigned(y, p.T-p.S)
}

// recip (and rsqrt): xc = 2^S + ReLU(x − 2^S) (x below 1 taken as 1), the threshold bits
// 1{xc ≥ 2^(S+j)} for the steps of the normalisation (one DReLU and one B2A batch), N1, N2 and G
// from them (local), the mantissa m = xc·N2 + G moved to scale T, r = recipCore(m) or
// rsqrtCore(m), and y = ⌊r·N1/2^T⌋.
func (e *eval) recip(x []uint64, sqrt bool) []uint64 {
	p := e.p
	nm := &p.recipNorm
	if sqrt {
		nm = &p.rsqrtNorm
	}
	m, n1 := e.normalize(x, nm)
	var r []uint64
	if sqrt {
		r = e.rsqrtCore(m)
	} else {
		r = e.recipCore(m)
	}
	return e.trunc(e.mul(r, n1), p.T)
}
