package scheme

import (
	"slices"
	"testing"

	lring "github.com/tuneinsight/lattigo/v6/ring"

	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
)

// TestParamsMatchLattigo checks, for every ring, that heplan's lattigo-free prime search found
// exactly the primes lattigo's NTT-friendly generator gives for the same sizes (the reply primes
// at 60 bits, the others at their bit length), and that lattigo builds its rings on them.
func TestParamsMatchLattigo(t *testing.T) {
	for l := 1; l <= 64; l++ {
		hp, err := heplan.ParamsFor(l)
		if err != nil {
			t.Fatal(err)
		}
		nth := uint64(2 * hp.N())
		g := lring.NewNTTFriendlyPrimesGenerator(60, nth)
		reply, err := g.NextDownstreamPrimes(hp.R)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(reply, hp.Q[:hp.R]) {
			t.Fatalf("l=%d: reply primes %v, lattigo %v", l, hp.Q[:hp.R], reply)
		}
		if rest := hp.Q[hp.R:]; len(rest) > 0 {
			g := lring.NewNTTFriendlyPrimesGenerator(uint64(hp.QBits[hp.R]), nth)
			want, err := g.NextDownstreamPrimes(len(rest))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rest, want) {
				t.Fatalf("l=%d: primes %v, lattigo %v", l, rest, want)
			}
		}
		p, err := NewParams(hp)
		if err != nil {
			t.Fatalf("l=%d: %v", l, err)
		}
		if p.rq.N() != hp.N() || p.rq.ModuliChainLength() != len(hp.Q) || p.rr.Level()+1 != hp.R {
			t.Fatalf("l=%d: lattigo rings of degree %d with %d and %d primes, want %d, %d, %d",
				l, p.rq.N(), p.rq.ModuliChainLength(), p.rr.Level()+1, hp.N(), len(hp.Q), hp.R)
		}
	}
	bad := *heplanMust(t, 37)
	bad.Q = append([]uint64{bad.Q[0] + 2}, bad.Q[1:]...)
	if _, err := NewParams(&bad); err == nil {
		t.Error("a modulus that is not an NTT-friendly prime: no error")
	}
}

func heplanMust(t *testing.T, l int) *heplan.Params {
	t.Helper()
	hp, err := heplan.ParamsFor(l)
	if err != nil {
		t.Fatal(err)
	}
	return hp
}
