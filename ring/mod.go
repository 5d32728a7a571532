package ring

import (
	"fmt"
	"math/bits"
)

// NewMod returns Z_n for an odd modulus 3 <= n < 2^64 (a prime, or a product of distinct primes
// such as the fhe mode's CRT product of plaintext moduli).
func NewMod(n uint64) (Ring, error) {
	if n < 3 || n&1 == 0 {
		return Ring{}, fmt.Errorf("ring Z_%d: the modulus must be odd and at least 3", n)
	}
	l := bits.Len64(n)
	return Ring{Kind: Prime, Bits: l, mask: maskOf(l), mod: n}, nil
}

// The arithmetic of Z_n on reduced operands (a, b < n). None of them allocates; products use the
// 128-bit multiply and remainder of math/bits, so n may be as large as 2^64 - 1.

func modAdd(a, b, n uint64) uint64 {
	s, c := bits.Add64(a, b, 0)
	if c != 0 || s >= n {
		s -= n
	}
	return s
}

func modSub(a, b, n uint64) uint64 {
	if a >= b {
		return a - b
	}
	return a - b + n
}

func modMul(a, b, n uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return bits.Rem64(hi, lo, n)
}

// modSigned is the representative of v in (-n/2, n/2].
func modSigned(v, n uint64) int64 {
	if v > n/2 {
		return -int64(n - v)
	}
	return int64(v)
}

// modFromSigned reduces a signed integer modulo n.
func modFromSigned(x int64, n uint64) uint64 {
	if x >= 0 {
		return uint64(x) % n
	}
	r := (-uint64(x)) % n // -uint64(x) is |x|, exact even for x = -2^63
	if r == 0 {
		return 0
	}
	return n - r
}

// matMulMod is MatMul in Z_n: every product is reduced with a 128-bit multiply-and-remainder,
// the sums kept below n.
func (r Ring) matMulMod(dst, a []uint64, m, k, n int, b []uint64) {
	q := r.mod
	for i := 0; i < m; i++ {
		row := a[i*k : i*k+k]
		for j := 0; j < n; j++ {
			var s uint64
			for t, av := range row {
				s = modAdd(s, modMul(av, b[t*n+j], q), q)
			}
			dst[i*n+j] = s
		}
	}
}
