package sci

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/ferret"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/protocols/selfdeal"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// The offline phase (OT source ferret; HE weights).
//
// What an inference needs from Ferret does not depend on its input: the COTs every protocol
// draws, in each stream and direction, are a function of the program, the options and the
// binary (draws and the reservoirs' drops are deterministic, and the same at both parties). So
// before an inference's input is used (Backend.BeginInference, called by the session before the
// inference's clock starts), each stream runs ahead the Ferret main iterations the inference
// will refill from (ferret.Core.Ahead): their flights and the next iterations' base COTs, queued
// in memory. The inference's refills then take queued iterations with no communication, so no
// Ferret flight is on its critical path. What the bound leaves after them builds the outputs the
// inference will draw first (ferret.Core.Prebuild: the units holding them, from the plan's or
// the earlier inferences' COT counts); the rest are built a unit at a time as they are drawn
// (package ferret keeps an iteration in a few MB rather than its 160 MB of outputs).
//
// How many: for the first inference, the Plan of an earlier session (Options.Offline.First,
// scirun --offline-plans): the first inference starts from the state the set-up leaves, so its
// refills repeat exactly. Both parties send theirs at the first inference's start and use the
// larger, so a party without one still agrees with the peer. A later inference of the session
// starts elsewhere in the reservoirs: it gets the iterations that the most COTs an earlier
// inference drew in that stream, in either direction (a stream's OT roles can swap from one
// inference to the next; drops included), need beyond what the current iteration still holds
// (the same at both parties: draws are mirrored). That can be one short when the reservoir's
// drops fall differently; the refill then runs online and the account counts it. The
// iterations held ahead (and the outputs built ahead) are bounded by Options.Offline.MiB;
// beyond it, the rest runs online and the account says how many.

// The server's HE weights (modes scihe and auto) are input-independent too: with
// Options.Offline.Program, party 0 builds the NTT-form weight plaintexts of every linear layer
// that runs by HE at the first inference's start (he.Session.PrepareWeights), within the HE
// weight cache's bound (he.Options.CacheBytes); the layers beyond it build theirs when they run.
// Both parties then wait for each other (one byte each way), so that neither's online phase
// starts with a wait for the other's offline work.

// DefaultOfflineMiB is the default bound on the memory of the Ferret iterations run ahead and
// the outputs built ahead, both directions of every stream together (an iteration run ahead is
// counted at 8.2 MB for B13, its outputs at 168 MB).
const DefaultOfflineMiB = 512

// offlineVersion is the version of the plan message at the first inference's start.
const offlineVersion = 1

// Offline configures the offline phase of an SCI backend: Ferret's iterations (ignored on
// IKNP) and the server's HE weights (with Program).
type Offline struct {
	// MiB bounds the memory of the iterations run ahead (0: DefaultOfflineMiB; negative: no
	// offline phase). The two parties may differ: the smaller bound applies.
	MiB int
	// First is the plan of the first inference (from an earlier session's Backend.Plan), or nil.
	First *Plan
	// Program is the program the session runs (party 0: with its weights), for the HE weights
	// prepared at the first inference's start; nil: none prepared. At both parties (party 1:
	// the client copy), it also lists the HE linear layers made ahead (helinear.go).
	Program *fixed.Program
	// HEMiB bounds the shares of the HE linear layers made ahead (0: DefaultOfflineHEMiB;
	// negative: none). The smaller of the parties' bounds applies.
	HEMiB int
	// Dealt makes the nonlinear layers' correlations (random 1-of-N OTs and bit triples, as
	// the three-party mode's helper deals them) in the offline phase, with the session's own
	// OT (selfdeal.go). Both parties must agree (the nonlinear session's hello checks it).
	Dealt bool
}

// Plan is how many Ferret main iterations one inference takes: Iterations[i][p] in stream i,
// in the direction in which party p sends COTs. Both parties of a session have the same plan.
type Plan struct {
	Iterations [][2]int `json:"iterations"`
	// COTs are the COTs the inference drew, per stream and direction like Iterations (local:
	// they size the outputs this party builds ahead; not exchanged).
	COTs [][2]uint64 `json:"cots,omitempty"`
	// Dealt is the nonlinear layers' correlations the inference drew, per stream
	// (Offline.Dealt; exchanged, both parties make the larger).
	Dealt []selfdeal.Plan `json:"dealt,omitempty"`
}

// Total is the number of iterations in the plan.
func (p *Plan) Total() int {
	n := 0
	if p != nil {
		for _, s := range p.Iterations {
			n += s[0] + s[1]
		}
	}
	return n
}

// OfflineAccount is a session's offline phase at this party: what was made before the
// inferences' inputs were used, and what was left on their critical path.
type OfflineAccount struct {
	// CapBytes is the memory bound in force (the smaller of the two parties').
	CapBytes int64
	// Offline is the offline phase's time and traffic, summed over the inferences' starts (the
	// plan exchange and the iterations run ahead).
	Offline Cost
	// Ahead is the number of Ferret main iterations run ahead (both directions, every stream),
	// Taken how many of them refills took, Online the iterations run on an inference's critical
	// path (the queue was empty), Capped the planned iterations the memory bound left online,
	// and Queued those run ahead and never taken (at the end).
	Ahead, Taken, Online, Capped, Queued int
	// PeakBytes is the most memory the queued iterations and the prebuilt outputs held, and
	// PrebuiltBytes the most the prebuilt outputs held: what the bound leaves after the queued
	// iterations builds the outputs the inference draws first (ferret.Core.Prebuild).
	PeakBytes, PrebuiltBytes int64
	// FirstPlanned says that the first inference ran on a plan (this party's or the peer's);
	// FirstOnline is the number of iterations the first inference still ran online.
	FirstPlanned bool
	FirstOnline  int
	// FirstCOTs are the COTs the first inference drew (dropped ones included), every stream,
	// in the direction in which party p sends ([p]); FirstPlan its iterations (Backend.Plan).
	FirstCOTs [2]uint64
	// HELayers are the HE linear layers whose weight plaintexts party 0 built offline,
	// HEUncached those left to build when they run (beyond the cache's bound), HEBytes and
	// HEBound the cache's memory and bound.
	HELayers, HEUncached int
	HEBytes, HEBound     int64
	// HEAhead is the number of HE linear layers made ahead (every inference; helinear.go),
	// HECapped those the bound HEAheadCap left online, HEAheadBytes the most their shares held.
	HEAhead, HECapped        int
	HEAheadCap, HEAheadBytes int64
	// Dealt is the nonlinear layers' correlations made offline (Offline.Dealt), or nil.
	Dealt *DealtAccount
}

// offline is a backend's offline-phase state.
type offline struct {
	opt       Offline
	cores     []*ferret.Core // per stream
	cap       int64
	first     *Plan       // the plan of the first inference as agreed
	firstTook *Plan       // what the first inference took
	drew      [][2]uint64 // the most COTs an inference drew so far, per stream and direction
	start     [][2]int    // taken+online at the current inference's start
	drawn0    [][2]uint64 // COTs drawn at the current inference's start
	onl0      int         // Online at the current inference's start
	acct      OfflineAccount
	hel       heAhead // the HE linear layers made ahead
}

// iterBytes is the memory one iteration run ahead holds, counted alike at both parties (the
// receiver's, the larger, for either direction), so that both apply the bound identically.
func (o *offline) iterBytes() int64 {
	if len(o.cores) == 0 {
		return 0
	}
	return ferret.AheadBytes(o.cores[0].Config(), ferret.Receiver)
}

// counts returns stream i's iteration counts in the direction in which party p sends.
func (o *offline) counts(i, p, party int) ferret.Counts {
	return o.cores[i].Counts(p == party)
}

// Offline returns the offline phase's account, or nil when the backend has none (IKNP, or the
// phase switched off).
func (b *Backend) Offline() *OfflineAccount {
	if b.off == nil || b.off.acct.Offline.Calls == 0 {
		return nil
	}
	a := b.off.acct
	a.Queued, a.Taken = 0, 0
	for i := range b.off.cores {
		for p := range 2 {
			c := b.off.counts(i, p, b.party)
			a.Queued += c.Queued
			a.Taken += c.Taken
		}
	}
	if b.sd != nil {
		b.sd.count()
		d := b.sd.acct
		a.Dealt = &d
	}
	return &a
}

// Plan returns the iterations the session's first inference took (to be given as
// Options.Offline.First to a later session of the same program and options), or nil before the
// first inference has ended or without Ferret.
func (b *Backend) Plan() *Plan {
	if b.off == nil {
		return nil
	}
	if p := b.off.firstTook; p != nil && b.sd != nil && b.sd.took0 != nil {
		q := *p
		q.Dealt = b.sd.took0
		return &q
	}
	return b.off.firstTook
}

// BeginInference runs the offline phase of inference k (of count) before its input is used:
// at the first, the plan exchange; then the Ferret iterations the inference will take, ahead,
// and the outputs it will draw first, within the memory bound; at the first, the server's HE
// weights; at every inference, its HE linear layers made ahead (helinear.go); at the first, the
// end-of-phase byte each way. Both parties call it at the same point (the
// session does, before every inference).
func (b *Backend) BeginInference(ctx context.Context, k, count int) error {
	o := b.off
	if o == nil {
		return nil
	}
	if b.err != nil {
		return fmt.Errorf("sci: offline phase: backend unusable after an earlier failure: %w", b.err)
	}
	start := time.Now()
	before := sumStats(b.conns)
	err := o.begin(ctx, b, k)
	if err == nil && b.sd != nil {
		err = b.sd.begin(ctx, b, k)
	}
	o.acct.Offline = o.acct.Offline.Add(Cost{Calls: 1, Time: time.Since(start), Stats: sumStats(b.conns).Sub(before)})
	if err != nil {
		return b.fail("offline phase", err)
	}
	return nil
}

func (o *offline) begin(ctx context.Context, b *Backend, k int) error {
	if err := o.ahead(ctx, b, k); err != nil {
		return err
	}
	if k == 0 {
		if err := o.prepareHE(ctx, b); err != nil {
			return err
		}
	}
	if err := o.heLinearAhead(ctx, b, k); err != nil {
		return err
	}
	if k > 0 {
		return nil
	}
	// Both parties are done with the offline phase before either starts the inference.
	c := b.conns[0]
	if err := c.Send(ctx, []byte{1}); err != nil {
		return err
	}
	if err := c.Flush(ctx); err != nil {
		return err
	}
	var done [1]byte
	if err := c.Recv(ctx, done[:]); err != nil {
		return fmt.Errorf("the peer's end of the offline phase: %w", err)
	}
	return nil
}

// prepareHE builds party 0's HE weight plaintexts of the program (see above).
func (o *offline) prepareHE(ctx context.Context, b *Backend) error {
	p := o.opt.Program
	if b.party != 0 || b.he == nil || p == nil || !p.HasWeights() {
		return nil
	}
	for _, in := range p.Instrs {
		if (in.Op != fixed.OpMatMul && in.Op != fixed.OpConv) || b.EngineFor(in.Engine) != fixed.EngineHE {
			continue
		}
		src := p.Weights[in.Weight]
		var g ring.ConvGeom
		if in.Op == fixed.OpMatMul {
			g = heplan.MatMulGeom(src.Shape[0], src.Shape[1], p.Tensors[in.In[0]].Shape[1])
		} else {
			var err error
			if g, err = p.ConvGeom(in); err != nil {
				return err
			}
		}
		w := make([]uint64, len(src.Data))
		b.r.FromSignedVec(w, src.Data)
		ok, err := b.he.PrepareWeights(ctx, g, w)
		if err != nil {
			return err
		}
		if ok {
			o.acct.HELayers++
		} else {
			o.acct.HEUncached++
		}
	}
	used, bound := b.he.CacheBytes()
	o.acct.HEBytes, o.acct.HEBound = int64(used), int64(bound)
	return nil
}

// ahead runs the Ferret iterations of inference k ahead (see above).
func (o *offline) ahead(ctx context.Context, b *Backend, k int) error {
	n := len(o.cores)
	var want [][2]int
	if k == 0 {
		peer, err := o.exchange(ctx, b.conns[0])
		if err != nil {
			return err
		}
		want = make([][2]int, n)
		for _, p := range []*Plan{o.opt.First, peer} {
			if p == nil {
				continue
			}
			if len(p.Iterations) != n {
				return fmt.Errorf("the first inference's plan has %d streams, the session %d", len(p.Iterations), n)
			}
			o.acct.FirstPlanned = true
			for i, s := range p.Iterations {
				want[i][0], want[i][1] = max(want[i][0], s[0]), max(want[i][1], s[1])
			}
		}
		o.first = &Plan{Iterations: want}
	} else if o.drew != nil {
		want = make([][2]int, n)
		for i := range n {
			out := uint64(o.cores[i].Config().Main.Output())
			for p := range 2 {
				avail := uint64(o.available(i, p, b.party))
				if d := max(o.drew[i][0], o.drew[i][1]); d > avail {
					want[i][p] = int((d - avail + out - 1) / out)
				}
			}
		}
	}
	// What is still queued counts; the rest is run now, one iteration at a time round the
	// streams and directions (in the same order at both parties) while the bound allows.
	need := make([][2]int, n)
	held := int64(0)
	for i := range n {
		for p := range 2 {
			q := o.counts(i, p, b.party).Queued
			held += int64(q) * o.iterBytes()
			if want != nil {
				need[i][p] = max(0, want[i][p]-q)
			}
		}
	}
	run := make([][2]int, n)
	for more := true; more; {
		more = false
		for i := range n {
			for p := range 2 {
				if run[i][p] == need[i][p] {
					continue
				}
				if held+o.iterBytes() > o.cap {
					o.acct.Capped += need[i][p] - run[i][p]
					need[i][p] = run[i][p]
					continue
				}
				run[i][p]++
				held += o.iterBytes()
				more = true
			}
		}
	}
	o.acct.PeakBytes = max(o.acct.PeakBytes, held)
	// The streams run ahead concurrently, each on its own connection.
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		send, recv := run[i][b.party], run[i][1-b.party]
		if send+recv == 0 {
			continue
		}
		o.acct.Ahead += send + recv
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = o.cores[i].Ahead(ctx, send, recv)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	// What the bound leaves builds the outputs the inference will draw first (local work, so
	// the parties need not agree), the streams on their own goroutines.
	if left := o.cap - held; left > 0 && n > 0 {
		// The COTs the inference will draw in each direction: the local plan's for the first
		// (all that fits without one), the most an earlier inference drew in either direction
		// for the later ones.
		draw := func(i, p int) uint64 {
			switch {
			case k > 0 && o.drew != nil:
				return max(o.drew[i][0], o.drew[i][1])
			case k == 0 && o.opt.First != nil && len(o.opt.First.COTs) == n:
				return o.opt.First.COTs[i][p]
			}
			return ^uint64(0)
		}
		built := make([]int64, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				built[i] = o.cores[i].Prebuild(left/int64(n), draw(i, b.party), draw(i, 1-b.party))
			}()
		}
		wg.Wait()
		total := int64(0)
		for _, v := range built {
			total += v
		}
		o.acct.PrebuiltBytes = max(o.acct.PrebuiltBytes, total)
		o.acct.PeakBytes = max(o.acct.PeakBytes, held+total)
	}
	o.start, o.drawn0 = make([][2]int, n), make([][2]uint64, n)
	for i := range n {
		for p := range 2 {
			c := o.counts(i, p, b.party)
			o.start[i][p] = c.Taken + c.Online
			o.drawn0[i][p] = o.drawn(i, p, b.party)
		}
	}
	o.onl0 = o.onlineNow(b.party)
	return nil
}

// available returns the COTs stream i's current iteration still holds in the direction in
// which party p sends.
func (o *offline) available(i, p, party int) int {
	s, r := o.cores[i].Available()
	if p == party {
		return s
	}
	return r
}

// drawn returns the COTs drawn (or dropped) so far in stream i in the direction in which party
// p sends.
func (o *offline) drawn(i, p, party int) uint64 {
	s, r := o.cores[i].Drawn()
	if p == party {
		return s
	}
	return r
}

// onlineNow is the iterations run online so far, every stream and direction.
func (o *offline) onlineNow(party int) int {
	t := 0
	for i := range o.cores {
		for p := range 2 {
			t += o.counts(i, p, party).Online
		}
	}
	return t
}

// EndInference records what inference k took, for the plan of the next ones.
func (b *Backend) EndInference(k int) error {
	if b.sd != nil {
		b.sd.end(k)
	}
	o := b.off
	if o == nil || o.start == nil {
		return nil
	}
	n := len(o.cores)
	took := &Plan{Iterations: make([][2]int, n), COTs: make([][2]uint64, n)}
	if o.drew == nil {
		o.drew = make([][2]uint64, n)
	}
	for i := range n {
		for p := range 2 {
			c := o.counts(i, p, b.party)
			took.Iterations[i][p] = c.Taken + c.Online - o.start[i][p]
			d := o.drawn(i, p, b.party) - o.drawn0[i][p]
			o.drew[i][p] = max(o.drew[i][p], d)
			took.COTs[i][p] = d
			if k == 0 {
				o.acct.FirstCOTs[p] += d
			}
		}
	}
	onl := o.onlineNow(b.party) - o.onl0
	o.acct.Online += onl
	if k == 0 {
		o.acct.FirstOnline = onl
		o.firstTook = took
	}
	o.start = nil
	return nil
}

// exchange sends this party's bound and first-inference plan and returns the peer's plan,
// setting the bound to the smaller of the two.
func (o *offline) exchange(ctx context.Context, conn *transport.Conn) (*Plan, error) {
	n := len(o.cores)
	mine := make([]byte, 4*(4+2*n))
	le := binary.LittleEndian
	le.PutUint32(mine[0:], offlineVersion)
	capMiB := uint32(0)
	switch {
	case o.opt.MiB == 0:
		capMiB = DefaultOfflineMiB
	case o.opt.MiB > 0:
		capMiB = uint32(min(o.opt.MiB, 1<<20))
	}
	le.PutUint32(mine[4:], capMiB)
	le.PutUint32(mine[8:], uint32(n))
	if o.opt.First != nil {
		le.PutUint32(mine[12:], 1)
		if len(o.opt.First.Iterations) != n {
			return nil, fmt.Errorf("the first inference's plan has %d streams, the session %d", len(o.opt.First.Iterations), n)
		}
		for i, s := range o.opt.First.Iterations {
			if s[0] < 0 || s[1] < 0 || s[0] > 1<<20 || s[1] > 1<<20 {
				return nil, fmt.Errorf("the first inference's plan asks %v iterations in stream %d", s, i)
			}
			le.PutUint32(mine[16+8*i:], uint32(s[0]))
			le.PutUint32(mine[20+8*i:], uint32(s[1]))
		}
	}
	if err := conn.Send(ctx, mine); err != nil {
		return nil, err
	}
	if err := conn.Flush(ctx); err != nil {
		return nil, err
	}
	theirs := make([]byte, len(mine))
	if err := conn.Recv(ctx, theirs); err != nil {
		return nil, fmt.Errorf("the peer's offline plan: %w", err)
	}
	if v := le.Uint32(theirs[0:]); v != offlineVersion {
		return nil, fmt.Errorf("the peer's offline plan has version %d, this party's %d", v, offlineVersion)
	}
	if m := le.Uint32(theirs[8:]); m != uint32(n) {
		return nil, fmt.Errorf("the peer's offline plan is for %d streams, this party has %d", m, n)
	}
	peerCap := le.Uint32(theirs[4:])
	o.cap = min(int64(capMiB), int64(peerCap)) << 20
	o.acct.CapBytes = o.cap
	if le.Uint32(theirs[12:]) == 0 {
		return nil, nil
	}
	p := &Plan{Iterations: make([][2]int, n)}
	for i := range n {
		p.Iterations[i] = [2]int{int(le.Uint32(theirs[16+8*i:])), int(le.Uint32(theirs[20+8*i:]))}
		if p.Iterations[i][0] > 1<<20 || p.Iterations[i][1] > 1<<20 {
			return nil, fmt.Errorf("the peer's offline plan asks %v iterations in stream %d", p.Iterations[i], i)
		}
	}
	return p, nil
}
