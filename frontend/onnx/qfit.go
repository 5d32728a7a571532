package onnx

import (
	"errors"
	"fmt"
	"math"
	"math/big"
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

var errNoRule = fmt.Errorf("%w: no fixed-point multiplier rule floor((x·A + C)/2^k) equals ONNX Runtime's float32 requantisation on every input (near-ties of the float32 product)", ErrUnsupported)

// cInterval narrows [lo, hi] (the admissible C) so that point x with value v satisfies the
// rule: lin = Σ x·A; v > qmin needs lin + C ≥ v·2^K; v < qmax needs lin + C < (v+1)·2^K.
func cInterval(lo, hi *big.Int, lin *big.Int, v, qmin, qmax, k int) {
	if v > qmin {
		b := new(big.Int).Lsh(big.NewInt(int64(v)), uint(k))
		b.Sub(b, lin)
		if b.Cmp(lo) > 0 {
			lo.Set(b)
		}
	}
	if v < qmax {
		b := new(big.Int).Lsh(big.NewInt(int64(v+1)), uint(k))
		b.Sub(b, lin)
		b.Sub(b, big.NewInt(1))
		if b.Cmp(hi) < 0 {
			hi.Set(b)
		}
	}
}

// fit1D finds A, C, K with clip(floor((x·A + C)/2^K)) = f(x) for every integer x in [xlo, xhi],
// f non-decreasing there (checked at the points the rule depends on). m approximates the slope
// of f. The rule only depends on f at its steps: for each output value q, the smallest x with
// f(x) ≥ q is found by bisection, and the rule is required to step there too.
func fit1D(xlo, xhi int64, f func(int64) int, m float64, qmin, qmax, k int) (intRule, error) {
	if m <= 0 || math.IsNaN(m) || math.IsInf(m, 0) {
		return intRule{}, fmt.Errorf("requantisation multiplier %g is not positive", m)
	}
	if f(xlo) > f(xhi) {
		return intRule{}, errors.New("requantisation is not monotone")
	}
	// Points that pin the rule: each step x (f(x) > f(x−1)) and x − 1, plus the ends.
	pts := []int64{xlo, xhi}
	for q := f(xlo) + 1; q <= f(xhi); q++ {
		lo, hi := xlo, xhi // f(hi) ≥ q, find the smallest such
		for lo < hi {
			mid := lo + (hi-lo)/2
			if f(mid) >= q {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		pts = append(pts, lo, lo-1)
	}
	base := int64(math.Round(m * math.Ldexp(1, k)))
	for _, d := range []int64{0, 1, -1, 2, -2, 3, -3} {
		a := base + d
		if a <= 0 {
			continue
		}
		lo := new(big.Int).Lsh(big.NewInt(-1), 63)
		hi := new(big.Int).Lsh(big.NewInt(1), 63)
		for _, x := range pts {
			lin := new(big.Int).Mul(big.NewInt(x), big.NewInt(a))
			cInterval(lo, hi, lin, f(x), qmin, qmax, k)
		}
		if lo.Cmp(hi) <= 0 && lo.IsInt64() {
			// Prefer the middle of the interval (the most robust choice).
			c := new(big.Int).Add(lo, hi)
			c.Rsh(c, 1)
			if !c.IsInt64() {
				c = lo
			}
			r := intRule{A: []int64{a}, C: c.Int64(), K: k}
			for _, x := range pts {
				if r.apply([]int64{x}, qmin, qmax) != f(x) {
					return intRule{}, fmt.Errorf("internal error: rule fails at %d", x)
				}
			}
			return r, nil
		}
	}
	return intRule{}, errNoRule
}

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
