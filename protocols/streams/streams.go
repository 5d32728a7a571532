// Package streams runs a protocol session's work over several OT streams (connections to the
// same peer): it checks the OT sessions a protocol session is built on, exchanges and compares the
// protocol's hello on a stream, splits a batch into one contiguous part per stream, runs the
// parts concurrently, and after a failure keeps the error and aborts every connection so that
// the peer fails at once instead of waiting for a timeout. Packages linear and nonlinear build
// their Sessions on it.
package streams

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// MaxStreams is the largest number of streams (a hello carries the count in one byte).
const MaxStreams = 255

// Party checks OT sessions meant to be the streams of one protocol session (at least one, at
// most MaxStreams, none nil or failed, all for the same party) and returns this party's index.
// proto names the protocol package in errors ("linear: New: ...").
func Party(proto string, sessions []*ot.Session) (int, error) {
	if len(sessions) == 0 {
		return 0, fmt.Errorf("%s: New: no OT session", proto)
	}
	if len(sessions) > MaxStreams {
		return 0, fmt.Errorf("%s: New: %d OT sessions, at most %d", proto, len(sessions), MaxStreams)
	}
	party := -1
	for i, o := range sessions {
		if o == nil {
			return 0, fmt.Errorf("%s: New: OT session %d is nil", proto, i)
		}
		if err := o.Err(); err != nil {
			return 0, fmt.Errorf("%s: New: OT session %d is unusable: %w", proto, i, err)
		}
		if party >= 0 && o.Party() != party {
			return 0, fmt.Errorf("%s: New: OT sessions disagree on this party (%d and %d)", proto, party, o.Party())
		}
		party = o.Party()
	}
	return party, nil
}

// Group is the failure state and the work splitting shared by the streams of one protocol
// session. Like the sessions using it, it is not safe for concurrent use (Run's parts run
// concurrently, but Run itself is one call).
type Group struct {
	proto    string
	conns    []*transport.Conn
	minSplit int
	err      error
}

// NewGroup returns the Group of the streams with the given connections (stream i on conns[i]).
// proto names the protocol package in errors; batches with less work than minSplit are not
// split.
func NewGroup(proto string, minSplit int, conns []*transport.Conn) *Group {
	return &Group{proto: proto, conns: conns, minSplit: minSplit}
}

// Err returns the error that made the session unusable, or nil.
func (g *Group) Err() error { return g.err }

// Usable returns an error wrapping the earlier failure if there was one, else nil.
func (g *Group) Usable(op string) error {
	if g.err != nil {
		return fmt.Errorf("%s: %s: session unusable after an earlier failure: %w", g.proto, op, g.err)
	}
	return nil
}

// Fail records err (the first failure only), aborts every stream's connection so that the peer
// fails fast, and returns err wrapped with the protocol and op.
func (g *Group) Fail(ctx context.Context, op string, err error) error {
	err = fmt.Errorf("%s: %s: %w", g.proto, op, err)
	if g.err == nil {
		g.err = err
		reason := g.proto + ": " + op + " failed at the peer"
		// A failure of a third party the peer does not see (sci3's helper) is named, so that
		// the peer does not blame this party.
		var third interface {
			error
			Helper() string
		}
		if errors.As(err, &third) {
			reason += ": " + third.Error()
		}
		for _, c := range g.conns {
			_ = c.Abort(context.WithoutCancel(ctx), reason)
		}
	}
	return err
}

// Parts splits n items that stand for the given amount of work into one contiguous range per
// stream, each starting at a multiple of unit, or into one range when the work is below the
// split threshold, there is one stream, or n holds fewer units than there are streams.
func (g *Group) Parts(n, work, unit int) [][2]int {
	k := len(g.conns)
	units := n / unit
	if work < g.minSplit || k == 1 || units < k {
		return [][2]int{{0, n}}
	}
	out := make([][2]int, 0, k)
	start := 0
	for i := 0; i < k; i++ {
		end := units * (i + 1) / k * unit
		if i == k-1 {
			end = n
		}
		out = append(out, [2]int{start, end})
		start = end
	}
	return out
}

// Run executes f on every part, part i on stream i, concurrently when there are several. On
// the first failure the other parts are cancelled and the group is failed (see Fail) with the
// root cause rather than a cancellation it triggered.
func (g *Group) Run(ctx context.Context, op string, parts [][2]int, f func(ctx context.Context, i, lo, hi int) error) error {
	if len(parts) == 1 {
		if err := f(ctx, 0, parts[0][0], parts[0][1]); err != nil {
			return g.Fail(ctx, op, err)
		}
		return nil
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for i, p := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := f(cctx, i, p[0], p[1]); err != nil {
				errs[i] = fmt.Errorf("stream %d: %w", i, err)
				cancel()
			}
		}()
	}
	wg.Wait()
	var first error
	for _, e := range errs {
		if e != nil && (first == nil || errors.Is(first, context.Canceled) && !errors.Is(e, context.Canceled)) {
			first = e
		}
	}
	if first != nil {
		return g.Fail(ctx, op, first)
	}
	return nil
}
