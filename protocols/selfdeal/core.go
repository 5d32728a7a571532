package selfdeal

import (
	"context"
	"errors"
	"fmt"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Core is an ot.DealtCore whose random 1-out-of-N OTs the two parties make themselves with the
// OT session it wraps: ahead (MakeAhead) into buffers, one per shape and direction, and on demand
// when a draw finds its buffer short. Its ot.Core methods are the wrapped session's core's, so
// block COTs and everything else drawn from COTs work as on that core. A Core is not safe for
// concurrent use (like the ot.Session over it).
type Core struct {
	ot.Core             // the wrapped session's core (COTs, Δ, counts, frames)
	inner   *ot.Session // makes the OTs
	party   int
	q       map[dir]*queue
	dsent   uint64
	drecvd  uint64
	drawn   map[dir]uint64 // instances drawn since the last TakeDrawn
	stats   Stats
}

// dir is a sequence of dealt OTs: a shape and the party that sends them.
type dir struct {
	sender int
	k      Shape
}

// Stats counts a Core's OTs.
type Stats struct {
	// Ahead is the number of instances made by MakeAhead, Taken how many draws took from them,
	// OnDemand those made by draws that found their buffer short (in OnDemandBatches batches).
	Ahead, Taken, OnDemand, OnDemandBatches uint64
	// HeldBytes is the memory the buffers hold now, PeakBytes the most they held.
	HeldBytes, PeakBytes int64
}

// New returns the Core over the session s (IKNP or Ferret), which it uses to make the OTs; the
// session stays usable for other batches (they interleave with this core's in the order the
// caller runs them, at both parties alike).
func New(s *ot.Session) (*Core, error) {
	if s == nil {
		return nil, errors.New("selfdeal: New: nil session")
	}
	if _, ok := s.Core().(ot.DealtCore); ok {
		return nil, errors.New("selfdeal: New: the session's OTs are dealt already")
	}
	return &Core{Core: s.Core(), inner: s, party: s.Party(), q: map[dir]*queue{}, drawn: map[dir]uint64{}}, nil
}

// Err is the error that made the core (or the session it makes the OTs with) unusable.
func (c *Core) Err() error { return c.inner.Err() }

// Stats returns the core's counts.
func (c *Core) Stats() Stats { return c.stats }

// chunk is a run of made OTs of one sequence: n instances, from off on not yet drawn. The sender
// holds each instance's messages packed (S words: word t of message v at bits [(v·w+t)·l, …)),
// the receiver its choices (log2 N bits each, packed) and its chosen words (w·l bits each).
type chunk struct {
	n, off  int
	raw     []uint64 // sender
	ch, out []uint64 // receiver
}

// queue is a sequence's chunks made ahead.
type queue struct {
	chunks []*chunk
	held   int
}

// bytes is the memory of n instances of shape k at the sender and at the receiver together
// (the buffers of both parties' ends, so that both parties bound them alike).
func (k Shape) bytes(n uint64) int64 {
	return int64(n)*int64(8*k.words()) + int64((n*uint64(k.m()+k.W*k.L)+7)/8)
}

// DealtCount is the number of dealt OTs drawn so far as sender or receiver.
func (c *Core) DealtCount(send bool) uint64 {
	if send {
		return c.dsent
	}
	return c.drecvd
}

// checkShape validates a draw's shape and returns it and the number of instances in words words
// of per each.
func checkShape(call string, N, w, l, words, per int) (Shape, int, error) {
	k := Shape{N, w, l}
	if err := k.valid(); err != nil {
		return k, 0, fmt.Errorf("selfdeal: %s: %w", call, err)
	}
	if per < 1 || words%per != 0 {
		return k, 0, fmt.Errorf("selfdeal: %s: %d words is not a multiple of %d", call, words, per)
	}
	return k, words / per, nil
}

// take draws n instances of sequence d: f gets them in pieces (chunk, first instance in it,
// count, offset in the draw), first those made ahead, then a chunk made now for the rest.
func (c *Core) take(ctx context.Context, d dir, n int, f func(ch *chunk, from, cnt, at int)) error {
	if err := c.Err(); err != nil {
		return err
	}
	at := 0
	if q := c.q[d]; q != nil {
		for at < n && len(q.chunks) > 0 {
			ch := q.chunks[0]
			cnt := min(n-at, ch.n-ch.off)
			f(ch, ch.off, cnt, at)
			ch.off += cnt
			at += cnt
			q.held -= cnt
			if ch.off == ch.n {
				c.stats.HeldBytes -= d.k.bytes(uint64(ch.n))
				q.chunks[0] = nil
				q.chunks = q.chunks[1:]
			}
		}
	}
	c.stats.Taken += uint64(at)
	if at < n {
		c.stats.OnDemand += uint64(n - at)
		c.stats.OnDemandBatches++
		err := c.make(ctx, d, n-at, func(ch *chunk) {
			f(ch, 0, ch.n, at)
			at += ch.n
		})
		if err != nil {
			return err
		}
	}
	c.drawn[d] += uint64(n)
	return nil
}

// SendDealt draws the next n = len(msgs)/(N·w) OTs of this shape this party sends.
func (c *Core) SendDealt(ctx context.Context, N, w, l int, msgs []uint64) error {
	k, n, err := checkShape("SendDealt", N, w, l, len(msgs), N*w)
	if err != nil {
		return err
	}
	S, per := k.words(), N*w
	err = c.take(ctx, dir{c.party, k}, n, func(ch *chunk, from, cnt, at int) {
		for i := range cnt {
			inst, dst := ch.raw[(from+i)*S:(from+i+1)*S], msgs[(at+i)*per:(at+i+1)*per]
			if S == 1 {
				x, mask := inst[0], bitvec.Mask(l)
				for v := range dst {
					dst[v] = x >> (v * l) & mask
				}
				continue
			}
			transport.Unpack(dst, inst, l)
		}
	})
	if err != nil {
		return err
	}
	c.dsent += uint64(n)
	return nil
}

// SendDealtRaw draws the instances SendDealt would, packed: instance i's S words at
// raw[i·S : (i+1)·S].
func (c *Core) SendDealtRaw(ctx context.Context, N, w, l int, raw []uint64) error {
	k, n, err := checkShape("SendDealtRaw", N, w, l, len(raw), (N*w*l+63)/64)
	if err != nil {
		return err
	}
	S := k.words()
	err = c.take(ctx, dir{c.party, k}, n, func(ch *chunk, from, cnt, at int) {
		copy(raw[at*S:(at+cnt)*S], ch.raw[from*S:(from+cnt)*S])
	})
	if err != nil {
		return err
	}
	c.dsent += uint64(n)
	return nil
}

// RecvDealt draws the next n = len(out)/w OTs of this shape this party receives: the choices
// into ch, the chosen words into out, both at once (wait returns at once).
func (c *Core) RecvDealt(ctx context.Context, N, w, l int, ch, out []uint64) (func() error, error) {
	k, n, err := checkShape("RecvDealt", N, w, l, len(out), w)
	if err != nil {
		return nil, err
	}
	m := k.m()
	if len(ch) < bitvec.Words(n*m) {
		return nil, fmt.Errorf("selfdeal: RecvDealt: %d choice words cannot hold %d choices of %d bits", len(ch), n, m)
	}
	clear(ch[:bitvec.Words(n*m)])
	err = c.take(ctx, dir{1 - c.party, k}, n, func(q *chunk, from, cnt, at int) {
		bitvec.Copy(ch, at*m, q.ch, from*m, cnt*m)
		for i := range cnt {
			for t := range w {
				out[(at+i)*w+t] = bitvec.Get(q.out, ((from+i)*w+t)*l, l)
			}
		}
	})
	if err != nil {
		return nil, err
	}
	c.drecvd += uint64(n)
	waited := false
	return func() error {
		if waited {
			return errors.New("selfdeal: RecvDealt: wait called twice")
		}
		waited = true
		return nil
	}, nil
}

// makeBatch bounds the words of messages one batch of making holds unpacked.
const makeBatch = 1 << 21

// make makes n OTs of sequence d with the wrapped session, in batches of at most makeBatch words
// of messages (the same batches at both parties), handing each to f as a chunk.
func (c *Core) make(ctx context.Context, d dir, n int, f func(*chunk)) error {
	k := d.k
	if k.N > 2 && k.W != 1 {
		return fmt.Errorf("selfdeal: 1-out-of-%d OTs with %d words per message are not made (only one word for N > 2)", k.N, k.W)
	}
	per := max(1, makeBatch/(k.N*k.W))
	for a := 0; a < n; a += per {
		cnt := min(per, n-a)
		var ch *chunk
		var err error
		if d.sender == c.party {
			ch, err = c.makeSend(ctx, k, cnt)
		} else {
			ch, err = c.makeRecv(ctx, k, cnt)
		}
		if err != nil {
			return fmt.Errorf("selfdeal: making %d OTs of %v: %w", cnt, k, err)
		}
		f(ch)
	}
	return nil
}

// makeSend makes n OTs of shape k as their sender.
func (c *Core) makeSend(ctx context.Context, k Shape, n int) (*chunk, error) {
	S, per := k.words(), k.N*k.W
	msgs := make([]uint64, n*per)
	if k.N == 2 {
		m0, m1 := make([]uint64, n*k.W), make([]uint64, n*k.W)
		if err := c.inner.SendROTWide(ctx, k.W, k.L, m0, m1); err != nil {
			return nil, err
		}
		for i := range n {
			copy(msgs[i*per:], m0[i*k.W:(i+1)*k.W])
			copy(msgs[i*per+k.W:], m1[i*k.W:(i+1)*k.W])
		}
	} else if err := c.inner.SendROTN(ctx, k.N, k.L, msgs); err != nil {
		return nil, err
	}
	raw := make([]uint64, n*S)
	for i := range n {
		transport.Pack(raw[i*S:(i+1)*S], msgs[i*per:(i+1)*per], k.L)
	}
	return &chunk{n: n, raw: raw}, nil
}

// makeRecv makes n OTs of shape k as their receiver, with random choices.
func (c *Core) makeRecv(ctx context.Context, k Shape, n int) (*chunk, error) {
	m := k.m()
	ch := make([]uint64, bitvec.Words(n*m)+1)
	out := make([]uint64, n*k.W)
	if k.N == 2 {
		if err := c.inner.RecvROTWide(ctx, k.W, k.L, ch, out); err != nil {
			return nil, err
		}
	} else {
		cb := make([]byte, n)
		if err := c.inner.RecvROTN(ctx, k.N, k.L, cb, out); err != nil {
			return nil, err
		}
		var w bitvec.Writer
		w.Reset(ch)
		for _, v := range cb {
			w.Put(uint64(v), uint(m))
		}
		w.Flush()
	}
	po := make([]uint64, transport.PackedWords(len(out), k.L)+1)
	transport.Pack(po[:transport.PackedWords(len(out), k.L)], out, k.L)
	return &chunk{n: n, ch: ch, out: po}, nil
}

// MakeAhead makes the OTs of the plan's entries (in its order, which must be the same at both
// parties), adding them to the buffers.
func (c *Core) MakeAhead(ctx context.Context, p Plan) error {
	for _, e := range p.OTs {
		d := dir{e.Sender, e.Shape()}
		if err := d.k.valid(); err != nil || e.Sender < 0 || e.Sender > 1 {
			return fmt.Errorf("selfdeal: MakeAhead: bad entry %+v", e)
		}
		q := c.q[d]
		if q == nil {
			q = &queue{}
			c.q[d] = q
		}
		err := c.make(ctx, d, int(e.Count), func(ch *chunk) {
			q.chunks = append(q.chunks, ch)
			q.held += ch.n
			c.stats.Ahead += uint64(ch.n)
			c.stats.HeldBytes += d.k.bytes(uint64(ch.n))
		})
		c.stats.PeakBytes = max(c.stats.PeakBytes, c.stats.HeldBytes)
		if err != nil {
			return err
		}
	}
	return nil
}

// Held is the plan of the OTs made and not yet drawn (the same at both parties, mirrored).
func (c *Core) Held() Plan {
	var p Plan
	for d, q := range c.q {
		if q.held > 0 {
			p.OTs = append(p.OTs, entry(d, uint64(q.held)))
		}
	}
	p.sort()
	return p
}

// TakeDrawn returns the OTs drawn since the last call (or since New) and starts counting anew.
func (c *Core) TakeDrawn() Plan {
	var p Plan
	for d, n := range c.drawn {
		p.OTs = append(p.OTs, entry(d, n))
	}
	clear(c.drawn)
	p.sort()
	return p
}

func entry(d dir, n uint64) Entry {
	return Entry{Sender: d.sender, N: d.k.N, W: d.k.W, L: d.k.L, Count: n}
}

// m is log2 N.
func (k Shape) m() int { return bits.TrailingZeros(uint(k.N)) }

// words is S, the words that hold an instance's messages packed.
func (k Shape) words() int { return (k.N*k.W*k.L + 63) / 64 }

// valid checks the shape.
func (k Shape) valid() error {
	switch {
	case k.N < 2 || k.N > ot.MaxN || k.N&(k.N-1) != 0:
		return fmt.Errorf("the message count N=%d is not a power of two in 2..%d", k.N, ot.MaxN)
	case k.W < 1 || k.W > ot.MaxWidth:
		return fmt.Errorf("width w=%d outside 1..%d", k.W, ot.MaxWidth)
	case k.L < 1 || k.L > 64:
		return fmt.Errorf("bit width l=%d outside 1..64", k.L)
	}
	return nil
}
