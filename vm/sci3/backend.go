// Package sci3 is the three-party backend of the VM ("sci3", CrypTFlow's Porthos setting):
// party 0 (server, weights) and party 1 (client, input) hold additive shares over Z_{2^l} as in
// the two-party backends, and a helper (party 2, package dealer) deals correlated randomness
// from the pairwise seeds it shares with each of them. The linear layers run by the dealer's
// protocol (one message of |x| ring elements online, no OT, no HE); the nonlinear layers run
// CrypTFlow2's protocols (package nonlinear) unchanged on the helper's dealt short random OTs
// (ot.DealtCore: the helper sends only the receiver's l-bit message), with the bit triples of
// the millionaires' AND trees dealt directly. The outputs are bitwise those of the cleartext
// backend.
package sci3

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/linear"
	"github.com/cryptflow-go/cryptflow/protocols/nonlinear"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// Name is the backend's name in programs, handshakes and flags.
const Name = "sci3"

var (
	_ vm.ConvBackend         = (*Backend)(nil)
	_ vm.MathBackend         = (*Backend)(nil)
	_ vm.SharedMatMulBackend = (*Backend)(nil)
	_ vm.LowReLUBackend      = (*Backend)(nil) // sci's, on the dealt OTs
)

// Options configures a Backend; both data parties must use the same.
type Options struct {
	// Streams are further connections to the other data party (one dealt OT stream each).
	Streams []*transport.Conn
	// Nonlinear configures the nonlinear protocols (its Dealer is set by New unless
	// OTTriples).
	Nonlinear nonlinear.Options
	// OTTriples makes the bit triples from the dealt OTs instead of dealing them (for
	// comparison: docs/decisions.md).
	OTTriples bool
	// Linear configures the OT-based products of two shared tensors (Mul, math functions).
	Linear linear.Options
	// LinearPerRun is the number of calls with party 0's weights in one run of the program
	// (LinearCalls): party 0 then sends each weight tensor's mask F once per session. Zero:
	// F is sent with every call. Only party 0 uses it.
	LinearPerRun int
	// Precompute bounds, in bytes (8 per element), party 1's shares of the linear layers
	// computed before the inference that uses them (dealer.Linear.Prepare: when the helper's
	// corrections were dealt ahead and F is held, see ShareWeights); 0: none. Above it the
	// remaining calls compute their share during the inference, as without it.
	Precompute int64
	// Workers is the number of goroutines of a data party's product with the weights (0 or 1:
	// one); the result does not depend on it.
	Workers int
}

// The ReLU fused with its truncation comes with the embedded vm/sci backend (its nonlinear
// session runs on the dealt OTs).
var _ vm.ReLUTruncBackend = (*Backend)(nil)

// LinearWeights is the list of weight tensors that ShareWeights sends for p: per call of one
// run with a weight tensor of its own (MatMul and Conv2D; MulConst's broadcast constants are
// left to their first call), its id (the call number), kind and size, and with the values when
// p carries them (the server's copy).
func LinearWeights(p *fixed.Program) []dealer.Weights {
	var ws []dealer.Weights
	call := uint64(0)
	for _, in := range p.Instrs {
		var kind dealer.Kind
		switch in.Op {
		case fixed.OpMatMul:
			kind = dealer.KindMatMul
		case fixed.OpConv:
			kind = dealer.KindConv
		case fixed.OpMulConst:
			call++
			continue
		default:
			continue
		}
		w := p.Weights[in.Weight]
		t := dealer.Weights{ID: call, Kind: kind, N: w.Shape.Size()}
		if len(w.Data) == t.N {
			t.Signed = w.Data
		}
		ws = append(ws, t)
		call++
	}
	return ws
}

// LinearCalls is the number of calls with party 0's weights (MatMul, Conv2D, MulConst) that one
// run of p makes on a sci3 backend.
func LinearCalls(p *fixed.Program) int {
	n := 0
	for _, in := range p.Instrs {
		switch in.Op {
		case fixed.OpMatMul, fixed.OpConv, fixed.OpMulConst:
			n++
		}
	}
	return n
}

// Describe is the backend as the handshake announces it.
func (o Options) Describe() string {
	if o.OTTriples {
		return Name + " triples=ot"
	}
	return Name
}

// Backend is a data party's end of a three-party session; it implements vm.Backend. The
// nonlinear layers, input sharing, reveal and elementwise secret×secret products are those of
// vm/sci on the dealt OT source; the products with party 0's weights and the products of two
// shared matrices (dealt matrix triples) are the dealer's.
type Backend struct {
	*sci.Backend
	link *dealer.Link
	lin  *dealer.Linear
	mm   *dealer.SharedMatMul
	conn *transport.Conn
	prof sci.Cost // the dealer's linear layers
	err  error
	// pre is the time party 1 spent computing its linear shares ahead (Prepare) at the
	// inferences' starts, preN their number.
	pre  time.Duration
	preN int64
}

// ShareWeights sends party 0's masked weights F of every weight tensor of p to party 1 now (at
// the session's set-up) instead of at each tensor's first call (dealer.Linear.ShareWeights),
// so that party 1 can compute its shares of the first inference's linear layers before the
// input. Both data parties call it, each with its copy of the program, before the first
// inference, or neither does. It needs LinearPerRun = LinearCalls(p) at party 0.
func (b *Backend) ShareWeights(ctx context.Context, p *fixed.Program) error {
	ws := LinearWeights(p)
	if b.Party() == 0 {
		if !p.HasWeights() {
			return errors.New("sci3: ShareWeights: party 0 has no weights (was it given the client copy of the program?)")
		}
	} else {
		for i := range ws {
			ws[i].Signed = nil
		}
	}
	if err := b.lin.ShareWeights(ctx, ws); err != nil {
		b.err = fmt.Errorf("sci3: share weights: %w", err)
		b.Abort(b.err.Error())
		return b.err
	}
	return nil
}

// LinearStats counts party 1's linear shares computed during their calls and ahead.
func (b *Backend) LinearStats() dealer.LinearStats { return b.lin.Stats() }

// PrecomputeTime is the time party 1 spent computing its linear shares ahead, at the starts
// of the inferences (before their inputs are used), and their number.
func (b *Backend) PrecomputeTime() (time.Duration, int64) { return b.pre, b.preN }

// New sets up a data party's end over conn (to the other data party; plus opt.Streams) with
// the helper on link. Nothing is exchanged with the helper until the first draw.
func New(ctx context.Context, conn *transport.Conn, link *dealer.Link, r ring.Ring, opt Options) (*Backend, error) {
	if conn == nil || link == nil {
		return nil, errors.New("sci3: New: nil connection or link")
	}
	o, err := dealer.NewSession(link, conn)
	if err != nil {
		return nil, fmt.Errorf("sci3: New: %w", err)
	}
	ots := []*ot.Session{o}
	for i, c := range opt.Streams {
		f, err := o.Fork(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("sci3: New: stream %d: %w", i+1, err)
		}
		ots = append(ots, f)
	}
	nl := opt.Nonlinear
	if !opt.OTTriples {
		nl.Dealer = dealer.NewTriples(link)
	}
	sb, err := sci.FromOT(ctx, r, sci.Options{Mode: sci.ModeOT, OT: sci.OTIKNP, Nonlinear: nl, Linear: opt.Linear}, ots...)
	if err != nil {
		return nil, fmt.Errorf("sci3: %w", err)
	}
	lin, err := dealer.NewLinear(link, conn, r)
	if err != nil {
		return nil, fmt.Errorf("sci3: %w", err)
	}
	lin.Period = opt.LinearPerRun
	lin.PrecomputeCap, lin.Workers = opt.Precompute, opt.Workers
	mm, err := dealer.NewSharedMatMul(link, conn, r)
	if err != nil {
		return nil, fmt.Errorf("sci3: %w", err)
	}
	return &Backend{Backend: sb, link: link, lin: lin, mm: mm, conn: conn}, nil
}

// LinearEngine names how the linear layers run (the report's engine column): by the dealer's
// protocol, neither OT nor HE.
func (b *Backend) LinearEngine() string { return "dealer" }

// HelperStats is this party's traffic with the helper so far.
func (b *Backend) HelperStats() transport.Stats { return b.link.Conn().Stats() }

// Link returns the link to the helper (for its traffic).
func (b *Backend) Link() *dealer.Link { return b.link }

// Profile returns the accumulated costs, the dealer's linear layers included in Linear (the
// traffic there is with the other data party; the helper's is Link().Conn().Stats()).
func (b *Backend) Profile() sci.Profile {
	p := b.Backend.Profile()
	p.Linear = p.Linear.Add(b.prof)
	return p
}

// Abort makes the backend unusable and aborts its connections and the link.
func (b *Backend) Abort(reason string) {
	b.Backend.Abort(reason)
	b.link.Abort(reason)
}

func (b *Backend) run(ctx context.Context, op string, sh dealer.Shape, dst, w, x []uint64) error {
	if b.Party() == 0 && w == nil && b.err == nil && b.Backend.Err() == nil {
		return errors.New("sci3: party 0 has no weights (was it given the client copy of the program?)")
	}
	return b.dealt(op, func() error { return b.lin.Apply(ctx, sh, dst, w, x) })
}

// dealt runs one of the dealer's protocols with the other data party (f), accounting its time
// and traffic in the linear layers' cost; a failure makes the backend unusable.
func (b *Backend) dealt(op string, f func() error) error {
	if b.err != nil {
		return fmt.Errorf("sci3: %s: backend unusable after an earlier failure: %w", op, b.err)
	}
	if err := b.Backend.Err(); err != nil {
		return fmt.Errorf("sci3: %s: backend unusable after an earlier failure: %w", op, err)
	}
	start, before := time.Now(), b.conn.Stats()
	err := f()
	b.prof.Calls++
	b.prof.Time += time.Since(start)
	b.prof.Stats = b.prof.Stats.Add(b.conn.Stats().Sub(before))
	if err != nil {
		b.err = fmt.Errorf("sci3: %s: %w", op, err)
		b.Abort(b.err.Error())
		return b.err
	}
	return nil
}

func data(w *ring.Tensor) []uint64 {
	if w == nil {
		return nil
	}
	return w.Data
}

// MatMul sets dst = W·X by the dealer's protocol (the engine is ignored).
func (b *Backend) MatMul(ctx context.Context, _ fixed.Engine, dst ring.Tensor, w *ring.Tensor, m, k, n int, x ring.Tensor) error {
	return b.run(ctx, "matmul", dealer.Shape{Kind: dealer.KindMatMul, M: m, K: k, N: n}, dst.Data, data(w), x.Data)
}

// UseConv2D is true: a convolution by the dealer's protocol sends the input, not its im2col
// matrix.
func (b *Backend) UseConv2D(ring.ConvGeom, fixed.Engine) bool { return true }

// Conv2D sets dst = W * X by the dealer's protocol.
func (b *Backend) Conv2D(ctx context.Context, _ fixed.Engine, dst ring.Tensor, w *ring.Tensor, x ring.Tensor, g ring.ConvGeom) error {
	return b.run(ctx, "conv", dealer.Shape{Kind: dealer.KindConv, Conv: g}, dst.Data, data(w), x.Data)
}

// MulConst sets dst = w ⊙ x by the dealer's protocol.
func (b *Backend) MulConst(ctx context.Context, dst ring.Tensor, w *ring.Tensor, x ring.Tensor) error {
	return b.run(ctx, "mulconst", dealer.Shape{Kind: dealer.KindElem, Len: len(x.Data)}, dst.Data, data(w), x.Data)
}

// MatMulShared sets dst[i] = X[i]·Y[i] for two shared factors with a matrix Beaver triple dealt
// by the helper (dealer.SharedMatMul): the data parties open X − A and Y − B, the helper sends
// party 1 its share of A·B.
func (b *Backend) MatMulShared(ctx context.Context, _ fixed.Engine, dst, x, y ring.Tensor, batch, m, k, n int) error {
	return b.dealt("bmatmul", func() error { return b.mm.Apply(ctx, dst.Data, x.Data, y.Data, batch, m, k, n) })
}

// BeginInference tells the link to the helper that inference k of count starts: the first is
// recorded, and with dealing ahead on (dealer.Link.SetAhead) inference k ≥ 1 (and the first,
// given a trace) finds every correlation it needs already dealt, and the next one's are dealt
// in the background. The nonlinear protocols' OT roles are reset first, so that every inference
// makes the first one's requests. Party 1 computes its shares of the inference's linear layers whose
// corrections are dealt ahead (Options.Precompute) as they arrive, before the inference's input
// is used.
func (b *Backend) BeginInference(ctx context.Context, k, count int) error {
	// Every inference starts from the session's OT roles, so that its requests to the helper
	// are those of the first (period 1: the second inference is dealt ahead in full).
	b.Backend.ResetOTRoles()
	// Party 1's shares are computed while the inference's correlations are dealt, each as its
	// correction arrives (overlapping the helper's dealing of the rest).
	var prepErr error
	prepare := func(ctx context.Context) error {
		start := time.Now()
		n, err := b.lin.Prepare(ctx)
		if n > 0 {
			b.pre += time.Since(start)
			b.preN += int64(n)
		}
		prepErr = err
		return err
	}
	if err := b.link.BeginInferencePrepared(ctx, k, count, prepare); err != nil {
		if prepErr != nil {
			b.err = fmt.Errorf("sci3: linear shares ahead: %w", prepErr)
			b.Abort(b.err.Error())
			return b.err
		}
		return fmt.Errorf("sci3: %w", err)
	}
	return nil
}

// EndInference tells the link that inference k ended.
func (b *Backend) EndInference(k int) error {
	if err := b.link.EndInference(k); err != nil {
		return fmt.Errorf("sci3: %w", err)
	}
	return nil
}

// Close tells the helper this party is done.
func (b *Backend) Close() error {
	if b.link.Err() != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return b.link.Done(ctx)
}
