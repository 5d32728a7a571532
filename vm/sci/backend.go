package sciot

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/linear"
	"github.com/cryptflow-go/cryptflow/protocols/nonlinear"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/ring"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/vm"
)

// Backend runs a program's convolutions itself when that communicates less.
var _ vm.ConvBackend = (*Backend)(nil)

// Options configures a Backend. The zero value selects the defaults. Both parties must use the
// same options (the sessions' hellos check this).
type Options struct {
	// Streams are further connections to the same peer, in the same order at both parties. Each
	// carries a forked OT stream, and large layers are split across the streams and run
	// concurrently (one core per stream).
	Streams []*transport.Conn
	// Nonlinear configures the nonlinear protocols (millionaires' leaf width, chunking).
	Nonlinear nonlinear.Options
	// Linear configures the OT-based linear layers.
	Linear linear.Options
}

// Backend is one party's end of an SCI_OT session; it implements vm.Backend. It is not safe for
// concurrent use (one Machine at a time). After a protocol failure (a closed or misbehaving peer,
// a cancelled context) it refuses further work, and its connections are aborted so that the peer
// fails at once.
type Backend struct {
	r     ring.Ring
	party int
	ots   []*ot.Session
	conns []*transport.Conn
	nl    *nonlinear.Session
	lin   *linear.Session
	err   error
	prof  Profile
}

// New sets up an SCI_OT session with the peer at the other end of conn (plus opt.Streams): the OT
// handshake and base OTs, then the nonlinear and linear sessions over the ring r. Party 0 is the
// server, party 1 the client. The caller keeps ownership of the connections (close them when
// done).
func New(ctx context.Context, conn *transport.Conn, party int, r ring.Ring, opt Options) (*Backend, error) {
	if conn == nil {
		return nil, errors.New("sciot: New: nil connection")
	}
	start := time.Now()
	conns := append([]*transport.Conn{conn}, opt.Streams...)
	before := sumStats(conns)
	o, err := ot.NewSession(ctx, conn, party)
	if err != nil {
		return nil, fmt.Errorf("sciot: New: %w", err)
	}
	ots := []*ot.Session{o}
	for i, c := range opt.Streams {
		if c == nil {
			return nil, fmt.Errorf("sciot: New: stream connection %d is nil", i+1)
		}
		f, err := o.Fork(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("sciot: New: stream %d: %w", i+1, err)
		}
		ots = append(ots, f)
	}
	b, err := FromOT(ctx, r, opt, ots...)
	if err != nil {
		return nil, err
	}
	b.prof.Setup = Cost{Calls: 1, Time: time.Since(start), Stats: sumStats(conns).Sub(before)}
	return b, nil
}

// FromOT builds a Backend over existing OT sessions (an ot.Session and its forks), for example to
// run a program over another ring on a session whose base OTs are already done. It starts the
// nonlinear and linear sessions (a short hello on every stream). opt.Streams is ignored.
func FromOT(ctx context.Context, r ring.Ring, opt Options, sessions ...*ot.Session) (*Backend, error) {
	if len(sessions) == 0 {
		return nil, errors.New("sciot: no OT session")
	}
	if !r.Valid() || r.Bits < 2 {
		return nil, fmt.Errorf("sciot: ring %v: need Z_2^l with 2 ≤ l ≤ 64", r)
	}
	b := &Backend{r: r, party: sessions[0].Party(), ots: sessions}
	for _, o := range sessions {
		if o == nil {
			return nil, errors.New("sciot: nil OT session")
		}
		b.conns = append(b.conns, o.Conn())
	}
	start := time.Now()
	before := sumStats(b.conns)
	var err error
	if b.nl, err = nonlinear.New(ctx, r, opt.Nonlinear, sessions...); err != nil {
		return nil, fmt.Errorf("sciot: %w", err)
	}
	if b.lin, err = linear.New(ctx, r, opt.Linear, sessions...); err != nil {
		return nil, fmt.Errorf("sciot: %w", err)
	}
	b.prof.Setup = Cost{Calls: 1, Time: time.Since(start), Stats: sumStats(b.conns).Sub(before)}
	return b, nil
}

// Party is 0 for the server, 1 for the client.
func (b *Backend) Party() int { return b.party }

// Ring is the ring of the shares.
func (b *Backend) Ring() ring.Ring { return b.r }

// Err returns the error that made the backend unusable, or nil.
func (b *Backend) Err() error { return b.err }

// Streams returns the number of OT streams (connections) the backend uses.
func (b *Backend) Streams() int { return len(b.conns) }

// begin checks that the backend is usable and starts accounting a call; the returned function ends
// it, charging the time and traffic to a category and failing the backend on an error.
func (b *Backend) begin(op string) (func(c *Cost, err error) error, error) {
	if b.err != nil {
		return nil, fmt.Errorf("sciot: %s: backend unusable after an earlier failure: %w", op, b.err)
	}
	start := time.Now()
	before := sumStats(b.conns)
	return func(c *Cost, err error) error {
		c.Calls++
		c.Time += time.Since(start)
		c.Stats = c.Stats.Add(sumStats(b.conns).Sub(before))
		if err != nil {
			return b.fail(op, err)
		}
		return nil
	}, nil
}

// Abort makes the backend unusable and aborts all its connections, so that the peer's pending and
// next receives fail at once with the reason. Call it when a run fails outside the backend (for
// example when the VM stops on a cancelled context between two backend calls); without it the
// peer waits for its transport timeout.
func (b *Backend) Abort(reason string) {
	b.failWith(fmt.Errorf("sciot: aborted: %s", reason), "sciot: the peer aborted: "+reason)
}

// fail records err as fatal, aborts the connections so that the peer fails fast, and returns it
// wrapped with op.
func (b *Backend) fail(op string, err error) error {
	err = fmt.Errorf("sciot: %s: %w", op, err)
	b.failWith(err, "sciot: "+op+" failed at the peer: "+err.Error())
	return err
}

func (b *Backend) failWith(err error, reason string) {
	if b.err != nil {
		return
	}
	b.err = err
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, c := range b.conns {
		_ = c.Abort(ctx, reason)
	}
}

func sumStats(conns []*transport.Conn) transport.Stats {
	var s transport.Stats
	for _, c := range conns {
		s = s.Add(c.Stats())
	}
	return s
}

func checkLen(what string, t ring.Tensor, n int) error {
	if len(t.Data) != n {
		return fmt.Errorf("%s has %d elements, want %d", what, len(t.Data), n)
	}
	return nil
}

// Input turns x (the value at the owner, zeros at the other party) into this party's share: the
// owner draws a fresh PRG seed and sends it; both expand it to a mask r; the other party's share
// is r and the owner's x − r. Communication: 16 bytes.
func (b *Backend) Input(ctx context.Context, owner int, x ring.Tensor) error {
	const op = "input"
	end, err := b.begin(op)
	if err != nil {
		return err
	}
	if owner != 0 && owner != 1 {
		return end(&b.prof.Input, fmt.Errorf("input owned by party %d", owner))
	}
	conn := b.conns[0]
	var seed prg.Seed
	if b.party == owner {
		if seed, err = prg.RandomSeed(); err == nil {
			if err = conn.Send(ctx, seed[:]); err == nil {
				err = conn.Flush(ctx)
			}
		}
	} else {
		err = conn.Recv(ctx, seed[:])
	}
	if err == nil {
		mask := make([]uint64, len(x.Data))
		prg.New(seed).Uint64s(mask)
		if b.party == owner {
			b.r.SubVec(x.Data, x.Data, mask)
		} else {
			for i, v := range mask {
				x.Data[i] = v & b.r.Mask()
			}
		}
		clear(seed[:])
	}
	return end(&b.prof.Input, err)
}

// Reveal opens x to party to: the other party sends its share (packed at l bits), and to adds it
// to its own. It reports whether x now holds the value at this party.
func (b *Backend) Reveal(ctx context.Context, to int, x ring.Tensor) (bool, error) {
	const op = "reveal"
	end, err := b.begin(op)
	if err != nil {
		return false, err
	}
	if to != 0 && to != 1 {
		return false, end(&b.prof.Reveal, fmt.Errorf("reveal to party %d", to))
	}
	conn := b.conns[0]
	if b.party != to {
		if err = conn.SendPacked(ctx, x.Data, b.r.Bits); err == nil {
			err = conn.Flush(ctx)
		}
		return false, end(&b.prof.Reveal, err)
	}
	other := make([]uint64, len(x.Data))
	if err = conn.RecvPacked(ctx, other, b.r.Bits); err == nil {
		b.r.AddVec(x.Data, x.Data, other)
	}
	return err == nil, end(&b.prof.Reveal, err)
}

// MatMul sets dst = W·X with party 0's weights W (m×k) and the shared X (k×n) by OT (package
// linear).
func (b *Backend) MatMul(ctx context.Context, dst ring.Tensor, w *ring.Tensor, m, k, n int, x ring.Tensor) error {
	const op = "matmul"
	end, err := b.begin(op)
	if err != nil {
		return err
	}
	if err := firstErr(checkLen("operand", x, k*n), checkLen("result", dst, m*n), b.weightErr(w)); err != nil {
		return end(&b.prof.Linear, err)
	}
	return end(&b.prof.Linear, b.lin.MatMul(ctx, dst.Data, weightData(w), m, k, n, x.Data))
}

// UseConv2D reports whether a convolution of geometry g runs as Conv2D (OTs on the input elements)
// rather than as a MatMul with its im2col matrix: whichever communicates less by the two exact
// formulas (linear.ConvBits, linear.ConvIm2colBits), which depend on public data only, so both
// parties decide alike.
func (b *Backend) UseConv2D(g ring.ConvGeom) bool { return b.lin.ConvDirect(g) }

// Conv2D sets dst = W * X (convolution) with party 0's weights W and the shared input X by OT on
// the input elements (linear.Session.Conv2D).
func (b *Backend) Conv2D(ctx context.Context, dst ring.Tensor, w *ring.Tensor, x ring.Tensor, g ring.ConvGeom) error {
	const op = "conv"
	end, err := b.begin(op)
	if err != nil {
		return err
	}
	if err := b.weightErr(w); err != nil {
		return end(&b.prof.Linear, err)
	}
	return end(&b.prof.Linear, b.lin.Conv2D(ctx, dst.Data, weightData(w), g, x.Data))
}

// MulConst sets dst = w ⊙ x with party 0's private w, by OT.
func (b *Backend) MulConst(ctx context.Context, dst ring.Tensor, w *ring.Tensor, x ring.Tensor) error {
	const op = "mulconst"
	end, err := b.begin(op)
	if err != nil {
		return err
	}
	if err := firstErr(checkLen("result", dst, len(x.Data)), b.weightErr(w)); err != nil {
		return end(&b.prof.Linear, err)
	}
	return end(&b.prof.Linear, b.lin.MulElem(ctx, dst.Data, weightData(w), x.Data))
}

// Mul sets dst = x ⊙ y for two shared tensors by OT in both directions
// (linear.Session.Mul; communication linear.MulBits). It is charged to Profile.Linear.
func (b *Backend) Mul(ctx context.Context, dst, x, y ring.Tensor) error {
	const op = "mul"
	end, err := b.begin(op)
	if err != nil {
		return err
	}
	if err := firstErr(checkLen("second operand", y, len(x.Data)), checkLen("result", dst, len(x.Data))); err != nil {
		return end(&b.prof.Linear, err)
	}
	return end(&b.prof.Linear, b.lin.Mul(ctx, dst.Data, x.Data, y.Data))
}

// weightErr checks that party 0 has the weights and party 1 has none.
func (b *Backend) weightErr(w *ring.Tensor) error {
	if b.party == 0 && w == nil {
		return errors.New("party 0 has no weights (was it given the client copy of the program?)")
	}
	if b.party == 1 && w != nil {
		return errors.New("party 1 was given weights")
	}
	return nil
}

func weightData(w *ring.Tensor) []uint64 {
	if w == nil {
		return nil
	}
	return w.Data
}

// ReLU sets dst = max(x, 0) (CrypTFlow2 Alg. 8).
func (b *Backend) ReLU(ctx context.Context, dst, x ring.Tensor) error {
	end, err := b.begin("relu")
	if err != nil {
		return err
	}
	return end(&b.prof.Nonlinear, b.nl.ReLU(ctx, dst.Data, x.Data))
}

// Trunc sets dst = floor(signed(x)/2^k), with the cheaper protocol when knownNonNeg (§6.2).
func (b *Backend) Trunc(ctx context.Context, dst, x ring.Tensor, k int, knownNonNeg bool) error {
	end, err := b.begin("trunc")
	if err != nil {
		return err
	}
	return end(&b.prof.Nonlinear, b.nl.Trunc(ctx, dst.Data, x.Data, k, knownNonNeg))
}

// Div sets dst = floor(signed(x)/d) (Alg. 9; powers of two by truncation).
func (b *Backend) Div(ctx context.Context, dst, x ring.Tensor, d int) error {
	end, err := b.begin("div")
	if err != nil {
		return err
	}
	if d < 1 {
		return end(&b.prof.Nonlinear, fmt.Errorf("division by %d", d))
	}
	return end(&b.prof.Nonlinear, b.nl.Div(ctx, dst.Data, x.Data, uint64(d)))
}

// MaxRows sets dst[i] to the signed maximum of row i of x (rows×d).
func (b *Backend) MaxRows(ctx context.Context, dst, x ring.Tensor, rows, d int) error {
	end, err := b.begin("maxpool")
	if err != nil {
		return err
	}
	return end(&b.prof.Nonlinear, b.nl.MaxRows(ctx, dst.Data, x.Data, rows, d))
}

// ArgMaxRows sets dst[i] to the index of the first signed maximum of row i of x (rows×d).
func (b *Backend) ArgMaxRows(ctx context.Context, dst, x ring.Tensor, rows, d int) error {
	end, err := b.begin("argmax")
	if err != nil {
		return err
	}
	return end(&b.prof.Nonlinear, b.nl.ArgMaxRows(ctx, dst.Data, x.Data, rows, d))
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
