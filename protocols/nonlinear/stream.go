package nonlinear

import (
	"context"
	"errors"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// stream is one OT stream of a Session: an OT session, its connection and
// the state of the flight schedule.
//
// Flight schedule. Every OT batch is two flights: the receiver sends its
// extension matrix, the sender replies. A batch whose receiver is the party
// that sent the previous flight adds only one flight, because its matrix
// leaves together with that flight. The stream therefore tracks last, the
// party that sent the most recent flight, and every batch takes last as its
// receiver; the OT-based building blocks are written so that either party can
// play either role. The exchange of masked bits in the AND tree is scheduled
// the same way (see andPhase).
type stream struct {
	idx    int
	ot     *ot.Session
	conn   *transport.Conn
	party  int
	r      ring.Ring
	m      int
	budget int
	rng    *prg.PRG
	alg5   bool // truncate with Alg. 5 as published
	// rotTriples makes bit triples from random OT (see rotTripleReq).
	rotTriples bool
	// dealer deals the bit triples (Options.Dealer), or nil.
	dealer TripleDealer
	// silent is true on a silent OT source (random OT sends nothing).
	silent bool
	last   int // party that sent the most recent flight
	// sequential runs the chunks of a large batch one after another
	// instead of interleaving them (see chunks).
	sequential bool

	sc  scratch      // this chunk's buffers
	snd *sendScratch // the OT sender's buffers, shared by the chunks of a batch
	// spare keeps the buffers of the chunks of an interleaved group for
	// the batch's next group (see fork).
	spare []scratch
}

// scratch holds buffers reused across calls that a chunk may still need
// after it gave way to the other chunks of its batch (see chunks): the OT
// receiver's choices and outputs, and the flights of masked bits.
type scratch struct {
	outs, frame, rx []uint64
	choice          []uint8
	cotY            []uint64
	rot             rotScratch // random OT on IKNP (see runROT)
}

// rotScratch holds a random-OT pair's outputs and the receiver's choices (runROT).
type rotScratch struct {
	m0, m1, m, c []uint64
}

// sendScratch holds the OT sender's messages. A sender fills and sends them
// within one step of a chunk (it only receives what continues the flight it
// answers, so it never gives way in between), so the chunks of a batch
// share them.
type sendScratch struct {
	msgs, cotX, cotR []uint64
	rot              rotScratch // random OT on a silent source (see runROT)
}

// other returns the other party's index.
func (st *stream) other() int { return 1 - st.party }

// randBits returns n fresh random bits, packed.
func (st *stream) randBits(n int) []uint64 {
	v := make([]uint64, bitvec.Words(n))
	st.rng.Uint64s(v)
	bitvec.ClearTail(v, n)
	return v
}

// randWords returns n fresh random words masked to b bits.
func (st *stream) randWords(n, b int) []uint64 {
	v := make([]uint64, n)
	st.rng.Uint64s(v)
	if b < 64 {
		m := bitvec.Mask(b)
		for i := range v {
			v[i] &= m
		}
	}
	return v
}

// otnReq is a set of 1-out-of-N OT instances of one kind (N, l) that can
// run with this party as either sender or receiver.
type otnReq interface {
	kind() (N, l int)
	size() int
	// send fills msgs (size()·N words) with this party's sender messages.
	send(msgs []uint64)
	// choose fills c (size() bytes) with this party's receiver choices.
	choose(c []uint8)
	// receive consumes the receiver's outputs (size() words).
	receive(out []uint64)
}

// A wordSender is an otnReq whose sender messages of an instance fit one word (N·l ≤ 64).
type wordSender interface {
	// sendWords fills words (size() words) with this party's sender messages, instance i's N
	// messages packed in words[i] (message v at bits [v·l, (v+1)·l)): what send would write.
	sendWords(words []uint64)
}

// allWordSenders reports whether every request of g is a wordSender.
func allWordSenders(g []otnReq) bool {
	for _, q := range g {
		if _, ok := q.(wordSender); !ok {
			return false
		}
	}
	return true
}

// runOTN runs the requests as one KK13 batch per kind (in order of first
// appearance), alternating the receiver starting with st.last.
func (st *stream) runOTN(ctx context.Context, reqs ...otnReq) error {
	type kindKey struct{ N, l int }
	var order []kindKey
	groups := map[kindKey][]otnReq{}
	for _, q := range reqs {
		if q == nil || q.size() == 0 {
			continue
		}
		N, l := q.kind()
		k := kindKey{N, l}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], q)
	}
	for _, k := range order {
		g := groups[k]
		total := 0
		for _, q := range g {
			total += q.size()
		}
		if k.N < 0 {
			for _, q := range g {
				if err := q.(*dealtReq).deal(ctx); err != nil {
					return err
				}
			}
			continue
		}
		if k.N == 0 {
			if err := st.runROT(ctx, k.l, total, g); err != nil {
				return err
			}
			continue
		}
		if st.last == st.party {
			// Receiver.
			c := growBytes(&st.sc.choice, total)
			out := grow(&st.sc.outs, total)
			off := 0
			for _, q := range g {
				q.choose(c[off : off+q.size()])
				off += q.size()
			}
			if err := st.ot.RecvOTN(ctx, k.N, k.l, c, out); err != nil {
				return err
			}
			off = 0
			for _, q := range g {
				q.receive(out[off : off+q.size()])
				off += q.size()
			}
		} else {
			if err := st.senderStep(); err != nil {
				return err
			}
			if st.ot.PacksOTN(k.N, k.l) && allWordSenders(g) {
				// Each instance's messages packed in one word (a dealt core forms the reply on it).
				words := grow(&st.snd.msgs, total)
				off := 0
				for _, q := range g {
					q.(wordSender).sendWords(words[off : off+q.size()])
					off += q.size()
				}
				if err := st.ot.SendOTNWords(ctx, k.N, k.l, words); err != nil {
					return err
				}
				st.last = 1 - st.last
				continue
			}
			msgs := grow(&st.snd.msgs, total*k.N)
			off := 0
			for _, q := range g {
				q.send(msgs[off*k.N : (off+q.size())*k.N])
				off += q.size()
			}
			if err := st.ot.SendOTN(ctx, k.N, k.l, msgs); err != nil {
				return err
			}
		}
		st.last = 1 - st.last // the sender replied last
	}
	return nil
}

// runROT runs the random-OT requests g (total instances of ROT_l) as two
// batches, the first with receiver st.last, the second with the other
// party, and hands every request its share of this party's outputs. On a
// silent source neither batch sends anything (refills aside), so the flight
// schedule is unchanged; with IKNP each receiver sends its matrix and each
// sender acknowledges it, so the second batch's sender, first, sent last.
func (st *stream) runROT(ctx context.Context, l, total int, g []otnReq) error {
	// Reused buffers (fresh ones cost a page fault per 4 KiB at their first store: on Ferret a
	// tenth of a ReLU's CPU). On a silent source nothing here waits for the peer, so the chunks
	// of an interleaved batch share one set (a set per chunk would multiply the memory the round
	// touches); with IKNP a receiver waits for the sender's acknowledgement while holding them.
	bufs := &st.sc.rot
	if st.silent {
		bufs = &st.snd.rot
	}
	m0, m1, m := grow(&bufs.m0, total), grow(&bufs.m1, total), grow(&bufs.m, total)
	c := grow(&bufs.c, bitvec.Words(total))
	clear(c)
	first := st.last
	for pass := 0; pass < 2; pass++ {
		receiver := first
		if pass == 1 {
			receiver = 1 - first
		}
		var err error
		if receiver == st.party {
			err = st.ot.RecvROTWide(ctx, 1, l, c, m)
		} else if err = st.senderStep(); err == nil {
			err = st.ot.SendROTWide(ctx, 1, l, m0, m1)
		}
		if err != nil {
			return err
		}
	}
	if !st.silent {
		st.last = first
	}
	off := 0
	for _, q := range g {
		rq, ok := q.(*rotTripleReq)
		if !ok {
			return fmt.Errorf("internal error: %T in a random-OT batch", q)
		}
		n := q.size()
		cb := make([]uint64, bitvec.Words(n))
		bitvec.Extract(cb, c, off, n)
		rq.fromROT(m0[off:off+n], m1[off:off+n], cb, m[off:off+n])
		off += n
	}
	return nil
}

// cot runs one batch of n l-bit correlated OTs with receiver st.last: the
// sender supplies correlations x and learns random r; the receiver supplies
// packed choice bits b and learns r + b·x. As sender, senderX(x) fills x and
// senderOut(r) gets r; as receiver, choice() gives the choice bits and
// receiverOut(y) gets y. w is the number of words per instance (one choice
// bit covers w correlations).
func (st *stream) cot(ctx context.Context, n, w, l int,
	senderX func(x []uint64), senderOut func(r []uint64),
	choice func() []uint64, receiverOut func(y []uint64)) error {
	if n == 0 {
		return nil
	}
	if st.last == st.party {
		y := grow(&st.sc.cotY, n*w)
		var err error
		if w == 1 {
			err = st.ot.RecvCOT(ctx, l, choice(), y)
		} else {
			err = st.ot.RecvCOTWide(ctx, w, l, choice(), y)
		}
		if err != nil {
			return err
		}
		receiverOut(y)
	} else {
		if err := st.senderStep(); err != nil {
			return err
		}
		x := grow(&st.snd.cotX, n*w)
		r := grow(&st.snd.cotR, n*w)
		senderX(x)
		var err error
		if w == 1 {
			err = st.ot.SendCOT(ctx, l, x, r)
		} else {
			err = st.ot.SendCOTWide(ctx, w, l, x, r)
		}
		if err != nil {
			return err
		}
		senderOut(r)
	}
	st.last = 1 - st.last
	return nil
}

// senderStep checks, before this party plays an OT sender, that the batch
// continues a flight it receives: an OT sender fills buffers shared by the
// chunks of an interleaved batch (sendScratch; on Ferret the carved
// sessions' buffers) and must not give way to another chunk before it has
// sent them (see chunks). A schedule that broke this would make the chunks
// overwrite each other's messages; it fails here instead, at both parties.
func (st *stream) senderStep() error {
	if st.conn.WouldYield() {
		return errors.New("internal error: the OT sender's batch does not continue the flight it answers (st.last out of step with the connection)")
	}
	return nil
}

// sendFlight sends one flight of the AND schedule: the first nbits bits of v.
func (st *stream) sendFlight(ctx context.Context, v []uint64, nbits int) error {
	if err := st.conn.SendBits(ctx, v, nbits); err != nil {
		return fmt.Errorf("sending masked bits: %w", err)
	}
	// Flush at once: whatever follows (an OT matrix, the caller's next
	// step) is not a receive that would flush it.
	if err := st.conn.Flush(ctx); err != nil {
		return fmt.Errorf("sending masked bits: %w", err)
	}
	st.last = st.party
	return nil
}

// recvFlight receives a flight of nbits bits into a fresh view of st.sc.rx.
func (st *stream) recvFlight(ctx context.Context, nbits int) ([]uint64, error) {
	nw := bitvec.Words(nbits)
	buf := grow(&st.sc.rx, nw+1)
	buf[nw] = 0
	if err := st.conn.RecvBits(ctx, buf, nbits); err != nil {
		return nil, fmt.Errorf("receiving masked bits: %w", err)
	}
	st.last = st.other()
	return buf[:nw+1], nil
}

// grow returns b resized to n words, reallocating only when needed. The
// contents are not cleared.
func grow(b *[]uint64, n int) []uint64 {
	if cap(*b) < n {
		*b = make([]uint64, n, n+n/4)
	}
	return (*b)[:n]
}

func growBytes(b *[]uint8, n int) []uint8 {
	if cap(*b) < n {
		*b = make([]uint8, n, n+n/4)
	}
	return (*b)[:n]
}
