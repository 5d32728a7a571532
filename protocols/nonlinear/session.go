package nonlinear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/streams"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// DefaultM is the default leaf width of the millionaires' protocol on IKNP
// (SCI's default; m = 7 minimises communication for 32-bit inputs but costs
// about three times the computation). On silent OT the default comes from
// ChoosePlan.
const DefaultM = 4

// MaxM is the largest leaf width (KK13 1-out-of-2^m OT with 2^m ≤ 256).
const MaxM = 8

// DefaultMinSplit is the smallest batch that Session splits across its OT
// streams.
const DefaultMinSplit = 4096

// defaultBudget bounds the words of OT messages one stream builds at a
// time (32 MiB); larger batches are processed in chunks.
const defaultBudget = 1 << 22

// Options configures a Session. The zero value selects the defaults.
type Options struct {
	// M is the millionaires' leaf width m (1..8); 0 means the plan's
	// (ChoosePlan: DefaultM on IKNP, the traffic-minimising m on silent
	// OT). Both parties must use the same value (New checks this).
	M int
	// Triples chooses how bit triples are made; TriplesAuto (the zero
	// value) takes the plan's choice for the OT source. Both parties must
	// agree (New checks the resulting choice).
	Triples TripleMode
	// MinSplit is the smallest batch split across the OT streams; 0 means
	// DefaultMinSplit. Splitting is a local choice, but both parties must
	// make the same one (New checks this).
	MinSplit int
	// Budget bounds the OT message words a stream materialises at once
	// (batches above it run in chunks, each a complete protocol run); 0
	// means 2^22 words. Both parties must use the same value.
	Budget int
	// Sequential runs the chunks of a batch above the budget one after
	// another, each a complete protocol run, instead of interleaving them
	// round by round (see Session). The results and bytes are the same;
	// only the flights differ. Both parties must agree. For comparisons.
	Sequential bool
	// PaperTrunc makes Trunc (for inputs not known to be non-negative) run
	// Alg. 5 exactly as published instead of the cheaper one-comparison
	// protocol (see Trunc). Both parties must agree. For comparisons with
	// the paper's numbers.
	PaperTrunc bool
	// Dealer, when non-nil, deals the Beaver bit triples (a third party's correlations,
	// package dealer) instead of making them from OT. Both parties must agree (New checks it).
	Dealer TripleDealer
}

// A TripleDealer hands out this party's shares of Beaver bit triples made by a third party
// (package dealer): nReg regular triples (d, e, f with d∧e = f) and nCorr correlated pairs
// (d, d2, e, f, f2 with d∧e = f and d2∧e = f2), packed, for OT stream `stream`. Calls for one
// stream come in the same order at both parties; calls for different streams may run
// concurrently.
type TripleDealer interface {
	DealBitTriples(ctx context.Context, stream, nReg, nCorr int) (reg [3][]uint64, corr [5][]uint64, err error)
}

// TripleMode says how the protocols make Beaver bit triples. Results are
// the same either way; only the traffic differs.
type TripleMode int

const (
	// TriplesAuto takes ChoosePlan's choice for the OT source.
	TriplesAuto TripleMode = iota
	// TriplesOTN makes two regular triples per (16 choose 1)-OT_2 and a
	// correlated pair per (8 choose 1)-OT_2 (CrypTFlow2 App. A.1, A.2).
	TriplesOTN
	// TriplesROT makes a regular triple or a correlated pair from two
	// random OTs, one in each direction.
	TriplesROT
)

// Session runs CrypTFlow2's nonlinear protocols over Z_{2^l} between this
// party and the peer, on one or more OT streams (see New). Its methods take
// this party's shares and return this party's shares of the result. A
// Session is not safe for concurrent use. After a method fails in the middle
// of a protocol the two parties may be out of step: the Session then refuses
// further work (Err reports why) and its connections have been aborted so
// the peer fails at once instead of waiting for a timeout. Argument errors
// found before anything is sent leave it usable.
type Session struct {
	r        ring.Ring
	party    int
	m        int
	plan     Plan
	minSplit int
	streams  []*stream
	group    *streams.Group // failure state and work splitting
}

// The session hello (see streams.Hello).
const (
	helloMagic   = "CFNL"
	helloVersion = 4
)

// New starts a session over the given OT sessions (one per connection, all
// with the same peer and party; typically an ot.Session and its forks). With
// more than one stream, batches of at least Options.MinSplit elements are
// split into equal parts that run concurrently, one goroutine per stream; the
// roles of the two parties are mirrored on odd streams so both do the same
// amount of OT-sender work. New exchanges a short hello on every stream to
// check that both parties use the same ring, m, triple construction, split
// threshold and number of streams. The plan (Plan) follows the OT source:
// all streams must be of one kind (IKNP, or Ferret with one parameter set).
func New(ctx context.Context, r ring.Ring, opt Options, ots ...*ot.Session) (*Session, error) {
	if !r.Valid() || r.Bits < 2 {
		return nil, fmt.Errorf("nonlinear: New: ring %v: need Z_2^l with 2 ≤ l ≤ 64", r)
	}
	if _, err := streams.Party("nonlinear", ots); err != nil {
		return nil, err
	}
	src := SourceCost(ots[0])
	for i, o := range ots[1:] {
		if c := SourceCost(o); c != src {
			return nil, fmt.Errorf("nonlinear: New: stream %d's OT source is %s, stream 0's %s", i+1, c.Name, src.Name)
		}
	}
	plan := ChoosePlan(src, r.Bits)
	if opt.Dealer != nil {
		plan.ROTTriples = false
	}
	if opt.M == 0 {
		opt.M = plan.M
	}
	plan.M = opt.M
	switch opt.Triples {
	case TriplesAuto:
	case TriplesOTN:
		plan.ROTTriples = false
	case TriplesROT:
		plan.ROTTriples = true
	default:
		return nil, fmt.Errorf("nonlinear: New: unknown Options.Triples %d", opt.Triples)
	}
	if opt.M < 1 || opt.M > MaxM {
		return nil, fmt.Errorf("nonlinear: New: millionaires' parameter m=%d outside 1..%d", opt.M, MaxM)
	}
	if opt.MinSplit == 0 {
		opt.MinSplit = DefaultMinSplit
	}
	if opt.MinSplit < 2 {
		return nil, fmt.Errorf("nonlinear: New: MinSplit=%d, want at least 2", opt.MinSplit)
	}
	if opt.Budget == 0 {
		opt.Budget = defaultBudget
	}
	if opt.Budget < 1<<12 {
		return nil, fmt.Errorf("nonlinear: New: Budget=%d words is below the minimum 4096", opt.Budget)
	}
	hello := streams.Hello{Magic: helloMagic, Version: helloVersion, Bits: r.Bits, Params: []streams.HelloParam{
		{Name: "Options.M", Value: uint64(opt.M)},
		streams.HelloFlag("Options.PaperTrunc", opt.PaperTrunc),
		streams.HelloFlag("Options.Sequential", opt.Sequential),
		streams.HelloFlag("triples from random OT (Options.Triples or the OT source)", plan.ROTTriples),
		streams.HelloFlag("dealt triples (Options.Dealer)", opt.Dealer != nil),
		{Name: "Options.MinSplit", Value: uint64(opt.MinSplit)},
		{Name: "Options.Budget", Value: uint64(opt.Budget)},
	}}
	party, group, err := streams.Open(ctx, "nonlinear", hello, opt.MinSplit, ots)
	if err != nil {
		return nil, err
	}
	s := &Session{r: r, party: party, m: opt.M, plan: plan, minSplit: opt.MinSplit, group: group}
	for i, o := range ots {
		rng, err := prg.NewRandom()
		if err != nil {
			return nil, fmt.Errorf("nonlinear: New: %w", err)
		}
		st := &stream{
			idx: i, ot: o, conn: o.Conn(), party: party, rng: rng,
			r: r, m: opt.M, budget: opt.Budget, alg5: opt.PaperTrunc,
			rotTriples: plan.ROTTriples, silent: src.Silent, sequential: opt.Sequential,
			dealer: opt.Dealer,
			snd:    &sendScratch{},
			// Mirror the roles on odd streams (see New's documentation).
			last: i & 1,
		}
		s.streams = append(s.streams, st)
	}
	return s, nil
}

// ResetRoles puts every stream's flight state back where New left it (on stream i, party i&1
// sent last), so that the OT roles of the batches that follow, and with them the requests an
// OT source sees (a dealer's, which deals each inference's ahead), do not depend on what ran
// before: a program run after it makes the same batches in the same roles every time. It sends
// nothing; call it between protocols, at both parties. A stream's first batch after it may take
// one flight more than it would have (its receiver may not be the party that sent last).
func (s *Session) ResetRoles() {
	for i, st := range s.streams {
		st.last = i & 1
	}
}

// Ring returns the ring of the shares.
func (s *Session) Ring() ring.Ring { return s.r }

// Party returns this party's index (0 or 1).
func (s *Session) Party() int { return s.party }

// M returns the millionaires' leaf width.
func (s *Session) M() int { return s.m }

// Plan returns the session's plan: its OT source's cost model, m and the
// triple construction (its methods give the exact traffic per element).
func (s *Session) Plan() Plan { return s.plan }

// Streams returns the number of OT streams.
func (s *Session) Streams() int { return len(s.streams) }

// Conns returns the connections of the streams (for statistics).
func (s *Session) Conns() []*transport.Conn {
	out := make([]*transport.Conn, len(s.streams))
	for i, st := range s.streams {
		out[i] = st.conn
	}
	return out
}

// Err returns the error that made the session unusable, or nil.
func (s *Session) Err() error { return s.group.Err() }

func (s *Session) usable(op string) error { return s.group.Usable(op) }

// fail records err, aborts every stream's connection so the peer fails fast,
// and returns err wrapped with op.
func (s *Session) fail(ctx context.Context, op string, err error) error {
	return s.group.Fail(ctx, op, err)
}

// parts splits n items into the parts run by the streams: equal contiguous
// ranges, one per stream when n ≥ MinSplit, else one range. unit is the
// granularity (ranges start at multiples of unit).
func (s *Session) parts(n, unit int) [][2]int { return s.group.Parts(n, n, unit) }

// run executes f on every part: part i runs on stream i, concurrently when
// there are several. On the first failure the other parts are cancelled and
// the session is failed.
func (s *Session) run(ctx context.Context, op string, parts [][2]int, f func(ctx context.Context, st *stream, lo, hi int) error) error {
	return s.group.Run(ctx, op, parts, func(ctx context.Context, i, lo, hi int) error {
		return f(ctx, s.streams[i], lo, hi)
	})
}
