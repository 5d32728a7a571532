package fheparams

import (
	"math/big"
	"math/bits"
	"slices"
	"testing"
)

// TestChoose checks the chosen parameters against the rules: the security table holds the chain,
// the primes are NTT-friendly primes whose product exceeds 2^bits and fits a word.
func TestChoose(t *testing.T) {
	for _, c := range []struct{ bits, depth int }{{2, 0}, {20, 1}, {40, 3}, {59, 4}, {60, 6}, {62, 2}, {30, 11}} {
		p, err := Choose(c.bits, c.depth)
		if err != nil {
			t.Fatalf("Choose(%d, %d): %v", c.bits, c.depth, err)
		}
		if p.LogQP() > MaxLogQP128[p.LogN] {
			t.Errorf("Choose(%d, %d): log QP %d > %d for N=2^%d", c.bits, c.depth, p.LogQP(), MaxLogQP128[p.LogN], p.LogN)
		}
		if len(p.LogQ) != c.depth+2 {
			t.Errorf("Choose(%d, %d): %d ciphertext primes", c.bits, c.depth, len(p.LogQ))
		}
		prod := new(big.Int).SetInt64(1)
		for _, q := range p.T {
			if !new(big.Int).SetUint64(q).ProbablyPrime(20) || q%(2<<uint(p.LogN)) != 1 || bits.Len64(q) > MaxTBits {
				t.Errorf("Choose(%d, %d): bad plaintext prime %d", c.bits, c.depth, q)
			}
			prod.Mul(prod, new(big.Int).SetUint64(q))
		}
		if prod.BitLen() > 64 || prod.Cmp(new(big.Int).Lsh(big.NewInt(1), uint(c.bits))) <= 0 || prod.Uint64() != p.Modulus() {
			t.Errorf("Choose(%d, %d): product %v of %v", c.bits, c.depth, prod, p.T)
		}
	}
	// The key-switching primes: as many as the table allows at the chosen N, up to MaxPPrimes.
	for _, c := range []struct{ depth, logN, primes int }{{3, 14, 2}, {4, 14, 1}, {5, 15, 3}, {10, 15, 2}, {11, 15, 1}} {
		p, err := Choose(40, c.depth)
		if err != nil {
			t.Fatal(err)
		}
		if p.LogN != c.logN || len(p.LogP) != c.primes {
			t.Errorf("depth %d: N = 2^%d with %d key-switching primes, want 2^%d and %d", c.depth, p.LogN, len(p.LogP), c.logN, c.primes)
		}
	}
	if _, err := Choose(64, 1); err == nil {
		t.Error("Choose accepted 64 bits")
	}
	if _, err := Choose(20, 13); err == nil {
		t.Error("Choose accepted a depth beyond the security table")
	}
}

// TestChooseTwoComponentsFor61Bits: 61 bits (LoLa CIFAR-10's need) take two 31-bit primes near
// 2^31 (their product exceeds 2^61), not three 21-bit ones; 55 bits keep two 29-bit primes, the
// smallest above 2^28 (the choice before this rule); PrimesBelow returns primes of b bits, ascending.
func TestChooseTwoComponentsFor61Bits(t *testing.T) {
	p, err := Choose(61, 5)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.T) != 2 || bits.Len64(p.T[0]) != 31 || bits.Len64(p.T[1]) != 31 {
		t.Fatalf("Choose(61, 5): primes %v, want two of 31 bits", p.T)
	}
	if hi, _ := bits.Mul64(p.T[0], p.T[1]); hi != 0 || p.Modulus()>>61 == 0 {
		t.Fatalf("Choose(61, 5): product %d of %v", p.Modulus(), p.T)
	}
	q, err := Choose(55, 5)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Primes(2, 29, 15)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q.T, want) {
		t.Fatalf("Choose(55, 5): primes %v, want %v", q.T, want)
	}
	below, err := PrimesBelow(3, 24, 15)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range below {
		if v >= 1<<24 || v <= 1<<23 || v%(1<<16) != 1 || !new(big.Int).SetUint64(v).ProbablyPrime(20) || i > 0 && v <= below[i-1] {
			t.Fatalf("PrimesBelow(3, 24, 15) = %v", below)
		}
	}
}
