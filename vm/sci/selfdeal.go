package sci

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cryptflow-go/cryptflow/protocols/nonlinear"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/selfdeal"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// The nonlinear layers' correlations made in the offline phase (Options.Offline.Dealt).
//
// The three-party mode's nonlinear protocols run on dealt correlations: random 1-of-N OTs
// (ot.DealtCore) and Beaver bit triples (nonlinear.TripleDealer), so that its online phase only
// derandomises them. Here the two parties make those correlations themselves with the session's
// own OT (package selfdeal), before the inference's input is used, and the nonlinear session runs
// on them unchanged: its OT streams are sessions over selfdeal cores, its Dealer a selfdeal
// triple source. The linear layers keep the plain OT sessions.
//
// How many: what the inference before drew (per stream, shape and direction: selfdeal.Plan), or
// for the first inference the plan of an earlier session's first (Plan.Dealt, scirun
// --offline-plans). Both parties send theirs at every inference's start and make the larger,
// bounded by the offline memory bound (the smaller of the two parties', counted alike at both);
// what a draw then finds missing is made on demand at that draw, at both parties (their buffers
// mirror each other), and the account counts it. The nonlinear session runs every stream's
// chunks one after another (nonlinear.Options.Sequential), since an on-demand draw runs the OT
// inside the drawing step, and resets its OT roles at every inference's start, so that an
// inference draws in the directions the one before it did.

// selfDealt is a backend's self-dealt correlations.
type selfDealt struct {
	cores []*selfdeal.Core
	tr    *selfdeal.Triples
	gens  []*nonlinear.Session
	mib   int             // this party's bound (Options.Offline.MiB)
	first []selfdeal.Plan // the first inference's plan from an earlier session, or nil
	want  []selfdeal.Plan // what the last inference drew
	took0 []selfdeal.Plan // what the first inference drew (Backend.Plan)
	acct  DealtAccount
	// od0 is the on-demand count at the current inference's start.
	od0 uint64
}

// DealtAccount is the self-dealt correlations' part of the offline account (Options.Offline.Dealt).
type DealtAccount struct {
	// AheadOTs and AheadTriples are the OTs and triples (regular and pairs) made ahead,
	// OnDemandOTs and OnDemandTriples those made at a draw that found its buffer short,
	// FirstOnDemand those of the first inference (OTs and triples).
	AheadOTs, AheadTriples, OnDemandOTs, OnDemandTriples, FirstOnDemand uint64
	// MadeBytes is the memory of what was made ahead (both parties' ends, summed over the
	// inferences), CappedBytes what the bound left to be made on demand, PeakBytes the most
	// this party's buffers held.
	MadeBytes, CappedBytes, PeakBytes int64
	// FirstPlanned says that the first inference's correlations were made ahead from a plan.
	FirstPlanned bool
}

// newNonlinear is the backend's nonlinear session over srcs: plain, or with Options.Offline.Dealt
// on the self-dealt correlations (b.sd).
func (b *Backend) newNonlinear(ctx context.Context, r ring.Ring, opt Options, srcs []*ot.Session) (*nonlinear.Session, error) {
	if !opt.Offline.Dealt {
		return nonlinear.New(ctx, r, opt.Nonlinear, srcs...)
	}
	if opt.Nonlinear.Dealer != nil {
		return nil, errors.New("sci: Options.Offline.Dealt with a triple dealer of its own (Options.Nonlinear.Dealer)")
	}
	sd := &selfDealt{mib: opt.Offline.MiB}
	if opt.Offline.First != nil {
		sd.first = opt.Offline.First.Dealt
	}
	// The nonlinear session first: its hello tells a peer without Offline.Dealt what differs.
	var dealt []*ot.Session
	for i, o := range srcs {
		c, err := selfdeal.New(o)
		if err != nil {
			return nil, fmt.Errorf("stream %d: %w", i, err)
		}
		d, err := ot.New(c)
		if err != nil {
			return nil, fmt.Errorf("stream %d: %w", i, err)
		}
		sd.cores, dealt = append(sd.cores, c), append(dealt, d)
	}
	late := &lateDealer{}
	nopt := opt.Nonlinear
	nopt.Dealer, nopt.Sequential = late, true
	s, err := nonlinear.New(ctx, r, nopt, dealt...)
	if err != nil {
		return nil, fmt.Errorf("%w (the nonlinear layers' correlations made offline, Offline.Dealt, are on at this party)", err)
	}
	gopt := opt.Nonlinear
	gopt.Sequential = true
	for i, o := range srcs {
		g, err := nonlinear.New(ctx, r, gopt, o)
		if err != nil {
			return nil, fmt.Errorf("stream %d's triple maker: %w", i, err)
		}
		sd.gens = append(sd.gens, g)
	}
	if sd.tr, err = selfdeal.NewTriples(sd.gens...); err != nil {
		return nil, err
	}
	late.tr = sd.tr
	b.sd = sd
	return s, nil
}

// lateDealer is the nonlinear session's triple dealer, set once the sessions that make the
// triples exist (after the nonlinear session's hello).
type lateDealer struct{ tr *selfdeal.Triples }

func (d *lateDealer) DealBitTriples(ctx context.Context, stream, nReg, nCorr int) ([3][]uint64, [5][]uint64, error) {
	return d.tr.DealBitTriples(ctx, stream, nReg, nCorr)
}

// dealtVersion is the version of the message of the plans at an inference's start.
const dealtVersion = 1

// begin makes inference k's correlations ahead (see above).
func (sd *selfDealt) begin(ctx context.Context, b *Backend, k int) error {
	b.nl.ResetRoles()
	for _, g := range sd.gens {
		g.ResetRoles()
	}
	mine := sd.want
	if k == 0 {
		mine = sd.first
	}
	n := len(sd.cores)
	if mine != nil && len(mine) != n {
		return fmt.Errorf("the nonlinear correlations' plan has %d streams, the session %d", len(mine), n)
	}
	peer, capMiB, err := sd.exchange(ctx, b.conns[0], mine)
	if err != nil {
		return err
	}
	if peer != nil && len(peer) != n {
		return fmt.Errorf("the peer's nonlinear correlations' plan has %d streams, the session %d", len(peer), n)
	}
	want := make([]selfdeal.Plan, n)
	for i := range n {
		if mine != nil {
			want[i] = selfdeal.Merge(want[i], mine[i])
		}
		if peer != nil {
			want[i] = selfdeal.Merge(want[i], peer[i])
		}
	}
	if k == 0 && (mine != nil || peer != nil) {
		sd.acct.FirstPlanned = true
	}
	held := make([]selfdeal.Plan, n)
	for i := range n {
		held[i] = selfdeal.Merge(sd.cores[i].Held(), sd.tr.Held(i))
	}
	need, capped := selfdeal.Need(want, held, int64(capMiB)<<20)
	sd.acct.CappedBytes += capped
	// The streams make theirs concurrently, each on its own connection.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		if need[i].Empty() {
			continue
		}
		sd.acct.MadeBytes += need[i].Bytes()
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = sd.cores[i].MakeAhead(ctx, need[i]); errs[i] == nil {
				errs[i] = sd.tr.MakeAhead(ctx, i, need[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("making the nonlinear correlations ahead: %w", err)
	}
	sd.count()
	sd.od0 = sd.acct.OnDemandOTs + sd.acct.OnDemandTriples
	return nil
}

// count refreshes the account's counts from the cores and the triples.
func (sd *selfDealt) count() {
	a := &sd.acct
	a.AheadOTs, a.AheadTriples, a.OnDemandOTs, a.OnDemandTriples = 0, 0, 0, 0
	var held int64
	for i, c := range sd.cores {
		s := c.Stats()
		a.AheadOTs += s.Ahead
		a.OnDemandOTs += s.OnDemand
		held += s.HeldBytes
		t := sd.tr.Stats(i)
		a.AheadTriples += t.Ahead
		a.OnDemandTriples += t.OnDemand
	}
	for i := range sd.cores {
		h := sd.tr.Held(i)
		held += selfdeal.Plan{Triples: h.Triples, Pairs: h.Pairs}.Bytes() / 2
	}
	a.PeakBytes = max(a.PeakBytes, held)
}

// end records what inference k drew: the next inference's plan.
func (sd *selfDealt) end(k int) {
	drew := make([]selfdeal.Plan, len(sd.cores))
	for i, c := range sd.cores {
		drew[i] = selfdeal.Merge(c.TakeDrawn(), sd.tr.TakeDrawn(i))
	}
	sd.want = drew
	sd.count()
	if k == 0 {
		sd.took0 = drew
		sd.acct.FirstOnDemand = sd.acct.OnDemandOTs + sd.acct.OnDemandTriples - sd.od0
	}
}

// exchange sends this party's plan (nil: none) and bound in MiB and returns the peer's plan
// and the smaller bound.
func (sd *selfDealt) exchange(ctx context.Context, conn *transport.Conn, mine []selfdeal.Plan) ([]selfdeal.Plan, uint32, error) {
	var body []byte
	if mine != nil {
		var err error
		if body, err = selfdeal.EncodePlans(mine); err != nil {
			return nil, 0, err
		}
	}
	capMiB := uint32(0)
	switch {
	case sd.mib == 0:
		capMiB = DefaultOfflineMiB
	case sd.mib > 0:
		capMiB = uint32(min(sd.mib, 1<<20))
	}
	le := binary.LittleEndian
	head := make([]byte, 12)
	le.PutUint32(head[0:], dealtVersion)
	le.PutUint32(head[4:], capMiB)
	le.PutUint32(head[8:], uint32(len(body)))
	if err := conn.Send(ctx, head); err != nil {
		return nil, 0, err
	}
	if len(body) > 0 {
		if err := conn.Send(ctx, body); err != nil {
			return nil, 0, err
		}
	}
	if err := conn.Flush(ctx); err != nil {
		return nil, 0, err
	}
	theirs := make([]byte, 12)
	if err := conn.Recv(ctx, theirs); err != nil {
		return nil, 0, fmt.Errorf("the peer's nonlinear correlations' plan: %w", err)
	}
	if v := le.Uint32(theirs[0:]); v != dealtVersion {
		return nil, 0, fmt.Errorf("the peer's nonlinear correlations' plan has version %d, this party's %d", v, dealtVersion)
	}
	capMiB = min(capMiB, le.Uint32(theirs[4:]))
	nb := le.Uint32(theirs[8:])
	if nb == 0 {
		return nil, capMiB, nil
	}
	if nb > 1<<20 {
		return nil, 0, fmt.Errorf("the peer's nonlinear correlations' plan has %d bytes", nb)
	}
	pb := make([]byte, nb)
	if err := conn.Recv(ctx, pb); err != nil {
		return nil, 0, fmt.Errorf("the peer's nonlinear correlations' plan: %w", err)
	}
	p, err := selfdeal.DecodePlans(pb)
	if err != nil {
		return nil, 0, fmt.Errorf("the peer's plan: %w", err)
	}
	return p, capMiB, nil
}
