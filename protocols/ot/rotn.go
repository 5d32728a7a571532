package ot

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// Random 1-out-of-N OT: the sender gets N random l-bit messages per instance, the receiver a
// random choice c_i and message c_i. It is the chosen-message 1-of-N OT (otn.go) without the
// masked messages: the sender's pads are its messages. Nothing travels beyond what the
// extension itself needs:
//
//   - on a native core (KK13 on IKNP) the receiver draws its choices (crypto/rand) and sends
//     the extension; the sender sends only the acknowledgement of a chosen-choice core;
//   - on any other core the choice bits are the COTs' own random bits (bit j of c_i is the
//     choice of COT i·m + j), so no derandomisation bits and, on a random-choice core, no
//     header (as for the 1-of-2 random OT); the pads are those of otn.go with d = 0;
//   - on a dealt core the dealt random OTs are the random OTs themselves: nothing passes
//     between the parties.

// SendROTN is the sender of n = len(msgs)/N random 1-out-of-N OTs with l-bit messages: it sets
// msgs[i·N : (i+1)·N] to instance i's N random messages (mod 2^l). N must be a power of two,
// 2 ≤ N ≤ 256. The sender sends nothing but the 8-byte acknowledgement of a chosen-choice
// core.
func (s *Session) SendROTN(ctx context.Context, N, l int, msgs []uint64) error {
	const call = "SendROTN"
	m, err := checkN(call, N, l)
	if err == nil && len(msgs)%N != 0 {
		err = fmt.Errorf("ot: %s: %d messages is not a multiple of N=%d", call, len(msgs), N)
	}
	if err == nil {
		err = s.usable(call)
	}
	n := len(msgs) / N
	if err != nil || n == 0 {
		return err
	}
	switch {
	case s.otn != nil:
		err = s.sendROTNNative(ctx, N, l, n, msgs)
	case s.dealt != nil:
		err = s.dealt.SendDealt(ctx, N, 1, l, msgs)
	default:
		err = s.sendROTN(ctx, N, m, l, n, msgs)
	}
	if err != nil {
		return s.fail(call, err)
	}
	return nil
}

// RecvROTN is the receiver of n = len(out) random 1-out-of-N OTs (see SendROTN): it sets c[i]
// to instance i's random choice and out[i] to the sender's message c[i] of instance i.
func (s *Session) RecvROTN(ctx context.Context, N, l int, c []uint8, out []uint64) error {
	const call = "RecvROTN"
	m, err := checkN(call, N, l)
	if err == nil && len(c) != len(out) {
		err = fmt.Errorf("ot: %s: len(c)=%d but len(out)=%d", call, len(c), len(out))
	}
	if err == nil {
		err = s.usable(call)
	}
	n := len(out)
	if err != nil || n == 0 {
		return err
	}
	switch {
	case s.otn != nil:
		err = s.recvROTNNative(ctx, N, l, c, out)
	case s.dealt != nil:
		err = s.recvROTNDealt(ctx, N, m, l, c, out)
	default:
		err = s.recvROTN(ctx, N, m, l, c, out)
	}
	if err != nil {
		return s.fail(call, err)
	}
	return nil
}

// rotnHeader opens a random 1-of-N batch where a header is sent: on a chosen-choice core, by
// the receiver (its extension is the first message). On a random-choice core there is none.
func (s *Session) rotnHeader(ctx context.Context, h header, sender bool) error {
	if s.chosen == nil {
		return nil
	}
	return s.open(ctx, h, !sender, sender)
}

// sendROTN is the derived random 1-of-N sender: the keys of the batch's n·m COTs (random
// choices, so d = 0), hashed into the pads of otn.go.
func (s *Session) sendROTN(ctx context.Context, N, m, l, n int, msgs []uint64) error {
	h := header{op: opROTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: s.core.Count(true)}
	if err := s.rotnHeader(ctx, h, true); err != nil {
		return err
	}
	total := n * m
	kall := growB(&s.sc.keys, total)
	if err := s.core.SendCOT(ctx, total, func(off int, k []prg.Block) { copy(kall[off:], k) }); err != nil {
		return err
	}
	d := growU(&s.sc.bits, bitvec.Words(total)+1)
	clear(d)
	delta := s.core.Delta()
	mask := bitvec.Mask(l)
	dom := s.core.Domain(s.party, PurposeOTN) | uint64(m)
	ci := otnGroup(N, m)
	for g := 0; g < n; g += ci {
		cnt := min(ci, n-g)
		z := growB(&s.sc.z, cnt*m*N)
		otnKeys(z, kall[g*m:(g+cnt)*m], d, g*m, m, N, delta)
		s.hash.TCCR(z, z, prg.Tweak{Lo: (h.ctr + uint64(g*m)) * uint64(N), Hi: dom})
		e := msgs[g*N : (g+cnt)*N]
		clear(e)
		otnPads(e, e, z, m, N, mask)
	}
	if s.chosen == nil {
		return nil
	}
	return s.reply(ctx, h.ctr, n, 0, l, nil, nil)
}

// rotnHashChunk is the number of COTs whose hashes the derived receiver forms at once.
const rotnHashChunk = 1 << 12

// recvROTN is the derived random 1-of-N receiver.
func (s *Session) recvROTN(ctx context.Context, N, m, l int, c []uint8, out []uint64) error {
	n := len(out)
	h := header{op: opROTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: s.core.Count(false)}
	if err := s.rotnHeader(ctx, h, false); err != nil {
		return err
	}
	total := n * m
	cb := growU(&s.sc.cb, bitvec.Words(total)+1)
	clear(cb)
	mall := growB(&s.sc.keys, total)
	if err := s.recvDraw(ctx, n, m, true, cb, func(off int, mb []prg.Block) { copy(mall[off:], mb) }); err != nil {
		return err
	}
	for i := range c {
		c[i] = uint8(bitvec.Get(cb, i*m, m))
	}
	clear(out)
	dom := s.core.Domain(1-s.party, PurposeOTN) | uint64(m)
	for off := 0; off < total; off += rotnHashChunk {
		s.otnRecvPads(out, mall[off:min(total, off+rotnHashChunk)], off, h.ctr, N, m, dom, c)
	}
	mask := bitvec.Mask(l)
	for i := range out {
		out[i] &= mask
	}
	if s.chosen == nil {
		return nil
	}
	return s.awaitReply(ctx, h.ctr, n, 0, l, nil, nil)
}

// sendROTNNative is the random 1-of-N sender on a core's native extension: the pads are the
// messages.
func (s *Session) sendROTNNative(ctx context.Context, N, l, n int, msgs []uint64) error {
	h := header{op: opROTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: s.otn.OTNCount(true)}
	if err := s.rotnHeader(ctx, h, true); err != nil {
		return err
	}
	mask := bitvec.Mask(l)
	err := s.otn.SendOTNPads(ctx, N, n, func(i0, v int, pads []prg.Block) {
		mv := msgs[i0*N+v:]
		for i := range pads {
			mv[i*N] = pads[i][0] & mask
		}
	})
	if err != nil || s.chosen == nil {
		return err
	}
	return s.reply(ctx, h.ctr, n, 0, l, nil, nil)
}

// recvROTNNative is the receiver of sendROTNNative: its choices from crypto/rand.
func (s *Session) recvROTNNative(ctx context.Context, N, l int, c []uint8, out []uint64) error {
	if s.rng == nil {
		rng, err := prg.NewRandom()
		if err != nil {
			return err
		}
		s.rng = rng
	}
	s.rng.Fill(c)
	for i := range c {
		c[i] &= uint8(N - 1)
	}
	h := header{op: opROTN, l: uint8(l), w: uint32(N), n: uint64(len(out)), ctr: s.otn.OTNCount(false)}
	if err := s.rotnHeader(ctx, h, false); err != nil {
		return err
	}
	mask := bitvec.Mask(l)
	err := s.otn.RecvOTNPads(ctx, N, c, func(i0 int, pads []prg.Block) {
		mo := out[i0 : i0+len(pads)]
		for i := range mo {
			mo[i] = pads[i][0] & mask
		}
	})
	if err != nil || s.chosen == nil {
		return err
	}
	return s.awaitReply(ctx, h.ctr, len(out), 0, l, nil, nil)
}

// recvROTNDealt is the random 1-of-N receiver on a dealt core: the dealt OTs themselves.
func (s *Session) recvROTNDealt(ctx context.Context, N, m, l int, c []uint8, out []uint64) error {
	cb := growU(&s.sc.cb, bitvec.Words(len(out)*m)+1)
	wait, err := s.dealt.RecvDealt(ctx, N, 1, l, cb, out)
	if err != nil {
		return err
	}
	for i := range c {
		c[i] = uint8(bitvec.Get(cb, i*m, m))
	}
	return wait()
}
