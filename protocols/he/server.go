package he

import (
	"context"
	"fmt"
	"hash/maphash"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/protocols/he/scheme"
)

// accChunk is the number of outputs of one group a worker accumulates at once: each input
// ciphertext and weight plaintext is read once per chunk.
const accChunk = 8

// worker is party 0's per-goroutine state: an evaluator, accumulators and scratch.
type worker struct {
	ev   *scheme.Evaluator
	acc  []*scheme.Accumulator
	out  *scheme.Ciphertext
	wp   *scheme.Plaintext
	mask []uint64
}

func (s *Session) newWorker() (*worker, error) {
	ev, err := scheme.NewEvaluator(s.p, s.pk)
	if err != nil {
		return nil, err
	}
	wk := &worker{ev: ev, wp: s.p.NewPlaintext(), mask: make([]uint64, s.p.N()), out: s.p.NewCiphertext()}
	for i := 0; i < accChunk; i++ {
		wk.acc = append(wk.acc, s.p.NewAccumulator())
	}
	return wk, nil
}

// runServer is party 0: receive the encrypted blocks, add its own share in plaintext, multiply
// by the weights, mask, re-randomise, flood, switch to the reply modulus and reply.
func (s *Session) runServer(ctx context.Context, pl *heplan.Plan, dst, w, x []uint64) error {
	p := s.p
	in := make([]*scheme.Ciphertext, pl.Inputs)
	raw := make([][]byte, pl.Inputs)
	for i := range raw {
		raw[i] = make([]byte, p.UploadBytes())
		if err := s.conn.Recv(ctx, raw[i]); err != nil {
			return err
		}
	}
	wpolys, err := s.weights(ctx, pl, w)
	if err != nil {
		return err
	}
	wks := make([]*worker, s.workers)
	getWorker := func(i int) (*worker, error) {
		if wks[i] == nil {
			var err error
			if wks[i], err = s.newWorker(); err != nil {
				return nil, err
			}
		}
		return wks[i], nil
	}
	err = s.parallel(ctx, pl.Inputs, func(wi, i int) error {
		wk, err := getWorker(wi)
		if err != nil {
			return err
		}
		c := p.NewCiphertext()
		if err := p.DecodeUpload(raw[i], c); err != nil {
			return fmt.Errorf("input ciphertext %d: %w", i, err)
		}
		raw[i] = nil
		lo, hi := pl.InStart[i], pl.InStart[i+1]
		wk.ev.AddShare(c, pl.InCoef[lo:hi], pl.InSrc[lo:hi], x)
		in[i] = c
		return nil
	})
	if err != nil {
		return err
	}
	clear(dst)
	replies := make([][]byte, len(pl.Outputs))
	// Work items: chunks of at most accChunk outputs of one group.
	type item struct{ g, lo, hi int }
	var items []item
	for g, grp := range pl.Groups {
		for lo := 0; lo < len(grp.Outs); lo += accChunk {
			items = append(items, item{g, lo, min(lo+accChunk, len(grp.Outs))})
		}
	}
	err = s.parallel(ctx, len(items), func(wi, it int) error {
		wk, err := getWorker(wi)
		if err != nil {
			return err
		}
		grp := &pl.Groups[items[it].g]
		outs := grp.Outs[items[it].lo:items[it].hi]
		for a := range outs {
			wk.acc[a].Zero()
		}
		for t, wIdx := range grp.Ws {
			wp := wk.wp
			if wpolys != nil {
				wp = wpolys[wIdx]
			} else {
				s.buildWeight(pl, w, int(wIdx), wp)
			}
			for a, o := range outs {
				wk.ev.MulAddWide(wk.acc[a], in[pl.Outputs[o].In[t]], wp)
			}
		}
		for a, o := range outs {
			out := &pl.Outputs[o]
			mask := wk.mask[:len(out.Need)]
			wk.ev.Reduce(wk.out, wk.acc[a])
			replies[o] = wk.ev.Finish(make([]byte, 0, p.ReplyBytes(len(out.Need))), wk.out, out.Need, mask)
			for i, r := range mask {
				dst[out.Dst[i]] = r
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, r := range replies {
		if err := s.conn.Send(ctx, r); err != nil {
			return err
		}
	}
	return s.conn.Flush(ctx)
}

// wkey names a cached layer's weights by content: its plan, the number of weights and their keyed
// 64-bit hash (callers may pass every layer's weights in one reused buffer).
type wkey struct {
	plan *heplan.Plan
	sum  uint64
	n    int
}

// weights returns party 0's weight plaintexts, cached when they fit the budget (nil otherwise:
// the caller builds them on the fly with buildWeight).
func (s *Session) weights(ctx context.Context, pl *heplan.Plan, w []uint64) ([]*scheme.Plaintext, error) {
	if s.cacheBytes < 0 || len(w) == 0 {
		return nil, nil
	}
	var h maphash.Hash
	h.SetSeed(s.hseed)
	_, _ = h.Write(bitvec.Bytes(w))
	k := wkey{plan: pl, sum: h.Sum64(), n: len(w)}
	if polys, ok := s.wcache[k]; ok {
		return polys, nil
	}
	size := pl.Weights * len(s.p.Q) * s.p.N() * 8
	if s.cacheUsed+size > s.cacheBytes {
		return nil, nil
	}
	polys := make([]*scheme.Plaintext, pl.Weights)
	err := s.parallel(ctx, pl.Weights, func(_, i int) error {
		polys[i] = s.p.NewPlaintext()
		s.buildWeight(pl, w, i, polys[i])
		return nil
	})
	if err != nil {
		return nil, err
	}
	s.wcache[k] = polys
	s.cacheUsed += size
	return polys, nil
}

// buildWeight sets dst to weight plaintext i of the plan.
func (s *Session) buildWeight(pl *heplan.Plan, w []uint64, i int, dst *scheme.Plaintext) {
	lo, hi := pl.WStart[i], pl.WStart[i+1]
	s.p.EncodeWeights(dst, pl.WCoef[lo:hi], pl.WElem[lo:hi], w)
}
