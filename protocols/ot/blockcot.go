package ot

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// SendBlockCOT is the sender of n = len(k) raw 128-bit correlated OTs with the global
// correlation Δ = [Session.Delta] and random choice bits: it sets k[i] to the core's key and
// the receiver of instance i obtains k[i] ⊕ b_i·Δ. All instances, of this call and of every
// other, share one Δ — the form that silent-OT bootstrapping needs. Callers must hash (with
// tweaks of their own) before using k[i] or k[i] ⊕ Δ as independent keys.
//
// On a chosen-choice core (IKNP) the receiver sends a batch header and its extension matrix,
// λ bits per instance (rounded up to 64 instances per frame), and the sender sends nothing,
// so a batch is one flight; on a random-choice core there is no communication but the core's.
func (s *Session) SendBlockCOT(ctx context.Context, k []prg.Block) error {
	const call = "SendBlockCOT"
	if err := s.usable(call); err != nil || len(k) == 0 {
		return err
	}
	h := header{op: opBlockCOT, w: 1, n: uint64(len(k)), ctr: s.core.Count(true)}
	if s.chosen != nil {
		if err := s.open(ctx, h, false, true); err != nil {
			return s.fail(call, err)
		}
	}
	if err := s.core.SendCOT(ctx, len(k), func(off int, key []prg.Block) { copy(k[off:], key) }); err != nil {
		return s.fail(call, err)
	}
	return nil
}

// RecvBlockCOT is the receiver of n = len(m) block COTs: it writes the random choice bits,
// packed, into b (at least BitWords(n) words; bits past n cleared) and m[i] = k[i] ⊕ b_i·Δ of
// [Session.SendBlockCOT]. It returns without waiting for the sender.
func (s *Session) RecvBlockCOT(ctx context.Context, b []uint64, m []prg.Block) error {
	const call = "RecvBlockCOT"
	if err := s.usable(call); err != nil || len(m) == 0 {
		return err
	}
	if len(b) < BitWords(len(m)) {
		return fmt.Errorf("ot: %s: %d choice words cannot hold %d choice bits", call, len(b), len(m))
	}
	h := header{op: opBlockCOT, w: 1, n: uint64(len(m)), ctr: s.core.Count(false)}
	if s.chosen != nil {
		if err := s.open(ctx, h, true, false); err != nil {
			return s.fail(call, err)
		}
	}
	if err := s.recvDraw(ctx, len(m), 1, true, b, func(off int, mb []prg.Block) { copy(m[off:], mb) }); err != nil {
		return s.fail(call, err)
	}
	return nil
}
