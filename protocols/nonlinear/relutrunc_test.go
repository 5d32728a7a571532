package nonlinear

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// reluTruncValues returns n signed b-bit values in r for a shift by s: the edges (0, ±1, 2^s−1,
// 2^s, 2^s+1, −2^s, the largest positive, the most negative, values whose low s bits are all
// ones), then random b-bit values and small ones.
func reluTruncValues(r ring.Ring, rng *rand.Rand, b, s, n int) []uint64 {
	hiB := int64(1)<<(b-1) - 1 // largest positive b-bit value
	loB := -hiB - 1
	lowOnes := int64(1)<<s - 1
	vals := []int64{0, 1, -1, lowOnes, lowOnes + 1, lowOnes + 2, -lowOnes - 1, -lowOnes, hiB, loB, hiB - 1, loB + 1,
		hiB &^ lowOnes, (hiB >> 1) | lowOnes, loB | lowOnes, -2}
	out := make([]uint64, 0, n)
	for _, v := range vals {
		if v >= loB && v <= hiB {
			out = append(out, r.FromSigned(v))
		}
	}
	half := int64(1) << (b - 1)
	for len(out) < n {
		var v int64
		if len(out)%2 == 0 {
			v = int64(rng.Uint64()>>(64-b)) - half // uniform in [−2^(b−1), 2^(b−1))
		} else {
			k := min(s+2, 61)
			v = min(max(rng.Int64N(1<<(k+1))-1<<k, loB), hiB) // around 2^s
		}
		out = append(out, r.FromSigned(v))
	}
	return out[:n]
}

// reluTruncSpec is ReLU(v) >> s.
func reluTruncSpec(r ring.Ring, v uint64, s int) uint64 {
	if r.Signed(v) < 0 {
		return 0
	}
	return r.Trunc(v, s)
}

func TestReLUTrunc(t *testing.T) { testReLUTrunc(t, iknpSrc) }

// testReLUTrunc checks ReLUTrunc against ReLU(x) >> s on edge and random values, shared randomly
// and with wrapping share patterns, for full and low-bit operands.
func testReLUTrunc(t *testing.T, src otSource) {
	rng := rand.New(rand.NewPCG(81, 82))
	for _, l := range src.ints([]int{20, 32, 37, 64}, []int{20, 37}) {
		p := newPairOn(t, src, l, Options{}, 2)
		r := p.r
		for _, s := range []int{1, 12, l - 2} {
			for _, b := range []int{l, l - 1, s + 2, (s + 2 + l) / 2} {
				if !p.s0.ReLUTruncFuses(b, s) {
					if b >= s+2 {
						t.Fatalf("l=%d b=%d s=%d: not fused", l, b, s)
					}
					continue
				}
				n := 500
				v := reluTruncValues(r, rng, b, s, n)
				for _, wrap := range []bool{false, true} {
					var x0, x1 []uint64
					if wrap {
						x0, x1 = shareWrapping(r, rng, v)
					} else {
						x0, x1 = share(r, rng, v)
					}
					z0, z1 := make([]uint64, n), append([]uint64(nil), x1...)
					p.run(t, func(ss *Session, party int) error {
						if party == 0 {
							return ss.ReLUTrunc(context.Background(), z0, x0, b, s)
						}
						return ss.ReLUTrunc(context.Background(), z1, z1, b, s) // in place
					})
					z := ringtest.Reconstruct(r, z0, z1)
					for i, a := range v {
						if want := reluTruncSpec(r, a, s); z[i] != want {
							t.Fatalf("l=%d b=%d s=%d wrap=%v: ReLUTrunc(%d) = %d, want %d", l, b, s, wrap, r.Signed(a), r.Signed(z[i]), r.Signed(want))
						}
					}
				}
			}
		}
	}
}

// ReLUTrunc's traffic is ReLUTruncBits, it takes the ReLU's flights exactly (the truncation's are
// gone), and its bits agree with Plan.ReLUTrunc on IKNP.
func TestCommunicationReLUTrunc(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	ctx := context.Background()
	for _, tc := range []struct{ l, b, s int }{{32, 32, 12}, {37, 37, 12}, {37, 30, 12}, {64, 64, 1}, {64, 64, 62}, {20, 20, 18}} {
		p := newPair(t, tc.l, Options{}, 1)
		r := p.r
		x := reluTruncValues(r, rng, tc.b, tc.s, commBatch)
		x0, _ := share(r, rng, x)
		// Every measurement starts from the same OT roles, as an inference does.
		measure := func(f func(ss *Session, party int) error) (float64, int64) {
			p.s0.ResetRoles()
			p.s1.ResetRoles()
			return p.measure(t, commBatch, f)
		}
		bits, flights := measure(func(ss *Session, party int) error {
			return ss.ReLUTrunc(ctx, make([]uint64, commBatch), x0, tc.b, tc.s)
		})
		what := name("ReLUTrunc l=%d b=%d s=%d m=%d", tc.l, tc.b, tc.s, DefaultM)
		checkComm(t, what, bits, ReLUTruncBits(tc.b, tc.l, tc.s, DefaultM), 0)
		if c := p.s0.Plan().ReLUTrunc(tc.b, tc.l, tc.s); c != (Cost{Bits: ReLUTruncBits(tc.b, tc.l, tc.s, DefaultM)}) {
			t.Errorf("%s: Plan.ReLUTrunc %v, ReLUTruncBits %d", what, c, ReLUTruncBits(tc.b, tc.l, tc.s, DefaultM))
		}
		reluBits, reluFlights := measure(func(ss *Session, party int) error {
			return ss.ReLULow(ctx, make([]uint64, commBatch), x0, tc.b)
		})
		truncBits, truncFlights := measure(func(ss *Session, party int) error {
			return ss.Trunc(ctx, make([]uint64, commBatch), x0, tc.s, true)
		})
		t.Logf("%s: fused %.0f bits/elt, %d flights; ReLU %.0f bits, %d flights + Trunc %.0f bits, %d flights",
			what, bits, flights, reluBits, reluFlights, truncBits, truncFlights)
		// The fused op takes the ReLU's flights when its split comparison takes the unsplit one's
		// (ResNet50's l = 37, s = 12 among them); otherwise those extra flights and at most one
		// more (the AND tree's parity decides whether the last OT's receiver sent last), and always
		// fewer than ReLU and truncation.
		extra := int64(newShallowSplitGroup(nil, tc.b-1, tc.s, DefaultM, true).flights() - newMillGroup(nil, tc.b-1, DefaultM, true).flights())
		switch {
		case extra == 0 && flights != reluFlights:
			t.Errorf("%s: %d flights, the ReLU alone takes %d", what, flights, reluFlights)
		case flights > reluFlights+extra+1 || flights >= reluFlights+truncFlights:
			t.Errorf("%s: %d flights, the ReLU alone takes %d, the split comparison %d more, the truncation %d", what, flights, reluFlights, extra, truncFlights)
		}
		if tc.l == 37 && tc.b == 37 && extra != 0 {
			t.Errorf("%s: the split comparison takes %d flights more than the ReLU's", what, extra)
		}
	}
}

func TestReLUTruncArgs(t *testing.T) {
	p := newPair(t, 16, Options{}, 1)
	for _, c := range []struct{ b, s int }{{0, 1}, {1, 1}, {2, 1}, {17, 3}, {16, 0}, {16, 15}, {5, 4}, {16, -1}} {
		if err := p.s0.ReLUTrunc(context.Background(), make([]uint64, 4), make([]uint64, 4), c.b, c.s); err == nil {
			t.Errorf("b=%d s=%d: no error", c.b, c.s)
		}
	}
	if err := p.s0.ReLUTrunc(context.Background(), make([]uint64, 3), make([]uint64, 4), 16, 4); err == nil {
		t.Error("short dst: no error")
	}
	if err := p.s0.Err(); err != nil {
		t.Errorf("an argument error made the session unusable: %v", err)
	}
}
