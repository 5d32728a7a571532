// Package fhe is the BGV evaluator of the non-interactive fhe mode (Falcon/LoLa-style encrypted
// inference): the client encrypts its input once, the server evaluates a polynomial network on the
// ciphertexts with no further message, and returns the result, which only the client can decrypt.
// It runs on lattigo v6's schemes/bgv, with one prime plaintext modulus t_i per CRT component (all
// components share the ring degree, the ciphertext modulus chain and the keys; a value mod
// n = Πt_i is one ciphertext per component), SIMD packing with several vectors (lanes) interleaved
// in the slots, each replicated periodically along its lane so that rotations are cyclic over a
// power-of-two period, and linear maps by the (folded) diagonal method with baby-step giant-step
// rotations scheduled per map from the session's keys. Parameter sizes come from package
// fheparams (the compiler chooses them); the plan of which linear maps and products to evaluate
// comes from the VM layer above (vm/fhe).
package fhe

import (
	"fmt"
	"math/bits"
	"slices"

	"github.com/tuneinsight/lattigo/v6/schemes/bgv"
)

// Params are instantiated BGV parameters: one bgv.Parameters per CRT component, sharing N, Q and P.
type Params struct {
	LogN     int
	T        []uint64
	OutLevel int
	comp     []bgv.Parameters
	n        uint64   // Πt_i
	crt      []uint64 // (n/t_i)·((n/t_i)^-1 mod t_i) mod n
}

// NewParams instantiates BGV parameters from their sizes (q_0 first) and the plaintext primes.
// The ciphertext and key-switching primes are lattigo's deterministic NTT-friendly primes of those
// sizes, so both parties obtain the same ones.
func NewParams(logN int, t []uint64, logQ, logP []int, outLevel int) (*Params, error) {
	if len(t) == 0 {
		return nil, fmt.Errorf("fhe: no plaintext moduli")
	}
	if outLevel < 0 || outLevel >= len(logQ) {
		return nil, fmt.Errorf("fhe: result level %d outside the chain of %d primes", outLevel, len(logQ))
	}
	p := &Params{LogN: logN, T: append([]uint64(nil), t...), OutLevel: outLevel, n: 1}
	for _, ti := range t {
		// The same sizes give the same primes Q and P for every component (lattigo's generator is
		// deterministic), so the components share the keys.
		bp, err := bgv.NewParametersFromLiteral(bgv.ParametersLiteral{LogN: logN, LogQ: logQ, LogP: logP, PlaintextModulus: ti})
		if err != nil {
			return nil, fmt.Errorf("fhe: parameters N=2^%d Q%v P%v t=%d: %w", logN, logQ, logP, ti, err)
		}
		if len(p.comp) > 0 && !slices.Equal(bp.Q(), p.comp[0].Q()) {
			return nil, fmt.Errorf("fhe: the components' ciphertext moduli differ")
		}
		if ti%(2<<uint(logN)) != 1 {
			return nil, fmt.Errorf("fhe: plaintext modulus %d is not 1 mod 2N: no full SIMD packing", ti)
		}
		p.comp = append(p.comp, bp)
		hi, lo := bits.Mul64(p.n, ti)
		if hi != 0 {
			return nil, fmt.Errorf("fhe: the plaintext moduli %v multiply past 64 bits", t)
		}
		p.n = lo
	}
	for _, ti := range t {
		m := p.n / ti
		inv, ok := modInverse(m%ti, ti)
		if !ok {
			return nil, fmt.Errorf("fhe: plaintext moduli %v are not pairwise coprime", t)
		}
		p.crt = append(p.crt, mulMod(m, inv, p.n))
	}
	return p, nil
}

// Modulus is n, the product of the plaintext moduli.
func (p *Params) Modulus() uint64 { return p.n }

// Slots is the number of SIMD slots of one row (N/2): the longest period a vector may have.
func (p *Params) Slots() int { return 1 << uint(p.LogN-1) }

// MaxLevel is the level fresh ciphertexts are at.
func (p *Params) MaxLevel() int { return p.comp[0].MaxLevel() }

func (p *Params) String() string {
	return fmt.Sprintf("BGV N=2^%d, log QP=%.0f, t=%v", p.LogN, p.comp[0].LogQP(), p.T)
}

func mulMod(a, b, n uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return bits.Rem64(hi, lo, n)
}

func addMod(a, b, n uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 || s >= n {
		s -= n
	}
	return s
}

// modInverse returns a^-1 mod m for gcd(a, m) = 1 (extended Euclid on signed 128-bit-free values:
// m < 2^63 for the moduli used here).
func modInverse(a, m uint64) (uint64, bool) {
	if m >= 1<<63 {
		return 0, false
	}
	t, newT := int64(0), int64(1)
	r, newR := int64(m), int64(a%m)
	for newR != 0 {
		q := r / newR
		t, newT = newT, t-q*newT
		r, newR = newR, r-q*newR
	}
	if r != 1 {
		return 0, false
	}
	if t < 0 {
		t += int64(m)
	}
	return uint64(t), true
}

// GaloisElement is the Galois element of a column rotation by k (the key a rotation needs).
func (p *Params) GaloisElement(k int) uint64 { return p.comp[0].GaloisElementForColRotation(k) }

// checkStride checks a packing stride: a power of two dividing N/2 (the lanes of one row).
func (p *Params) checkStride(stride int) error {
	if stride < 1 || stride&(stride-1) != 0 || p.Slots()%stride != 0 {
		return fmt.Errorf("fhe: a stride of %d lanes per row (a power of two up to %d)", stride, p.Slots())
	}
	return nil
}
