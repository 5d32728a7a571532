package ot

import (
	"context"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// The 1-of-2 kinds all hash the COTs of a batch the same way — the sender's pads H(k_i) and
// H(k_i ⊕ Δ), the receiver's H(k_i ⊕ b_i·Δ) — and differ in whose choice bits they carry and
// what the sender sends back:
//
//	kind        choice bits   sender's reply (values per instance)
//	ROT         random        none
//	ROTChosen   receiver's    none
//	RCOT        random        w correlations
//	COT         receiver's    w correlations
//	OT          receiver's    2·w masked messages
//
// On a chosen-choice core every batch is opened by the receiver (its extension is the first
// message) and every reply starts with an acknowledgement; on a random-choice core the
// receiver's chosen bits cost one derandomisation bit per instance, a batch is opened by the
// party whose message comes first, and a random OT, which has no message, has no header. On a
// dealt core ([DealtCore], dealt.go) the dealt random OTs take the place of the COT draw and the
// hashing; the messages between the parties stay those of a random-choice core.

// kind1of2 describes a 1-of-2 kind.
type kind1of2 struct {
	random bool // the receiver's choice bits are random
	vals   int  // values per word of an instance in the sender's reply
}

var kinds1of2 = map[uint8]kind1of2{
	opROT: {random: true}, opROTChosen: {}, opRCOT: {random: true, vals: 1}, opCOT: {vals: 1}, opOT: {vals: 2},
}

// hasHeader reports whether a batch of kind op has a header, and receiverFirst whether the
// receiver sends it.
func (s *Session) hasHeader(op uint8) (has, receiverFirst bool) {
	if s.chosen != nil {
		return true, true
	}
	return op != opROT, !kinds1of2[op].random
}

// hasReply reports whether the sender replies to a batch of kind op.
func (s *Session) hasReply(op uint8) bool {
	return kinds1of2[op].vals > 0 || (s.chosen != nil && op != opROTChosen)
}

// send1of2 is the sender of every 1-of-2 kind: n instances of w l-bit words. For ROT and
// ROTChosen a and b receive the two random messages; for COT and RCOT a is x and b receives
// r; for OT they are the messages m0 and m1.
func (s *Session) send1of2(ctx context.Context, call string, op uint8, w, l int, a, b []uint64) error {
	an, bn := "m0", "m1"
	if kinds1of2[op].vals == 1 {
		an, bn = "x", "r"
	}
	n, err := s.sendArgs(call, w, l, an, bn, a, b)
	if err != nil || n == 0 {
		return err
	}
	k := kinds1of2[op]
	h := header{op: op, l: uint8(l), w: uint32(w), n: uint64(n), ctr: s.count(true)}
	if has, rf := s.hasHeader(op); has {
		if err := s.open(ctx, h, !rf, true); err != nil {
			return s.fail(call, err)
		}
	}
	var p0, p1 []uint64
	switch k.vals {
	case 0:
		p0, p1 = a, b
	case 1:
		p0, p1 = b, growU(&s.sc.p1, n*w)
	default:
		p0, p1 = growU(&s.sc.p0, n*w), growU(&s.sc.p1, n*w)
	}
	if s.dealt != nil {
		err = s.sendDealt2(ctx, n, w, l, k.random, p0, p1)
	} else {
		dom, delta := s.core.Domain(s.party, PurposePads), s.core.Delta()
		err = s.sendDraw(ctx, n, 1, k.random, func(off int, key []prg.Block) {
			s.pads(p0[off*w:(off+len(key))*w], key, prg.Block{}, h.ctr+uint64(off), dom, w, l)
			s.pads(p1[off*w:(off+len(key))*w], key, delta, h.ctr+uint64(off), dom, w, l)
		}, func(off, nc int, d []uint64) { swapFlipped(p0, p1, off, nc, w, d) })
	}
	if err != nil {
		return s.fail(call, err)
	}
	if !s.hasReply(op) {
		return nil
	}
	vals := func(off, nc int) ([]uint64, error) {
		lo, hi := off*w, (off+nc)*w
		r, x, q := p0[lo:hi], a[lo:hi], p1[lo:hi]
		dst := growU(&s.sc.vals, len(r))
		for i := range dst {
			dst[i] = r[i] + x[i] - q[i]
		}
		return dst, nil
	}
	if k.vals == 2 {
		vals = func(off, nc int) ([]uint64, error) {
			dst := growU(&s.sc.vals, 2*nc*w)
			for i := 0; i < nc; i++ {
				j := (off + i) * w
				e0, e1 := dst[2*i*w:(2*i+1)*w], dst[(2*i+1)*w:(2*i+2)*w]
				m0, m1, q0, q1 := a[j:j+w], b[j:j+w], p0[j:j+w], p1[j:j+w]
				for t := range e0 {
					e0[t] = m0[t] ^ q0[t]
					e1[t] = m1[t] ^ q1[t]
				}
			}
			return dst, nil
		}
	}
	if err := s.reply(ctx, h.ctr, n, k.vals*w, l, nil, vals); err != nil {
		return s.fail(call, err)
	}
	return nil
}

// recv1of2 is the receiver of every 1-of-2 kind (see send1of2): n instances of w l-bit words
// into m, with the choice bits b (written for the random kinds).
func (s *Session) recv1of2(ctx context.Context, call string, op uint8, w, l int, b, m []uint64) error {
	n, err := s.recvArgs(call, w, l, b, m)
	if err != nil || n == 0 {
		return err
	}
	k := kinds1of2[op]
	h := header{op: op, l: uint8(l), w: uint32(w), n: uint64(n), ctr: s.count(false)}
	if has, rf := s.hasHeader(op); has {
		if err := s.open(ctx, h, rf, false); err != nil {
			return s.fail(call, err)
		}
	}
	var ready func() error // a dealt core's wait for m
	if s.dealt != nil {
		ready, err = s.recvDealt(ctx, 2, n, w, l, 1, k.random, b, m)
	} else {
		dom := s.core.Domain(1-s.party, PurposePads)
		err = s.recvDraw(ctx, n, 1, k.random, b, func(off int, mb []prg.Block) {
			s.pads(m[off*w:(off+len(mb))*w], mb, prg.Block{}, h.ctr+uint64(off), dom, w, l)
		})
	}
	if err != nil {
		return s.fail(call, err)
	}
	if !s.hasReply(op) {
		if ready != nil {
			if err := ready(); err != nil {
				return s.fail(call, err)
			}
		}
		return nil
	}
	mask := bitvec.Mask(l)
	apply := func(off, nc int, pk []uint64) {
		d := growU(&s.sc.vals, nc*w)
		transport.Unpack(d, pk, l)
		for i := 0; i < nc; i++ {
			bm := -bitvec.Bit(b, off+i)
			yi, di := m[(off+i)*w:(off+i+1)*w], d[i*w:(i+1)*w]
			for t := range yi {
				yi[t] = (yi[t] + di[t]&bm) & mask
			}
		}
	}
	if k.vals == 2 {
		apply = func(off, nc int, pk []uint64) {
			for i := 0; i < nc; i++ {
				c := int(bitvec.Bit(b, off+i))
				mi, base := m[(off+i)*w:(off+i+1)*w], (2*i+c)*w*l
				for t := range mi {
					mi[t] ^= bitvec.Get(pk, base+t*l, l)
				}
			}
		}
	}
	if err := s.awaitReply(ctx, h.ctr, n, k.vals*w, l, ready, apply); err != nil {
		return s.fail(call, err)
	}
	return nil
}

// ---------------------------------------------------------------- COT

// SendCOT is the sender of n = len(x) correlated OTs with l-bit additive correlations
// (2-choose-1 COT_l) and the receiver's chosen choice bits: it draws random r[i] (l bits) and
// the receiver of instance i obtains r[i] + b_i·x[i] mod 2^l. len(r) must equal len(x).
// Communication: w·l bits per instance from the sender, and the receiver's choice: λ bits of
// IKNP extension, or one derandomisation bit on a random-choice core.
func (s *Session) SendCOT(ctx context.Context, l int, x, r []uint64) error {
	return s.send1of2(ctx, "SendCOT", opCOT, 1, l, x, r)
}

// RecvCOT is the receiver of n = len(y) correlated OTs: with packed choice bits b it sets
// y[i] = r[i] + b_i·x[i] mod 2^l (see SendCOT).
func (s *Session) RecvCOT(ctx context.Context, l int, b, y []uint64) error {
	return s.recv1of2(ctx, "RecvCOT", opCOT, 1, l, b, y)
}

// SendCOTWide is SendCOT with w l-bit words per instance: n = len(x)/w, and word k of
// instance i (x[i·w+k]) is an independent correlation under the instance's single choice bit:
// the receiver gets r[i·w+k] + b_i·x[i·w+k] mod 2^l. This is the vector COT of OT-based matrix
// multiplication.
func (s *Session) SendCOTWide(ctx context.Context, w, l int, x, r []uint64) error {
	return s.send1of2(ctx, "SendCOTWide", opCOT, w, l, x, r)
}

// RecvCOTWide is the receiver of SendCOTWide: n = len(y)/w instances.
func (s *Session) RecvCOTWide(ctx context.Context, w, l int, b, y []uint64) error {
	return s.recv1of2(ctx, "RecvCOTWide", opCOT, w, l, b, y)
}

// SendRCOT is the sender of n = len(x) correlated OTs with random choice bits: it gets random
// r[i] (l bits) and the receiver gets a random b_i and r[i] + b_i·x[i] mod 2^l.
// Communication: l bits per instance from the sender, and on a chosen-choice core the
// receiver's λ bits of extension.
func (s *Session) SendRCOT(ctx context.Context, l int, x, r []uint64) error {
	return s.send1of2(ctx, "SendRCOT", opRCOT, 1, l, x, r)
}

// RecvRCOT is the receiver of SendRCOT: b gets the random choice bits (packed; bits of the
// last word past n cleared), y[i] = r[i] + b_i·x[i] mod 2^l.
func (s *Session) RecvRCOT(ctx context.Context, l int, b, y []uint64) error {
	return s.recv1of2(ctx, "RecvRCOT", opRCOT, 1, l, b, y)
}

// SendRCOTWide is SendRCOT with w l-bit words per instance.
func (s *Session) SendRCOTWide(ctx context.Context, w, l int, x, r []uint64) error {
	return s.send1of2(ctx, "SendRCOTWide", opRCOT, w, l, x, r)
}

// RecvRCOTWide is the receiver of SendRCOTWide.
func (s *Session) RecvRCOTWide(ctx context.Context, w, l int, b, y []uint64) error {
	return s.recv1of2(ctx, "RecvRCOTWide", opRCOT, w, l, b, y)
}

// ---------------------------------------------------------------- chosen OT

// SendOT is the sender of n = len(m0) chosen-message 1-of-2 OTs with l-bit messages: the
// receiver of instance i learns m0[i] if b_i = 0 and m1[i] otherwise (mod 2^l), and nothing
// about the other. len(m1) must equal len(m0). Communication: 2·l bits per instance from the
// sender, and the receiver's choice (see SendCOT).
func (s *Session) SendOT(ctx context.Context, l int, m0, m1 []uint64) error {
	return s.send1of2(ctx, "SendOT", opOT, 1, l, m0, m1)
}

// RecvOT is the receiver of n = len(m) chosen 1-of-2 OTs with packed choice bits b:
// m[i] = m_{b_i}[i].
func (s *Session) RecvOT(ctx context.Context, l int, b, m []uint64) error {
	return s.recv1of2(ctx, "RecvOT", opOT, 1, l, b, m)
}

// SendOTWide is SendOT with w l-bit words per message (n = len(m0)/w).
func (s *Session) SendOTWide(ctx context.Context, w, l int, m0, m1 []uint64) error {
	return s.send1of2(ctx, "SendOTWide", opOT, w, l, m0, m1)
}

// RecvOTWide is the receiver of SendOTWide: n = len(m)/w instances, m[i·w+k] = m_{b_i}[i·w+k].
func (s *Session) RecvOTWide(ctx context.Context, w, l int, b, m []uint64) error {
	return s.recv1of2(ctx, "RecvOTWide", opOT, w, l, b, m)
}

// ---------------------------------------------------------------- random OT

// SendROT is the sender of n = len(m0) random 1-of-2 OTs: it gets two random l-bit messages
// per instance in m0 and m1; the receiver gets a random choice bit b_i and m_{b_i}[i].
// Communication: none on a random-choice core; on a chosen-choice core the receiver's λ bits
// per instance and an acknowledgement per batch. [Session.SendROTChosen] is the variant in
// which the receiver brings its own choice bits.
func (s *Session) SendROT(ctx context.Context, l int, m0, m1 []uint64) error {
	return s.send1of2(ctx, "SendROT", opROT, 1, l, m0, m1)
}

// RecvROT is the receiver of n = len(m) random OTs: it writes its random choice bits, packed,
// into b (at least bitvec.Words(n) words; bits past n are cleared) and m[i] = m_{b_i}[i].
func (s *Session) RecvROT(ctx context.Context, l int, b, m []uint64) error {
	return s.recv1of2(ctx, "RecvROT", opROT, 1, l, b, m)
}

// SendROTWide is SendROT with w l-bit words per message (w=2, l=64 gives 128-bit random OTs,
// e.g. for seeding other protocols).
func (s *Session) SendROTWide(ctx context.Context, w, l int, m0, m1 []uint64) error {
	return s.send1of2(ctx, "SendROTWide", opROT, w, l, m0, m1)
}

// RecvROTWide is the receiver of SendROTWide: n = len(m)/w instances.
func (s *Session) RecvROTWide(ctx context.Context, w, l int, b, m []uint64) error {
	return s.recv1of2(ctx, "RecvROTWide", opROT, w, l, b, m)
}

// SendROTChosen is the sender of n = len(m0) random 1-of-2 OTs whose choice bits the receiver
// chooses: the sender gets two random l-bit messages per instance in m0 and m1 (neither
// chosen by anyone), and the receiver, with its own choice bits b, gets m_{b_i}[i] (see
// RecvROTChosen). len(m1) must equal len(m0).
//
// The sender sends nothing: a batch is one flight, the receiver's (its batch header and its
// choice: λ bits per instance of IKNP extension, or one derandomisation bit on a
// random-choice core). If the header does not match this call, the sender aborts the
// connection and returns an error; the receiver, which waits for nothing, sees the abort at
// its next receive.
func (s *Session) SendROTChosen(ctx context.Context, l int, m0, m1 []uint64) error {
	return s.send1of2(ctx, "SendROTChosen", opROTChosen, 1, l, m0, m1)
}

// RecvROTChosen is the receiver of n = len(m) random OTs with its own packed choice bits b (at
// least bitvec.Words(n) words; bits past n are ignored and left as they are): m[i] =
// m_{b_i}[i] of SendROTChosen. It returns without waiting for the sender, who sends no reply.
func (s *Session) RecvROTChosen(ctx context.Context, l int, b, m []uint64) error {
	return s.recv1of2(ctx, "RecvROTChosen", opROTChosen, 1, l, b, m)
}

// SendROTChosenWide is SendROTChosen with w l-bit words per message (n = len(m0)/w): instance
// i's messages are m0[i·w : (i+1)·w] and m1[i·w : (i+1)·w]. Communication does not depend on
// w and l.
func (s *Session) SendROTChosenWide(ctx context.Context, w, l int, m0, m1 []uint64) error {
	return s.send1of2(ctx, "SendROTChosenWide", opROTChosen, w, l, m0, m1)
}

// RecvROTChosenWide is the receiver of SendROTChosenWide: n = len(m)/w instances with choice
// bits b, m[i·w+k] = m_{b_i}[i·w+k].
func (s *Session) RecvROTChosenWide(ctx context.Context, w, l int, b, m []uint64) error {
	return s.recv1of2(ctx, "RecvROTChosenWide", opROTChosen, w, l, b, m)
}
