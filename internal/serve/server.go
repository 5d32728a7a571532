package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Server runs party 0's end of sessions for the clients that connect to it.
type Server struct {
	// Options configures every session (shared read-only; each session has its own state).
	Options *Options
	// MaxSessions bounds the sessions running at once; 0 means runtime.NumCPU(). Up to
	// 4·MaxSessions further clients wait for a free slot, each at most Options.QueueTimeout;
	// beyond that a client is refused at the handshake as busy. Only a client whose whole hello
	// has arrived (within Options.HelloTimeout) and matches the server's takes a slot or a
	// place in the queue. (Connections are accepted at once so that the stream connections of
	// running sessions are never stuck behind waiting clients.)
	MaxSessions int
	// MaxPending bounds the accepted connections that are not yet part of a session (awaiting
	// their TLS handshake, hello or stream join, each for at most Options.HelloTimeout); 0
	// means DefaultMaxPending. When one more arrives the oldest is dropped, so connections
	// that never speak cannot keep a newer client from being served.
	MaxPending int
	// TLS, when set, makes every connection a TLS server connection with this configuration.
	TLS *tls.Config
	// Log receives one line when a session starts and one when it ends (nil: no logging).
	Log *slog.Logger
	// Drain, when closed, makes Serve stop accepting clients, wait for the running sessions and
	// return nil (e.g. on the first SIGINT).
	Drain <-chan struct{}
	// OnReport, when set, gets the report of every session that got past the TLS handshake,
	// failed or not. Calls are serialised.
	OnReport func(*Report)
	// DrainTimeout bounds the wait for the running sessions after Drain is closed: the sessions
	// still running then are aborted (their clients are told the server is shutting down) and
	// Serve returns nil. Zero means no bound.
	DrainTimeout time.Duration
	// MaxSessionsPerClient bounds the sessions one client (ClientIdentity: its TLS key, else its
	// IP address) may have running or waiting for a slot at once; SessionsPerMinute bounds the
	// sessions it may start in any minute. A client over either is refused at the handshake with
	// the reason. Zero means no limit.
	MaxSessionsPerClient, SessionsPerMinute int
	// Metrics, when set, records the server's metrics (NewMetrics).
	Metrics *Metrics

	accepting atomic.Bool
}

// ErrShutdown is the cause of the sessions aborted when the drain timeout passes.
var ErrShutdown = errors.New("the server is shutting down (its drain timeout passed)")

// Accepting reports whether Serve accepts new sessions: true from its start until it drains or
// stops (the readiness probe).
func (s *Server) Accepting() bool { return s.accepting.Load() }

func (s *Server) log() *slog.Logger {
	if s.Log != nil {
		return s.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Serve accepts clients on ln and runs a session for each, up to MaxSessions at a time, until
// Drain is closed or ctx is done; then it closes ln and waits for the running sessions. A
// session that fails (the client disconnects, stalls past the timeout, sends garbage or runs
// another program) ends alone and is logged. Cancelling ctx also cancels the running sessions
// (a hard stop); Serve then returns ctx's error after they have ended. Serve returns an error
// at once only when the options cannot serve, and after draining when accepting fails for good.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer ln.Close()
	if err := s.Options.Check(0); err != nil {
		return err
	}
	limit := s.MaxSessions
	if limit <= 0 {
		limit = runtime.NumCPU()
	}
	log := s.log()

	// Sessions run under sessCtx: cancelled with ctx (a hard stop), or with ErrShutdown when the
	// drain timeout passes.
	sessCtx, abortSessions := context.WithCancelCause(ctx)
	defer abortSessions(nil)
	acceptCtx, stopAccepting := context.WithCancel(ctx)
	defer stopAccepting()
	s.accepting.Store(true)
	defer s.accepting.Store(false)
	context.AfterFunc(acceptCtx, func() { s.accepting.Store(false) })
	if s.Drain != nil {
		go func() {
			select {
			case <-s.Drain:
				stopAccepting()
			case <-acceptCtx.Done():
			}
		}()
	}
	unblock := context.AfterFunc(acceptCtx, func() { _ = ln.Close() })
	defer unblock()

	maxPending := s.MaxPending
	if maxPending <= 0 {
		maxPending = DefaultMaxPending
	}
	st := &serveState{
		reg:     newRegistry(),
		pending: newPendingSet(maxPending),
		limits:  newClientLimits(s.MaxSessionsPerClient, s.SessionsPerMinute),
		running: make(chan struct{}, limit),
		queued:  make(chan struct{}, waitingPerSlot*limit),
	}
	var (
		wg       sync.WaitGroup
		reportMu sync.Mutex
		id       int
		fatal    error
		backoff  time.Duration
	)
	onReport := func(r *Report) {
		if s.OnReport != nil {
			reportMu.Lock()
			defer reportMu.Unlock()
			s.OnReport(r)
		}
	}
accept:
	for {
		nc, err := ln.Accept()
		if err != nil {
			if acceptCtx.Err() != nil {
				break accept
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				log.Warn("accept failed; retrying", "err", err, "in", backoff)
				select {
				case <-time.After(backoff):
				case <-acceptCtx.Done():
				}
				continue
			}
			fatal = fmt.Errorf("accept: %w", err)
			break accept
		}
		backoff = 0
		id++
		sid := id
		pc := st.pending.add(nc)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.handle(sessCtx, acceptCtx, sid, pc, st, onReport)
		}()
	}
	running := st.running
	if n := len(running); n > 0 {
		log.Info("draining: waiting for running sessions", "sessions", n, "drain_timeout", s.DrainTimeout)
	}
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	var expired <-chan time.Time
	if s.DrainTimeout > 0 && ctx.Err() == nil && fatal == nil {
		t := time.NewTimer(s.DrainTimeout)
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-finished:
	case <-expired:
		log.Warn("drain timeout passed: aborting the sessions still running", "sessions", len(running), "drain_timeout", s.DrainTimeout)
		abortSessions(ErrShutdown)
		<-finished
	}
	if fatal != nil {
		return fatal
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return nil
}

// isTemporary reports accept errors worth retrying (too many open files, aborted handshakes).
func isTemporary(err error) bool {
	var t interface{ Temporary() bool }
	return errors.As(err, &t) && t.Temporary()
}

// waitingPerSlot is how many clients per session slot may wait for a free slot; further clients
// are refused as busy.
const waitingPerSlot = 4

// serveState is shared by the connections of one Serve call.
type serveState struct {
	reg     *registry
	pending *pendingSet   // connections accepted and not yet part of a session
	running chan struct{} // sessions running
	queued  chan struct{} // clients waiting for a session slot
	limits  *clientLimits
}

// handle classifies an accepted connection: a stream connection joins its session; a client
// whose hello matches the server's waits for a session slot (or is refused when too many wait
// or the wait times out) and runs it; a client whose hello does not match is answered at once,
// without a slot. Connections that do not complete their hello in time, or are dropped as the
// oldest pending one, are closed and logged.
func (s *Server) handle(ctx, acceptCtx context.Context, id int, pc *pendingConn, st *serveState, onReport func(*Report)) {
	nc := pc.nc
	log := s.log().With("session", id, "client", nc.RemoteAddr().String())
	start := time.Now()
	hc, peer, err := s.classify(ctx, nc, st.reg, start.Add(s.Options.helloTimeout()))
	if st.pending.done(pc) {
		if hc != nil {
			_ = hc.Close()
		}
		log.Warn("connection dropped", "why", fmt.Sprintf(
			"%d connections were awaiting their hello (the server's limit); this was the oldest", st.pending.max),
			"after", time.Since(start).Round(time.Millisecond))
		return
	}
	if err != nil {
		var refused *ClientRefusedError
		if errors.As(err, &refused) {
			s.Metrics.clientRefused("tls_client")
			log.Warn("client refused", "why", refused.Reason, "after", time.Since(start).Round(time.Millisecond))
			return
		}
		s.Metrics.clientRefused("before_hello")
		log.Warn("session failed", "stage", "before the hello", "err", err, "after", time.Since(start).Round(time.Millisecond))
		return
	}
	if hc == nil {
		log.Debug("stream connection joined its session")
		return
	}
	if !s.acceptable(peer) {
		// The handshake refuses it (or reports the garbage) at once: the hello is buffered.
		s.session(ctx, log, start, hc, st.reg, onReport)
		return
	}
	// A hello alone takes no slot: the client must answer the server's hello with its verdict
	// first, as an honest client does at once.
	if err := s.awaitVerdict(ctx, hc.(*prefixConn), st.pending, pc); err != nil {
		_ = hc.Close()
		log.Warn("session failed", "stage", "before the client's verdict", "err", err, "after", time.Since(start).Round(time.Millisecond))
		return
	}
	ident := ClientIdentity(hc)
	log = log.With("identity", ident)
	if reason, kind := st.limits.admit(ident); reason != "" {
		s.refuse(ctx, hc, reason)
		s.Metrics.clientRefused(kind)
		log.Warn("client refused", "why", reason)
		return
	}
	defer st.limits.release(ident)
	reason, stopped, gone := s.waitForSlot(acceptCtx, st, hc.(*prefixConn))
	switch {
	case gone != nil:
		_ = hc.Close()
		s.Metrics.clientRefused("left_queue")
		log.Info("client left while waiting for a session slot", "why", gone, "after", time.Since(start).Round(time.Millisecond))
		return
	case stopped:
		s.refuse(ctx, hc, "the server is shutting down: try again (another replica)")
		s.Metrics.clientRefused("shutdown")
		log.Info("refused a waiting client: the server stopped accepting sessions")
		return
	case reason != "":
		s.refuse(ctx, hc, reason)
		s.Metrics.clientRefused("busy")
		log.Warn("session refused", "err", reason, "after", time.Since(start).Round(time.Millisecond))
		return
	}
	defer func() { <-st.running }()
	s.session(ctx, log, start, hc, st.reg, onReport)
}

// refuse answers a client's hello with a refusal and closes the connection.
func (s *Server) refuse(ctx context.Context, nc net.Conn, reason string) {
	_, _, _, _ = handshake(ctx, nc, s.Options.hello(0, 0), s.Options.helloTimeout(), reason)
	_ = nc.Close()
}

// session runs one client's session and logs its outcome.
func (s *Server) session(ctx context.Context, log *slog.Logger, start time.Time, nc net.Conn, reg *registry, onReport func(*Report)) {
	tok, err := newToken()
	if err != nil {
		_ = nc.Close()
		log.Error("session failed", "err", err)
		return
	}
	log = log.With("session_id", tok.ID())
	log.Info("session started")
	s.Metrics.sessionStarted()
	res, err := run(ctx, nc, 0, s.Options, nil, s.sessionTimeout(), reg, tok)
	var rep *Report
	if res != nil {
		rep = res.Report
		onReport(res.Report)
	}
	s.Metrics.sessionEnded(rep, err)
	if err != nil {
		log.Warn("session failed", "err", err, "after", time.Since(start).Round(time.Millisecond))
		return
	}
	t := res.Report.Total
	log.Info("session done", "program", short(res.Report.ProgramID), "time", time.Since(start).Round(time.Millisecond),
		"sent", FormatBytes(t.BytesSent), "received", FormatBytes(t.BytesRecv), "rounds", t.Rounds, "inferences", res.Report.Inferences)
}

// wrapTLS performs the server side of the TLS handshake when TLS is configured, before
// deadline.
func (s *Server) wrapTLS(ctx context.Context, nc net.Conn, deadline time.Time) (net.Conn, error) {
	if s.TLS == nil {
		return nc, nil
	}
	tc := tls.Server(nc, s.TLS)
	hctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = nc.Close()
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
			return nil, fmt.Errorf("TLS handshake: not completed within %v of the connection", s.Options.helloTimeout())
		}
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) {
			return nil, fmt.Errorf("TLS handshake: %w (a client without TLS? it needs --tls-pin with the fingerprint printed at start (--tls-self) or --tls-ca)", err)
		}
		return nil, fmt.Errorf("TLS handshake: %w", err)
	}
	return tc, nil
}

// ServeOne accepts one client on ln (waiting until ctx is done), runs its session and returns
// its result. It closes ln.
func (s *Server) ServeOne(ctx context.Context, ln net.Listener) (*Result, error) {
	defer ln.Close()
	if err := s.Options.Check(0); err != nil {
		return nil, err
	}
	unblock := context.AfterFunc(ctx, func() { _ = ln.Close() })
	nc, err := ln.Accept()
	if !unblock() {
		if err == nil {
			_ = nc.Close()
		}
		return nil, fmt.Errorf("waiting for a client: %w", ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("accept: %w", err)
	}
	nc, err = s.wrapTLS(ctx, nc, time.Now().Add(s.Options.helloTimeout()))
	if err != nil {
		return nil, err
	}
	reg := newRegistry()
	if s.Options.streams() > 1 {
		// Accept the session's stream connections on ln while it runs; refuse other clients.
		sctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.acceptStreams(sctx, ln, reg, &wg)
		}()
		defer func() {
			cancel()
			_ = ln.Close()
			wg.Wait()
		}()
	}
	return run(ctx, nc, 0, s.Options, nil, s.sessionTimeout(), reg, Token{})
}

// acceptStreams accepts connections on ln until it is closed, delivering stream connections to
// their sessions through reg and refusing clients that want a session of their own.
func (s *Server) acceptStreams(ctx context.Context, ln net.Listener, reg *registry, wg *sync.WaitGroup) {
	wait := s.Options.helloTimeout()
	for {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			hc, _, err := s.classify(ctx, nc, reg, time.Now().Add(wait))
			if err != nil {
				s.log().Warn("connection refused", "client", nc.RemoteAddr().String(), "err", err)
			}
			if hc != nil {
				s.refuse(ctx, hc, "the server runs one session at a time and is busy: try again later")
			}
		}()
	}
}

// sessionTimeout is the bound on each session (0: none).
func (s *Server) sessionTimeout() time.Duration {
	switch d := s.Options.SessionTimeout; {
	case d == 0:
		return DefaultSessionTimeout
	case d < 0:
		return 0
	default:
		return d
	}
}
