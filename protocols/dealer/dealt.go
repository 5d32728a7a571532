package dealer

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Dealt random OTs (ot.DealtCore). The dealt OTs of one shape — N messages of w l-bit words —
// on OT stream s in which party `sender` sends form a sequence of their own, numbered from 0 at
// both data parties in the order they draw them (batches of one shape are drawn in the same order
// by both; the batch headers check it). Instance j of the sequence is fixed by position:
//
//   - its messages: words [j·S, (j+1)·S) of PRG(k_sender2, purOTMsgs‖s‖shape), S = ⌈N·w·l/64⌉,
//     word t of message v being bits [(v·w + t)·l, (v·w + t + 1)·l) of those S words;
//   - its choice: byte j of PRG(k_receiver2, purOTChoice‖s‖shape), mod N.
//
// The data parties read their streams in order; the helper, asked for instances [j0, j0+n) of a
// shape, starts both AES-CTR streams at the position of j0 and sends the receiver its n·w chosen
// words, l bits each. A request names its position, so the helper keeps no state per stream and
// requests of a stream may be answered in any order: a receiver may fetch the next instances of a
// shape in the background (Link.SetPrefetch) while it draws.

// maxDealtWidth bounds the words per message of a dealt batch (ot.MaxWidth).
const maxDealtWidth = ot.MaxWidth

// DealtBytes is the traffic of a request for n dealt random 1-of-N OTs with w l-bit words per
// message, in wire bytes: the helper's reply to the receiver (w·l bits per instance, in frames
// of at most 2^20 values) and the receiver's request. Nothing else travels, whatever N is. A
// batch drawn without prefetch is one such request.
func DealtBytes(n, w, l int) (reply, request int64) {
	return PackedFrames(n*w, l), 8*reqWords + transport.HeaderSize
}

// checkDealt validates the shape of a dealt batch and returns log2 N and n.
func checkDealt(call string, N, w, l, words, per int) (m, n int, err error) {
	switch {
	case N < 2 || N > ot.MaxN || N&(N-1) != 0:
		return 0, 0, fmt.Errorf("dealer: %s: N=%d is not a power of two in 2..%d", call, N, ot.MaxN)
	case w < 1 || w > maxDealtWidth:
		return 0, 0, fmt.Errorf("dealer: %s: width w=%d outside 1..%d", call, w, maxDealtWidth)
	case l < 1 || l > 64:
		return 0, 0, fmt.Errorf("dealer: %s: bit width l=%d outside 1..64", call, l)
	case words%per != 0:
		return 0, 0, fmt.Errorf("dealer: %s: %d words is not a multiple of %d", call, words, per)
	case words/per*N*w > maxCount:
		return 0, 0, fmt.Errorf("dealer: %s: a batch of %d instances of %d×%d words exceeds %d words", call, words/per, N, w, maxCount)
	}
	return bits.TrailingZeros(uint(N)), words / per, nil
}

// shape is the shape of dealt OTs: log2 N, w, l.
type shape struct{ m, w, l int }

// words is S, the words of one instance's messages.
func (k shape) words() int { return ((k.w<<k.m)*k.l + 63) / 64 }

// index is the PRG stream index of the shape's sequence on OT stream st (st < 2^24).
func (k shape) index(st uint64) uint64 {
	return st<<26 | uint64(k.m)<<22 | uint64(k.w-1)<<6 | uint64(k.l-1)
}

// streamAt returns the AES-CTR keystream of seed, purpose and index from byte off on (the stream
// of prg.NewStream with the same numbers, started part-way).
func streamAt(seed prg.Seed, purpose uint8, idx, off uint64) cipher.Stream {
	blk, err := aes.NewCipher(seed[:])
	if err != nil {
		panic("dealer: " + err.Error()) // unreachable: a 16-byte key is valid for AES-128
	}
	var iv [aes.BlockSize]byte
	binary.BigEndian.PutUint64(iv[:8], streamID(purpose, idx))
	binary.BigEndian.PutUint64(iv[8:], off/aes.BlockSize)
	s := cipher.NewCTR(blk, iv[:])
	if r := off % aes.BlockSize; r != 0 {
		var skip [aes.BlockSize]byte
		s.XORKeyStream(skip[:r], skip[:r])
	}
	return s
}

// fill overwrites dst with the next keystream words of s.
func fill(s cipher.Stream, dst []uint64) {
	b := bitvec.Bytes(dst)
	clear(b)
	s.XORKeyStream(b, b)
}

// sendSeq is a sender's sequence of dealt OTs of one shape.
type sendSeq struct {
	msgs cipher.Stream
	raw  []uint64
}

// recvSeq is a receiver's sequence of dealt OTs of one shape.
type recvSeq struct {
	choice cipher.Stream
	cb     []byte
	next   uint64      // the position of the next instance this party draws
	ahead  []uint64    // chosen words of the instances from next on, fetched ahead
	fetch  *dealtFetch // the background fetch of the instances after ahead, or nil
}

// dealtFetch is a request to the helper in flight: n instances' chosen words into buf.
type dealtFetch struct {
	buf  []uint64
	done chan struct{}
	err  error
}

// DealtCount is the number of dealt OTs drawn so far as sender or receiver.
func (c *Core) DealtCount(send bool) uint64 {
	if send {
		return c.dsent
	}
	return c.drecvd
}

// SendDealt draws the next n = len(msgs)/(N·w) dealt OTs of this shape this party sends from its
// seed; nothing is sent.
func (c *Core) SendDealt(ctx context.Context, N, w, l int, msgs []uint64) error {
	q, k, n, err := c.sendSeq("SendDealt", N, w, l, len(msgs), N*w)
	if err != nil {
		return err
	}
	S, per := k.words(), N*w
	for i0 := 0; i0 < n; i0 += dealtGroup {
		cnt := min(dealtGroup, n-i0)
		if cap(q.raw) < cnt*S {
			q.raw = make([]uint64, dealtGroup*S)
		}
		raw := q.raw[:cnt*S]
		fill(q.msgs, raw)
		if S == 1 {
			// One word per instance: shift the values out (Unpack pads a partial block).
			mask := bitvec.Mask(l)
			for i, x := range raw {
				dst := msgs[(i0+i)*per : (i0+i+1)*per]
				for v := range dst {
					dst[v] = x >> (v * l) & mask
				}
			}
			continue
		}
		for i := 0; i < cnt; i++ {
			transport.Unpack(msgs[(i0+i)*per:(i0+i+1)*per], raw[i*S:(i+1)*S], l)
		}
	}
	c.dsent += uint64(n)
	return nil
}

// SendDealtRaw is SendDealt with the messages left as the seed's stream gives them: instance i's
// S = ⌈N·w·l/64⌉ words at raw[i·S : (i+1)·S], word t of message v at bits [(v·w + t)·l,
// (v·w + t + 1)·l) of them (bits past N·w·l are random). It draws the same instances as SendDealt
// would, without unpacking them.
func (c *Core) SendDealtRaw(ctx context.Context, N, w, l int, raw []uint64) error {
	S := (N*w*l + 63) / 64
	q, _, n, err := c.sendSeq("SendDealtRaw", N, w, l, len(raw), S)
	if err != nil {
		return err
	}
	fill(q.msgs, raw)
	c.dsent += uint64(n)
	return nil
}

// sendSeq checks a sender's draw of words words, per per instance, and returns the shape's
// sequence (made on first use), the shape and the number of instances.
func (c *Core) sendSeq(call string, N, w, l, words, per int) (*sendSeq, shape, int, error) {
	if err := c.Err(); err != nil {
		return nil, shape{}, 0, err
	}
	if per < 1 {
		per = 1 // checkDealt reports the bad shape
	}
	m, n, err := checkDealt(call, N, w, l, words, per)
	if err != nil {
		return nil, shape{}, 0, err
	}
	k := shape{m, w, l}
	q := c.sendSeqs[k]
	if q == nil {
		q = &sendSeq{msgs: streamAt(c.link.seed, purOTMsgs, k.index(uint64(c.stream)), 0)}
		c.sendSeqs[k] = q
	}
	return q, k, n, nil
}

// dealtGroup is the number of instances whose messages are drawn at a time.
const dealtGroup = 1024

// RecvDealt draws the next n = len(out)/w dealt OTs of this shape this party receives: the
// choices from its seed into ch at once, the chosen messages from what was fetched ahead and,
// for the rest, from a request to the helper that runs in the background until wait. With a
// prefetch set on the link, it then fetches the next Link.prefetch instances of the shape in the
// background.
func (c *Core) RecvDealt(ctx context.Context, N, w, l int, ch, out []uint64) (func() error, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	m, n, err := checkDealt("RecvDealt", N, w, l, len(out), w)
	if err != nil {
		return nil, err
	}
	if nw := bitvec.Words(n * m); len(ch) < nw {
		return nil, fmt.Errorf("dealer: RecvDealt: %d choice words cannot hold %d choices of %d bits", len(ch), n, m)
	}
	k := shape{m, w, l}
	q := c.recvSeqs[k]
	if q == nil {
		q = &recvSeq{choice: streamAt(c.link.seed, purOTChoice, k.index(uint64(c.stream)), 0)}
		c.recvSeqs[k] = q
	}
	if f := q.fetch; f != nil {
		start := time.Now()
		<-f.done
		c.link.addWait(time.Since(start))
		q.fetch = nil
		if f.err != nil {
			return nil, f.err
		}
		q.ahead = append(q.ahead, f.buf...)
	}
	// The choices: byte j of the choice stream, mod N, packed m bits per instance.
	if cap(q.cb) < n {
		q.cb = make([]byte, n)
	}
	cb := q.cb[:n]
	clear(cb)
	q.choice.XORKeyStream(cb, cb)
	clear(ch[:bitvec.Words(n*m)])
	var bw bitvec.Writer
	bw.Reset(ch)
	mask := byte(N - 1)
	for _, v := range cb {
		bw.Put(uint64(v&mask), uint(m))
	}
	bw.Flush()
	// The chosen words: what was fetched ahead, then a request for the rest.
	have := min(n, len(q.ahead)/w)
	copy(out, q.ahead[:have*w])
	q.ahead = q.ahead[have*w:]
	if len(q.ahead) == 0 {
		q.ahead = nil
	}
	var f *dealtFetch
	if have < n {
		f = c.startFetch(ctx, k, q.next+uint64(have), out[have*w:], false)
	}
	q.next += uint64(n)
	c.drecvd += uint64(n)
	if p := min(c.link.prefetch, maxCount/(N*w)); p > 0 && q.ahead == nil {
		// The next instances of the shape, from the first one not held or requested.
		q.fetch = c.startFetch(ctx, k, q.next, make([]uint64, p*w), true)
	}
	waited := false
	return func() error {
		if waited {
			return errors.New("dealer: RecvDealt: wait called twice")
		}
		waited = true
		if f == nil {
			return nil
		}
		start := time.Now()
		<-f.done
		c.link.addWait(time.Since(start))
		return f.err
	}, nil
}

// startFetch asks the helper, in the background, for the chosen words of instances
// [at, at + len(buf)/k.w) of shape k on this stream, into buf. A prefetch is not cancelled with
// the draw's context (a fetch cut short would make the link unusable; the transport's timeout and
// an abort of the link bound it).
func (c *Core) startFetch(ctx context.Context, k shape, at uint64, buf []uint64, ahead bool) *dealtFetch {
	f := &dealtFetch{buf: buf, done: make(chan struct{})}
	n := len(buf) / k.w
	req := []uint64{opDealt, uint64(c.stream), uint64(1 - c.party), uint64(1) << k.m, uint64(k.w), uint64(k.l), at, uint64(n)}
	link := c.link
	if ahead {
		ctx = context.WithoutCancel(ctx)
		link.bg.Add(1)
	}
	go func() {
		defer close(f.done)
		if ahead {
			defer link.bg.Done()
		}
		mode := reqUntimed // the draw's wait counts the time
		if ahead {
			mode = reqBackground
		}
		f.err = link.request(ctx, req, func(src frameReader) error { return recvPacked(ctx, src, buf, k.l) }, mode)
	}()
	return f
}

// dealOTs is the helper's answer to a request: the receiver's chosen words of instances
// [at, at+n) of shape k on OT stream st, n·w values of l bits, from the sender's seed ks and the
// receiver's kr.
func dealOTs(ks, kr prg.Seed, st uint64, k shape, at uint64, n int) []uint64 {
	idx := k.index(st)
	S := k.words()
	msgs := streamAt(ks, purOTMsgs, idx, 8*uint64(S)*at)
	choice := streamAt(kr, purOTChoice, idx, at)
	cb := make([]byte, n)
	choice.XORKeyStream(cb, cb)
	out := make([]uint64, n*k.w)
	raw := make([]uint64, min(n, dealtGroup)*S)
	mask, mask64 := byte(1<<k.m-1), bitvec.Mask(k.l)
	for i0 := 0; i0 < n; i0 += dealtGroup {
		cnt := min(dealtGroup, n-i0)
		r := raw[:cnt*S]
		fill(msgs, r)
		for i := 0; i < cnt; i++ {
			g := i0 + i
			base := (int(cb[g]&mask) * k.w) * k.l
			inst, o := r[i*S:(i+1)*S], out[g*k.w:(g+1)*k.w]
			if S == 1 {
				for t := range o {
					o[t] = inst[0] >> (base + t*k.l) & mask64
				}
				continue
			}
			for t := range o {
				o[t] = bitvec.Get(inst, base+t*k.l, k.l)
			}
		}
	}
	return out
}
