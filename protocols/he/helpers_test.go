package he

import (
	"context"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

var testOpt = transport.Options{Timeout: 60 * time.Second}

type pair struct {
	r      ring.Ring
	s0, s1 *Session
	c0, c1 *transport.Conn
	calls  int
}

func newPair(t testing.TB, l int, opt Options) *pair {
	t.Helper()
	p := &pair{r: ring.Must(l)}
	p.c0, p.c1 = transport.Pipe(testOpt)
	t.Cleanup(func() { p.c0.Close(); p.c1.Close() })
	ctx := context.Background()
	testenv.MustBoth(t, func() (err error) { p.s0, err = New(ctx, p.r, 0, p.c0, opt); return },
		func() (err error) { p.s1, err = New(ctx, p.r, 1, p.c1, opt); return })
	return p
}

func (p *pair) bytes() int64 { return p.c0.Stats().BytesSent + p.c1.Stats().BytesSent }

func (p *pair) rounds() int64 { return p.c0.Stats().Rounds + p.c1.Stats().Rounds }

// wantRounds is the number of flights of the next call: party 1's upload and party 0's reply, but
// the first call's upload follows party 1's public key in the same flight.
func (p *pair) wantRounds() int64 {
	p.calls++
	if p.calls == 1 {
		return 1
	}
	return 2
}
