package dealer

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// MinRefill is the smallest number of COTs a receiver asks the helper for at once (2 MiB of
// blocks): draws smaller than this are served from what an earlier refill left.
const MinRefill = 1 << 17

// coreFrame is the number of instances per frame of a derived batch (ot.Core.Frame).
const coreFrame = 1 << 13

// COTBytes is the helper's reply to a refill of n COTs, in wire bytes: 128 bits per COT, in
// frames of at most 2^19 COTs (plus the receiver's request of reqWords words).
func COTBytes(n int) (reply, request int64) {
	return wordsWire(2 * n), 8*reqWords + transport.HeaderSize
}

// wordsWire is the wire size of n words sent by sendWords.
func wordsWire(n int) int64 {
	var b int64
	for off := 0; off < n || off == 0; off += frameElems {
		b += 8*int64(min(frameElems, n-off)) + transport.HeaderSize
		if n == 0 {
			break
		}
	}
	return b
}

// Core is a data party's end of a dealt COT stream with the other data party: an ot.Core whose
// COTs the helper deals. In a COT this party sends, its keys and Δ come from its own pairwise
// seed and nothing is sent; in a COT it receives, its choice bits come from its own seed and the
// blocks k_i ⊕ b_i·Δ from the helper, in refills of at least MinRefill. The receiver's bits are
// random (Core is not an ot.ChosenCore); it is an ot.Forker (one stream per connection, all on
// the same link). A Core is not safe for concurrent use; its forks are independent.
type Core struct {
	link   *Link
	conn   *transport.Conn
	party  int
	stream uint32
	forks  *atomic.Uint32
	delta  prg.Block
	keys   *prg.PRG // this party's keys as sender
	bitsG  *prg.PRG // this party's choice bits as receiver
	sent   uint64
	recvd  uint64
	kbuf   []prg.Block
	buf    []prg.Block // received blocks of the current refill
	bits   []uint64    // their choice bits
	pos    int
	err    error
	next   chan fetched // the prefetch in flight (Link.SetPrefetch), or nil
	// Dealt random OTs (dealt.go), a sequence per shape in each direction.
	dsent, drecvd uint64
	sendSeqs      map[shape]*sendSeq
	recvSeqs      map[shape]*recvSeq
}

// fetched is a background refill: its blocks and choice bits, or the error.
type fetched struct {
	buf  []prg.Block
	bits []uint64
	err  error
}

var (
	_ ot.Forker    = (*Core)(nil)
	_ ot.DealtCore = (*Core)(nil)
)

// NewCore returns the dealt COT core of stream 0 between the data parties on conn (their
// connection), with the helper on link. Both data parties call it; nothing is exchanged.
func NewCore(link *Link, conn *transport.Conn) (*Core, error) {
	if link == nil || conn == nil {
		return nil, errors.New("dealer: NewCore: nil link or connection")
	}
	return newCore(link, conn, 0, new(atomic.Uint32)), nil
}

// NewSession returns the OT session derived from a dealt core (see NewCore).
func NewSession(link *Link, conn *transport.Conn) (*ot.Session, error) {
	c, err := NewCore(link, conn)
	if err != nil {
		return nil, err
	}
	return ot.New(c)
}

func newCore(link *Link, conn *transport.Conn, stream uint32, forks *atomic.Uint32) *Core {
	c := &Core{link: link, conn: conn, party: link.party, stream: stream, forks: forks}
	c.delta = deltaOf(link.seed)
	c.keys = link.prg(purKeys, uint64(stream))
	c.bitsG = link.prg(purBits, uint64(stream))
	c.sendSeqs, c.recvSeqs = map[shape]*sendSeq{}, map[shape]*recvSeq{}
	return c
}

// deltaOf is Δ of the COTs sent by the party with pairwise seed s: its low bit is 1, as IKNP's
// (so that a protocol may carry a choice bit in a block's low bit).
func deltaOf(s prg.Seed) prg.Block {
	var d [1]prg.Block
	prg.NewStream(s, streamID(purDelta, 0)).Blocks(d[:])
	d[0][0] |= 1
	return d[0]
}

// Fork starts stream number k+1 (the k-th fork, in the same order at both parties) on conn; a
// hello on conn checks the numbering.
func (c *Core) Fork(ctx context.Context, conn *transport.Conn) (ot.Core, error) {
	if conn == nil {
		return nil, errors.New("dealer: Fork: nil connection")
	}
	id := c.forks.Add(1)
	var msg [16]byte
	putU64(msg[0:], helloMagic^0xC07)
	putU64(msg[8:], uint64(id))
	if err := conn.Send(ctx, msg[:]); err != nil {
		return nil, fmt.Errorf("dealer: Fork: %w", err)
	}
	if err := conn.Flush(ctx); err != nil {
		return nil, fmt.Errorf("dealer: Fork: %w", err)
	}
	var got [16]byte
	if err := conn.Recv(ctx, got[:]); err != nil {
		return nil, fmt.Errorf("dealer: Fork: %w", err)
	}
	if got != msg {
		return nil, fmt.Errorf("dealer: Fork: the peer forked stream %d, this party %d", getU64(got[8:]), id)
	}
	return newCore(c.link, conn, id, c.forks), nil
}

// Party is this party's index (0 or 1).
func (c *Core) Party() int { return c.party }

// Conn is the connection to the other data party.
func (c *Core) Conn() *transport.Conn { return c.conn }

// Err is the error that made the core unusable, or nil.
func (c *Core) Err() error {
	if c.err != nil {
		return c.err
	}
	return c.link.Err()
}

// Delta is Δ of the COTs this party sends.
func (c *Core) Delta() prg.Block { return c.delta }

// Count is the number of COTs drawn so far as sender or receiver.
func (c *Core) Count(send bool) uint64 {
	if send {
		return c.sent
	}
	return c.recvd
}

// Domain is the tweak high word: bit 62 (no IKNP stream reaches it; Ferret's have bit 63),
// the stream, the sender and the purpose.
func (c *Core) Domain(sender int, purpose uint8) uint64 {
	return 1<<62 | uint64(c.stream)<<32 | uint64(sender)<<24 | uint64(purpose)<<16
}

// Frame is the number of instances per frame of a derived batch.
func (c *Core) Frame() int { return coreFrame }

// SendCOT draws the next n keys from this party's seed; nothing is sent.
func (c *Core) SendCOT(ctx context.Context, n int, f func(off int, k []prg.Block)) error {
	if err := c.Err(); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("dealer: SendCOT: negative count %d", n)
	}
	for off := 0; off < n; {
		k := min(n-off, MinRefill)
		if cap(c.kbuf) < k {
			c.kbuf = make([]prg.Block, k)
		}
		kb := c.kbuf[:k]
		c.keys.Blocks(kb)
		f(off, kb)
		off += k
	}
	c.sent += uint64(n)
	return nil
}

// RecvCOT draws the next n COTs this party receives, asking the helper for a refill when the
// current one runs out.
func (c *Core) RecvCOT(ctx context.Context, n int, f func(off int, m []prg.Block, bits []uint64, bit int)) error {
	if err := c.Err(); err != nil {
		return err
	}
	if n < 0 {
		return fmt.Errorf("dealer: RecvCOT: negative count %d", n)
	}
	for off := 0; off < n; {
		if c.pos == len(c.buf) {
			if err := c.refill(ctx, max(n-off, MinRefill)); err != nil {
				c.err = err
				return err
			}
		}
		k := min(n-off, len(c.buf)-c.pos)
		f(off, c.buf[c.pos:c.pos+k], c.bits, c.pos)
		c.pos += k
		off += k
	}
	c.recvd += uint64(n)
	return nil
}

// refill asks the helper for the next n COTs of this stream in which the peer sends, or takes
// the prefetched ones (whatever their number: RecvCOT refills again when they run out), then
// starts the next prefetch if the link has one set.
func (c *Core) refill(ctx context.Context, n int) error {
	if c.next != nil {
		start := time.Now()
		f := <-c.next
		c.next = nil
		c.link.addWait(time.Since(start))
		if f.err != nil {
			return f.err
		}
		c.buf, c.bits, c.pos = f.buf, f.bits, 0
		c.startPrefetch(ctx)
		return nil
	}
	if n > maxCount {
		return fmt.Errorf("dealer: a draw of %d COTs exceeds %d", n, maxCount)
	}
	if cap(c.buf) < n {
		c.buf = make([]prg.Block, n)
		c.bits = make([]uint64, bitvec.Words(n))
	}
	c.buf, c.bits = c.buf[:n], c.bits[:bitvec.Words(n)]
	c.bitsG.Uint64s(c.bits)
	c.pos = 0
	err := c.link.call(ctx, []uint64{opCOT, uint64(c.stream), uint64(1 - c.party), uint64(n)}, func(src frameReader) error {
		return recvWords(ctx, src, prg.BlockWords(c.buf))
	})
	if err == nil {
		c.startPrefetch(ctx)
	}
	return err
}

// startPrefetch asks the helper for the next Link.prefetch COTs in the background. The choice
// bits are drawn here, in request order (one request of this stream is in flight at a time), so
// that the helper, which serves the stream's requests in order, draws the same; the buffers are
// new (the current ones may still be read by the draw in progress).
func (c *Core) startPrefetch(ctx context.Context) {
	n := c.link.prefetch
	if n == 0 {
		return
	}
	f := fetched{buf: make([]prg.Block, n), bits: make([]uint64, bitvec.Words(n))}
	c.bitsG.Uint64s(f.bits)
	c.next = make(chan fetched, 1)
	// Not cancelled with the draw's context: a fetch cut short would make the link unusable.
	// The transport's timeout and an abort of the link bound it.
	ctx = context.WithoutCancel(ctx)
	c.link.bg.Add(1)
	go func(ch chan<- fetched) {
		defer c.link.bg.Done()
		f.err = c.link.request(ctx, []uint64{opCOT, uint64(c.stream), uint64(1 - c.party), uint64(n)}, func(src frameReader) error {
			return recvWords(ctx, src, prg.BlockWords(f.buf))
		}, reqBackground)
		ch <- f
	}(c.next)
}
