package dealer

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Dealt random OTs (ot.DealtCore): a batch of n random 1-out-of-N OTs with w l-bit words per
// message on stream s in which party `sender` sends. The sender draws its N·w·n message words
// from PRG(k_sender2) (stream purOTMsgs, s) as one packed string of l-bit values — word t of
// message v of instance i is value (i·N + v)·w + t — and the receiver draws its choices from
// PRG(k_receiver2) (stream purOTChoice, s) as a packed string of log2 N bits per instance
// (bitvec.Words(n·log2 N) words per batch). The helper draws both and sends the receiver its n·w
// chosen words, l bits each: that, and the receiver's request, is all the traffic.

// maxDealtWidth bounds the words per message of a dealt batch (ot.MaxWidth).
const maxDealtWidth = ot.MaxWidth

// DealtBytes is the traffic of a dealt batch of n random 1-of-N OTs with w l-bit words per
// message, in wire bytes: the helper's reply to the receiver (w·l bits per instance, in frames
// of at most 2^20 values) and the receiver's request. Nothing else travels, whatever N is.
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

// dealtFetch is a receiver's request to the helper in flight.
type dealtFetch struct {
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

// SendDealt draws the next n = len(msgs)/(N·w) dealt OTs this party sends from its seed;
// nothing is sent.
func (c *Core) SendDealt(ctx context.Context, N, w, l int, msgs []uint64) error {
	if err := c.Err(); err != nil {
		return err
	}
	_, n, err := checkDealt("SendDealt", N, w, l, len(msgs), N*w)
	if err != nil {
		return err
	}
	if l == 64 {
		c.dmsgs.Uint64s(msgs)
	} else {
		nw := transport.PackedWords(len(msgs), l)
		if cap(c.raw) < nw {
			c.raw = make([]uint64, nw)
		}
		raw := c.raw[:nw]
		c.dmsgs.Uint64s(raw)
		transport.Unpack(msgs, raw, l)
	}
	c.dsent += uint64(n)
	return nil
}

// RecvDealt draws the next n = len(out)/w dealt OTs this party receives: the choices from its
// seed into ch at once, the chosen messages from the helper, whose request runs in the
// background until wait. Requests of a stream go out in draw order (a draw first waits for the
// previous one's request to finish).
func (c *Core) RecvDealt(ctx context.Context, N, w, l int, ch, out []uint64) (func() error, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	m, n, err := checkDealt("RecvDealt", N, w, l, len(out), w)
	if err != nil {
		return nil, err
	}
	nw := bitvec.Words(n * m)
	if len(ch) < nw {
		return nil, fmt.Errorf("dealer: RecvDealt: %d choice words cannot hold %d choices of %d bits", len(ch), n, m)
	}
	if p := c.pend; p != nil {
		<-p.done
		c.pend = nil
		if p.err != nil {
			return nil, p.err
		}
	}
	c.dchoice.Uint64s(ch[:nw])
	bitvec.ClearTail(ch[:nw], n*m)
	c.drecvd += uint64(n)
	p := &dealtFetch{done: make(chan struct{})}
	c.pend = p
	req := []uint64{opDealt, uint64(c.stream), uint64(1 - c.party), uint64(N), uint64(w), uint64(l), uint64(n)}
	link := c.link
	go func() {
		defer close(p.done)
		p.err = link.request(ctx, req, func() error { return recvPacked(ctx, link.conn, out, l) }, false)
	}()
	waited := false
	return func() error {
		if waited {
			return errors.New("dealer: RecvDealt: wait called twice")
		}
		waited = true
		start := time.Now()
		<-p.done
		link.addWait(time.Since(start))
		if c.pend == p {
			c.pend = nil
		}
		return p.err
	}, nil
}

// dealOTs is the helper's answer to a dealt batch: the receiver's chosen words, n·w values of l
// bits, from the sender's message stream msgs and the receiver's choice stream choice.
func dealOTs(msgs, choice *prg.PRG, N, w, l, n int) []uint64 {
	m := bits.TrailingZeros(uint(N))
	ch := make([]uint64, bitvec.Words(n*m))
	choice.Uint64s(ch)
	out := make([]uint64, n*w)
	// The messages in groups of 64 instances (a whole number of words of the packed string: the
	// same words as one draw of the batch), so the helper holds only a group's.
	const group = 64
	raw := make([]uint64, transport.PackedWords(min(group, n)*N*w, l))
	for i0 := 0; i0 < n; i0 += group {
		cnt := min(group, n-i0)
		r := raw[:transport.PackedWords(cnt*N*w, l)]
		msgs.Uint64s(r)
		for i := 0; i < cnt; i++ {
			g := i0 + i
			ci := int(bitvec.Get(ch, g*m, m)) // Get reads no word past the one of its last bit
			base := (i*N + ci) * w * l
			o := out[g*w : (g+1)*w]
			for t := range o {
				o[t] = bitvec.Get(r, base+t*l, l)
			}
		}
	}
	return out
}
