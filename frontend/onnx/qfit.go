package onnx

import (
	"cmp"
	"fmt"
	"math"
	"math/big"
	"slices"
)

// This file holds ONNX Runtime's CPU requantisation, reproduced in float32 exactly as its MLAS
// kernels compute it, and the search for the integer rule floor((Σ x·A + C)/2^k) that equals it
// on every input that can occur (docs/fixed-point.md, "Quantized operators").

// ortRequant is MlasRequantizeOutput (QLinearConv, QLinearMatMul, QLinearGlobalAveragePool):
// the int32 accumulator is converted to float32, multiplied by the float32 scale, clamped to
// [qmin − zp, qmax − zp], rounded half to even (cvtps2dq) and shifted by the zero point.
func ortRequant(acc int64, scale float32, zp, qmin, qmax int) int {
	f := float32(acc) * scale
	f = min(max(f, float32(qmin-zp)), float32(qmax-zp))
	return int(math.RoundToEven(float64(f))) + zp
}

// fma32 is the float32 fused multiply-add: round32(a·b + c) with one rounding.
func fma32(a, b, c float32) float32 {
	// The product of two float32 values is exact in float64; when the float64 sum is exact too
	// (TwoSum error zero), one rounding to float32 is the fused result.
	p, q := float64(a)*float64(b), float64(c)
	sum := p + q
	bb := sum - p
	if (p-(sum-bb))+(q-bb) == 0 {
		return float32(sum)
	}
	x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(200).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(200).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

// ortQLinearAdd is MLAS's AVX2 QLinearAdd kernel (qladd_avx2.cpp): with rA = sA/sC, rB = sB/sC
// and fixed = zC − (rA·zA + rB·zB) in float32, c = fma(a, rA, fma(b, rB, fixed)), rounded half
// to even, saturated.
type ortQLinearAdd struct {
	rA, rB, fixed float32
	qmin, qmax    int
}

func newORTQLinearAdd(sA float32, zA int, sB float32, zB int, sC float32, zC, qmin, qmax int) *ortQLinearAdd {
	rA, rB := sA/sC, sB/sC
	pa := rA * float32(zA)
	pb := rB * float32(zB)
	return &ortQLinearAdd{rA: rA, rB: rB, fixed: float32(zC) - (pa + pb), qmin: qmin, qmax: qmax}
}

func (q *ortQLinearAdd) at(a, b int) int {
	t := fma32(float32(b), q.rB, q.fixed)
	f := fma32(float32(a), q.rA, t)
	v := int(math.RoundToEven(float64(f)))
	return min(max(v, q.qmin), q.qmax)
}

// intRule is y = clip(floor((Σ_i x_i·A_i + C) / 2^K), qmin, qmax).
type intRule struct {
	A []int64
	C int64
	K int
}

var errNoRule = fmt.Errorf("%w: no rule floor((a·A + b·B + C)/2^k) equals ONNX Runtime's float32 QLinearAdd on every input pair", ErrUnsupported)

// shiftFor returns the largest K ≤ 52 with bound·m·2^K < 2^61, so that x·A + C cannot wrap in
// Z_2^64 for |x| ≤ bound.
func shiftFor(m float64, bound int64) int {
	k := 0
	for k < 52 && m*math.Ldexp(1, k+1)*float64(max(bound, 1)) < math.Ldexp(1, 61) {
		k++
	}
	return k
}

func (r intRule) apply(x []int64, qmin, qmax int) int {
	var s int64
	for i, v := range x {
		s += v * r.A[i]
	}
	y := (s + r.C) >> uint(r.K)
	return int(min(max(y, int64(qmin)), int64(qmax)))
}

// fitAdd finds the rule for a QLinearAdd of two runtime uint8/int8 tensors, checked on all
// 256 × 256 input pairs.
func fitAdd(q *ortQLinearAdd, lo, hi int) (intRule, error) {
	n := hi - lo + 1
	val := make([]int, n*n)
	for a := 0; a < n; a++ {
		for b := 0; b < n; b++ {
			val[a*n+b] = q.at(lo+a, lo+b)
		}
	}
	for k := 20; k <= 40; k++ {
		bA := int64(math.Round(float64(q.rA) * math.Ldexp(1, k)))
		bB := int64(math.Round(float64(q.rB) * math.Ldexp(1, k)))
		for _, dA := range []int64{0, 1, -1} {
			for _, dB := range []int64{0, 1, -1} {
				A, B := bA+dA, bB+dB
				cl, ch := int64(math.MinInt64/4), int64(math.MaxInt64/4)
				for a := 0; a < n; a++ {
					for b := 0; b < n; b++ {
						v := val[a*n+b]
						lin := int64(lo+a)*A + int64(lo+b)*B
						if v > q.qmin {
							cl = max(cl, int64(v)<<k-lin)
						}
						if v < q.qmax {
							ch = min(ch, int64(v+1)<<k-lin-1)
						}
					}
				}
				if cl <= ch {
					return intRule{A: []int64{A, B}, C: cl + (ch-cl)/2, K: k}, nil
				}
			}
		}
	}
	return intRule{}, errNoRule
}

// fixRule is the exact form of a monotone 1-D requantisation: the round-half-up linear rule
// Lu(x) = floor((x·A + C)/2^K) with A/2^K ≈ the multiplier, plus point corrections: at each x = At[j]
// the value Add[j] is added before the clip, so that clip(Lu(x) + corr(x), qmin, qmax) equals f(x) for
// every x of the range.
type fixRule struct {
	intRule
	At, Add []int64
}

// lin is the unclipped linear rule.
func (r intRule) lin(x int64) int64 { return (x*r.A[0] + r.C) >> uint(r.K) }

func (r fixRule) apply(x int64, qmin, qmax int) int {
	y := r.lin(x)
	for j, e := range r.At {
		if x == e {
			y += r.Add[j]
		}
	}
	return int(min(max(y, int64(qmin)), int64(qmax)))
}

// fitFix builds the fixRule for f (non-decreasing on [xlo, xhi]) with multiplier m at shift k and
// offset off (the zero point, say) folded into C (the rule rounds m·x + off half up): the points where f and the clipped
// linear rule differ lie between their steps, found by bisection for every output value.
func fitFix(xlo, xhi int64, f func(int64) int, m, off float64, qmin, qmax, k int) (fixRule, error) {
	if m <= 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return fixRule{}, fmt.Errorf("requantisation multiplier %g is not positive", m)
	}
	r := fixRule{intRule: intRule{A: []int64{int64(math.Round(m * math.Ldexp(1, k)))}, K: k}}
	r.C = int64(math.Round((off + 0.5) * math.Ldexp(1, k)))
	g := func(x int64) int { return int(min(max(r.lin(x), int64(qmin)), int64(qmax))) }
	step := func(h func(int64) int, q int) int64 { // smallest x with h(x) ≥ q, xhi+1 if none
		if h(xhi) < q {
			return xhi + 1
		}
		lo, hi := xlo, xhi
		for lo < hi {
			mid := lo + (hi-lo)/2
			if h(mid) >= q {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		return lo
	}
	seen := map[int64]bool{}
	for q := qmin + 1; q <= qmax; q++ {
		a, b := step(f, q), step(g, q)
		for x := min(a, b); x < max(a, b); x++ {
			if seen[x] {
				continue
			}
			seen[x] = true
			r.At = append(r.At, x)
			r.Add = append(r.Add, int64(f(x))-r.lin(x))
			if len(r.At) > 4096 {
				return fixRule{}, fmt.Errorf("%w: more than 4096 corrections", ErrUnsupported)
			}
		}
	}
	for _, x := range append([]int64{xlo, xhi}, r.At...) {
		if r.apply(x, qmin, qmax) != f(x) {
			return fixRule{}, fmt.Errorf("internal error: rule fails at %d", x)
		}
	}
	return r, nil
}

// addRNE is the exact form used for a QLinearAdd of two runtime tensors when no floor rule
// matches: V = a·A + b·B + C with A/2^K, B/2^K and C/2^K exactly ONNX Runtime's float32 rA, rB and
// fixed, rounded half to even (Requant's rne mode), plus point corrections on the values of V
// where ORT's intermediate float32 roundings move the result (refused when two pairs with one V
// need different results).
type addRNE struct {
	A, B, C int64
	K       int
	At      []int64 // values of V = a·A + b·B + C
	Add     []int64
}

// exactly returns v·2^k when that is an integer, else false.
func exactly(v float32, k int) (int64, bool) {
	x := math.Ldexp(float64(v), k)
	if x != math.Trunc(x) || math.Abs(x) >= 1<<62 {
		return 0, false
	}
	return int64(x), true
}

func rneShift(v int64, k int) int64 {
	h := v + int64(1)<<uint(k-1)
	y := h >> uint(k)
	if (h-1)>>uint(k) != y && y&1 != 0 {
		y--
	}
	return y
}

func fitAddRNE(q *ortQLinearAdd, lo, hi int) (addRNE, error) {
	for k := 24; k <= 52; k++ {
		A, okA := exactly(q.rA, k)
		B, okB := exactly(q.rB, k)
		C, okC := exactly(q.fixed, k)
		if !okA || !okB || !okC {
			continue
		}
		if float64(max(abs64(A), abs64(B)))*2*256+math.Abs(float64(C)) >= math.Ldexp(1, 62) {
			break
		}
		r := addRNE{A: A, B: B, C: C, K: k}
		need := map[int64]int64{}
		for a := lo; a <= hi; a++ {
			for b := lo; b <= hi; b++ {
				v := int64(a)*A + int64(b)*B + C
				y := rneShift(v, k)
				want := q.at(a, b)
				d := int64(want) - y
				if int(min(max(y, int64(q.qmin)), int64(q.qmax))) == want {
					d = 0
				}
				if old, seen := need[v]; seen && old != d {
					// Only a conflict when the clip does not absorb it.
					if int(min(max(y+old, int64(q.qmin)), int64(q.qmax))) != want {
						return addRNE{}, fmt.Errorf("%w: QLinearAdd: two input pairs with one exact sum need different results", ErrUnsupported)
					}
					continue
				}
				need[v] = d
			}
		}
		for v, d := range need {
			if d != 0 {
				r.At = append(r.At, v)
				r.Add = append(r.Add, d)
			}
		}
		if len(r.At) > 256 {
			return addRNE{}, fmt.Errorf("%w: QLinearAdd needs %d point corrections (more than 256)", ErrUnsupported, len(r.At))
		}
		slices.SortFunc(r.At, func(x, y int64) int { return cmp.Compare(x, y) }) // deterministic order
		for i, v := range r.At {
			r.Add[i] = need[v]
		}
		return r, nil
	}
	return addRNE{}, errNoRule
}
