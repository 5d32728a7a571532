package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"regexp"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
)

// HelperBackend is a backend with a third party (sci3's helper): its traffic with it goes into
// Report.Helper.
type HelperBackend interface {
	HelperStats() transport.Stats
}

// InferenceHooks is a backend that is told where each inference of a session starts and ends
// (k of count, 0-based): sci3 records its requests to the helper in the first inference and
// has the next inference's correlations dealt ahead while one runs. BeginInference runs before
// the inference's clock starts, so what it waits for is not the inference's time.
type InferenceHooks interface {
	BeginInference(ctx context.Context, k, count int) error
	EndInference(k int) error
}

// BackendFunc starts this party's end of a two-party backend over conn, after the handshake.
// streams are the session's further connections to the same peer (Options.Streams-1 of them, in
// the same order at both parties), for a backend that runs work on several streams at once; a
// backend may leave them unused. The backend may use the connections exclusively until the
// session ends; the session closes them. If the backend also implements io.Closer, it is closed
// when the session ends.
type BackendFunc func(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error)

// DefaultTimeout bounds every wait for the peer when Options.Timeout is zero.
const DefaultTimeout = 2 * time.Minute

// DefaultSessionTimeout bounds a whole session at a Server when Options.SessionTimeout is zero,
// so that slow or trickling clients cannot hold every session slot for long.
const DefaultSessionTimeout = 10 * time.Minute

// ErrSessionTimeout is wrapped by the error of a session that ran past its SessionTimeout.
var ErrSessionTimeout = errors.New("the session exceeded its time limit")

// DefaultMaxBatch is the most inferences a client may run in one session when
// Options.MaxBatch is zero.
const DefaultMaxBatch = 1000

// MaxFrame bounds the frames a session accepts from the peer (and sends), so that a client that
// has only passed the unauthenticated handshake cannot make the server allocate more. It is
// twice the largest frame the sciot protocols send with their default budgets: the nonlinear OT
// messages of one chunk (2^22 words = 32 MiB); linear layers send at most their 2^20-word
// budget, OT extension matrices at most 256 KiB, inputs a seed. The other frames are reveals of
// program outputs (n·l/8 bytes each); frameLimit raises the bound for a program whose output is
// larger. Incoming frames are also allocated only as their bytes arrive, and the bytes queued
// unread are bounded (see transport.Options).
const MaxFrame = 64 << 20

// frameLimit is the frame bound of a session of p: MaxFrame, or a larger revealed output.
func frameLimit(p *fixed.Program) int {
	lim := MaxFrame
	for _, o := range p.Outputs {
		if o.Tensor >= 0 && o.Tensor < len(p.Tensors) {
			lim = max(lim, transport.PackedBytes(p.Tensors[o.Tensor].Shape.Size(), p.Bits))
		}
	}
	return lim
}

// Options configures the sessions a party runs. The program and options are shared read-only
// by concurrent sessions.
type Options struct {
	// File is the program. Party 0 needs its weights; party 1 may hold the client copy.
	File *sciir.File
	// Backend names the two-party backend (announced in the handshake; both parties must agree).
	// Empty means File.Backend.
	Backend string
	// NewBackend constructs the backend named by Backend.
	NewBackend BackendFunc
	// Timeout bounds every wait for the peer: the handshake, every receive and every blocked
	// send. Zero means DefaultTimeout.
	Timeout time.Duration
	// SessionTimeout bounds each inference of a session: the first inference from the start of
	// the session (handshake and backend set-up included), every further inference of a batch
	// from its own start, and the final acknowledgement with the last. A single-inference
	// session is thus bounded as a whole, and a batch of B by B·SessionTimeout at most (B is
	// bounded by MaxBatch). A session past it fails with an error wrapping ErrSessionTimeout,
	// and the peer is told why. Zero means no bound for Run and DefaultSessionTimeout for a
	// Server; negative means no bound.
	SessionTimeout time.Duration
	// MaxBatch is, at the server, the most inferences a client may run in one session
	// (announced in the hello, so a larger batch is refused at the handshake with both sides
	// naming the limit); zero means DefaultMaxBatch. The client ignores it.
	MaxBatch int
	// Net, when set, emulates this link on the frames this party receives (see transport).
	Net *netmodel.Model
	// NetName labels Net in reports ("lan", "wan").
	NetName string
	// Progress, when set, is called after every instruction with the number done and the total.
	// It runs on the session's goroutine and must be quick.
	Progress func(done, total int, in *fixed.Instr)
	// Running, when set, is called when instruction i of inference k (both 0-based) of the n
	// in the session starts, so that a display can name the layer while it runs. It runs on the
	// session's goroutine and must be quick.
	Running func(k, n, i int, in *fixed.Instr)
	// Phase, when set, is called as the session enters each phase before the program runs:
	// PhaseHandshake (waiting for the peer's hello: a busy server queues its clients there),
	// PhaseStreams (opening or awaiting the extra connections) and PhaseSetup (the backend
	// set-up: base OTs and the like). It runs on the session's goroutine and must be quick.
	Phase func(phase string)
	// OnResult, when set, is called at party 1 after each inference of the session with its
	// index (0-based) and outputs, before the next inference starts, so that results can be
	// kept as they come rather than only at the end. An error from it ends the session. It
	// runs on the session's goroutine.
	OnResult func(k int, outs []vm.Output) error
	// Software is announced in the handshake (free text, for the peer's logs).
	Software string
	// Streams is the number of connections per session, 1 to MaxStreams (0 means 1); both
	// parties must use the same number (the handshake checks it). After the handshake the
	// client opens Streams-1 further connections to the server with DialStream, each presenting
	// the session token the server issued, and the backend gets them all (one OT stream each).
	Streams int
	// DialStream opens one further connection to the server (TLS-wrapped if the session is);
	// the client needs it when Streams > 1. The server ignores it.
	DialStream func(ctx context.Context) (net.Conn, error)

	// Pre-session deadlines at the server (the client ignores them; see presession.go). Zero
	// means the default; none exceeds Timeout.
	//
	// HelloTimeout bounds the time from accepting a connection to having its whole hello or
	// stream join, TLS handshake included (DefaultHelloTimeout).
	HelloTimeout time.Duration
	// JoinTimeout bounds the wait of a multi-stream session for its stream connections after
	// the handshake (DefaultJoinTimeout).
	JoinTimeout time.Duration
	// QueueTimeout bounds the wait of a client with a valid hello for a free session slot; it
	// is then refused as busy (DefaultQueueTimeout; not bounded by Timeout).
	QueueTimeout time.Duration
}

func (o *Options) streams() int {
	if o.Streams == 0 {
		return 1
	}
	return o.Streams
}

func (o *Options) maxBatch() int {
	if o.MaxBatch > 0 {
		return min(o.MaxBatch, maxBatchWire)
	}
	return DefaultMaxBatch
}

// hello is the hello this party announces; a client's carries the batch size, a server's its
// limit.
func (o *Options) hello(party, batch int) Hello {
	h := HelloFor(o.File, party, o.backend(), o.Software)
	h.Streams = o.streams()
	h.Batch = batch
	if party == 0 {
		h.Batch = o.maxBatch()
	}
	return h
}

func (o *Options) backend() string {
	if o.Backend != "" {
		return o.Backend
	}
	return o.File.Backend
}

func (o *Options) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

// Check reports whether the options can run sessions as party: a program, a backend, and for
// party 0 the weights. Run calls it before touching the network; call it earlier (before
// listening or dialling) to fail fast.
func (o *Options) Check(party int) error {
	if party != 0 && party != 1 {
		return fmt.Errorf("party %d: want 0 (server) or 1 (client)", party)
	}
	if o.File == nil || o.File.Program == nil {
		return errors.New("no program")
	}
	if o.NewBackend == nil {
		return fmt.Errorf("backend %q is not available in this build", o.backend())
	}
	if n := o.streams(); n < 1 || n > MaxStreams {
		return fmt.Errorf("%d streams: want 1 to %d", o.Streams, MaxStreams)
	}

	p := o.File.Program
	if party == 0 && !p.HasWeights() {
		return vm.ErrNoWeights
	}
	if _, err := p.Ring(); err != nil {
		return fmt.Errorf("program ring: %w", err)
	}
	for _, in := range p.Inputs {
		if in.Party == 0 {
			return fmt.Errorf("program input %q belongs to the server; scirun's server takes no inputs", in.Name)
		}
	}
	return nil
}

// The phases of a session that Options.Phase announces.
const (
	PhaseHandshake = "handshake"
	PhaseStreams   = "streams"
	PhaseSetup     = "setup"
)

// phase announces phase p to opt.Phase.
func (o *Options) phase(p string) {
	if o.Phase != nil {
		o.Phase(p)
	}
}

// Result is what a session produced at this party.
type Result struct {
	Outputs []vm.Output // the first inference's; revealed outputs hold the plaintext, others this party's share
	Batch   [][]vm.Output
	Report  *Report
	Peer    Hello
}

// Run runs one session of the program as party over nc (an established connection to the peer,
// TLS-wrapped if wanted): the handshake, the backend set-up, and the program. inputs are party
// 1's encoded inputs, one per program input (nil at party 0). Run owns nc and closes it. The
// report is returned even when the session fails (with its Error set), unless it fails before
// the handshake starts. At party 0, Run serves a client's batch as RunBatch does.
//
// With Options.Streams > 1, party 1 opens the extra connections with Options.DialStream; party 0
// must be a Server (whose listener receives them), so Run refuses it.
func Run(ctx context.Context, nc net.Conn, party int, opt *Options, inputs []ring.Tensor) (*Result, error) {
	var batch [][]ring.Tensor
	if party != 0 {
		batch = [][]ring.Tensor{inputs}
	}
	return RunBatch(ctx, nc, party, opt, batch)
}

// RunBatch is Run for a batch: party 1 runs the program once for each element of batch (the
// encoded inputs of one inference each, at least one), all in one session, so the handshake and
// the backend set-up (base OTs, silent-OT bootstrap, HE keys) are paid once. The hello tells
// party 0 how many inferences to run (at most its Options.MaxBatch); batch is nil there. The
// result holds every inference's outputs in order; the report sums each instruction over the
// inferences and gives each inference's time and traffic.
func RunBatch(ctx context.Context, nc net.Conn, party int, opt *Options, batch [][]ring.Tensor) (*Result, error) {
	if party == 0 && opt.streams() > 1 {
		_ = nc.Close()
		return nil, fmt.Errorf("%d streams: the server side of a multi-stream session needs a Server (it accepts the extra connections)", opt.streams())
	}
	return run(ctx, nc, party, opt, batch, opt.SessionTimeout, nil, Token{})
}

// sessionClock enforces the session bound of Options.SessionTimeout: limit for the first
// inference from the start, then limit for each further one from its start.
type sessionClock struct {
	limit   time.Duration
	timer   *time.Timer
	current atomic.Int64 // the inference running (0-based)
	total   atomic.Int64 // inferences in the session (0 until the handshake tells)
}

// startClock returns ctx cancelled with an ErrSessionTimeout cause when the clock runs out (and
// no clock when limit ≤ 0), and the function that releases it.
func startClock(ctx context.Context, limit time.Duration) (context.Context, *sessionClock, func()) {
	if limit <= 0 {
		return ctx, nil, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	c := &sessionClock{limit: limit}
	c.timer = time.AfterFunc(limit, func() {
		cur, n := c.current.Load(), c.total.Load()
		if n > 1 {
			cancel(fmt.Errorf("%w (%v for each inference; inference %d of %d ran over)", ErrSessionTimeout, limit, cur+1, n))
			return
		}
		cancel(fmt.Errorf("%w (%v)", ErrSessionTimeout, limit))
	})
	return ctx, c, func() { c.timer.Stop(); cancel(nil) }
}

// next starts inference i's share of the bound (the first one's started with the session).
func (c *sessionClock) next(i int) {
	if c == nil || i == 0 {
		return
	}
	c.current.Store(int64(i))
	if c.timer.Stop() { // not yet fired: a fresh limit for this inference
		c.timer.Reset(c.limit)
	}
}

// run is RunBatch with the session bound limit (≤ 0: none). At party 0, reg receives the
// session's extra connections (it may be nil with one stream), and tok is the session's token
// (zero: run makes one); the token also names the session (Token.ID) at both parties.
func run(ctx context.Context, nc net.Conn, party int, opt *Options, batch [][]ring.Tensor, limit time.Duration, reg *registry, tok Token) (*Result, error) {
	defer nc.Close()
	if err := opt.Check(party); err != nil {
		return nil, err
	}
	if party == 1 && opt.streams() > 1 && opt.DialStream == nil {
		return nil, fmt.Errorf("%d streams: the client needs a way to open the extra connections (Options.DialStream)", opt.streams())
	}
	if party == 1 && len(batch) == 0 {
		return nil, errors.New("no inputs: a batch needs at least one inference")
	}
	if party == 1 && len(batch) > maxBatchWire {
		return nil, fmt.Errorf("a batch of %d inferences: at most %d fit in one session", len(batch), maxBatchWire)
	}
	hardStop := ctx // cancelled: the caller stops everything, and aborted sessions do not linger
	ctx, clock, stopClock := startClock(ctx, limit)
	defer stopClock()
	// overdue names the session limit in errors caused by it.
	overdue := func(err error) error {
		if cause := context.Cause(ctx); (errors.Is(cause, ErrSessionTimeout) || errors.Is(cause, ErrShutdown)) && !errors.Is(err, cause) {
			return fmt.Errorf("%w: %w", cause, err)
		}
		return err
	}
	p := opt.File.Program
	r, _ := p.Ring() // checked by opt.Check
	var serverInputs []ring.Tensor
	if party == 0 {
		serverInputs = make([]ring.Tensor, len(p.Inputs))
		for i, in := range p.Inputs {
			serverInputs[i] = ring.Tensor{Shape: p.Tensors[in.Tensor].Shape.Clone()}
		}
	} else {
		for k, inputs := range batch {
			if len(inputs) != len(p.Inputs) {
				return nil, fmt.Errorf("inference %d: %d inputs given, the program has %d", k+1, len(inputs), len(p.Inputs))
			}
		}
	}

	nstreams := opt.streams()
	rep := &Report{
		Party: party, Role: RoleName(party), Peer: nc.RemoteAddr().String(),
		ProgramID: opt.File.IDString(), Model: opt.File.Meta.Source, Program: opt.File.Meta.Name, Backend: opt.backend(),
		Ring: r.String(), Scale: p.Scale, Streams: nstreams, TLS: isTLS(nc), Net: opt.NetName, Started: time.Now(),
	}
	res := &Result{Report: rep}
	fail := func(err error) (*Result, error) {
		err = overdue(err)
		rep.TotalMS = ms(time.Since(rep.Started))
		rep.Error = err.Error()
		return res, err
	}

	// A connected client sends its hello at once: the server waits for it at most
	// HelloTimeout (a Server has it buffered before the session starts). The client waits the
	// full timeout (the server may be busy with --max-sessions sessions and queue it).
	hsTimeout := opt.timeout()
	if party == 0 {
		hsTimeout = opt.helloTimeout()
	}
	hello := opt.hello(party, len(batch))
	var pending *pendingStreams
	if party == 0 {
		// Every session has a token: it names the session in both parties' reports and logs,
		// and with several streams it admits their connections.
		if tok == (Token{}) {
			var err error
			if tok, err = newToken(); err != nil {
				return fail(err)
			}
		}
		hello.Token = tok
		rep.SessionID = tok.ID()
	}
	if party == 0 && nstreams > 1 {
		if reg == nil {
			return fail(errors.New("a multi-stream session at the server needs the server's registry"))
		}
		// Registered before the verdict that reveals the token, so no join can come first.
		pending = reg.open(tok, nstreams)
	}
	t0 := time.Now()
	opt.phase(PhaseHandshake)
	peer, hs, hr, err := Handshake(ctx, nc, hello, hsTimeout)
	rep.Handshake = Traffic{BytesSent: hs, BytesRecv: hr, Rounds: 2}
	res.Peer = peer
	if party == 1 && peer.Token != (Token{}) {
		rep.SessionID = peer.Token.ID() // older servers send none with one stream
	}
	var extra []net.Conn
	if err == nil && nstreams > 1 {
		opt.phase(PhaseStreams)
		if party == 0 {
			extra, err = reg.wait(ctx, hello.Token, pending, nc, opt.joinTimeout())
		} else {
			extra, err = openStreams(ctx, opt.DialStream, peer.Token, nstreams, opt.timeout())
		}
		if err != nil {
			err = fmt.Errorf("opening %d streams: %w", nstreams, err)
		}
	} else if pending != nil {
		reg.expire(hello.Token, pending)
	}
	rep.HandshakeMS = ms(time.Since(t0))
	rep.Total = rep.Handshake
	if err != nil {
		return fail(err)
	}
	count := len(batch)
	if party == 0 {
		count = peer.Batch // the handshake checked 1 ≤ count ≤ opt.maxBatch()
	}
	rep.Inferences = count
	if clock != nil {
		clock.total.Store(int64(count))
	}

	topt := transport.Options{Timeout: opt.timeout(), MaxFrame: frameLimit(p)}
	if opt.Net != nil {
		topt.Link = transport.NewLink(*opt.Net) // the session's streams share this party's link
	}
	// Each connection closes gracefully after an abort (lingerConn), so the peer reads the
	// reason even while it is still sending.
	lingers := []*lingerConn{{Conn: nc}}
	for _, c := range extra {
		lingers = append(lingers, &lingerConn{Conn: c})
	}
	var conns []*transport.Conn
	for _, lc := range lingers {
		conns = append(conns, transport.NewConn(lc, topt))
	}
	conn := conns[0]
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	aborted := false
	abort := func(err error) {
		err = overdue(err)
		if !aborted {
			aborted = true
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			for _, c := range conns {
				_ = c.Abort(actx, err.Error())
			}
			cancel()
			if hardStop.Err() == nil || errors.Is(context.Cause(hardStop), ErrShutdown) {
				deadline := time.Now().Add(abortLinger)
				for _, lc := range lingers {
					lc.aborted(deadline)
				}
			}
		}
	}

	setPhase(conns, "setup")
	opt.phase(PhaseSetup)
	t0 = time.Now()
	be, err := opt.NewBackend(ctx, conn, conns[1:], party, r)
	if err != nil {
		err = fmt.Errorf("backend %s set-up: %w", opt.backend(), err)
		abort(err)
		rep.SetupMS = ms(time.Since(t0))
		rep.Setup = trafficOf(phaseStats(conns, "setup"))
		rep.Total = rep.Handshake.add(trafficOf(totalStats(conns)))
		return fail(explain(err, party))
	}
	if c, ok := be.(io.Closer); ok {
		defer c.Close()
	}
	rep.SetupMS = ms(time.Since(t0))
	rep.Setup = trafficOf(phaseStats(conns, "setup"))

	rec := newRecorder(be, conns, p, opt.Progress, count)
	rec.onStart = opt.Running
	m, err := vm.New(p, rec.backend())
	if err != nil {
		abort(err)
		return fail(err)
	}
	m.Observe = rec.observe
	t0 = time.Now()
	for k := range count {
		if ctx.Err() != nil {
			// Cancelled between two inferences (a result handler may cancel at once): the
			// finished ones are kept, the rest not started.
			err = context.Cause(ctx)
			break
		}
		clock.next(k)
		inputs := serverInputs
		if party == 1 {
			inputs = batch[k]
		}
		hooks, _ := be.(InferenceHooks)
		if hooks != nil {
			if err = hooks.BeginInference(ctx, k, count); err != nil {
				err = fmt.Errorf("inference %d of %d: %w", k+1, count, err)
				break
			}
		}
		before, start := totalStats(conns), time.Now()
		rec.start(k)
		var outs []vm.Output
		outs, err = m.Run(ctx, inputs)
		if err == nil && hooks != nil {
			err = hooks.EndInference(k)
		}
		if count > 1 {
			rep.Each = append(rep.Each, Inference{Index: k, MS: ms(time.Since(start)), Traffic: trafficOf(totalStats(conns).Sub(before))})
		}
		if err != nil {
			if count > 1 {
				err = fmt.Errorf("inference %d of %d: %w", k+1, count, err)
			}
			break
		}
		res.Batch = append(res.Batch, outs)
		if party == 1 && opt.OnResult != nil {
			if err = opt.OnResult(k, outs); err != nil {
				err = fmt.Errorf("inference %d of %d: %w", k+1, count, err)
				break
			}
		}
	}
	if err == nil {
		err = finish(ctx, conn, party)
	}
	rep.RunMS = ms(time.Since(t0))
	rep.Layers = rec.result()
	rep.Total = rep.Handshake.add(trafficOf(totalStats(conns)))
	if h, ok := be.(HelperBackend); ok {
		rep.Helper = threeParty(h, rep, party)
	}
	if f, ok := be.(FHEAccounter); ok {
		rep.FHE = f.FHEAccount()
	}
	if o, ok := be.(OfflineAccounter); ok {
		rep.Offline = offlineOf(o.OfflineAccount(), rep)
	}
	if err != nil {
		if done := len(res.Batch); done < count {
			// The report counts what finished, and says what was asked.
			rep.Inferences, rep.Requested = done, count
			if ctx.Err() != nil && !errors.Is(context.Cause(ctx), ErrSessionTimeout) {
				rep.Interrupted = fmt.Sprintf("interrupted after %d of %d inferences", done, count)
				err = fmt.Errorf("%s: %w", rep.Interrupted, err)
			}
		}
		abort(err)
		return fail(explain(err, party))
	}
	rep.TotalMS = ms(time.Since(rep.Started))
	rep.summarise()
	res.Outputs = res.Batch[0]
	return res, nil
}

// setPhase starts the accounting phase label on every stream.
func setPhase(conns []*transport.Conn, label string) {
	for _, c := range conns {
		c.SetPhase(label)
	}
}

// phaseStats sums a phase's traffic over the streams.
func phaseStats(conns []*transport.Conn, label string) transport.Stats {
	var s transport.Stats
	for _, c := range conns {
		s = s.Add(c.PhaseStats(label))
	}
	return s
}

// totalStats sums the traffic of the streams.
func totalStats(conns []*transport.Conn) transport.Stats {
	var s transport.Stats
	for _, c := range conns {
		s = s.Add(c.Stats())
	}
	return s
}

// finish ends a session cleanly: the client acknowledges that it has run the whole program, and
// the server waits for that acknowledgement, so that neither side closes while the other still
// reads, and the server knows the client got its outputs.
func finish(ctx context.Context, conn *transport.Conn, party int) error {
	conn.SetPhase("finish")
	if party == 1 {
		if err := conn.Send(ctx, []byte(doneMessage)); err != nil {
			return err
		}
		return conn.Flush(ctx)
	}
	var b [len(doneMessage)]byte
	if err := conn.Recv(ctx, b[:]); err != nil {
		return fmt.Errorf("waiting for the client's acknowledgement: %w", err)
	}
	if string(b[:]) != doneMessage {
		return fmt.Errorf("the client's acknowledgement is %q, want %q", b[:], doneMessage)
	}
	return nil
}

const doneMessage = "done"

// helperAbort finds a dealer.HelperError in a peer's abort reason.
var helperAbort = regexp.MustCompile(`(the helper(?: at [^ ]+)?): `)

// explain adds a hint naming the peer to transport errors.
func explain(err error, party int) error {
	peer := RoleName(1 - party)
	var ae *transport.AbortError
	var he *dealer.HelperError
	cause := err
	if errors.As(err, &he) {
		// The link to the helper failed (sci3), not the session with the peer.
		peer, cause = "helper", he.Err
		if he.Where != "" {
			peer += " at " + he.Where
		}
	}
	switch {
	case he == nil && errors.As(cause, &ae) && helperAbort.MatchString(ae.Reason):
		// The peer lost its link to the helper (sci3) and aborted the session.
		return fmt.Errorf("the %s lost its link to %s: %s", peer, helperAbort.FindStringSubmatch(ae.Reason)[1], ae.Reason)
	case errors.As(cause, &ae):
		return fmt.Errorf("the %s ended the session: %s", peer, ae.Reason)
	case errors.Is(cause, transport.ErrPeerClosed), errors.Is(cause, syscall.ECONNRESET), errors.Is(cause, syscall.EPIPE):
		return fmt.Errorf("the %s disconnected: %w", peer, err)
	case errors.Is(cause, transport.ErrTimeout):
		return fmt.Errorf("the %s stalled: %w", peer, err)
	case he != nil:
		return fmt.Errorf("the %s failed: %w", peer, err)
	}
	return err
}
