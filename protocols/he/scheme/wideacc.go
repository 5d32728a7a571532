package scheme

import (
	"math/bits"

	lring "github.com/tuneinsight/lattigo/v6/ring"
)

// Accumulator is a sum of ciphertext × plaintext products kept unreduced: per component, prime
// and coefficient a 128-bit integer (hi, lo). A product of two residues is below q² < 2^120, so
// 2^8 − 1 of them fit before the sum must be folded back below q (every foldEvery products);
// Reduce turns the sum into a ciphertext. This replaces a Montgomery reduction per product
// coefficient by one 64×64→128-bit multiplication and a 128-bit addition.
type Accumulator struct {
	lo, hi [2][][]uint64 // [component][prime][coefficient]
	terms  int           // products since the last fold
}

// foldEvery is the number of products an Accumulator takes between folds: 255 products below
// 2^120 each, plus a folded value below 2^64, stay below 2^128.
const foldEvery = 255

// NewAccumulator returns a zero accumulator.
func (p *Params) NewAccumulator() *Accumulator {
	a := &Accumulator{}
	for c := 0; c < 2; c++ {
		for range p.Q {
			a.lo[c] = append(a.lo[c], make([]uint64, p.N()))
			a.hi[c] = append(a.hi[c], make([]uint64, p.N()))
		}
	}
	return a
}

// Zero sets a to zero.
func (a *Accumulator) Zero() {
	for c := 0; c < 2; c++ {
		for i := range a.lo[c] {
			clear(a.lo[c][i])
			clear(a.hi[c][i])
		}
	}
	a.terms = 0
}

// MulAddWide adds ct·pt to a (the same sum as MulAdd, reduced only by Reduce).
func (ev *Evaluator) MulAddWide(a *Accumulator, ct *Ciphertext, pt *Plaintext) {
	if a.terms == foldEvery {
		ev.fold(a)
	}
	a.terms++
	for c, poly := range [2]lring.Poly{ct.c0, ct.c1} {
		for i := range a.lo[c] {
			x, w := poly.Coeffs[i], pt.poly.Coeffs[i]
			lo, hi := a.lo[c][i], a.hi[c][i]
			x, w, hi = x[:len(lo)], w[:len(lo)], hi[:len(lo)]
			for j := range lo {
				ph, pl := bits.Mul64(x[j], w[j])
				var carry uint64
				lo[j], carry = bits.Add64(lo[j], pl, 0)
				hi[j] += ph + carry
			}
		}
	}
}

// fold replaces every 128-bit sum of a by its residue (same value mod q).
func (ev *Evaluator) fold(a *Accumulator) {
	for c := 0; c < 2; c++ {
		for i, q := range ev.p.Q {
			lo, hi := a.lo[c][i], a.hi[c][i]
			for j := range lo {
				_, lo[j] = bits.Div64(hi[j]%q, lo[j], q)
				hi[j] = 0
			}
		}
	}
	a.terms = 0
}

// Reduce sets ct to the sum in a: Σ ct_k·pt_k where each plaintext is in Montgomery form, so the
// 128-bit sum T is brought to T·2^−64 mod q (a Montgomery reduction after hi is reduced below q).
func (ev *Evaluator) Reduce(ct *Ciphertext, a *Accumulator) {
	for c, poly := range [2]lring.Poly{ct.c0, ct.c1} {
		for i, s := range ev.p.rq.SubRings[:len(ev.p.Q)] {
			q, mrc := s.Modulus, s.MRedConstant
			lo, hi, out := a.lo[c][i], a.hi[c][i], poly.Coeffs[i]
			for j := range lo {
				h := hi[j]
				if h >= q {
					h %= q
				}
				m, _ := bits.Mul64(lo[j]*mrc, q)
				r := h - m + q
				if r >= q {
					r -= q
				}
				out[j] = r
			}
		}
	}
}
