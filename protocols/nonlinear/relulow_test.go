package nonlinear

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// lowValues returns n signed b-bit values in r: the edges (0, ±1, 2^(b−1)−1, −2^(b−1),
// −2^(b−1)+1, 2^(b−2) when b > 2), then random ones in [−2^(b−1), 2^(b−1)).
func lowValues(r ring.Ring, rng *rand.Rand, b, n int) []uint64 {
	half := int64(1) << (b - 1)
	vals := []int64{0, 1, -1, half - 1, -half, -half + 1}
	if b > 2 {
		vals = append(vals, half/2, -half/2)
	}
	out := make([]uint64, 0, n)
	for _, v := range vals {
		out = append(out, r.FromSigned(v))
	}
	for len(out) < n {
		v := int64(rng.Uint64()>>(64-b)) - half // uniform in [−2^(b−1), 2^(b−1))
		out = append(out, r.FromSigned(v))
	}
	return out[:n]
}

func TestReLULow(t *testing.T) { testReLULow(t, iknpSrc) }

// testReLULow checks ReLULow against the cleartext ReLU on b-bit values (edges and random, shared
// randomly and with wrapping share patterns, so that the shares' low bits wrap in every way).
func testReLULow(t *testing.T, src otSource) {
	rng := rand.New(rand.NewPCG(71, 72))
	for _, l := range src.ints([]int{8, 16, 37, 64}, []int{37, 64}) {
		p := newPairOn(t, src, l, Options{}, 2)
		r := p.r
		for _, b := range []int{2, 3, 5, l / 2, l - 1, l} {
			n := 700
			v := lowValues(r, rng, b, n)
			for _, wrap := range []bool{false, true} {
				var x0, x1 []uint64
				if wrap {
					x0, x1 = shareWrapping(r, rng, v)
				} else {
					x0, x1 = share(r, rng, v)
				}
				z0, z1 := make([]uint64, n), make([]uint64, n)
				p.run(t, func(s *Session, party int) error {
					if party == 0 {
						return s.ReLULow(context.Background(), z0, x0, b)
					}
					return s.ReLULow(context.Background(), z1, x1, b)
				})
				z := ringtest.Reconstruct(r, z0, z1)
				for i, a := range v {
					want := a
					if r.Signed(a) < 0 {
						want = 0
					}
					if z[i] != want {
						t.Fatalf("l=%d b=%d wrap=%v: ReLULow(%d) = %d", l, b, wrap, r.Signed(a), r.Signed(z[i]))
					}
				}
			}
		}
	}
}

// The low-bit ReLU's traffic is the formula for b bits, and b = l costs what ReLU does.
func TestCommunicationReLULow(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	const l = 64
	p := newPair(t, l, Options{}, 1)
	r := p.r
	for _, b := range []int{17, 24, l} {
		x := lowValues(r, rng, b, commBatch)
		x0, _ := share(r, rng, x)
		bits, flights := p.measure(t, commBatch, func(s *Session, party int) error {
			return s.ReLULow(context.Background(), make([]uint64, commBatch), x0, b)
		})
		checkComm(t, name("ReLULow l=%d b=%d m=%d", l, b, DefaultM), bits, ReLULowBits(b, l, DefaultM), 0)
		t.Logf("flights %d", flights)
	}
	if ReLULowBits(l, l, DefaultM) != ReLUBits(l, DefaultM) {
		t.Errorf("ReLULowBits(l, l) = %d, ReLUBits = %d", ReLULowBits(l, l, DefaultM), ReLUBits(l, DefaultM))
	}
	if pl := ChoosePlan(IKNPCost(), l); pl.ReLULow(17, l) != (Cost{Bits: ReLULowBits(17, l, pl.M)}) {
		t.Errorf("Plan.ReLULow %v, ReLULowBits %d", pl.ReLULow(17, l), ReLULowBits(17, l, pl.M))
	}
}

func TestReLULowArgs(t *testing.T) {
	p := newPair(t, 16, Options{}, 1)
	for _, b := range []int{0, 1, 17} {
		if err := p.s0.ReLULow(context.Background(), make([]uint64, 4), make([]uint64, 4), b); err == nil {
			t.Errorf("b=%d: no error", b)
		}
	}
	if err := p.s0.Err(); err != nil {
		t.Errorf("an argument error made the session unusable: %v", err)
	}
}
