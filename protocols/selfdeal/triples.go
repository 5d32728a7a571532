package selfdeal

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/nonlinear"
)

// Triples is a nonlinear.TripleDealer whose Beaver bit triples the two parties make themselves,
// per OT stream, with package nonlinear's OT-based construction on a session of their own over
// that stream (one per stream, given to NewTriples): ahead (MakeAhead) into a buffer per stream,
// and on demand when a call finds its buffer short. Calls for different streams may run
// concurrently; calls for one stream come in the same order at both parties.
type Triples struct {
	gens []*nonlinear.Session
	mu   sync.Mutex
	st   []tripleQueue
}

// tripleQueue is a stream's triples made ahead and its counts.
type tripleQueue struct {
	reg       []nonlinear.BitTriples
	corr      []nonlinear.CorrelatedBitTriples
	regOff    int // in reg[0]
	corrOff   int // in corr[0]
	heldReg   uint64
	heldCorr  uint64
	drawnReg  uint64
	drawnCorr uint64
	stats     TripleStats
}

// TripleStats counts a stream's triples: made ahead, taken from those, made on demand.
type TripleStats struct {
	Ahead, Taken, OnDemand uint64
}

// NewTriples returns the triple source over the sessions that make the triples, gens[i] on OT
// stream i (single-stream sessions without a Dealer; nonlinear.Options.Sequential, since triples
// made on demand run inside the calling protocol's step).
func NewTriples(gens ...*nonlinear.Session) (*Triples, error) {
	if len(gens) == 0 {
		return nil, errors.New("selfdeal: NewTriples: no session")
	}
	for i, g := range gens {
		if g == nil || g.Streams() != 1 {
			return nil, fmt.Errorf("selfdeal: NewTriples: session %d is nil or has more than one stream", i)
		}
	}
	return &Triples{gens: gens, st: make([]tripleQueue, len(gens))}, nil
}

// queue returns stream i's queue (its calls are not concurrent with one another).
func (t *Triples) queue(i int) *tripleQueue {
	t.mu.Lock()
	defer t.mu.Unlock()
	return &t.st[i]
}

// DealBitTriples returns this party's shares of nReg regular triples and nCorr correlated pairs
// of OT stream `stream`: those made ahead first, the rest made now.
func (t *Triples) DealBitTriples(ctx context.Context, stream, nReg, nCorr int) (reg [3][]uint64, corr [5][]uint64, err error) {
	if stream < 0 || stream >= len(t.gens) {
		return reg, corr, fmt.Errorf("selfdeal: triples of stream %d of %d", stream, len(t.gens))
	}
	if nReg < 0 || nCorr < 0 {
		return reg, corr, fmt.Errorf("selfdeal: %d triples and %d pairs asked", nReg, nCorr)
	}
	q, g := t.queue(stream), t.gens[stream]
	for i := range reg {
		reg[i] = make([]uint64, bitvec.Words(nReg))
	}
	for i := range corr {
		corr[i] = make([]uint64, bitvec.Words(nCorr))
	}
	// Regular triples.
	at := 0
	for at < nReg && len(q.reg) > 0 {
		b := &q.reg[0]
		cnt := min(nReg-at, b.N-q.regOff)
		for i, v := range [3][]uint64{b.D, b.E, b.F} {
			bitvec.Copy(reg[i], at, v, q.regOff, cnt)
		}
		at, q.regOff = at+cnt, q.regOff+cnt
		if q.regOff == b.N {
			q.reg, q.regOff = q.reg[1:], 0
		}
	}
	q.heldReg -= uint64(at)
	q.stats.Taken += uint64(at)
	if at < nReg {
		b, err := g.BitTriples(ctx, nReg-at)
		if err != nil {
			return reg, corr, fmt.Errorf("selfdeal: triples on demand: %w", err)
		}
		for i, v := range [3][]uint64{b.D, b.E, b.F} {
			bitvec.Copy(reg[i], at, v, 0, b.N)
		}
		q.stats.OnDemand += uint64(b.N)
	}
	// Correlated pairs.
	at = 0
	for at < nCorr && len(q.corr) > 0 {
		b := &q.corr[0]
		cnt := min(nCorr-at, b.N-q.corrOff)
		for i, v := range [5][]uint64{b.D, b.D2, b.E, b.F, b.F2} {
			bitvec.Copy(corr[i], at, v, q.corrOff, cnt)
		}
		at, q.corrOff = at+cnt, q.corrOff+cnt
		if q.corrOff == b.N {
			q.corr, q.corrOff = q.corr[1:], 0
		}
	}
	q.heldCorr -= uint64(at)
	q.stats.Taken += uint64(at)
	if at < nCorr {
		b, err := g.CorrelatedBitTriples(ctx, nCorr-at)
		if err != nil {
			return reg, corr, fmt.Errorf("selfdeal: correlated triples on demand: %w", err)
		}
		for i, v := range [5][]uint64{b.D, b.D2, b.E, b.F, b.F2} {
			bitvec.Copy(corr[i], at, v, 0, b.N)
		}
		q.stats.OnDemand += uint64(b.N)
	}
	q.drawnReg += uint64(nReg)
	q.drawnCorr += uint64(nCorr)
	return reg, corr, nil
}

// MakeAhead makes stream i's triples of p (p.Triples regular, p.Pairs correlated), at both
// parties at the same point.
func (t *Triples) MakeAhead(ctx context.Context, i int, p Plan) error {
	if i < 0 || i >= len(t.gens) {
		return fmt.Errorf("selfdeal: triples of stream %d of %d", i, len(t.gens))
	}
	q, g := t.queue(i), t.gens[i]
	if p.Triples > 0 {
		b, err := g.BitTriples(ctx, int(p.Triples))
		if err != nil {
			return fmt.Errorf("selfdeal: making triples: %w", err)
		}
		q.reg = append(q.reg, b)
		q.heldReg += p.Triples
		q.stats.Ahead += p.Triples
	}
	if p.Pairs > 0 {
		b, err := g.CorrelatedBitTriples(ctx, int(p.Pairs))
		if err != nil {
			return fmt.Errorf("selfdeal: making correlated triples: %w", err)
		}
		q.corr = append(q.corr, b)
		q.heldCorr += p.Pairs
		q.stats.Ahead += p.Pairs
	}
	return nil
}

// Held is stream i's triples made and not yet taken, as a plan (Triples, Pairs).
func (t *Triples) Held(i int) Plan {
	q := t.queue(i)
	return Plan{Triples: q.heldReg, Pairs: q.heldCorr}
}

// TakeDrawn returns the triples stream i's calls asked for since the last call and starts
// counting anew.
func (t *Triples) TakeDrawn(i int) Plan {
	q := t.queue(i)
	p := Plan{Triples: q.drawnReg, Pairs: q.drawnCorr}
	q.drawnReg, q.drawnCorr = 0, 0
	return p
}

// Stats returns stream i's counts.
func (t *Triples) Stats(i int) TripleStats { return t.queue(i).stats }
