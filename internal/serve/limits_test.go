package serve

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

func TestFrameLimit(t *testing.T) {
	full, _, _, _ := mnistSmall(t)
	if got := frameLimit(full.Program); got != MaxFrame {
		t.Errorf("mnist-small: frame limit %d, want MaxFrame %d", got, MaxFrame)
	}
	// A revealed output larger than MaxFrame raises the limit to its packed size.
	big := &fixed.Program{Bits: 64, Tensors: []fixed.Tensor{{Shape: ir.Shape{3, 1 << 22}}}, Outputs: []fixed.IO{{Tensor: 0, Party: 1}}}
	if got, want := frameLimit(big), 3<<22*8; got != want {
		t.Errorf("big output: frame limit %d, want %d", got, want)
	}
}

// acceptedClient connects to the server at addr and completes the handshake as the client of
// program f, then returns the framed connection without running the program.
func acceptedClient(t *testing.T, addr string, opt *Options) *transport.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Handshake(context.Background(), nc, HelloFor(opt.File, 1, opt.backend(), "test"), 5*time.Second); err != nil {
		nc.Close()
		t.Fatal(err)
	}
	c := transport.NewConn(nc, transport.Options{Timeout: 10 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// A client that passes the handshake and then stalls is ended by the session limit, long before
// the per-message timeout, and is told why.
func TestSessionTimeout(t *testing.T) {
	full, client, _, _ := mnistSmall(t)
	opt := options(full)
	opt.Timeout = 30 * time.Second
	opt.SessionTimeout = 300 * time.Millisecond
	ts := startServer(t, &Server{Options: opt})
	start := time.Now()
	c := acceptedClient(t, ts.addr, options(client))

	// Read what the server sends (its backend set-up) until the session ends.
	var err error
	for err == nil {
		_, err = c.RecvFrame(context.Background())
	}
	var ae *transport.AbortError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "time limit") {
		t.Fatalf("stalled client: got %v, want an abort naming the time limit", err)
	}
	r := ts.report(t)
	if !strings.Contains(r.Error, ErrSessionTimeout.Error()) {
		t.Errorf("server report error %q, want %q", r.Error, ErrSessionTimeout)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the session ended after %v with a 300ms limit", d)
	}
	waitFor(t, "the failure log", func() bool { return strings.Contains(ts.log.String(), "time limit") })
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
}

func TestServerSessionTimeoutDefault(t *testing.T) {
	for _, c := range []struct{ set, want time.Duration }{
		{0, DefaultSessionTimeout}, {-1, 0}, {time.Second, time.Second},
	} {
		s := &Server{Options: &Options{SessionTimeout: c.set}}
		if got := s.sessionTimeout(); got != c.want {
			t.Errorf("SessionTimeout %v: server uses %v, want %v", c.set, got, c.want)
		}
	}
}

// A client that announces a frame over the limit right after the handshake ends its session at
// once with a frame-size error.
func TestServerRejectsHugeFrame(t *testing.T) {
	full, client, _, _ := mnistSmall(t)
	opt := options(full)
	opt.Timeout = 30 * time.Second
	ts := startServer(t, &Server{Options: opt})
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, _, _, err := Handshake(context.Background(), nc, HelloFor(client, 1, opt.backend(), "test"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	var h [4]byte
	binary.LittleEndian.PutUint32(h[:], MaxFrame+1)
	if _, err := nc.Write(h[:]); err != nil {
		t.Fatal(err)
	}
	if r := ts.report(t); !strings.Contains(r.Error, "over the") || !strings.Contains(r.Error, "limit") {
		t.Errorf("server report error %q, want a frame-limit error", r.Error)
	}
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
}

// report waits for the server's first session report.
func (ts *testServer) report(t *testing.T) *Report {
	t.Helper()
	var r *Report
	waitFor(t, "a session report", func() bool {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		if len(ts.reports) > 0 {
			r = ts.reports[0]
		}
		return r != nil
	})
	return r
}
