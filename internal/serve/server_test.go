package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/serve/servetest"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// testServer starts Serve on a loopback listener and returns its address, its log, the drain
// channel, a hard-stop cancel, and a wait for Serve's result.
type testServer struct {
	addr   string
	log    *testenv.SyncBuffer
	drain  chan struct{}
	cancel context.CancelFunc
	done   chan error

	mu      sync.Mutex
	reports []*Report
}

func startServer(t *testing.T, s *Server) *testServer {
	t.Helper()
	ts := &testServer{log: &testenv.SyncBuffer{}, drain: make(chan struct{}), done: make(chan error, 1)}
	s.Log = logger(ts.log)
	s.Drain = ts.drain
	s.OnReport = func(r *Report) {
		ts.mu.Lock()
		ts.reports = append(ts.reports, r)
		ts.mu.Unlock()
	}
	ln := testenv.ListenLoopback(t)
	ts.addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	ts.cancel = cancel
	go func() { ts.done <- s.Serve(ctx, ln) }()
	return ts
}

// stop drains the server and returns Serve's result.
func (ts *testServer) stop(t *testing.T) error {
	t.Helper()
	close(ts.drain)
	select {
	case err := <-ts.done:
		ts.cancel()
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after drain")
	}
	return nil
}

// client runs one client session against addr.
func client(ctx context.Context, addr string, opt *Options, tlsConf *tls.Config, in []ring.Tensor) (*Result, error) {
	nc, err := Dial(ctx, addr, tlsConf, 2*time.Second)
	if err != nil {
		return nil, err
	}
	return Run(ctx, nc, 1, opt, in)
}

func TestServeConcurrentSequentialAndFaults(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	base := countGoroutines()
	ts := startServer(t, &Server{Options: options(full), MaxSessions: 3})
	// A second server drops stalled clients quickly (a short timeout on the first one could
	// fail healthy sessions on a loaded machine).
	sopt := options(full)
	sopt.Timeout = 300 * time.Millisecond
	quick := startServer(t, &Server{Options: sopt})

	want := make([][][]uint64, 8)
	inputs := make([][]ring.Tensor, 8)
	for i := range want {
		inputs[i] = input(t, full, i)
		want[i] = clearRun(t, full, inputs[i])
	}
	ctx := context.Background()

	// Three clients at once, then three in sequence.
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := client(ctx, ts.addr, options(cfile), nil, inputs[i])
			if err == nil {
				for j, o := range res.Outputs {
					if !o.Revealed || !equal(o.Value.Data, want[i][j]) {
						err = errors.New("output differs from the clear run")
					}
				}
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent client %d: %v", i, err)
		}
	}
	for i := 3; i < 6; i++ {
		res, err := client(ctx, ts.addr, options(cfile), nil, inputs[i])
		if err != nil {
			t.Fatalf("sequential client %d: %v", i, err)
		}
		checkOutputs(t, "sequential client", res, want[i])
	}

	// A client killed mid-run (its socket closes, as when the process dies).
	killed := options(cfile)
	killed.NewBackend = servetest.Func(func(conn *transport.Conn, _, call int) error {
		if call == 6 {
			conn.Close()
			return errors.New("killed")
		}
		return nil
	})
	if _, err := client(ctx, ts.addr, killed, nil, inputs[0]); err == nil {
		t.Fatal("killed client succeeded")
	}
	waitFor(t, "the killed client's log line", func() bool { return strings.Contains(ts.log.String(), "the client disconnected") })

	// A client speaking garbage, and one that connects and says nothing.
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n"))
	waitFor(t, "the garbage client's log line", func() bool { return strings.Contains(ts.log.String(), "not speaking the scirun protocol") })
	nc.Close()
	silent, err := net.Dial("tcp", quick.addr)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the silent client's log line", func() bool { return strings.Contains(quick.log.String(), "no answer within 300ms") })
	silent.Close()
	// A client that stalls after the handshake, in the middle of the program.
	stall := options(cfile)
	stall.NewBackend = servetest.Func(func(conn *transport.Conn, _, call int) error {
		if call == 3 {
			time.Sleep(time.Second)
		}
		return nil
	})
	if _, err := client(ctx, quick.addr, stall, nil, inputs[0]); err == nil {
		t.Error("stalled client succeeded")
	}
	waitFor(t, "the stalled client's log line", func() bool { return strings.Contains(quick.log.String(), "the client stalled") })
	if err := quick.stop(t); err != nil {
		t.Errorf("quick server: %v", err)
	}

	// The server still serves.
	res, err := client(ctx, ts.addr, options(cfile), nil, inputs[6])
	if err != nil {
		t.Fatalf("client after the faults: %v", err)
	}
	checkOutputs(t, "client after the faults", res, want[6])

	// Drain while a (slow) session runs: it completes, then Serve returns nil.
	slow := options(cfile)
	slow.NewBackend = servetest.Func(func(conn *transport.Conn, _, call int) error {
		if call == 2 {
			time.Sleep(200 * time.Millisecond)
		}
		return nil
	})
	slowDone := make(chan error, 1)
	go func() {
		res, err := client(ctx, ts.addr, slow, nil, inputs[7])
		if err == nil && !equal(res.Outputs[0].Value.Data, want[7][0]) {
			err = errors.New("output differs")
		}
		slowDone <- err
	}()
	waitFor(t, "the slow session", func() bool { return strings.Count(ts.log.String(), "session started") == 10 })
	if err := ts.stop(t); err != nil {
		t.Errorf("Serve after drain: %v", err)
	}
	if err := <-slowDone; err != nil {
		t.Errorf("session running during drain: %v", err)
	}
	if nc, err := Dial(ctx, ts.addr, nil, 100*time.Millisecond); err == nil {
		nc.Close()
		t.Error("the server accepts connections after the drain")
	}

	log := ts.log.String()
	if n := strings.Count(log, "session done"); n != 8 {
		t.Errorf("%d sessions done, want 8:\n%s", n, log)
	}
	if n := strings.Count(log, "session failed"); n != 2 {
		t.Errorf("%d sessions failed, want 2:\n%s", n, log)
	}
	if n := strings.Count(quick.log.String(), "session failed"); n != 2 {
		t.Errorf("quick server: %d sessions failed, want 2:\n%s", n, quick.log.String())
	}
	ts.mu.Lock()
	if len(ts.reports) != 10 {
		t.Errorf("%d reports, want 10", len(ts.reports))
	}
	ts.mu.Unlock()
	testenv.CheckNoLeaks(t, base)
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestServeMismatchAndHardStop(t *testing.T) {
	full, cfile, _, client8 := mnistSmall(t)
	base := countGoroutines()
	ts := startServer(t, &Server{Options: options(full)})
	in := input(t, full, 0)
	_, err := client(context.Background(), ts.addr, options(client8), nil, in)
	want := "client runs program " + client8.IDString()[:8] + "…, server runs " + full.IDString()[:8] + "…"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("mismatched client: %v", err)
	}
	waitFor(t, "the server's refusal", func() bool { return strings.Contains(ts.log.String(), want) })

	// A hard stop (ctx cancelled) ends a session that would otherwise wait for its timeout.
	stuck := options(full)
	stuck.Timeout = time.Minute
	ts2 := startServer(t, &Server{Options: stuck})
	nc, err := net.Dial("tcp", ts2.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// A client that completes the handshake and then stalls: its session waits for it.
	if _, _, _, err := Handshake(context.Background(), nc, HelloFor(cfile, 1, stuck.backend(), "test"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the session", func() bool { return strings.Contains(ts2.log.String(), "session started") })
	start := time.Now()
	ts2.cancel()
	select {
	case err := <-ts2.done:
		if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
			t.Errorf("hard stop: %v after %v", err, time.Since(start))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
	nc.Close()
	testenv.CheckNoLeaks(t, base)
}

func TestServeTLS(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	base := countGoroutines()
	stls, ctls := tlsPair(t)
	ts := startServer(t, &Server{Options: options(full), TLS: stls})
	in := input(t, full, 1)
	res, err := client(context.Background(), ts.addr, options(cfile), ctls, in)
	if err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, "TLS client", res, clearRun(t, full, in))
	if !res.Report.TLS {
		t.Error("report does not say TLS")
	}
	// A plaintext client to the TLS server.
	_, err = client(context.Background(), ts.addr, options(cfile), nil, in)
	if err == nil || !strings.Contains(err.Error(), "closed the connection (if the server uses TLS: pass --tls-pin with the fingerprint it printed at start") {
		t.Errorf("plaintext client: %v", err)
	}
	waitFor(t, "the TLS failure log", func() bool {
		return strings.Contains(ts.log.String(), "a client without TLS? it needs --tls-pin with the fingerprint printed at start (--tls-self) or --tls-ca")
	})
	// A client that trusts another CA.
	_, other := tlsPair(t)
	if _, err := client(context.Background(), ts.addr, options(cfile), other, in); err == nil || !strings.Contains(err.Error(), "is --tls-ca the certificate") {
		t.Errorf("wrong CA: %v", err)
	}
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
	// A TLS client to a plaintext server.
	plain := startServer(t, &Server{Options: options(full)})
	if _, err := client(context.Background(), plain.addr, options(cfile), ctls, in); err == nil || !strings.Contains(err.Error(), "the server does not use TLS? drop --tls-ca and --tls-pin") {
		t.Errorf("TLS client, plaintext server: %v", err)
	}
	waitFor(t, "the plaintext server's log", func() bool { return strings.Contains(plain.log.String(), "started a TLS handshake") })
	if err := plain.stop(t); err != nil {
		t.Error(err)
	}
	testenv.CheckNoLeaks(t, base)
}

func TestDialErrors(t *testing.T) {
	ln := testenv.ListenLoopback(t)
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	start := time.Now()
	// A window long enough that the first refusal arrives within it on a loaded machine (with
	// 300 ms, a first connect attempt that the scheduler delayed past the window read as "no
	// answer").
	_, err := Dial(context.Background(), addr, nil, 2*time.Second)
	if err == nil || !strings.Contains(err.Error(), "connection refused for 2s") || time.Since(start) > 6*time.Second {
		t.Errorf("refused: %v after %v", err, time.Since(start))
	}
	if _, err := Dial(context.Background(), "127.0.0.1", nil, time.Second); err == nil || !strings.Contains(err.Error(), "cannot reach the server at 127.0.0.1") {
		t.Errorf("no port: %v", err)
	}
	// The client may start first: a refused connection is retried until the server listens.
	ln2 := testenv.ListenLoopback(t)
	addr2 := ln2.Addr().String()
	ln2.Close()
	go func() {
		time.Sleep(100 * time.Millisecond)
		if l, err := net.Listen("tcp", addr2); err == nil {
			if c, err := l.Accept(); err == nil {
				c.Close()
			}
			l.Close()
		}
	}()
	nc, err := Dial(context.Background(), addr2, nil, 3*time.Second)
	if err != nil {
		t.Errorf("dial before listen: %v", err)
	} else {
		nc.Close()
	}
}

func TestServeRejectsClientCopy(t *testing.T) {
	_, cfile, _, _ := mnistSmall(t)
	s := &Server{Options: options(cfile)}
	if err := s.Serve(context.Background(), testenv.ListenLoopback(t)); err == nil || !strings.Contains(err.Error(), "no weights") {
		t.Errorf("Serve with the client copy: %v", err)
	}
}
