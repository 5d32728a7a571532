package ot

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// checkShape validates the common arguments of the 1-of-2 calls and
// returns the number of instances.
func checkShape(call string, w, l, words int) (int, error) {
	if l < 1 || l > 64 {
		return 0, fmt.Errorf("ot: %s: bit width l=%d outside 1..64", call, l)
	}
	if w < 1 || w > MaxWidth {
		return 0, fmt.Errorf("ot: %s: width w=%d outside 1..%d", call, w, MaxWidth)
	}
	if words%w != 0 {
		return 0, fmt.Errorf("ot: %s: %d words is not a multiple of w=%d", call, words, w)
	}
	return words / w, nil
}

// BitWords is the number of words that hold n packed choice bits (bitvec.Words, named here for
// the callers of this package's packed choice-bit API).
func BitWords(n int) int { return bitvec.Words(n) }

// Bit returns choice bit i of the packed vector v (bitvec.Bit).
func Bit(v []uint64, i int) uint64 { return bitvec.Bit(v, i) }

func checkChoice(call string, b []uint64, n int) error {
	if len(b) < bitvec.Words(n) {
		return fmt.Errorf("ot: %s: %d choice words cannot hold %d choice bits", call, len(b), n)
	}
	return nil
}

func sameLen(call, a, b string, x, y []uint64) error {
	if len(x) != len(y) {
		return fmt.Errorf("ot: %s: len(%s)=%d but len(%s)=%d", call, a, len(x), b, len(y))
	}
	return nil
}

// sendArgs validates the arguments of a sender's call (n instances of w l-bit words in x, and y
// of the same length; xn and yn name them) and that the session is usable, and returns n.
func (s *Session) sendArgs(call string, w, l int, xn, yn string, x, y []uint64) (int, error) {
	n, err := checkShape(call, w, l, len(x))
	if err == nil {
		err = sameLen(call, xn, yn, x, y)
	}
	if err == nil {
		err = s.usable()
	}
	return n, err
}

// recvArgs validates the arguments of a receiver's call (n instances of w l-bit words in m,
// n choice bits in b) and that the session is usable, and returns n.
func (s *Session) recvArgs(call string, w, l int, b, m []uint64) (int, error) {
	n, err := checkShape(call, w, l, len(m))
	if err == nil {
		err = checkChoice(call, b, n)
	}
	if err == nil {
		err = s.usable()
	}
	return n, err
}

// failCall fails the session with err, a failure in the middle of call.
func (s *Session) failCall(call string, err error) error {
	return s.fail(fmt.Errorf("ot: %s: %w", call, err))
}

// recvExtend is the receiver's IKNP extension of a batch of n instances of kind op with choice
// bits b: it writes the hashed pads of the chosen messages (w l-bit words per instance) into m
// and returns the batch's counter, which the sender's reply carries.
func (s *Session) recvExtend(ctx context.Context, op uint8, w, l, n int, b, m []uint64) (uint64, error) {
	h := header{op: op, l: uint8(l), w: uint32(w), n: uint64(n), ctr: s.rcv.ctr}
	dom := s.domain(famIKNP, 1-s.party)
	derive := func(i0, cnt int, rows []prg.Block) {
		s.expandHash(m[i0*w:(i0+cnt)*w], rows[:cnt], prg.Block{}, h.ctr+uint64(i0), dom, w, l)
	}
	return h.ctr, s.iknpReceive(ctx, h, b, derive)
}

// ---------------------------------------------------------------- COT

// SendCOT is the sender of n = len(x) correlated OTs with l-bit additive
// correlations (2-choose-1 COT_l): it draws random r[i] (l bits) and the
// receiver of instance i obtains r[i] + b_i·x[i] mod 2^l. len(r) must equal
// len(x). Communication: λ bits from the receiver and l bits from the sender
// per instance.
func (s *Session) SendCOT(ctx context.Context, l int, x, r []uint64) error {
	return s.sendCOT(ctx, "SendCOT", 1, l, x, r)
}

// RecvCOT is the receiver of n = len(y) correlated OTs: with packed choice
// bits b it sets y[i] = r[i] + b_i·x[i] mod 2^l (see SendCOT).
func (s *Session) RecvCOT(ctx context.Context, l int, b, y []uint64) error {
	return s.recvCOT(ctx, "RecvCOT", 1, l, b, y)
}

// SendCOTWide is SendCOT with w l-bit words per instance: n = len(x)/w, and
// word k of instance i (x[i·w+k]) is an independent correlation under the
// instance's single choice bit: the receiver gets r[i·w+k] + b_i·x[i·w+k]
// mod 2^l. This is the vector COT of OT-based matrix multiplication.
// Communication: λ + w·l bits per instance.
func (s *Session) SendCOTWide(ctx context.Context, w, l int, x, r []uint64) error {
	return s.sendCOT(ctx, "SendCOTWide", w, l, x, r)
}

// RecvCOTWide is the receiver of SendCOTWide: n = len(y)/w instances.
func (s *Session) RecvCOTWide(ctx context.Context, w, l int, b, y []uint64) error {
	return s.recvCOT(ctx, "RecvCOTWide", w, l, b, y)
}

func (s *Session) sendCOT(ctx context.Context, call string, w, l int, x, r []uint64) error {
	n, err := s.sendArgs(call, w, l, "x", "r", x, r)
	if err != nil || n == 0 {
		return err
	}
	h := header{op: opCOT, l: uint8(l), w: uint32(w), n: uint64(n), ctr: s.snd.ctr}
	dom := s.domain(famIKNP, s.party)
	sB := prg.Block{s.snd.s[0], s.snd.s[1]}
	corr := growU(&s.sc.corr, transport.PackedWords(n*w, l))
	derive := func(i0, cnt int, q []prg.Block) {
		q = q[:cnt]
		ri := r[i0*w : (i0+cnt)*w]
		xi := x[i0*w : (i0+cnt)*w]
		s.expandHash(ri, q, prg.Block{}, h.ctr+uint64(i0), dom, w, l)
		h1 := growU(&s.sc.h1, cnt*w)
		s.expandHash(h1, q, sB, h.ctr+uint64(i0), dom, w, l)
		d := growU(&s.sc.vals, cnt*w)
		xi, h1 = xi[:len(d)], h1[:len(d)]
		ri = ri[:len(d)]
		for k := range d {
			d[k] = ri[k] + xi[k] - h1[k]
		}
		transport.Pack(corr[i0*w*l/64:], d, l)
	}
	if err := s.iknpSend(ctx, h, derive); err != nil {
		return s.failCall(call, err)
	}
	if err := s.reply(ctx, h.ctr, corr, n, w, l); err != nil {
		return s.failCall(call, err)
	}
	return nil
}

func (s *Session) recvCOT(ctx context.Context, call string, w, l int, b, y []uint64) error {
	n, err := s.recvArgs(call, w, l, b, y)
	if err != nil || n == 0 {
		return err
	}
	ctr, err := s.recvExtend(ctx, opCOT, w, l, n, b, y)
	if err != nil {
		return s.failCall(call, err)
	}
	m := bitvec.Mask(l)
	apply := func(off, nc int, packed []uint64) {
		d := growU(&s.sc.vals, nc*w)
		transport.Unpack(d, packed, l)
		if w == 1 {
			yc := y[off : off+nc]
			for i := range yc {
				yc[i] = (yc[i] + d[i]&-bitvec.Bit(b, off+i)) & m
			}
			return
		}
		for i := 0; i < nc; i++ {
			bm := -bitvec.Bit(b, off+i)
			yi := y[(off+i)*w : (off+i+1)*w]
			di := d[i*w : (i+1)*w]
			for k := range yi {
				yi[k] = (yi[k] + di[k]&bm) & m
			}
		}
	}
	if err := s.awaitReply(ctx, ctr, n, w, l, apply); err != nil {
		return s.failCall(call, err)
	}
	return nil
}

// ---------------------------------------------------------------- chosen OT

// SendOT is the sender of n = len(m0) chosen-message 1-of-2 OTs with l-bit
// messages: the receiver of instance i learns m0[i] if b_i = 0 and m1[i]
// otherwise (mod 2^l), and nothing about the other. len(m1) must equal
// len(m0). Communication: λ + 2l bits per instance.
func (s *Session) SendOT(ctx context.Context, l int, m0, m1 []uint64) error {
	return s.sendOT(ctx, "SendOT", 1, l, m0, m1)
}

// RecvOT is the receiver of n = len(m) chosen 1-of-2 OTs with packed choice
// bits b: m[i] = m_{b_i}[i].
func (s *Session) RecvOT(ctx context.Context, l int, b, m []uint64) error {
	return s.recvOT(ctx, "RecvOT", 1, l, b, m)
}

// SendOTWide is SendOT with w l-bit words per message (n = len(m0)/w).
// Communication: λ + 2·w·l bits per instance.
func (s *Session) SendOTWide(ctx context.Context, w, l int, m0, m1 []uint64) error {
	return s.sendOT(ctx, "SendOTWide", w, l, m0, m1)
}

// RecvOTWide is the receiver of SendOTWide: n = len(m)/w instances,
// m[i·w+k] = m_{b_i}[i·w+k].
func (s *Session) RecvOTWide(ctx context.Context, w, l int, b, m []uint64) error {
	return s.recvOT(ctx, "RecvOTWide", w, l, b, m)
}

func (s *Session) sendOT(ctx context.Context, call string, w, l int, m0, m1 []uint64) error {
	n, err := s.sendArgs(call, w, l, "m0", "m1", m0, m1)
	if err != nil || n == 0 {
		return err
	}
	h := header{op: opOT, l: uint8(l), w: uint32(w), n: uint64(n), ctr: s.snd.ctr}
	dom := s.domain(famIKNP, s.party)
	sB := prg.Block{s.snd.s[0], s.snd.s[1]}
	corr := growU(&s.sc.corr, transport.PackedWords(2*n*w, l))
	derive := func(i0, cnt int, q []prg.Block) {
		q = q[:cnt]
		h0 := growU(&s.sc.h0, cnt*w)
		h1 := growU(&s.sc.h1, cnt*w)
		s.expandHash(h0, q, prg.Block{}, h.ctr+uint64(i0), dom, w, l)
		s.expandHash(h1, q, sB, h.ctr+uint64(i0), dom, w, l)
		a0 := m0[i0*w : (i0+cnt)*w]
		a1 := m1[i0*w : (i0+cnt)*w]
		e := growU(&s.sc.vals, 2*cnt*w)
		if w == 1 {
			for i := range a0 {
				e[2*i] = a0[i] ^ h0[i]
				e[2*i+1] = a1[i] ^ h1[i]
			}
		} else {
			for i := 0; i < cnt; i++ {
				for k := 0; k < w; k++ {
					e[2*i*w+k] = a0[i*w+k] ^ h0[i*w+k]
					e[(2*i+1)*w+k] = a1[i*w+k] ^ h1[i*w+k]
				}
			}
		}
		transport.Pack(corr[i0*2*w*l/64:], e, l)
	}
	if err := s.iknpSend(ctx, h, derive); err != nil {
		return s.failCall(call, err)
	}
	if err := s.reply(ctx, h.ctr, corr, n, 2*w, l); err != nil {
		return s.failCall(call, err)
	}
	return nil
}

func (s *Session) recvOT(ctx context.Context, call string, w, l int, b, m []uint64) error {
	n, err := s.recvArgs(call, w, l, b, m)
	if err != nil || n == 0 {
		return err
	}
	ctr, err := s.recvExtend(ctx, opOT, w, l, n, b, m)
	if err != nil {
		return s.failCall(call, err)
	}
	apply := func(off, nc int, packed []uint64) {
		for i := 0; i < nc; i++ {
			c := int(bitvec.Bit(b, off+i))
			mi := m[(off+i)*w : (off+i+1)*w]
			base := (2*i + c) * w * l
			for k := range mi {
				mi[k] ^= bitvec.Get(packed, base+k*l, l)
			}
		}
	}
	if err := s.awaitReply(ctx, ctr, n, 2*w, l, apply); err != nil {
		return s.failCall(call, err)
	}
	return nil
}

// ---------------------------------------------------------------- random OT

// SendROT is the sender of n = len(m0) random 1-of-2 OTs: it gets two
// random l-bit messages per instance in m0 and m1; the receiver gets a random
// choice bit b_i and m_{b_i}[i]. Communication: λ bits per instance (from the
// receiver) plus a per-batch acknowledgement. [Session.SendROTChosen] is the
// variant in which the receiver brings its own choice bits and the sender
// sends nothing.
func (s *Session) SendROT(ctx context.Context, l int, m0, m1 []uint64) error {
	return s.sendROT(ctx, "SendROT", opROT, 1, l, m0, m1)
}

// RecvROT is the receiver of n = len(m) random OTs: it writes its random
// choice bits, packed, into b (at least bitvec.Words(n) words; bits past n are
// cleared) and m[i] = m_{b_i}[i].
func (s *Session) RecvROT(ctx context.Context, l int, b, m []uint64) error {
	return s.recvROT(ctx, "RecvROT", opROT, 1, l, b, m)
}

// SendROTWide is SendROT with w l-bit words per message (w=2, l=64 gives
// 128-bit random OTs, e.g. for seeding other protocols).
func (s *Session) SendROTWide(ctx context.Context, w, l int, m0, m1 []uint64) error {
	return s.sendROT(ctx, "SendROTWide", opROT, w, l, m0, m1)
}

// RecvROTWide is the receiver of SendROTWide: n = len(m)/w instances.
func (s *Session) RecvROTWide(ctx context.Context, w, l int, b, m []uint64) error {
	return s.recvROT(ctx, "RecvROTWide", opROT, w, l, b, m)
}

// ---------------------------------------------------------------- random OT, receiver's choice

// SendROTChosen is the sender of n = len(m0) random 1-of-2 OTs whose choice
// bits the receiver chooses (the plain IKNP random OT): the sender gets two
// random l-bit messages per instance in m0 and m1 (neither chosen by
// anyone), and the receiver, with its own choice bits b, gets m_{b_i}[i]
// (see RecvROTChosen). len(m1) must equal len(m0).
//
// The sender sends nothing: it only receives the receiver's batch header
// and extension matrix, λ bits per instance, so a batch is one flight (the
// receiver's). If the header does not match this call, the sender aborts
// the connection and returns an error; the receiver, which waits for
// nothing, sees the abort at its next receive.
func (s *Session) SendROTChosen(ctx context.Context, l int, m0, m1 []uint64) error {
	return s.sendROT(ctx, "SendROTChosen", opROTChosen, 1, l, m0, m1)
}

// RecvROTChosen is the receiver of n = len(m) random OTs with its own packed
// choice bits b (at least bitvec.Words(n) words; bits past n are ignored and
// left as they are): m[i] = m_{b_i}[i] of SendROTChosen. It sends the batch
// header and the extension matrix (λ bits per instance) and returns without
// waiting for the sender, who sends no reply.
func (s *Session) RecvROTChosen(ctx context.Context, l int, b, m []uint64) error {
	return s.recvROT(ctx, "RecvROTChosen", opROTChosen, 1, l, b, m)
}

// SendROTChosenWide is SendROTChosen with w l-bit words per message
// (n = len(m0)/w): instance i's messages are m0[i·w : (i+1)·w] and
// m1[i·w : (i+1)·w]. Communication is still λ bits per instance, from the
// receiver only, whatever w and l.
func (s *Session) SendROTChosenWide(ctx context.Context, w, l int, m0, m1 []uint64) error {
	return s.sendROT(ctx, "SendROTChosenWide", opROTChosen, w, l, m0, m1)
}

// RecvROTChosenWide is the receiver of SendROTChosenWide: n = len(m)/w
// instances with choice bits b, m[i·w+k] = m_{b_i}[i·w+k].
func (s *Session) RecvROTChosenWide(ctx context.Context, w, l int, b, m []uint64) error {
	return s.recvROT(ctx, "RecvROTChosenWide", opROTChosen, w, l, b, m)
}

// sendROT is the sender of both random-OT kinds: op opROT (the receiver
// draws its choice bits; the sender acknowledges) or opROTChosen (the
// receiver brings its choice bits; no reply).
func (s *Session) sendROT(ctx context.Context, call string, op uint8, w, l int, m0, m1 []uint64) error {
	n, err := s.sendArgs(call, w, l, "m0", "m1", m0, m1)
	if err != nil || n == 0 {
		return err
	}
	h := header{op: op, l: uint8(l), w: uint32(w), n: uint64(n), ctr: s.snd.ctr}
	dom := s.domain(famIKNP, s.party)
	sB := prg.Block{s.snd.s[0], s.snd.s[1]}
	derive := func(i0, cnt int, q []prg.Block) {
		q = q[:cnt]
		s.expandHash(m0[i0*w:(i0+cnt)*w], q, prg.Block{}, h.ctr+uint64(i0), dom, w, l)
		s.expandHash(m1[i0*w:(i0+cnt)*w], q, sB, h.ctr+uint64(i0), dom, w, l)
	}
	if err := s.iknpSend(ctx, h, derive); err != nil {
		return s.failCall(call, err)
	}
	if op == opROTChosen {
		return nil
	}
	if err := s.reply(ctx, h.ctr, nil, n, 0, l); err != nil {
		return s.failCall(call, err)
	}
	return nil
}

// recvROT is the receiver of both random-OT kinds (see sendROT): for opROT
// it first draws the choice bits into b.
func (s *Session) recvROT(ctx context.Context, call string, op uint8, w, l int, b, m []uint64) error {
	n, err := s.recvArgs(call, w, l, b, m)
	if err != nil || n == 0 {
		return err
	}
	if op == opROT {
		nw := bitvec.Words(n)
		s.rng.Uint64s(b[:nw])
		if n%64 != 0 {
			b[nw-1] &= bitvec.Mask(n % 64)
		}
	}
	ctr, err := s.recvExtend(ctx, op, w, l, n, b, m)
	if err != nil {
		return s.failCall(call, err)
	}
	if op == opROTChosen {
		return nil
	}
	if err := s.awaitReply(ctx, ctr, n, 0, l, nil); err != nil {
		return s.failCall(call, err)
	}
	return nil
}
