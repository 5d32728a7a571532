package ferret

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// chunk is the number of instances per frame of a derived batch (Core.Frame).
const chunk = 1 << 15

// purposeOTN is the tweak purpose of the derived 1-of-N OTs (see the tweak domains in cot.go).
const purposeOTN = 3

// Core is the Ferret source of package ot: two COT streams on one connection, one in which this
// party is the COT sender and one in which it receives. The receiver's choice bits are random
// (a Core is not an ot.ChosenCore), and it is an ot.Reservoir and an ot.Forker. A Core is not
// safe for concurrent use.
type Core struct {
	base    *ot.Session // the session the streams bootstrapped from (for Fork)
	cfg     Config
	opt     Options
	party   int
	conn    *transport.Conn
	out, in *COT // this party sends / receives COTs
	err     error
}

// NewSession sets up both COT directions over s with the same config at both parties (party
// 0's stream as sender first) and returns the OT session derived from them (see ot.Session).
func NewSession(ctx context.Context, s *ot.Session, cfg Config, opt Options) (*ot.Session, error) {
	c, err := NewCore(ctx, s, cfg, opt)
	if err != nil {
		return nil, err
	}
	return ot.New(c)
}

// NewCore sets up both COT directions over s (see NewSession).
func NewCore(ctx context.Context, s *ot.Session, cfg Config, opt Options) (*Core, error) {
	if s == nil {
		return nil, errors.New("ferret: NewSession: nil OT session")
	}
	c := &Core{base: s, cfg: cfg, opt: opt, party: s.Party(), conn: s.Conn()}
	first, second := Sender, Receiver
	if c.party == 1 {
		first, second = Receiver, Sender
	}
	for _, r := range []Role{first, second} {
		st, err := New(ctx, s, r, cfg, opt)
		if err != nil {
			return nil, err
		}
		if r == Sender {
			c.out = st
		} else {
			c.in = st
		}
	}
	return c, nil
}

// CoreOf returns the Ferret core of s, or nil if s derives its OTs from another source.
func CoreOf(s *ot.Session) *Core {
	if s == nil {
		return nil
	}
	c, _ := s.Core().(*Core)
	return c
}

// Fork returns a new Core on conn (a second connection to the same peer) for use from another
// goroutine: it forks the underlying OT session (no new base OTs) and bootstraps two new COT
// streams on it (their own IKNP batch and pre-iteration: SetupBytes per direction). Both
// parties must fork in the same order.
func (c *Core) Fork(ctx context.Context, conn *transport.Conn) (ot.Core, error) {
	o, err := c.base.Fork(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("ferret: Fork: %w", err)
	}
	return NewCore(ctx, o, c.cfg, c.opt)
}

// Party returns this party's index (0 or 1).
func (c *Core) Party() int { return c.party }

// Conn returns the connection.
func (c *Core) Conn() *transport.Conn { return c.conn }

// Err returns the error that made the core unusable, or nil.
func (c *Core) Err() error {
	if c.err != nil {
		return c.err
	}
	if c.out.err != nil {
		return c.out.err
	}
	return c.in.err
}

// Delta returns Δ of the stream in which this party sends.
func (c *Core) Delta() prg.Block { return c.out.delta }

// Config returns the parameter set.
func (c *Core) Config() Config { return c.cfg }

// SenderCOT returns the stream in which this party sends COTs.
func (c *Core) SenderCOT() *COT { return c.out }

// ReceiverCOT returns the stream in which this party receives COTs.
func (c *Core) ReceiverCOT() *COT { return c.in }

// stream returns the COT stream in which party sender sends.
func (c *Core) stream(sender int) *COT {
	if sender == c.party {
		return c.out
	}
	return c.in
}

// Count returns the COTs drawn so far in a direction.
func (c *Core) Count(send bool) uint64 {
	if send {
		return c.out.Used()
	}
	return c.in.Used()
}

// Domain returns the tweak high word of the derived OTs on the stream in which party sender
// sends (its low 16 bits are zero).
func (c *Core) Domain(sender int, purpose uint8) uint64 {
	p := purposeDerived
	if purpose == ot.PurposeOTN {
		p = purposeOTN
	}
	return c.stream(sender).domain(p, 0)
}

// Frame is the number of instances per frame of a derived batch.
func (c *Core) Frame() int { return chunk }

// SendCOT draws n COTs at the sender without copying them out of the reservoir: f gets each
// piece (a piece ends where a unit of the reservoir ends, see COT.view).
func (c *Core) SendCOT(ctx context.Context, n int, f func(off int, k []prg.Block)) error {
	for off := 0; off < n; {
		v, err := c.out.view(ctx, n-off, n-off)
		if err != nil {
			return err
		}
		f(off, v.k)
		off += len(v.k)
	}
	return nil
}

// RecvCOT is SendCOT at the receiver; f also gets the piece's choice bits.
func (c *Core) RecvCOT(ctx context.Context, n int, f func(off int, m []prg.Block, bits []uint64, bit int)) error {
	for off := 0; off < n; {
		v, err := c.in.view(ctx, n-off, n-off)
		if err != nil {
			return err
		}
		f(off, v.k, v.bits, v.bit)
		off += len(v.k)
	}
	return nil
}

// Available returns how many COTs this party can draw as sender and as receiver before the
// next refill (an interactive iteration).
func (c *Core) Available() (send, recv int) { return c.out.Available(), c.in.Available() }

// Drawn returns the COTs this party has drawn so far as sender and as receiver.
func (c *Core) Drawn() (send, recv uint64) { return c.out.Used(), c.in.Used() }

// Renew makes sure that at least send COTs are available to this party as sender and recv as
// receiver without a refill in the middle: in a direction that holds fewer, it drops what is
// left there (those COTs are never used; Drawn counts them) and runs an iteration now. A
// caller that is about to carve ranges for interleaved batches calls it where both parties
// are at the same point of the connection's traffic. Both parties must call it with the same
// amounts mirrored (the peer's send is this party's recv). Amounts above one iteration's
// output are served as far as one iteration goes.
func (c *Core) Renew(ctx context.Context, send, recv int) error {
	if err := c.Err(); err != nil {
		return fmt.Errorf("ferret: Renew: core unusable after an earlier failure: %w", err)
	}
	// This party's sender direction first: an iteration is sent by the COT sender only, so
	// both parties send before they receive.
	for _, d := range []struct {
		c    *COT
		need int
	}{{c.out, send}, {c.in, recv}} {
		if d.c.Available() >= d.need {
			continue
		}
		d.c.drop()
		if err := d.c.refill(ctx); err != nil {
			err = fmt.Errorf("ferret: Renew: %w", err)
			if c.err == nil {
				c.err = err
			}
			return err
		}
	}
	return nil
}

// Carve returns a core that draws the next send COTs of this party's sender reservoir and the
// next recv COTs of its receiver reservoir, and moves c past them (c.Drawn grows by send and
// recv at once, whether or not the carved core uses them all). A carved core never refills:
// a draw beyond its share fails and makes it unusable. It shares c's connection. Both parties
// must carve the same ranges in the same order (the peer's send is this party's recv). Carve
// fails if the reservoirs hold fewer.
func (c *Core) Carve(send, recv int) (ot.Core, error) {
	if err := c.Err(); err != nil {
		return nil, fmt.Errorf("ferret: Carve: core unusable after an earlier failure: %w", err)
	}
	if send < 0 || recv < 0 || send > c.out.Available() || recv > c.in.Available() {
		return nil, fmt.Errorf("ferret: Carve: %d sender and %d receiver COTs asked, %d and %d available",
			send, recv, c.out.Available(), c.in.Available())
	}
	d := *c
	d.out, d.in = c.out.carve(send), c.in.carve(recv)
	return &d, nil
}

// Ahead runs main iterations now, ahead of the draws that will need them (see COT.Ahead):
// send in the stream in which this party sends and recv in the one it receives. A refill then
// takes a queued iteration with no communication, so the draws that follow have no flight of
// an iteration on their critical path. Both parties must call it at the same point of the
// connection's traffic with the amounts mirrored (the peer's send is this party's recv).
func (c *Core) Ahead(ctx context.Context, send, recv int) error {
	if err := c.Err(); err != nil {
		return fmt.Errorf("ferret: Ahead: core unusable after an earlier failure: %w", err)
	}
	if send < 0 || recv < 0 {
		return fmt.Errorf("ferret: Ahead: negative counts %d, %d", send, recv)
	}
	// The sender's direction first, as in Renew: both parties send before they receive.
	for _, d := range []struct {
		c *COT
		n int
	}{{c.out, send}, {c.in, recv}} {
		if err := d.c.Ahead(ctx, d.n); err != nil {
			if c.err == nil {
				c.err = err
			}
			return err
		}
	}
	return nil
}

// Counts are the main iterations of one COT stream: Run in all, Online those run by a refill
// on the critical path of a draw, Taken the iterations run ahead that refills took, Queued
// those run ahead and not yet taken.
type Counts struct {
	Run, Online, Taken, Queued int
}

// Counts returns the iteration counts of the stream in which this party sends (send) or
// receives.
func (c *Core) Counts(send bool) Counts {
	s := c.in
	if send {
		s = c.out
	}
	return Counts{Run: s.Iterations(), Online: s.OnlineIterations(), Taken: s.AheadTaken(), Queued: s.Queued()}
}

// Prebuild builds ahead, within budget bytes shared equally by the two directions, the outputs
// this party will draw next: the units holding the next send COTs of the stream in which it
// sends and the next recv of the one in which it receives, from the current iterations' on,
// then the queued iterations' in order (COT.PrebuildCurrent, PrebuildQueued); the two
// directions on two goroutines. It returns the memory the prebuilt outputs hold then. Local work
// only.
func (c *Core) Prebuild(budget int64, send, recv uint64) int64 {
	var wg sync.WaitGroup
	for _, d := range []struct {
		s *COT
		n uint64
	}{{c.out, send}, {c.in, recv}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, n := d.s, d.n
			left := budget/2 - s.Prebuilt()
			b, got := s.PrebuildCurrent(left, n)
			left, n = left-b, n-min(n, got)
			for left > 0 && n > 0 {
				b, got := s.PrebuildQueued(left, n)
				if b == 0 {
					return
				}
				left, n = left-b, n-min(n, got)
			}
		}()
	}
	wg.Wait()
	return c.out.Prebuilt() + c.in.Prebuilt()
}
