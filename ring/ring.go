// Package ring describes the rings that cryptflow-go computes in and holds the share-tensor type.
//
// A Ring is Z_{2^l} (l = 1..64; elements are uint64 values below 2^l, read as two's-complement
// signed integers) or Z_n for an odd modulus 3 <= n < 2^64 (elements below n, read as signed in
// (-n/2, n/2)): the non-interactive FHE mode computes modulo n, the product of its CRT plaintext
// primes (docs/fixed-point.md, "The fhe mode").
//
// The package is a leaf: it imports nothing from the project, so the VM, the compiler and every
// protocol can share its types.
package ring

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
)

// Kind is the family of a ring.
type Kind uint8

const (
	// Pow2 is Z_{2^l}, used by the OT-based protocols and the cleartext backend.
	Pow2 Kind = 1
	// Prime is Z_n for an odd modulus n (a prime or a product of distinct primes: the fhe mode's
	// CRT product of plaintext moduli). Build it with NewMod.
	Prime Kind = 2
)

func (k Kind) String() string {
	switch k {
	case Pow2:
		return "pow2"
	case Prime:
		return "prime"
	}
	return fmt.Sprintf("ring-kind(%d)", uint8(k))
}

// ErrPrimeUnsupported is returned by operations that exist only for Z_{2^l} when called on Z_n.
var ErrPrimeUnsupported = errors.New("this operation is defined only for rings Z_{2^l}, not Z_n")

// Ring is the ring Z_{2^Bits} or Z_n. The zero value is invalid; build rings with New or NewMod.
type Ring struct {
	Kind Kind
	Bits int // l for Z_{2^l}: 1..64; for Z_n the bit length of n
	mask uint64
	mod  uint64 // n for Z_n, 0 for Z_{2^l}
}

// New returns Z_{2^l}.
func New(l int) (Ring, error) {
	if l < 1 || l > 64 {
		return Ring{}, fmt.Errorf("ring Z_2^%d: bitwidth must be 1..64", l)
	}
	return Ring{Kind: Pow2, Bits: l, mask: maskOf(l)}, nil
}

// Must returns Z_{2^l} and panics on an invalid l. Use it only with constant arguments.
func Must(l int) Ring {
	r, err := New(l)
	if err != nil {
		panic(err)
	}
	return r
}

// Of returns the ring described by kind and parameter (the bitwidth for Pow2, the modulus for
// Prime), as stored in a program file.
func Of(kind Kind, param uint64) (Ring, error) {
	switch kind {
	case Pow2:
		if param > 64 {
			return Ring{}, fmt.Errorf("ring Z_2^%d: bitwidth must be 1..64", param)
		}
		return New(int(param))
	case Prime:
		return NewMod(param)
	}
	return Ring{}, fmt.Errorf("unknown ring kind %d", uint8(kind))
}

func maskOf(l int) uint64 {
	if l == 64 {
		return math.MaxUint64
	}
	return 1<<uint(l) - 1
}

// Valid reports whether r was built by New (or Of).
func (r Ring) Valid() bool {
	if r.Kind == Prime {
		return r.mod >= 3 && r.mod&1 == 1 && r.Bits == bits.Len64(r.mod) && r.mask == maskOf(r.Bits)
	}
	return r.Kind == Pow2 && r.mod == 0 && r.Bits >= 1 && r.Bits <= 64 && r.mask == maskOf(r.Bits)
}

func (r Ring) String() string {
	if r.Kind == Pow2 {
		return fmt.Sprintf("Z_2^%d", r.Bits)
	}
	if r.Kind == Prime {
		return fmt.Sprintf("Z_%d", r.mod)
	}
	return fmt.Sprintf("invalid ring (%v, %d bits)", r.Kind, r.Bits)
}

// Mask is 2^l - 1: x & Mask() reduces x in Z_{2^l}. For Z_n it is 2^bitlen(n) - 1, which does
// not reduce: code that may run on Z_n uses Reduce.
func (r Ring) Mask() uint64 { return r.mask }

// Modulus is n for Z_n and 0 for Z_{2^l}.
func (r Ring) Modulus() uint64 { return r.mod }

// Reduce reduces x into the ring.
func (r Ring) Reduce(x uint64) uint64 {
	if r.mod != 0 {
		return x % r.mod
	}
	return x & r.mask
}

// Signed reads the ring element v (assumed reduced) as a signed integer: two's complement in
// [-2^(l-1), 2^(l-1)) for Z_{2^l}, the representative in (-n/2, n/2) for Z_n.
func (r Ring) Signed(v uint64) int64 {
	if r.mod != 0 {
		return modSigned(v, r.mod)
	}
	sh := uint(64 - r.Bits)
	return int64(v<<sh) >> sh
}

// FromSigned maps a signed integer to its ring element (reduction modulo 2^l, or n).
func (r Ring) FromSigned(x int64) uint64 {
	if r.mod != 0 {
		return modFromSigned(x, r.mod)
	}
	return uint64(x) & r.mask
}

// MinSigned and MaxSigned bound the signed interpretation: -2^(l-1) and 2^(l-1)-1 for Z_{2^l},
// ∓(n-1)/2 for Z_n.
func (r Ring) MinSigned() int64 {
	if r.mod != 0 {
		return -int64((r.mod - 1) / 2)
	}
	return r.Signed(uint64(1) << uint(r.Bits-1))
}

// MaxSigned is 2^(l-1)-1 (or (n-1)/2).
func (r Ring) MaxSigned() int64 {
	if r.mod != 0 {
		return int64((r.mod - 1) / 2)
	}
	return int64(r.mask >> 1)
}

// Add returns a+b in the ring.
func (r Ring) Add(a, b uint64) uint64 {
	if r.mod != 0 {
		return modAdd(a, b, r.mod)
	}
	return (a + b) & r.mask
}

// Sub returns a-b in the ring.
func (r Ring) Sub(a, b uint64) uint64 {
	if r.mod != 0 {
		return modSub(a, b, r.mod)
	}
	return (a - b) & r.mask
}

// Neg returns -a in the ring.
func (r Ring) Neg(a uint64) uint64 {
	if r.mod != 0 {
		return modSub(0, a, r.mod)
	}
	return (-a) & r.mask
}

// Mul returns a*b in the ring.
func (r Ring) Mul(a, b uint64) uint64 {
	if r.mod != 0 {
		return modMul(a, b, r.mod)
	}
	return (a * b) & r.mask
}

// IsNeg reports whether the element's signed value is negative (its top bit; above n/2 in Z_n).
func (r Ring) IsNeg(v uint64) bool {
	if r.mod != 0 {
		return v > r.mod/2
	}
	return v>>uint(r.Bits-1)&1 == 1
}

// Trunc returns floor(signed(v) / 2^k) reduced into the ring (an arithmetic shift), for
// 0 <= k < 64.
func (r Ring) Trunc(v uint64, k int) uint64 {
	if k <= 0 {
		return r.Reduce(v)
	}
	if k >= 64 {
		k = 63
	}
	return r.FromSigned(r.Signed(v) >> uint(k))
}

// Less reports whether signed(a) < signed(b).
func (r Ring) Less(a, b uint64) bool { return r.Signed(a) < r.Signed(b) }

// Encode returns floor(x * 2^scale) reduced into the ring. It fails for NaN, ±Inf and values
// whose encoding does not fit an int64 (the ring then cannot represent them either).
func (r Ring) Encode(x float64, scale int) (uint64, error) {
	v, err := EncodeInt(x, scale)
	if err != nil {
		return 0, err
	}
	return r.FromSigned(v), nil
}

// EncodeInt returns floor(x * 2^scale) as an int64 (the ring-independent form of an encoding).
func EncodeInt(x float64, scale int) (int64, error) {
	y := math.Floor(math.Ldexp(x, scale))
	if math.IsNaN(y) || y < -(1<<63) || y >= 1<<63 {
		return 0, fmt.Errorf("cannot encode %g at scale %d: not a finite value within ±2^63", x, scale)
	}
	return int64(y), nil
}

// Decode returns signed(v) / 2^scale.
func (r Ring) Decode(v uint64, scale int) float64 {
	return math.Ldexp(float64(r.Signed(v)), -scale)
}

// BitsFor returns the number of bits of |x| (0 for 0). A signed value x fits Z_{2^l} without
// wrapping when BitsFor(x)+1 <= l (one sign bit; conservative by one for x = -2^(l-1)).
func BitsFor(x int64) int {
	u := uint64(x)
	if x < 0 {
		u = -u
	}
	return bits.Len64(u)
}

// ArgMax returns the index of the first largest signed element of v (v must be non-empty): the
// fixed-point ArgMax, ties to the lowest index.
func (r Ring) ArgMax(v []uint64) int {
	best, at := r.Signed(v[0]), 0
	for j := 1; j < len(v); j++ {
		if s := r.Signed(v[j]); s > best {
			best, at = s, j
		}
	}
	return at
}
