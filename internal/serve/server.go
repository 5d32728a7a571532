package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"time"
)

// Server runs party 0's end of sessions for the clients that connect to it.
type Server struct {
	// Options configures every session (shared read-only; each session has its own state).
	Options *Options
	// MaxSessions bounds the sessions running at once; 0 means runtime.NumCPU(). Further clients
	// wait in the listen backlog until a session ends.
	MaxSessions int
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
}

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

	acceptCtx, stopAccepting := context.WithCancel(ctx)
	defer stopAccepting()
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

	var (
		wg       sync.WaitGroup
		reportMu sync.Mutex
		running  = make(chan struct{}, limit)
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
		select {
		case running <- struct{}{}:
		case <-acceptCtx.Done():
			break accept
		}
		nc, err := ln.Accept()
		if err != nil {
			<-running
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
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-running }()
			s.session(ctx, sid, nc, onReport)
		}()
	}
	if n := len(running); n > 0 {
		log.Info("draining: waiting for running sessions", "sessions", n)
	}
	wg.Wait()
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

// session runs one client's session and logs its outcome.
func (s *Server) session(ctx context.Context, id int, nc net.Conn, onReport func(*Report)) {
	log := s.log().With("session", id, "client", nc.RemoteAddr().String())
	start := time.Now()
	nc, err := s.wrapTLS(ctx, nc)
	if err != nil {
		log.Warn("session failed", "err", err, "after", time.Since(start).Round(time.Millisecond))
		return
	}
	log.Info("session started")
	res, err := run(ctx, nc, 0, s.Options, nil, s.sessionTimeout())
	if res != nil {
		onReport(res.Report)
	}
	if err != nil {
		log.Warn("session failed", "err", err, "after", time.Since(start).Round(time.Millisecond))
		return
	}
	t := res.Report.Total
	log.Info("session done", "program", short(res.Report.ProgramID), "time", time.Since(start).Round(time.Millisecond),
		"sent", FormatBytes(t.BytesSent), "received", FormatBytes(t.BytesRecv), "rounds", t.Rounds)
}

// wrapTLS performs the server side of the TLS handshake when TLS is configured.
func (s *Server) wrapTLS(ctx context.Context, nc net.Conn) (net.Conn, error) {
	if s.TLS == nil {
		return nc, nil
	}
	tc := tls.Server(nc, s.TLS)
	hctx, cancel := context.WithTimeout(ctx, min(s.Options.timeout(), MaxHelloWait))
	defer cancel()
	if err := tc.HandshakeContext(hctx); err != nil {
		_ = nc.Close()
		var rh tls.RecordHeaderError
		if errors.As(err, &rh) {
			return nil, fmt.Errorf("TLS handshake: %w (a client without TLS? it needs --tls-ca)", err)
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
	nc, err = s.wrapTLS(ctx, nc)
	if err != nil {
		return nil, err
	}
	return run(ctx, nc, 0, s.Options, nil, s.sessionTimeout())
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
