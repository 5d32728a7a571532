// Package ottest connects the two parties of OT-based protocols inside one test process (pipes
// between them, an IKNP OT session with forks over those pipes or any other connections), and
// holds the conformance suite that every OT source — every ot.Core — must pass ([Conformance]).
// Only tests import it; it depends on no internal package.
package ottest

import (
	"context"
	"sync"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/iknp"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Both runs f0 and f1 (the two parties) concurrently and returns their errors.
func Both(f0, f1 func() error) (e0, e1 error) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); e0 = f0() }()
	go func() { defer wg.Done(); e1 = f1() }()
	wg.Wait()
	return e0, e1
}

// MustBoth runs f0 and f1 concurrently and fails the test if either returns an error.
func MustBoth(t testing.TB, f0, f1 func() error) {
	t.Helper()
	if e0, e1 := Both(f0, f1); e0 != nil || e1 != nil {
		t.Fatalf("party 0: %v; party 1: %v", e0, e1)
	}
}

// Pipes returns k in-memory connections between party 0 (c0[i]) and party 1 (c1[i]), closed when
// the test ends.
func Pipes(t testing.TB, k int, opt transport.Options) (c0, c1 []*transport.Conn) {
	t.Helper()
	for i := 0; i < k; i++ {
		a, b := transport.Pipe(opt)
		t.Cleanup(func() { a.Close(); b.Close() })
		c0, c1 = append(c0, a), append(c1, b)
	}
	return c0, c1
}

// Sessions starts the IKNP OT streams of both parties over the connection pairs (c0[i], c1[i]):
// an ot.Session on the first pair and forks of it on the others. It fails the test on any
// error.
func Sessions(t testing.TB, c0, c1 []*transport.Conn) (o0, o1 []*ot.Session) {
	t.Helper()
	if len(c0) == 0 || len(c0) != len(c1) {
		t.Fatalf("ottest: Sessions: %d and %d connections", len(c0), len(c1))
	}
	ctx := context.Background()
	var s0, s1 *ot.Session
	MustBoth(t, func() (err error) { s0, err = iknp.NewSession(ctx, c0[0], 0); return },
		func() (err error) { s1, err = iknp.NewSession(ctx, c1[0], 1); return })
	o0, o1 = []*ot.Session{s0}, []*ot.Session{s1}
	for i := 1; i < len(c0); i++ {
		var f0, f1 *ot.Session
		MustBoth(t, func() (err error) { f0, err = s0.Fork(ctx, c0[i]); return },
			func() (err error) { f1, err = s1.Fork(ctx, c1[i]); return })
		o0, o1 = append(o0, f0), append(o1, f1)
	}
	return o0, o1
}

// RandomChoice hides every optional interface of a core (ot.ChosenCore, ot.OTNCore,
// ot.Reservoir, ot.Forker): a session over it takes the generic paths of the derived layer
// (derandomised choice bits, 1-of-N from log2 N COTs). Both parties must wrap their cores.
type RandomChoice struct{ ot.Core }
