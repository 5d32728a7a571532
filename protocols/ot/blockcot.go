package ot

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// opBlockCOT is the batch kind of the raw block COTs below (one flight,
// like opROTChosen; the header's l is 0 because nothing is hashed).
const opBlockCOT = opROTChosen + 1

// BlockCOTDelta returns Δ, the global correlation of the block COTs this
// party sends ([Session.SendBlockCOT]): the 128-bit secret of its IKNP
// sender. It is the same for the session and all its forks, and its low
// bit is always 1 (so a receiver's block k[i] ⊕ b_i·Δ has low bit b_i
// wherever the sender's k[i] has it clear). Δ must stay
// secret; it is exported for protocols (such as silent OT) that build on
// COTs with a global Δ.
func (s *Session) BlockCOTDelta() prg.Block { return prg.Block{s.snd.s[0], s.snd.s[1]} }

// SendBlockCOT is the sender of n = len(k) 128-bit correlated OTs with the
// global correlation Δ = [Session.BlockCOTDelta]: it sets k[i] to a random
// block and the receiver of instance i obtains k[i] ⊕ b_i·Δ. These are the
// unhashed IKNP rows (q_i = t_i ⊕ b_i·s), so all instances, of this call
// and of every other, share one Δ — the form that silent-OT bootstrapping
// needs. Callers must hash (with tweaks of their own) before using k[i] or
// k[i] ⊕ Δ as independent keys.
//
// Communication: the receiver's batch header and extension matrix, λ bits
// per instance (rounded up to 64 instances per 8192-instance frame); the
// sender sends nothing, so a batch is one flight.
func (s *Session) SendBlockCOT(ctx context.Context, k []prg.Block) error {
	const call = "SendBlockCOT"
	if err := s.usable(); err != nil || len(k) == 0 {
		return err
	}
	h := header{op: opBlockCOT, w: 1, n: uint64(len(k)), ctr: s.snd.ctr}
	derive := func(i0, cnt int, q []prg.Block) { copy(k[i0:i0+cnt], q[:cnt]) }
	if err := s.iknpSend(ctx, h, derive); err != nil {
		return s.failCall(call, err)
	}
	return nil
}

// RecvBlockCOT is the receiver of n = len(m) block COTs with packed choice
// bits b (at least BitWords(n) words; bits past n are ignored): m[i] =
// k[i] ⊕ b_i·Δ of [Session.SendBlockCOT]. It sends the batch header and
// the extension matrix and returns without waiting for the sender.
func (s *Session) RecvBlockCOT(ctx context.Context, b []uint64, m []prg.Block) error {
	const call = "RecvBlockCOT"
	if err := s.usable(); err != nil || len(m) == 0 {
		return err
	}
	if len(b) < BitWords(len(m)) {
		return fmt.Errorf("ot: %s: %d choice words cannot hold %d choice bits", call, len(b), len(m))
	}
	h := header{op: opBlockCOT, w: 1, n: uint64(len(m)), ctr: s.rcv.ctr}
	derive := func(i0, cnt int, t []prg.Block) { copy(m[i0:i0+cnt], t[:cnt]) }
	if err := s.iknpReceive(ctx, h, b, derive); err != nil {
		return s.failCall(call, err)
	}
	return nil
}
