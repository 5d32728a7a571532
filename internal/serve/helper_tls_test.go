package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// helperFile is a program as the helper needs it: its ID only.
func helperFile() *sciir.File {
	f := &sciir.File{}
	for i := range f.ID {
		f.ID[i] = byte(i)
	}
	return f
}

// startTLSHelper serves a helper with conf on loopback until the test ends.
func startTLSHelper(t *testing.T, f *sciir.File, conf *tls.Config, log *testenv.SyncBuffer) string {
	t.Helper()
	ln := testenv.ListenLoopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = ServeHelper(ctx, ln, &HelperOptions{File: f, Backend: "sci3", TLS: conf, Timeout: 5 * time.Second, Log: logger(log)})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// dialBoth dials the helper as both data parties of one session and ends their links.
func dialBoth(t *testing.T, f *sciir.File, d HelperDial) [2]error {
	t.Helper()
	tok, err := NewHelperToken()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs [2]error
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var link *dealer.Link
			link, errs[p] = DialHelper(ctx, d, p, f, "sci3", tok, transport.Options{Timeout: 5 * time.Second})
			if errs[p] == nil {
				errs[p] = link.Done(ctx)
				link.Conn().Close()
			}
		}()
	}
	wg.Wait()
	return errs
}

// TestHelperTLSPinned: a helper serving TLS with a self-made key (--tls-self) is accepted by
// data parties that pin its key, and by ones that trust its certificate as a CA.
func TestHelperTLSPinned(t *testing.T) {
	f := helperFile()
	conf, fp, _, err := LoadOrCreateServerKey(filepath.Join(t.TempDir(), "helper.pem"))
	if err != nil {
		t.Fatal(err)
	}
	var log testenv.SyncBuffer
	addr := startTLSHelper(t, f, conf, &log)
	pinned, err := PinnedClientTLS(fp)
	if err != nil {
		t.Fatal(err)
	}
	if errs := dialBoth(t, f, HelperDial{Addr: addr, TLS: pinned}); errs[0] != nil || errs[1] != nil {
		t.Fatalf("pinned helper: party 0: %v; party 1: %v", errs[0], errs[1])
	}
	srv, ca := tlsPair(t)
	addr = startTLSHelper(t, f, srv, &log)
	if errs := dialBoth(t, f, HelperDial{Addr: addr, TLS: ca}); errs[0] != nil || errs[1] != nil {
		t.Fatalf("CA-verified helper: party 0: %v; party 1: %v", errs[0], errs[1])
	}
	// A data party without TLS is not served by a TLS helper, and the helper says why.
	if errs := dialBoth(t, f, HelperDial{Addr: addr, Insecure: true}); errs[0] == nil || errs[1] == nil {
		t.Fatalf("plaintext data parties at a TLS helper: %v", errs)
	}
	waitFor(t, "the helper's log of the plaintext data party", func() bool { return strings.Contains(log.String(), "a data party without TLS?") })
}

// TestHelperTLSWrongPinSendsNothing: a data party that pins another key aborts the TLS
// handshake: the helper's end reads not one byte of the hello, let alone the pairwise seed.
func TestHelperTLSWrongPinSendsNothing(t *testing.T) {
	conf, _, _, err := LoadOrCreateServerKey(filepath.Join(t.TempDir(), "helper.pem"))
	if err != nil {
		t.Fatal(err)
	}
	_, other, _, err := LoadOrCreateServerKey(filepath.Join(t.TempDir(), "other.pem"))
	if err != nil {
		t.Fatal(err)
	}
	ln := testenv.ListenLoopback(t)
	var got atomic.Int64
	served := make(chan struct{})
	go func() {
		defer close(served)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		_ = nc.SetDeadline(time.Now().Add(5 * time.Second))
		tc := tls.Server(nc, conf)
		if tc.Handshake() != nil {
			return
		}
		n, _ := io.Copy(io.Discard, tc)
		got.Store(n)
	}()
	pinned, err := PinnedClientTLS(other)
	if err != nil {
		t.Fatal(err)
	}
	tok, _ := NewHelperToken()
	_, err = DialHelper(context.Background(), HelperDial{Addr: ln.Addr().String(), TLS: pinned}, 0, helperFile(), "sci3", tok, transport.Options{Timeout: 5 * time.Second})
	var he *dealer.HelperError
	if !errors.As(err, &he) || !strings.Contains(err.Error(), "TLS pin") || !strings.HasPrefix(err.Error(), "the helper at "+ln.Addr().String()+": ") {
		t.Fatalf("wrong pin: %v", err)
	}
	<-served
	if got.Load() != 0 {
		t.Fatalf("the helper received %d bytes from a data party that refused its key", got.Load())
	}
}

// TestHelperPlaintextRefused: without TLS and without Insecure, DialHelper refuses before it
// connects; with Insecure it runs in plaintext (a helper without TLS).
func TestHelperPlaintextRefused(t *testing.T) {
	ln := testenv.ListenLoopback(t)
	var accepted atomic.Int64
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			nc.Close()
		}
	}()
	tok, _ := NewHelperToken()
	_, err := DialHelper(context.Background(), HelperDial{Addr: ln.Addr().String()}, 1, helperFile(), "sci3", tok, transport.Options{Timeout: time.Second})
	if !errors.Is(err, ErrHelperPlaintext) || !strings.Contains(err.Error(), "--helper-insecure") {
		t.Fatalf("plaintext without Insecure: %v", err)
	}
	time.Sleep(50 * time.Millisecond)
	if n := accepted.Load(); n != 0 {
		t.Fatalf("DialHelper connected %d times before refusing", n)
	}
	f := helperFile()
	var log testenv.SyncBuffer
	addr := startTLSHelper(t, f, nil, &log)
	if errs := dialBoth(t, f, HelperDial{Addr: addr, Insecure: true}); errs[0] != nil || errs[1] != nil {
		t.Fatalf("--helper-insecure: party 0: %v; party 1: %v", errs[0], errs[1])
	}
	// A data party that wants TLS from a plaintext helper is told so.
	_, ca := tlsPair(t)
	errs := dialBoth(t, f, HelperDial{Addr: addr, TLS: ca})
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "the helper at "+addr) {
		t.Fatalf("TLS data party at a plaintext helper: %v", errs)
	}
	t.Logf("TLS data party at a plaintext helper: %v", errs[0])
}

// TestHelperStopsAtOnce: cancelling the helper (scirun's first signal) ends ServeHelper at
// once, also with a session whose data parties are idle, and they learn that the helper stopped.
func TestHelperStopsAtOnce(t *testing.T) {
	f := helperFile()
	ln := testenv.ListenLoopback(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ServeHelper(ctx, ln, &HelperOptions{File: f, Backend: "sci3", Timeout: time.Minute})
	}()
	tok, _ := NewHelperToken()
	var links [2]*dealer.Link
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			links[p], err = DialHelper(context.Background(), HelperDial{Addr: ln.Addr().String(), Insecure: true}, p, f, "sci3", tok, transport.Options{Timeout: time.Minute})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		cancel()
		return
	}
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the helper still runs 5 s after its context ended")
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("the helper took %v to stop", d)
	}
	// What a waiting data party receives: the helper's abort, which says it stopped.
	var b [8]byte
	err := links[0].Conn().Recv(context.Background(), b[:])
	var ae *transport.AbortError
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "the helper was stopped") {
		t.Fatalf("a data party waiting on a stopped helper: %v", err)
	}
}

// TestExplainNamesTheHelper: a failure of the link to the helper is reported as the helper's,
// with its address, not as the peer's.
func TestExplainNamesTheHelper(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{&dealer.HelperError{Where: "h:7301", Err: transport.ErrPeerClosed}, "the helper at h:7301 disconnected: "},
		{fmt.Errorf("vm: x: %w", &dealer.HelperError{Where: "h:7301", Err: transport.ErrTimeout}), "the helper at h:7301 stalled: vm: x: "},
		{&dealer.HelperError{Where: "h:7301", Err: &transport.AbortError{Reason: "helper: stopped"}}, "the helper at h:7301 ended the session: helper: stopped"},
		{&dealer.HelperError{Err: errors.New("odd")}, "the helper failed: "},
		{&transport.AbortError{Reason: "sci3: conv: " + (&dealer.HelperError{Where: "h:7301", Err: transport.ErrPeerClosed}).Error()}, "the client lost its link to the helper at h:7301: "},
		{transport.ErrPeerClosed, "the client disconnected: "},
	} {
		if got := explain(c.err, 0).Error(); !strings.HasPrefix(got, c.want) {
			t.Errorf("explain(%v) = %q, want the prefix %q", c.err, got, c.want)
		}
	}
}
