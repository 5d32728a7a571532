// Package fheparams chooses the encryption parameters of the non-interactive fhe mode (BGV, one
// prime plaintext modulus per CRT component) from two numbers the compiler measures: the bits the
// program's values need and its multiplicative depth. It is pure arithmetic with no dependency on
// lattigo, so the compiler can size a program without linking the HE library; protocols/fhe
// instantiates the chosen parameters.
//
// Security: the ring degree N is the smallest whose maximal log(QP) for 128-bit classical security
// with a ternary secret (Albrecht et al., "Homomorphic Encryption Security Standard",
// HomomorphicEncryption.org, November 2018, Table 1 (distribution "uniform/ternary", 128 bits,
// classical): N = 1024: 27, 2048: 54, 4096: 109, 8192: 218, 16384: 438, 32768: 881) holds the
// modulus chain. Larger N are not in the table and are refused.
package fheparams

import (
	"fmt"
	"math/big"
	mathbits "math/bits"
	"slices"
)

// SecurityCitation names the table the bound comes from, as recorded in a program's metadata.
const SecurityCitation = "HE Security Standard (HomomorphicEncryption.org, 2018) Table 1, 128-bit classical, ternary secret"

// MaxLogQP128 is the table: the largest log2(QP) with 128-bit classical security for a ternary
// secret, by log2(N).
var MaxLogQP128 = map[int]int{10: 27, 11: 54, 12: 109, 13: 218, 14: 438, 15: 881}

// The modulus chain's shape. Every level that a multiplication consumes is one LevelBits-bit
// prime (a rescaling divides the noise by it); the result is returned at level OutLevel = 1, whose
// modulus q_0·q_1 holds the flooded noise of the circuit-privacy step (docs/security.md); the
// key-switching modulus P is one prime.
const (
	LevelBits = 60
	BaseBits  = 60 // q_0 and q_1
	PBits     = 61
	OutLevel  = 1
	// MaxTBits bounds a plaintext prime: the noise of a plaintext multiplication grows with t·N and
	// must stay below one LevelBits rescaling (t·N ≤ 2^46 at N = 2^15, leaving 14 bits for the
	// sum of a map's products), and the flooded result needs t·2^79 < q_0·q_1/2 (docs/security.md).
	// 31 bits let two components hold 61-bit values (LoLa CIFAR-10) where 30 needed three.
	MaxTBits = 31
	// MaxPPrimes is the most key-switching primes: with k primes of PBits a key switch decomposes a
	// ciphertext into ⌈(L+1)/k⌉ digits instead of L+1, so a rotation costs about two thirds and a
	// Galois key about half at N = 2^15 with k = 3 (BenchmarkRotation, protocols/fhe). They are
	// added only while the security table still holds the chain at the chosen N.
	MaxPPrimes = 3
	// MaxBits is the largest CRT product: the cleartext reference holds a value in one 64-bit word.
	MaxBits = 63
)

// Params are the chosen parameters.
type Params struct {
	LogN  int
	T     []uint64 // the CRT plaintext primes, each ≡ 1 mod 2N, ascending
	LogQ  []int    // q_0 first
	LogP  []int
	Depth int
}

// Modulus is the product of the plaintext primes (it fits 64 bits by construction).
func (p Params) Modulus() uint64 {
	n := uint64(1)
	for _, t := range p.T {
		n *= t
	}
	return n
}

// LogQP is the total modulus size the security table bounds.
func (p Params) LogQP() int {
	s := 0
	for _, v := range p.LogQ {
		s += v
	}
	for _, v := range p.LogP {
		s += v
	}
	return s
}

// Choose returns parameters for a program whose values need bits bits (with the sign: the CRT
// product must exceed 2^bits) and whose multiplicative depth is depth. The ring degree is the
// smallest of the security table that holds the chain with one key-switching prime (and at least
// 2^13, for enough SIMD slots), then up to MaxPPrimes key-switching primes as the table allows;
// the plaintext primes are the fewest of at most MaxTBits bits whose product exceeds 2^bits (every
// CRT component is a whole BGV evaluation, so one fewer is a third or a half less work).
func Choose(bits, depth int) (Params, error) {
	if bits < 2 || bits > MaxBits {
		return Params{}, fmt.Errorf("fhe parameters: the values need %d bits; the fhe mode supports 2..%d (the CRT product is one 64-bit word; more components are not implemented)", bits, MaxBits)
	}
	if depth < 0 {
		return Params{}, fmt.Errorf("fhe parameters: negative depth %d", depth)
	}
	p := Params{Depth: depth, LogP: []int{PBits}}
	p.LogQ = []int{BaseBits, BaseBits}
	for range depth {
		p.LogQ = append(p.LogQ, LevelBits)
	}
	for logN := 13; logN <= 15; logN++ {
		if p.LogQP() <= MaxLogQP128[logN] {
			p.LogN = logN
			break
		}
	}
	if p.LogN == 0 {
		return Params{}, fmt.Errorf("fhe parameters: depth %d needs log QP = %d, more than %d, the largest the security table allows 128-bit security for (N = 2^15); reduce the number of layers", depth, p.LogQP(), MaxLogQP128[15])
	}
	for len(p.LogP) < MaxPPrimes && p.LogQP()+PBits <= MaxLogQP128[p.LogN] {
		p.LogP = append(p.LogP, PBits)
	}
	// The fewest primes in (2^(b-1), 2^b), b <= MaxTBits, whose product exceeds 2^bits and fits a
	// word, the smallest b first; b at least logN+3 leaves room for primes ≡ 1 mod 2N. The
	// product is checked, not bounded by 2^(k(b-1)): three 21-bit primes above 2^20 can exceed
	// 2^61. At the largest size the k largest primes below 2^MaxTBits are tried too (two 31-bit
	// primes near 2^31 hold 61 bits, LoLa CIFAR-10's need, where the smallest two above 2^30 do not).
	for k := (bits + MaxTBits - 1) / MaxTBits; k <= 8; k++ {
		for b := max((bits+k-1)/k, p.LogN+3); b <= MaxTBits && k*(b-1) <= 63; b++ {
			cands := []func(int, int, int) ([]uint64, error){Primes}
			if b == MaxTBits {
				cands = append(cands, PrimesBelow)
			}
			for _, gen := range cands {
				t, err := gen(k, b, p.LogN)
				if err != nil {
					continue
				}
				if n, ok := product(t); ok && n>>uint(bits) != 0 {
					p.T = t
					return p, nil
				}
			}
		}
	}
	return Params{}, fmt.Errorf("fhe parameters: no NTT-friendly primes (≡ 1 mod 2^%d) of at most %d bits whose product exceeds 2^%d and fits 64 bits", p.LogN+1, MaxTBits, bits)
}

// PrimesBelow returns the k largest primes t < 2^b with t ≡ 1 mod 2^(logN+1), ascending.
func PrimesBelow(k, b, logN int) ([]uint64, error) {
	step := uint64(2) << uint(logN)
	t := (uint64(1)<<uint(b)-1)/step*step + 1
	if t >= uint64(1)<<uint(b) {
		t -= step
	}
	var out []uint64
	var z big.Int
	for ; len(out) < k; t -= step {
		if t <= uint64(1)<<uint(b-1) {
			return nil, fmt.Errorf("fhe parameters: fewer than %d primes ≡ 1 mod 2^%d of %d bits", k, logN+1, b)
		}
		if z.SetUint64(t).ProbablyPrime(20) { // exact below 2^64 (Baillie–PSW)
			out = append(out, t)
		}
	}
	slices.Reverse(out)
	return out, nil
}

// product multiplies the primes, reporting whether the product fits 64 bits.
func product(t []uint64) (uint64, bool) {
	n := uint64(1)
	for _, v := range t {
		hi, lo := mathbits.Mul64(n, v)
		if hi != 0 {
			return 0, false
		}
		n = lo
	}
	return n, true
}

// Primes returns the k smallest primes t > 2^(b-1) with t ≡ 1 mod 2^(logN+1) (NTT-friendly, so
// the plaintext ring Z_t[X]/(X^N+1) splits into N SIMD slots).
func Primes(k, b, logN int) ([]uint64, error) {
	step := uint64(2) << uint(logN)
	t := (uint64(1)<<uint(b-1))/step*step + 1
	if t <= uint64(1)<<uint(b-1) {
		t += step
	}
	var out []uint64
	var z big.Int
	for ; len(out) < k; t += step {
		if t >= uint64(1)<<uint(b) {
			return nil, fmt.Errorf("fhe parameters: fewer than %d primes ≡ 1 mod 2^%d of %d bits", k, logN+1, b)
		}
		if z.SetUint64(t).ProbablyPrime(20) { // exact below 2^64 (Baillie–PSW)
			out = append(out, t)
		}
	}
	return out, nil
}
