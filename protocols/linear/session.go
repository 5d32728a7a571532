package linear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/streams"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// DefaultBudget is the default bound on the correlation words one stream materialises at once
// (2^20 words: 8 MiB per buffer; party 0 keeps two).
const DefaultBudget = 1 << 20

// DefaultMinSplit is the default smallest number of elements of X that a product splits across
// the OT streams.
const DefaultMinSplit = 2048

// Options configures a Session. The zero value selects the defaults. Both parties must use the
// same values (New checks this).
type Options struct {
	// Budget bounds the correlation words (elements times rows of W) a stream processes at a
	// time; a larger product runs in chunks. 0 means DefaultBudget; at least 4096.
	Budget int
	// MinSplit is the smallest number of elements of X that is split across the streams; 0
	// means DefaultMinSplit; at least 64.
	MinSplit int
	// OneBatch runs the l bit positions of a chunk as one batch of random OTs whose choice bits
	// party 1 corrects with one flip bit per OT: 4 flights per chunk instead of 2l, for one
	// extra bit per OT (k·n·l bits per product, 0.1% for 64×64×64 at l = 32). Use it on
	// high-latency links. Without it, every bit position is one batch of correlated OTs of
	// exactly l−i bits (2l flights per chunk, communication exactly MatMulBits).
	OneBatch bool
}

// Session computes products of party 0's private matrices with shared matrices over Z_{2^l}.
// Both parties must call the same methods with the same dimensions in the same order. A Session
// is not safe for concurrent use. After a failure in the middle of a protocol the parties may be
// out of step: the Session then refuses further work (Err reports why) and aborts its
// connections so that the peer fails at once instead of waiting for a timeout.
type Session struct {
	r        ring.Ring
	party    int
	oneBatch bool
	streams  []*stream
	group    *streams.Group // failure state and work splitting
}

// stream is one OT stream with its reusable buffers.
type stream struct {
	idx      int
	ot       *ot.Session
	conn     *transport.Conn
	party    int
	l        int
	budget   int
	oneBatch bool
	// Scratch, reused across calls.
	m0, choice, corr []uint64
	ob               [2]oneBatchBufs // the one-batch mode's chunks in flight
	exp              *expander       // pad expansion of the convolution's OTs
}

// The session hello (see streams.Hello).
const (
	helloMagic   = "CFLN"
	helloVersion = 2
)

// New starts a session over the given OT sessions (an ot.Session and, optionally, forks of it on
// further connections to the same peer). It exchanges a short hello on every stream to check that
// both parties use the same ring, options and number of streams. The OT sessions may be shared
// with other protocols (e.g. package nonlinear) as long as calls do not overlap.
func New(ctx context.Context, r ring.Ring, opt Options, ots ...*ot.Session) (*Session, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("linear: New: invalid ring %v", r)
	}
	if opt.Budget == 0 {
		opt.Budget = DefaultBudget
	}
	if opt.Budget < 4096 {
		return nil, fmt.Errorf("linear: New: Budget=%d words is below the minimum 4096", opt.Budget)
	}
	if opt.MinSplit == 0 {
		opt.MinSplit = DefaultMinSplit
	}
	if opt.MinSplit < 64 {
		return nil, fmt.Errorf("linear: New: MinSplit=%d, want at least 64", opt.MinSplit)
	}
	hello := streams.Hello{Magic: helloMagic, Version: helloVersion, Bits: r.Bits, Params: []streams.HelloParam{
		streams.HelloFlag("Options.OneBatch", opt.OneBatch),
		{Name: "Options.Budget", Value: uint64(opt.Budget)},
		{Name: "Options.MinSplit", Value: uint64(opt.MinSplit)},
	}}
	party, group, err := streams.Open(ctx, "linear", hello, opt.MinSplit, ots)
	if err != nil {
		return nil, err
	}
	s := &Session{r: r, party: party, oneBatch: opt.OneBatch, group: group}
	for i, o := range ots {
		s.streams = append(s.streams, &stream{idx: i, ot: o, conn: o.Conn(), party: party, l: r.Bits, budget: opt.Budget, oneBatch: opt.OneBatch})
	}
	return s, nil
}

// Ring returns the ring of the shares.
func (s *Session) Ring() ring.Ring { return s.r }

// Party returns this party's index (0 or 1).
func (s *Session) Party() int { return s.party }

// Streams returns the number of OT streams.
func (s *Session) Streams() int { return len(s.streams) }

// Err returns the error that made the session unusable, or nil.
func (s *Session) Err() error { return s.group.Err() }

func (s *Session) usable(op string) error { return s.group.Usable(op) }

// parts splits n elements into one contiguous range per stream (multiples of 64 elements, so
// that chunks stay word-aligned), or one range for small n.
func (s *Session) parts(n int) [][2]int { return s.partsOf(n, n) }

// partsOf is parts for n elements that together stand for work elements of a matrix product
// (a convolution's element carries the work of all the im2col entries it replaces): the split
// threshold MinSplit applies to work.
func (s *Session) partsOf(n, work int) [][2]int { return s.group.Parts(n, work, 64) }

// run executes f on every part, part i on stream i, concurrently when there are several. On the
// first failure the other parts are cancelled and the session is failed.
func (s *Session) run(ctx context.Context, op string, parts [][2]int, f func(ctx context.Context, i int, st *stream, lo, hi int) error) error {
	return s.group.Run(ctx, op, parts, func(ctx context.Context, i, lo, hi int) error {
		return f(ctx, i, s.streams[i], lo, hi)
	})
}
