package nonlinear

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Chunks and their schedule.
//
// A stream builds at most Options.Budget words of OT messages at a time, so a
// large batch runs as chunks of chunkSize elements. Run one after another,
// every chunk pays the protocol's full depth in flights: a ReLU on 2^20
// elements at l = 32 is 44 chunks of ~8 flights each. Instead, chunks runs
// the chunks of a batch as coroutines interleaved round by round: every
// chunk's first step, then every chunk's second step, and so on, where a
// step ends when the chunk is about to receive after having sent (the
// transport's yield hook, transport.Conn.SetYield). Both parties interleave
// in the same order, so the frames of chunk i in round r are where the peer
// reads them, and the batch costs the protocol's depth in flights, not the
// depth times the number of chunks. What a chunk keeps between its steps is
// its share state and the OT receiver's outputs (a few words per element);
// the OT sender's messages, which the budget is about, are built and sent
// within one step and shared by the chunks (sendScratch). The first chunk
// runs alone and measures its bytes; the rest run in groups whose rounds fit
// interleaveWindow, the peer's traffic a party may have to buffer.
//
// A silent OT source refills its reservoir by an interactive iteration on
// the stream's connection; inside an interleaved round that iteration's
// frames would meet the other chunks' frames out of order. So on such a
// source the first chunk also measures the COTs a chunk draws in each
// direction, each later group starts with a refill if fewer than a chunk's
// draws are left (ot.Reservoir.Renew drops those few), and a group is at
// most as many chunks as the reservoir then serves. Each chunk of a group
// draws from its own carved range of the reservoir (ot.Session.Carve,
// which never refills: a miscount fails loudly, identically at both
// parties): silent draws send nothing, so the parties may interleave them
// in different orders, and a shared cursor would pair different COTs. With
// B13 (~9.9 M COTs per iteration) that is one group per iteration's worth of
// elements.

// errStopped is what a chunk's receive returns when its batch was abandoned
// (another chunk failed).
var errStopped = errors.New("nonlinear: batch abandoned after another chunk failed")

// chunks runs f on the consecutive ranges [a, b) of [0, n) of at most size
// elements, each on its own copy of the stream (its own receive buffers and
// flight schedule), interleaved round by round (see above) unless the
// session runs them sequentially.
func (st *stream) chunks(ctx context.Context, n, size int, f func(ctx context.Context, st *stream, a, b int) error) error {
	k := (n + size - 1) / size
	bounds := func(c int) [2]int { return [2]int{c * size, min(n, (c+1)*size)} }
	alone := func(c int) error { b := bounds(c); return f(ctx, st, b[0], b[1]) }
	if k <= 1 || st.sequential {
		for c := range k {
			if err := alone(c); err != nil {
				return err
			}
		}
		return nil
	}
	// The chunks' receive buffers pass from group to group (see fork) and
	// are released with the batch.
	defer func() { st.spare = nil }()
	// The first chunk runs alone and measures what a chunk sends and
	// draws (the last chunk, the only shorter one, needs no more). Which
	// party sent last decides the OT roles and so how a chunk's draws split
	// between the two directions: every group starts as chunk 0 did (both
	// parties agree on it; at worst it costs the group one flight).
	fs, silent := st.ot.Reservoir()
	var s0, r0 uint64
	if silent {
		s0, r0 = fs.Drawn()
	}
	t0 := st.conn.Stats()
	last := st.last
	if err := alone(0); err != nil {
		return err
	}
	t1 := st.conn.Stats().Sub(t0)
	// A party may hold up to a round of the peer's frames (see
	// interleaveWindow); a round of a chunk is at most the chunk's bytes
	// and frames.
	g0 := min(fits(interleaveWindow, uint64(max(t1.BytesSent, t1.BytesRecv, 1))),
		fits(transport.QueueFrames/2, uint64(max(t1.FramesSent, t1.FramesRecv, 1))))
	var perS, perR uint64
	if silent {
		s1, r1 := fs.Drawn()
		perS, perR = s1-s0, r1-r0
	}
	for i := 1; i < k; {
		g := min(k-i, g0)
		if silent && g > 1 {
			// Start the group with enough COTs for a chunk at least (the
			// few left over, under a chunk's worth, are dropped: a refill
			// inside a group would overtake the other chunks' frames).
			if err := fs.Renew(ctx, int(perS), int(perR)); err != nil {
				return err
			}
			as, ar := fs.Available()
			g = min(g, fits(as, perS), fits(ar, perR))
		}
		if g < 2 {
			// Room for one chunk only (on Ferret: a chunk that draws more
			// than an iteration gives, refilling as it goes).
			if err := alone(i); err != nil {
				return err
			}
			i++
			continue
		}
		st.last = last
		var ots []*ot.Session
		if silent {
			// Each chunk of the group draws from its own range of COTs, so
			// the order in which the chunks' silent draws interleave
			// (which differs between the parties) does not matter.
			ots = make([]*ot.Session, g)
			for j := range ots {
				c, err := st.ot.Carve(int(perS), int(perR))
				if err != nil {
					return fmt.Errorf("internal error: %w", err)
				}
				ots[j] = c
			}
		}
		ranges := make([][2]int, g)
		for j := range ranges {
			ranges[j] = bounds(i + j)
		}
		if err := st.interleave(ctx, ranges, ots, f); err != nil {
			return err
		}
		i += g
	}
	return nil
}

// interleaveWindow bounds the bytes of the peer's frames a party buffers
// during an interleaved group. The peer can be a round ahead: it sends round
// r+1 of chunks 0..c while this party still works through round r of the
// chunks after c, so a group holds at most this window of the peer's
// traffic and each party raises its transport read-ahead to it for the
// group (otherwise two parties writing whole rounds to each other would
// block each other's writes); likewise a group's round holds at most half
// of the transport's frame queue (transport.QueueFrames). Constants, not
// local options, since both parties must size the groups alike.
const interleaveWindow = 48 << 20

// fits is how many chunks drawing per COTs each avail COTs serve.
func fits[T int | int64](avail T, per uint64) int {
	if per == 0 {
		return math.MaxInt
	}
	return int(uint64(avail) / per)
}

// fork returns a copy of st for chunk j of an interleaved group: the same OT
// source, connection, randomness and sender buffers, its own receive
// buffers (those chunk j of the batch's previous group had: fresh buffers
// would cost their page faults again) and flight schedule.
func (st *stream) fork(j int) *stream {
	cs := *st
	cs.sc = scratch{}
	if j < len(st.spare) {
		cs.sc = st.spare[j]
	}
	cs.spare = nil
	return &cs
}

// chunkRun is one chunk of an interleaved batch.
type chunkRun struct {
	st    *stream
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	err   error
	done  bool
}

// interleave runs f on the ranges as coroutines, one step of each in turn
// per round, and ends this party's flight after each round.
// ots, if not nil, gives each chunk its own OT source.
func (st *stream) interleave(ctx context.Context, ranges [][2]int, ots []*ot.Session, f func(ctx context.Context, st *stream, a, b int) error) error {
	var cur *chunkRun
	hook := func() error {
		if !cur.yield(struct{}{}) {
			return errStopped
		}
		return nil
	}
	prev := st.conn.SetYield(hook)
	defer func() { st.conn.SetYield(prev) }() // restores prev (what it returns is this hook)
	if got := st.conn.SetReadAhead(interleaveWindow); got < interleaveWindow {
		st.conn.SetReadAhead(0)
		return fmt.Errorf("interleaving chunks needs the transport to buffer %d MiB of the peer's frames, but its MaxQueued allows %d MiB", interleaveWindow>>20, got>>20)
	}
	defer st.conn.SetReadAhead(0)
	runs := make([]*chunkRun, len(ranges))
	for i, r := range ranges {
		c := &chunkRun{st: st.fork(i)}
		if ots != nil {
			c.st.ot = ots[i]
		}
		c.next, c.stop = iter.Pull(func(yield func(struct{}) bool) {
			c.yield = yield
			c.err = f(ctx, c.st, r[0], r[1])
		})
		runs[i] = c
	}
	defer func() {
		// Stopping an unfinished chunk makes its pending give-way return
		// false; its receive then fails with errStopped and it unwinds,
		// running as cur.
		for _, c := range runs {
			cur = c
			c.stop()
		}
	}()
	for live := len(runs); live > 0; {
		for _, c := range runs {
			if c.done {
				continue
			}
			cur = c
			st.conn.SetYield(hook) // c has sent nothing yet in this step
			if _, ok := c.next(); ok {
				continue
			}
			c.done = true
			live--
			if c.err != nil {
				return c.err
			}
		}
		if err := st.conn.Flush(ctx); err != nil {
			return err
		}
		st.conn.EndFlight()
	}
	if len(st.spare) < len(runs) {
		st.spare = append(st.spare, make([]scratch, len(runs)-len(st.spare))...)
	}
	for i, c := range runs {
		st.spare[i] = c.st.sc
	}
	// Every chunk ran the same schedule, so they agree on who sent last.
	st.last = runs[0].st.last
	for i, c := range runs {
		if c.st.last != st.last {
			return fmt.Errorf("internal error: chunk %d of an interleaved batch ended with party %d sending last, chunk 0 with party %d", i, c.st.last, st.last)
		}
	}
	return nil
}
