package linear

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
	"github.com/cryptflow-go/cryptflow/protocols/ring"
	"github.com/cryptflow-go/cryptflow/protocols/streams"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

var testOpt = transport.Options{Timeout: 20 * time.Second}

// pair is a connected pair of linear sessions over k in-memory streams.
type pair struct {
	r      ring.Ring
	s0, s1 *Session
	c0, c1 []*transport.Conn
}

func newPair(t testing.TB, l int, opt Options, nstreams int) *pair {
	t.Helper()
	p := &pair{r: ring.Must(l)}
	p.c0, p.c1 = ottest.Pipes(t, nstreams, testOpt)
	o0, o1 := ottest.Sessions(t, p.c0, p.c1)
	ctx := context.Background()
	testenv.MustBoth(t, func() (err error) { p.s0, err = New(ctx, p.r, opt, streams.Of(o0)...); return },
		func() (err error) { p.s1, err = New(ctx, p.r, opt, streams.Of(o1)...); return })
	return p
}

// stats returns the total traffic of both parties so far.
func (p *pair) stats() transport.Stats {
	var s transport.Stats
	for _, c := range append(append([]*transport.Conn(nil), p.c0...), p.c1...) {
		s = s.Add(c.Stats())
	}
	return s
}

// share splits v into random additive shares; every seventh element gets a share pattern at the
// edges of the ring (0, 2^(l−1), 2^(l−1)−1, −1, all at party 1).
func share(r ring.Ring, rng *rand.Rand, v []uint64) (x0, x1 []uint64) {
	x0, x1 = make([]uint64, len(v)), make([]uint64, len(v))
	half := uint64(1) << (r.Bits - 1)
	for i, a := range v {
		var s uint64
		switch i % 7 {
		case 1:
			s = 0
		case 2:
			s = half
		case 3:
			s = half - 1
		case 4:
			s = r.Mask()
		case 5:
			s = a
		default:
			s = r.Reduce(rng.Uint64())
		}
		x0[i] = s
		x1[i] = r.Sub(a, s)
	}
	return
}

// values returns n ring elements: edge values first, then random ones of random magnitude.
func values(r ring.Ring, rng *rand.Rand, n int) []uint64 {
	v := []uint64{0, 1, r.Mask(), uint64(1) << (r.Bits - 1), r.Mask() >> 1, 2, r.Mask() - 1}
	for len(v) < n {
		sh := rng.IntN(r.Bits + 1)
		x := rng.Uint64() >> (64 - max(sh, 1))
		if rng.IntN(2) == 0 {
			x = -x
		}
		v = append(v, r.Reduce(x))
	}
	return v[:n]
}

func reconstruct(r ring.Ring, a, b []uint64) []uint64 {
	out := make([]uint64, len(a))
	for i := range a {
		out[i] = r.Add(a[i], b[i])
	}
	return out
}

// refMatMul is the plain definition: dst[i,j] = Σ_t w[i,t]·x[t,j] mod 2^l.
func refMatMul(r ring.Ring, w []uint64, m, k, n int, x []uint64) []uint64 {
	out := make([]uint64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s uint64
			for t := 0; t < k; t++ {
				s += w[i*k+t] * x[t*n+j]
			}
			out[i*n+j] = r.Reduce(s)
		}
	}
	return out
}
