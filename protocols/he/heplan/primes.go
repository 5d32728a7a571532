package heplan

import (
	"fmt"
	"math"
	"math/big"
)

// nttPrimesBelow returns the first count primes q ≡ 1 (mod nth) below 2^bits + 1, largest first,
// stopping before they fall half a bit under 2^bits. It is the search of lattigo's
// ring.NTTFriendlyPrimesGenerator.NextDownstreamPrimes, so that the moduli sized here are the
// ones the scheme's rings are built on (the scheme package's tests check this).
func nttPrimesBelow(bits int, nth uint64, count int) ([]uint64, error) {
	if bits < 2 || bits > 62 || nth == 0 {
		return nil, fmt.Errorf("NTT-friendly primes of %d bits for %d-th roots: out of range", bits, nth)
	}
	top := uint64(1)<<bits + 1
	if top < nth {
		return nil, fmt.Errorf("no NTT-friendly prime of %d bits for %d-th roots", bits, nth)
	}
	out := make([]uint64, 0, count)
	var b big.Int
	for q := top - nth; len(out) < count; q -= nth {
		if float64(bits)-math.Log2(float64(q)) >= 0.5 || q < nth {
			return nil, fmt.Errorf("only %d NTT-friendly primes of %d bits for %d-th roots, want %d", len(out), bits, nth, count)
		}
		if b.SetUint64(q).ProbablyPrime(0) { // Baillie–PSW: exact below 2^64
			out = append(out, q)
		}
	}
	return out, nil
}
