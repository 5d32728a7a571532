package nonlinear

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ferret"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

var testOpt = transport.Options{Timeout: 20 * time.Second}

// otPair holds the OT streams of both parties.
type otPair struct {
	o0, o1 []*ot.Session
	c0, c1 []*transport.Conn
	// f0, f1 are the Ferret sessions over o0, o1 when the pair runs on
	// silent OT.
	f0, f1 []*ot.Session
}

// otSource is the OT source a test pair runs on.
type otSource struct {
	name   string
	ferret *ferret.Config // nil: IKNP
}

var (
	iknpSrc   = otSource{name: "iknp"}
	ferretSrc = otSource{name: "ferret", ferret: &testFerret}
)

// testFerret is a Ferret parameter set for tests only (far from 128-bit
// LPN security): 13,824 COTs per iteration, so that the protocols' batches
// run through many refills.
var testFerret = ferret.Config{Name: "test", Main: ferret.Params{N: 1 << 14, T: 64, K: 2048, LogBin: 8}}

// ints returns full on IKNP and the representative subset on Ferret (the
// Ferret runs repeat a part of each table so the suite's time does not
// double).
func (s otSource) ints(full, subset []int) []int {
	if s.ferret != nil {
		return subset
	}
	return full
}

// ots returns the streams of party i as OT sources.
func (p *otPair) ots(i int) []*ot.Session {
	switch {
	case i == 0 && p.f0 != nil:
		return p.f0
	case i == 1 && p.f1 != nil:
		return p.f1
	case i == 0:
		return p.o0
	}
	return p.o1
}

// newOTPairOn connects the parties with k streams of src.
func newOTPairOn(t testing.TB, src otSource, k int) *otPair {
	t.Helper()
	p := newOTPair(t, k)
	if src.ferret == nil {
		return p
	}
	ctx := context.Background()
	for i := range k {
		var a, b *ot.Session
		testenv.MustBoth(t, func() (err error) { a, err = ferret.NewSession(ctx, p.o0[i], *src.ferret, ferret.Options{}); return },
			func() (err error) { b, err = ferret.NewSession(ctx, p.o1[i], *src.ferret, ferret.Options{}); return })
		p.f0, p.f1 = append(p.f0, a), append(p.f1, b)
	}
	return p
}

// cotsUsed is the number of COTs both parties' Ferret streams handed out.
func (p *otPair) cotsUsed() (n uint64) {
	for _, f := range append(append([]*ot.Session(nil), p.f0...), p.f1...) {
		n += ferret.CoreOf(f).SenderCOT().Used()
	}
	return n
}

// iterations is the number of main Ferret iterations run on all streams
// (each counted once, at its sender).
func (p *otPair) iterations() (n int) {
	for _, f := range append(append([]*ot.Session(nil), p.f0...), p.f1...) {
		n += ferret.CoreOf(f).SenderCOT().Iterations()
	}
	return n
}

// newOTPair connects the parties with k streams over in-memory pipes.
func newOTPair(t testing.TB, k int) *otPair {
	t.Helper()
	p := &otPair{}
	p.c0, p.c1 = ottest.Pipes(t, k, testOpt)
	p.o0, p.o1 = ottest.Sessions(t, p.c0, p.c1)
	return p
}

// pair is a connected pair of nonlinear sessions.
type pair struct {
	r      ring.Ring
	s0, s1 *Session
	ots    *otPair
}

func newPair(t testing.TB, l int, opt Options, nstreams int) *pair {
	t.Helper()
	return newPairOn(t, iknpSrc, l, opt, nstreams)
}

// newPairOn is newPair on the OT source src.
func newPairOn(t testing.TB, src otSource, l int, opt Options, nstreams int) *pair {
	t.Helper()
	r := ring.Must(l)
	p := &pair{r: r, ots: newOTPairOn(t, src, nstreams)}
	ctx := context.Background()
	testenv.MustBoth(t, func() (err error) { p.s0, err = New(ctx, r, opt, p.ots.ots(0)...); return },
		func() (err error) { p.s1, err = New(ctx, r, opt, p.ots.ots(1)...); return })
	return p
}

// stats returns the total traffic of both parties so far.
func (p *pair) stats() transport.Stats {
	var s transport.Stats
	for _, c := range p.ots.c0 {
		s = s.Add(c.Stats())
	}
	for _, c := range p.ots.c1 {
		s = s.Add(c.Stats())
	}
	return s
}

// run runs f at both parties (party index passed) and fails on error.
func (p *pair) run(t testing.TB, f func(s *Session, party int) error) {
	t.Helper()
	testenv.MustBoth(t, func() error { return f(p.s0, 0) }, func() error { return f(p.s1, 1) })
}

// measure runs f at both parties and returns the bits sent per element
// (both directions) and the flights (sum over both parties and all streams).
func (p *pair) measure(t testing.TB, n int, f func(s *Session, party int) error) (bitsPerElt float64, flights int64) {
	t.Helper()
	before := p.stats()
	p.run(t, f)
	d := p.stats().Sub(before)
	return 8 * float64(d.BytesSent) / float64(n), d.Rounds
}

// share splits values into two random additive shares.
func share(r ring.Ring, rng *rand.Rand, v []uint64) (x0, x1 []uint64) {
	x0, x1 = make([]uint64, len(v)), make([]uint64, len(v))
	for i, a := range v {
		x0[i] = r.Reduce(rng.Uint64())
		x1[i] = r.Sub(a, x0[i])
	}
	return
}

// shareWrapping splits values with share patterns that stress the
// protocols' wrap-around cases: each element gets one of a few patterns
// (random, party 0 share 0, party 0 share 2^(l−1) or 2^(l−1)−1 or −1, ...).
func shareWrapping(r ring.Ring, rng *rand.Rand, v []uint64) (x0, x1 []uint64) {
	x0, x1 = make([]uint64, len(v)), make([]uint64, len(v))
	half := uint64(1) << (r.Bits - 1)
	for i, a := range v {
		var s uint64
		switch i % 7 {
		case 0:
			s = r.Reduce(rng.Uint64())
		case 1:
			s = 0
		case 2:
			s = half
		case 3:
			s = half - 1
		case 4:
			s = r.Mask()
		case 5:
			s = a // party 1 holds 0
		case 6:
			s = r.Add(a, half) // both shares' signs differ from the value's
		}
		x0[i] = s
		x1[i] = r.Sub(a, s)
	}
	return
}

func reconstructBits(b0, b1 []uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = bitvec.Bit(b0, i) ^ bitvec.Bit(b1, i)
	}
	return out
}

// edgeValues returns the signed edge values of Z_2^l.
func edgeValues(r ring.Ring) []uint64 {
	half := int64(1) << (r.Bits - 2) // 2^(l−2) as int64 for l ≤ 64 safely
	vals := []int64{0, 1, -1, 2, -2, r.MaxSigned(), r.MinSigned(), r.MaxSigned() - 1, r.MinSigned() + 1,
		half, -half, half - 1, -half + 1}
	out := make([]uint64, len(vals))
	for i, v := range vals {
		out[i] = r.FromSigned(v)
	}
	return out
}

// testValues returns n values: the edge values, then random ring elements,
// then small random signed values.
func testValues(r ring.Ring, rng *rand.Rand, n int) []uint64 {
	v := edgeValues(r)
	for len(v) < n {
		switch len(v) % 3 {
		case 0:
			v = append(v, r.Reduce(rng.Uint64()))
		case 1:
			v = append(v, r.FromSigned(rng.Int64N(2001)-1000))
		default:
			sh := rng.IntN(r.Bits)
			v = append(v, r.FromSigned(int64(rng.Uint64()>>1)>>(63-sh)*int64(1-2*rng.IntN(2))))
		}
	}
	return v[:n]
}

var testRings = []int{8, 16, 32, 37, 41, 64}

func name(format string, a ...any) string { return fmt.Sprintf(format, a...) }
