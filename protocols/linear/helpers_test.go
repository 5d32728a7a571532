package linear

import (
	"context"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
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
	testenv.MustBoth(t, func() (err error) { p.s0, err = New(ctx, p.r, opt, o0...); return },
		func() (err error) { p.s1, err = New(ctx, p.r, opt, o1...); return })
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
