package sci

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/ferret"
	"github.com/cryptflow-go/cryptflow/protocols/he"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/protocols/linear"
	"github.com/cryptflow-go/cryptflow/protocols/nonlinear"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/iknp"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
	"github.com/cryptflow-go/cryptflow/vm"
)

// Backend runs convolutions itself (by OT on the input elements, or by HE), every linear layer
// with the engine the program records for it, and the fixed-point math functions.
var (
	_ vm.ConvBackend         = (*Backend)(nil)
	_ vm.MathBackend         = (*Backend)(nil)
	_ vm.SharedMatMulBackend = (*Backend)(nil)
	_ vm.LowReLUBackend      = (*Backend)(nil)
)

// Mode is how a Backend computes the linear layers (products with party 0's weights). The
// nonlinear layers, elementwise products and input/output are the same in every mode.
type Mode int

// The modes, by backend name.
const (
	ModeOT   Mode = iota // "sciot": every linear layer by correlated OT (CrypTFlow2 §5.1.1)
	ModeHE               // "scihe": every matmul and conv by RLWE over Z_2^l (Cheetah-style)
	ModeAuto             // "auto": per layer as the program records (fixed.Engine); see EngineFor
)

// Names are the backend names of the modes, as the program file and the handshake carry them.
var modeNames = [...]string{ModeOT: "sciot", ModeHE: "scihe", ModeAuto: "auto"}

func (m Mode) String() string {
	if m >= 0 && int(m) < len(modeNames) {
		return modeNames[m]
	}
	return fmt.Sprintf("mode(%d)", int(m))
}

// ParseMode maps a backend name to its mode.
func ParseMode(name string) (Mode, error) {
	for m, n := range modeNames {
		if n == name {
			return Mode(m), nil
		}
	}
	return 0, fmt.Errorf("unknown two-party backend %q (sciot, scihe or auto)", name)
}

// OTSource is the OT that the OT-based protocols draw from.
type OTSource int

// The OT sources.
const (
	OTIKNP   OTSource = iota // IKNP OT extension: λ = 128 bits per OT (package ot)
	OTFerret                 // Ferret silent OT: under half a bit per correlated OT (package ferret)
)

var otNames = [...]string{OTIKNP: "iknp", OTFerret: "ferret"}

func (o OTSource) String() string {
	if o >= 0 && int(o) < len(otNames) {
		return otNames[o]
	}
	return fmt.Sprintf("ot(%d)", int(o))
}

// ParseOT maps an OT source name (iknp, ferret) to its OTSource.
func ParseOT(name string) (OTSource, error) {
	for o, n := range otNames {
		if n == name {
			return OTSource(o), nil
		}
	}
	return 0, fmt.Errorf("unknown OT source %q (iknp or ferret)", name)
}

// FerretMaxBandwidth is the fastest link, in bytes per second per direction, on which AutoOT
// picks Ferret: above it the traffic Ferret saves no longer pays for its extra computation
// (measured crossover on SqueezeNet: docs/benchmarks.md, "When silent OT pays").
const FerretMaxBandwidth = 80e6

// AutoOT is the OT source for a program planned for link net (nil: no link recorded): Ferret on
// links of at most FerretMaxBandwidth, where its ~8× smaller traffic outweighs its ~2× CPU, IKNP
// otherwise.
func AutoOT(net *netmodel.Model) OTSource {
	if net != nil && net.Bandwidth > 0 && net.Bandwidth <= FerretMaxBandwidth {
		return OTFerret
	}
	return OTIKNP
}

// Options configures a Backend. The zero value selects SCI_OT on IKNP with the defaults. Both
// parties must use the same options: Describe is announced in the handshake, and the sessions'
// own hellos check the protocol parameters.
type Options struct {
	// Streams are further connections to the same peer, in the same order at both parties. Each
	// carries a forked OT stream, and large layers are split across the streams and run
	// concurrently (one core per stream).
	Streams []*transport.Conn
	// Mode selects how linear layers run (sciot, scihe, auto).
	Mode Mode
	// OT selects the OT source of every OT-based protocol.
	OT OTSource
	// Ferret is the silent-OT parameter set (zero: ferret.B13()). Each stream runs its own COT
	// streams, one per direction.
	Ferret ferret.Config
	// HE configures the HE linear layers (modes scihe and auto).
	HE he.Options
	// Nonlinear configures the nonlinear protocols (millionaires' leaf width, chunking).
	Nonlinear nonlinear.Options
	// Linear configures the OT-based linear layers.
	Linear linear.Options
	// Offline configures the offline phase on Ferret (see BeginInference).
	Offline Offline
}

func (o Options) ferretConfig() ferret.Config {
	if o.Ferret.Name == "" {
		return ferret.B13()
	}
	return o.Ferret
}

// Describe is the backend as the handshake announces it: the mode, the OT source and, with HE,
// the RLWE parameters, e.g. "scihe ot=ferret(b13) he=N8192/logQ113". Two parties whose descriptions
// differ would not interoperate.
func (o Options) Describe(r ring.Ring) string {
	d := o.Mode.String() + " ot=" + o.OT.String()
	if o.OT == OTFerret {
		d += "(" + o.ferretConfig().Name + ")"
	}
	if o.Mode != ModeOT {
		if p, err := heplan.ParamsFor(r.Bits); err == nil {
			d += fmt.Sprintf(" he=N%d/logQ%d", p.N(), p.LogQ())
		}
	}
	if o.Offline.Dealt {
		d += " dealt=offline"
	}
	return d
}

// Backend is one party's end of an SCI session (sciot, scihe or auto); it implements vm.Backend.
// It is not safe for concurrent use (one Machine at a time). After a protocol failure (a closed or
// misbehaving peer, a cancelled context) it refuses further work, and its connections are aborted
// so that the peer fails at once.
type Backend struct {
	r     ring.Ring
	party int
	mode  Mode
	conns []*transport.Conn
	nl    *nonlinear.Session
	lin   *linear.Session
	he    *he.Session // nil in mode sciot
	off   *offline    // nil on IKNP
	sd    *selfDealt  // the nonlinear layers' correlations made ahead (Offline.Dealt), or nil
	err   error
	prof  Profile
}

// ResetOTRoles resets the nonlinear protocols' OT roles to those of the session's start
// (nonlinear.Session.ResetRoles); both parties call it between two runs of a program.
func (b *Backend) ResetOTRoles() { b.nl.ResetRoles() }

// New sets up an SCI session with the peer at the other end of conn (plus opt.Streams): the OT
// handshake and base OTs, the silent-OT bootstrap with OTFerret, the nonlinear and OT-linear
// sessions over the ring r and, in modes scihe and auto, the HE session (party 1's key). Party 0
// is the server, party 1 the client. The caller keeps ownership of the connections.
func New(ctx context.Context, conn *transport.Conn, party int, r ring.Ring, opt Options) (*Backend, error) {
	if conn == nil {
		return nil, errors.New("sci: New: nil connection")
	}
	start := time.Now()
	conns := append([]*transport.Conn{conn}, opt.Streams...)
	before := sumStats(conns)
	o, err := iknp.NewSession(ctx, conn, party)
	if err != nil {
		return nil, fmt.Errorf("sci: New: %w", err)
	}
	ots := []*ot.Session{o}
	for i, c := range opt.Streams {
		if c == nil {
			return nil, fmt.Errorf("sci: New: stream connection %d is nil", i+1)
		}
		f, err := o.Fork(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("sci: New: stream %d: %w", i+1, err)
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

// FromOT builds the backend on existing OT sessions (one per stream, all with the same peer):
// the OT source, the nonlinear and linear sessions and, unless the mode is sciot, the HE session
// on the first stream's connection. Both parties must pass the same options.
func FromOT(ctx context.Context, r ring.Ring, opt Options, sessions ...*ot.Session) (*Backend, error) {
	if len(sessions) == 0 {
		return nil, errors.New("sci: no OT session")
	}
	if !r.Valid() || r.Bits < 2 {
		return nil, fmt.Errorf("sci: ring %v: need Z_2^l with 2 ≤ l ≤ 64", r)
	}
	if opt.Mode < ModeOT || opt.Mode > ModeAuto {
		return nil, fmt.Errorf("sci: unknown mode %d", int(opt.Mode))
	}
	b := &Backend{r: r, party: sessions[0].Party(), mode: opt.Mode}
	for _, o := range sessions {
		if o == nil {
			return nil, errors.New("sci: nil OT session")
		}
		b.conns = append(b.conns, o.Conn())
	}
	start := time.Now()
	before := sumStats(b.conns)
	srcs := make([]*ot.Session, len(sessions))
	for i, o := range sessions {
		switch opt.OT {
		case OTIKNP:
			srcs[i] = o
		case OTFerret:
			f, err := ferret.NewSession(ctx, o, opt.ferretConfig(), ferret.Options{Workers: 1})
			if err != nil {
				return nil, fmt.Errorf("sci: silent OT on stream %d: %w", i, err)
			}
			srcs[i] = f
			if b.off == nil {
				b.off = &offline{opt: opt.Offline}
			}
			b.off.cores = append(b.off.cores, ferret.CoreOf(f))
		default:
			return nil, fmt.Errorf("sci: unknown OT source %d", int(opt.OT))
		}
	}
	var err error
	if b.nl, err = b.newNonlinear(ctx, r, opt, srcs); err != nil {
		return nil, fmt.Errorf("sci: %w", err)
	}
	if b.lin, err = linear.New(ctx, r, opt.Linear, srcs...); err != nil {
		return nil, fmt.Errorf("sci: %w", err)
	}
	if opt.Mode != ModeOT {
		if b.he, err = he.New(ctx, r, b.party, b.conns[0], opt.HE); err != nil {
			return nil, fmt.Errorf("sci: %w", err)
		}
		if b.off == nil {
			b.off = &offline{opt: opt.Offline}
		}
	}
	if b.sd != nil && b.off == nil {
		b.off = &offline{opt: opt.Offline} // the self-dealt correlations' offline phase, on IKNP
	}
	b.prof.Setup = Cost{Calls: 1, Time: time.Since(start), Stats: sumStats(b.conns).Sub(before)}
	return b, nil
}

// Mode returns the backend's mode.
func (b *Backend) Mode() Mode { return b.mode }

// EngineFor is the engine that runs a linear layer for which the program records e: OT in mode
// sciot, HE in mode scihe, and in mode auto the one the program records (athosc --backend auto
// plans every layer; a layer it did not plan runs by OT). It depends on public data only.
func (b *Backend) EngineFor(e fixed.Engine) fixed.Engine {
	if b.mode == ModeHE || b.mode == ModeAuto && e == fixed.EngineHE {
		return fixed.EngineHE
	}
	return fixed.EngineOT
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
		return nil, fmt.Errorf("sci: %s: backend unusable after an earlier failure: %w", op, b.err)
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
	b.failWith(fmt.Errorf("sci: aborted: %s", reason), "sci: the peer aborted: "+reason)
}

// fail records err as fatal, aborts the connections so that the peer fails fast, and returns it
// wrapped with op.
func (b *Backend) fail(op string, err error) error {
	err = fmt.Errorf("sci: %s: %w", op, err)
	b.failWith(err, "sci: "+op+" failed at the peer: "+err.Error())
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

// MatMul sets dst = W·X with party 0's weights W (m×k) and the shared X (k×n), by the engine
// EngineFor(e): HE (he.Session.MatMul) or OT (linear.Session.MatMul).
func (b *Backend) MatMul(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, m, k, n int, x ring.Tensor) error {
	const op = "matmul"
	end, err := b.begin(op)
	if err != nil {
		return err
	}
	if err := firstErr(checkLen("operand", x, k*n), checkLen("result", dst, m*n), b.weightErr(w)); err != nil {
		return end(&b.prof.Linear, err)
	}
	if b.EngineFor(e) == fixed.EngineHE {
		if made, err := b.heMade(ctx, dealer.Shape{Kind: dealer.KindMatMul, M: m, K: k, N: n}, dst.Data, weightData(w), x.Data); made {
			return end(&b.prof.Linear, err)
		}
		return end(&b.prof.Linear, b.he.MatMul(ctx, dst.Data, weightData(w), m, k, n, x.Data))
	}
	return end(&b.prof.Linear, b.lin.MatMul(ctx, dst.Data, weightData(w), m, k, n, x.Data))
}

// UseConv2D reports whether a convolution of geometry g runs as Conv2D: always by HE, and by OT
// where the OTs on the input elements communicate less than a product with the im2col matrix
// (linear.ConvDirectFor). It depends on the geometry, the mode and the layer's engine e, all
// public, so both parties decide alike.
func (b *Backend) UseConv2D(g ring.ConvGeom, e fixed.Engine) bool {
	return b.EngineFor(e) == fixed.EngineHE || b.lin.ConvDirect(g)
}

// Conv2D sets dst = W * X (convolution) with party 0's weights W and the shared input X, by the
// engine EngineFor(e): HE (he.Session.Conv2D) or OT on the input elements (linear.Session.Conv2D).
func (b *Backend) Conv2D(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, x ring.Tensor, g ring.ConvGeom) error {
	const op = "conv"
	end, err := b.begin(op)
	if err != nil {
		return err
	}
	if err := b.weightErr(w); err != nil {
		return end(&b.prof.Linear, err)
	}
	if b.EngineFor(e) == fixed.EngineHE {
		if made, err := b.heMade(ctx, dealer.Shape{Kind: dealer.KindConv, Conv: g}, dst.Data, weightData(w), x.Data); made {
			return end(&b.prof.Linear, err)
		}
		return end(&b.prof.Linear, b.he.Conv2D(ctx, dst.Data, weightData(w), g, x.Data))
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

// MatMulShared sets dst[b] = X[b]·Y[b] for two shared factors, by OT (linear.Session.MatMulShared:
// the two cross terms as products of one party's share with the other's, one with each party as
// the OT sender).
func (b *Backend) MatMulShared(ctx context.Context, e fixed.Engine, dst, x, y ring.Tensor, batch, m, k, n int) error {
	end, err := b.begin("bmatmul")
	if err != nil {
		return err
	}
	if b.EngineFor(e) == fixed.EngineHE {
		return end(&b.prof.Linear, b.he.MatMulShared(ctx, dst.Data, x.Data, y.Data, batch, m, k, n))
	}
	return end(&b.prof.Linear, b.lin.MatMulShared(ctx, dst.Data, x.Data, y.Data, batch, m, k, n))
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

// ReLULow sets dst = max(x, 0) for x known to hold signed bits-bit values: the DReLU on the low
// bits of the shares, the MUX in the ring (nonlinear.Session.ReLULow).
func (b *Backend) ReLULow(ctx context.Context, dst, x ring.Tensor, bits int) error {
	end, err := b.begin("relu")
	if err != nil {
		return err
	}
	return end(&b.prof.Nonlinear, b.nl.ReLULow(ctx, dst.Data, x.Data, bits))
}

// UseReLUTrunc reports whether ReLUTrunc runs a ReLU of bits-bit operands followed by a
// truncation by s (vm.ReLUTruncBackend): when the DReLU's comparison of bits−1 bits is wider than
// s (nonlinear.Session.ReLUTruncFuses).
func (b *Backend) UseReLUTrunc(bits, s int) bool { return b.nl.ReLUTruncFuses(bits, s) }

// ReLUTrunc sets dst = max(x, 0) >> s for x known to hold signed bits-bit values (bits = l: any),
// in the ReLU's flights (nonlinear.Session.ReLUTrunc). It is charged to Profile.Nonlinear.
func (b *Backend) ReLUTrunc(ctx context.Context, dst, x ring.Tensor, bits, s int) error {
	end, err := b.begin("relu+trunc")
	if err != nil {
		return err
	}
	return end(&b.prof.Nonlinear, b.nl.ReLUTrunc(ctx, dst.Data, x.Data, bits, s))
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

// Math sets dst = f(x) elementwise (fxmath's algorithm on shares: nonlinear.Session.Math, with
// the secret×secret products by linear.Session.Mul). It is charged to Profile.Nonlinear.
func (b *Backend) Math(ctx context.Context, f fxmath.Func, dst, x ring.Tensor, scale int) error {
	end, err := b.begin(f.String())
	if err != nil {
		return err
	}
	if err := checkLen("result", dst, len(x.Data)); err != nil {
		return end(&b.prof.Nonlinear, err)
	}
	return end(&b.prof.Nonlinear, b.nl.Math(ctx, b.lin, f, dst.Data, x.Data, scale))
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

// FerretFor picks the silent-OT parameter set for a program: ferret.Small() when the program's
// nonlinear layers need fewer correlated OTs than eight Small iterations make, ferret.B13
// otherwise (its iterations of ten million COTs cost about a second of CPU
// and 190 MB per direction, which only large networks repay). The estimate — about 4·l COTs per
// element of every ReLU, truncation, division, max and argmax — depends on public data only, so
// both parties choose alike.
func FerretFor(p *fixed.Program) ferret.Config {
	var elems int64
	for _, in := range p.Instrs {
		switch in.Op {
		case fixed.OpReLU, fixed.OpTrunc, fixed.OpDiv, fixed.OpMaxPool, fixed.OpArgMax, fixed.OpMul:
			elems += int64(ring.Size(p.Tensors[in.In[0]].Shape))
		case fixed.OpExp, fixed.OpSigmoid, fixed.OpTanh, fixed.OpRecip, fixed.OpRsqrt, fixed.OpLog:
			// About twenty ReLU-sized steps per element (MathCost).
			elems += 20 * int64(ring.Size(p.Tensors[in.In[0]].Shape))
		case fixed.OpBatchMatMul:
			// 2·l COTs per entry of the smaller factor's (k×n or k×m) per product.
			b, m, k, n := fixed.BatchMatMulDims(p.Tensors[in.In[0]].Shape, p.Tensors[in.In[1]].Shape)
			elems += int64(b) * int64(k) * int64(min(m, n)) / 2
		}
	}
	if elems*4*int64(p.Bits) < 8*int64(ferret.Small().Main.Output()) {
		return ferret.Small()
	}
	return ferret.B13()
}
