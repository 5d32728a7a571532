package serve

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/serve/servetest"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// clientCA makes a CA (written to dir/ca.pem) and a client certificate it signed.
func clientCA(t *testing.T, dir string) (caFile string, signed tls.Certificate) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test client CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "client"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile = filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return caFile, tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// withCert returns conf presenting cert.
func withCert(conf *tls.Config, cert *tls.Certificate) *tls.Config {
	conf = conf.Clone()
	if cert != nil {
		conf.Certificates = []tls.Certificate{*cert}
	}
	return conf
}

// Only allowed clients: a server with pinned client keys (or a client CA) refuses, in the TLS
// handshake and so before any hello or protocol byte, a client without a certificate and one
// whose key is not pinned (or not signed), logging why; a pinned (signed) client is served and
// both parties' reports carry the same session ID.
func TestOnlyAllowedClients(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	dir := t.TempDir()
	srvConf, fp, _, err := LoadOrCreateServerKey(filepath.Join(dir, "server.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pinned, pinnedFP, created, err := LoadOrCreateClientKey(filepath.Join(dir, "client.pem"))
	if err != nil || !created {
		t.Fatal(created, err)
	}
	other, _, _, err := LoadOrCreateClientKey(filepath.Join(dir, "other.pem"))
	if err != nil {
		t.Fatal(err)
	}
	caFile, signed := clientCA(t, dir)
	pinsFile := filepath.Join(dir, "pins")
	if err := os.WriteFile(pinsFile, []byte("# allowed clients\n"+pinnedFP+"  # alice\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, err := PinnedClientTLS(fp)
	if err != nil {
		t.Fatal(err)
	}
	in := input(t, full, 0)
	want := clearRun(t, full, in)
	for _, tc := range []struct {
		name   string
		ca     string
		pins   []string
		file   string
		cert   *tls.Certificate
		refuse string // "" for served
	}{
		{"pins: no certificate", "", []string{pinnedFP}, "", nil, "presented no certificate"},
		{"pins: another key", "", []string{pinnedFP}, "", &other, "is not pinned"},
		{"pins: pinned key", "", []string{pinnedFP}, "", &pinned, ""},
		{"pins file: pinned key", "", nil, pinsFile, &pinned, ""},
		{"pins file: another key", "", nil, pinsFile, &other, "is not pinned"},
		{"CA: self-made key", caFile, nil, "", &pinned, "not signed by the client CA"},
		{"CA: signed", caFile, nil, "", &signed, ""},
		{"CA and pins: signed but not pinned", caFile, []string{pinnedFP}, "", &signed, "is not pinned"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth, err := LoadClientAuth(tc.ca, tc.pins, tc.file)
			if err != nil {
				t.Fatal(err)
			}
			ts := startServer(t, &Server{Options: options(full), TLS: auth.Apply(srvConf)})
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			res, err := client(ctx, ts.addr, options(cfile), withCert(base, tc.cert), in)
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("allowed client refused: %v\n%s", err, ts.log.String())
				}
				checkOutputs(t, tc.name, res, want)
				if err := ts.stop(t); err != nil {
					t.Fatal(err)
				}
				if len(ts.reports) != 1 || res.Report.SessionID == "" || ts.reports[0].SessionID != res.Report.SessionID {
					t.Fatalf("session IDs: client %q, server reports %+v", res.Report.SessionID, ts.reports)
				}
				if !strings.Contains(ts.log.String(), "session_id="+res.Report.SessionID) || !strings.Contains(ts.log.String(), "identity="+pinnedFP) && tc.cert == &pinned {
					t.Errorf("the log does not name the session and the client:\n%s", ts.log.String())
				}
				return
			}
			if err == nil {
				t.Fatal("a client without an allowed certificate was served")
			}
			if !strings.Contains(err.Error(), "refused this client's TLS certificate") {
				t.Errorf("client error %q does not say that the server refused its certificate", err)
			}
			waitFor(t, "the refusal in the log", func() bool { return strings.Contains(ts.log.String(), tc.refuse) })
			if err := ts.stop(t); err != nil {
				t.Fatal(err)
			}
			// Refused in the TLS handshake: no session, so no hello, no base OT, no report.
			if len(ts.reports) != 0 || strings.Contains(ts.log.String(), "session started") {
				t.Fatalf("a refused client got a session:\n%s", ts.log.String())
			}
			if !strings.Contains(ts.log.String(), `msg="client refused"`) {
				t.Errorf("the refusal is not logged as such:\n%s", ts.log.String())
			}
		})
	}
}

// stalledClient completes the handshake and then sends nothing: its session waits for it.
func stalledClient(t *testing.T, addr string, f *Options) net.Conn {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := Handshake(context.Background(), nc, HelloFor(f.File, 1, f.backend(), "stalled"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	return nc
}

// Per-client limits: a client over --sessions-per-minute or --max-sessions-per-client is refused
// at the handshake with the reason, and logged.
func TestPerClientLimits(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	in := input(t, full, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	ts := startServer(t, &Server{Options: options(full), SessionsPerMinute: 2})
	for i := range 2 {
		if _, err := client(ctx, ts.addr, options(cfile), nil, in); err != nil {
			t.Fatalf("session %d: %v", i+1, err)
		}
	}
	_, err := client(ctx, ts.addr, options(cfile), nil, in)
	if err == nil || !strings.Contains(err.Error(), "rate limit: this client (127.0.0.1) started 2 sessions in the last minute, the server allows 2 per minute: try again in") {
		t.Fatalf("third session in a minute: %v", err)
	}
	waitFor(t, "the refusal in the log", func() bool { return strings.Contains(ts.log.String(), "client refused") })
	if err := ts.stop(t); err != nil {
		t.Fatal(err)
	}

	ts = startServer(t, &Server{Options: options(full), MaxSessionsPerClient: 1, MaxSessions: 4})
	nc := stalledClient(t, ts.addr, options(cfile))
	waitFor(t, "the stalled session", func() bool { return strings.Contains(ts.log.String(), "session started") })
	_, err = client(ctx, ts.addr, options(cfile), nil, in)
	if err == nil || !strings.Contains(err.Error(), "already has 1 sessions running or waiting, the server's limit per client") {
		t.Fatalf("a second session while one runs: %v", err)
	}
	nc.Close()
	waitFor(t, "the stalled session's end", func() bool { return strings.Contains(ts.log.String(), "session failed") })
	if _, err := client(ctx, ts.addr, options(cfile), nil, in); err != nil {
		t.Fatalf("after the first session ended: %v", err)
	}
	if err := ts.stop(t); err != nil {
		t.Fatal(err)
	}

	// The limiter forgets a client a minute after its last admission.
	l := newClientLimits(0, 1)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	if r, _ := l.admit("a"); r != "" {
		t.Fatal(r)
	}
	l.release("a")
	if r, _ := l.admit("a"); !strings.Contains(r, "try again in 1m0s") {
		t.Fatalf("second admission: %q", r)
	}
	now = now.Add(time.Minute)
	if r, _ := l.admit("a"); r != "" {
		t.Fatalf("a minute later: %q", r)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Metrics and probes: a scrape during a session shows it running; after sessions end the
// counters and histograms have them; /healthz is 200; /readyz is 200 while the server accepts
// and 503 once it drains. The drain then waits for the running session up to DrainTimeout and
// aborts it with the reason, and Serve returns nil.
func TestMetricsProbesAndDrain(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	in := input(t, full, 0)
	// The server's backend takes 1.5 s at its first call in sessions marked slow.
	var slow atomic.Bool
	sopt := options(full)
	sopt.NewBackend = servetest.Func(func(_ *transport.Conn, party, call int) error {
		if party == 0 && call == 1 && slow.Load() {
			time.Sleep(1500 * time.Millisecond)
		}
		return nil
	})
	m := NewMetrics()
	s := &Server{Options: sopt, Metrics: m, MaxSessions: 4, DrainTimeout: 3 * time.Second}
	ts := startServer(t, s)
	web := httptest.NewServer(m.Handler(s.Accepting))
	defer web.Close()
	waitFor(t, "readiness", s.Accepting)
	if code, body := get(t, web.URL+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d %s", code, body)
	}
	if code, body := get(t, web.URL+"/readyz"); code != 200 {
		t.Fatalf("/readyz while accepting: %d %s", code, body)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := client(ctx, ts.addr, options(cfile), nil, in); err != nil {
		t.Fatal(err)
	}
	nc := stalledClient(t, ts.addr, options(cfile))
	defer nc.Close()
	waitFor(t, "the stalled session", func() bool { return strings.Count(ts.log.String(), "session started") == 2 })
	wants := []string{"scirun_sessions_running 1", "scirun_sessions_started_total 2", "scirun_sessions_finished_total 1",
		"scirun_session_duration_seconds_count 1", `scirun_session_bytes_count{direction="sent"} 1`, "scirun_session_setup_duration_seconds_count 1",
		`scirun_layer_duration_seconds_count{op="conv"}`, "scirun_sessions_queued 0", "go_goroutines", "go_memstats_heap_alloc_bytes"}
	// The first session's client has its result before the server has booked the session as
	// finished (the server still closes the connections): scrape until the books show it, for a
	// bounded time, then report what is missing.
	var body string
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, body = get(t, web.URL+"/metrics")
		missing := 0
		for _, want := range wants {
			if !strings.Contains(body, want) {
				missing++
			}
		}
		if missing == 0 || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wants {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape during a session lacks %q", want)
		}
	}

	// A slow honest session runs when the drain starts: it finishes and its client gets its
	// result; the stalled one is aborted at the drain timeout.
	slow.Store(true)
	done := make(chan error, 1)
	go func() {
		_, err := client(ctx, ts.addr, options(cfile), nil, in)
		done <- err
	}()
	waitFor(t, "the slow session", func() bool { return strings.Count(ts.log.String(), "session started") == 3 })
	start := time.Now()
	close(ts.drain)
	waitFor(t, "not ready", func() bool { code, _ := get(t, web.URL+"/readyz"); return code == http.StatusServiceUnavailable })
	if code, _ := get(t, web.URL+"/healthz"); code != 200 {
		t.Errorf("/healthz while draining: %d", code)
	}
	if err := <-done; err != nil {
		t.Fatalf("the session running when the drain started: %v", err)
	}
	tc := transport.NewConn(nc, transport.Options{Timeout: 10 * time.Second})
	var ae *transport.AbortError
	err := func() error { // the backend's set-up message, then the abort
		for {
			if _, err := tc.RecvFrame(context.Background()); err != nil {
				return err
			}
		}
	}()
	if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "shutting down") {
		t.Errorf("the stalled client got %v, want an abort saying the server shuts down", err)
	}
	select {
	case err := <-ts.done:
		if err != nil {
			t.Fatalf("Serve after the drain timeout: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the drain timeout")
	}
	took := time.Since(start)
	if took < 2*time.Second || took > 6*time.Second {
		t.Errorf("the drain took %v, want about the drain timeout (3 s)", took)
	}
	_, body = get(t, web.URL+"/metrics")
	for _, want := range []string{"scirun_sessions_running 0", "scirun_sessions_finished_total 2", `scirun_sessions_failed_total{reason="shutdown"} 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("the scrape after the drain lacks %q:\n%s", want, grepLines(body, "scirun_sessions"))
		}
	}
	if !strings.Contains(ts.log.String(), "drain timeout passed") {
		t.Errorf("the log does not say the drain timed out:\n%s", ts.log.String())
	}
	ts.cancel()
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
