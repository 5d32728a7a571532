package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// server runs scirun with args (plus --listen 127.0.0.1:0) in this process and returns its
// address, its stderr, the drain channel, and a channel with run's result.
type testServer struct {
	addr   string
	stderr *testenv.SyncBuffer
	drain  chan struct{}
	done   chan error
}

func startServer(t *testing.T, args ...string) *testServer {
	t.Helper()
	e, _, stderr := testEnv()
	drain := make(chan struct{})
	e.drain = drain
	addrc := make(chan string, 1)
	e.listening = func(a string) { addrc <- a }
	ts := &testServer{stderr: stderr, drain: drain, done: make(chan error, 1)}
	go func() {
		ts.done <- run(context.Background(), append(args, "--listen", "127.0.0.1:0"), e)
	}()
	select {
	case ts.addr = <-addrc:
	case err := <-ts.done:
		t.Fatalf("server: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("the server did not start")
	}
	return ts
}

// stop drains the server and returns run's result.
func (ts *testServer) stop(t *testing.T) error {
	t.Helper()
	close(ts.drain)
	select {
	case err := <-ts.done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not stop after drain")
	}
	return nil
}

func inputPath(data string, i int) string {
	return filepath.Join(data, "inputs", fmt.Sprintf("%05d.npy", i))
}

// clearRaw returns the clear run's raw output for input i.
func clearRaw(t *testing.T, full, data, dir string, i int) []int64 {
	t.Helper()
	out := filepath.Join(dir, fmt.Sprintf("clear%d.npy", i))
	if _, _, err := runArgs("--clear", full, "--input", inputPath(data, i), "--output", out, "--raw"); err != nil {
		t.Fatal(err)
	}
	return readInts(t, out)
}

// TestServeEndToEnd is the acceptance test of the server: real TCP on loopback, the SCI_OT
// backend, three clients at once and three in sequence, every output bitwise equal to the clear
// run; then a client process killed mid-run and a client speaking garbage, after which the server
// still serves correctly; then a drain, and no goroutine left behind.
func TestServeEndToEnd(t *testing.T) {
	full, client, data := program(t)
	dir := t.TempDir()
	want := make([][]int64, 8)
	for i := range want {
		want[i] = clearRaw(t, full, data, dir, i)
	}
	base := runtime.NumGoroutine()
	report := filepath.Join(dir, "sessions.jsonl")
	ts := startServer(t, "--party", "0", full, "--serve", "--max-sessions", "3", "--timeout", "20s", "--report", report, "--streams", "2")

	runClient := func(i int) error {
		out := filepath.Join(dir, fmt.Sprintf("secure%d-%d.npy", i, time.Now().UnixNano()))
		stdout, _, err := runArgs("--party", "1", client, "--connect", ts.addr, "--input", inputPath(data, i), "--output", out, "--raw", "--quiet", "--streams", "2")
		if err != nil {
			return err
		}
		if !strings.Contains(stdout, "top class") {
			return fmt.Errorf("client %d printed %q", i, stdout)
		}
		got := readInts(t, out)
		if !slices.Equal(got, want[i]) {
			return fmt.Errorf("client %d: secure output %v, clear %v", i, got, want[i])
		}
		return nil
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = runClient(i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent client %d: %v", i, err)
		}
	}
	for i := 3; i < 6; i++ {
		if err := runClient(i); err != nil {
			t.Fatalf("sequential client: %v", err)
		}
	}
	// The server logs a session as done once it has the client's acknowledgement, just after
	// the client returns.
	waitFor(t, "six sessions done", func() bool { return countLines(ts.stderr.String(), "session done") == 6 })

	// A client process killed in the middle of its session.
	cmd := exec.Command(binary, "--party", "1", client, "--connect", ts.addr, "--input", inputPath(data, 0), "--quiet")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the victim's session", func() bool { return countLines(ts.stderr.String(), "session started") == 7 })
	time.Sleep(80 * time.Millisecond) // past the handshake and (mostly) the OT set-up
	cmd.Process.Kill()
	cmd.Wait()
	waitFor(t, "the server to notice the killed client", func() bool { return countLines(ts.stderr.String(), "session failed") == 1 })
	// Normally the kill lands in the protocol ("the client disconnected"); on a loaded machine it
	// may land in the handshake ("the client closed the connection").
	if log := ts.stderr.String(); !strings.Contains(log, "the client disconnected") && !strings.Contains(log, "the client closed the connection") {
		t.Errorf("the log does not say the client went away:\n%s", log)
	}

	// A client speaking garbage.
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	nc.Write([]byte("\x00\x01garbage garbage garbage"))
	waitFor(t, "the garbage client's log line", func() bool { return countLines(ts.stderr.String(), "session failed") == 2 })
	nc.Close()
	if !strings.Contains(ts.stderr.String(), "not speaking the scirun protocol") {
		t.Errorf("log:\n%s", ts.stderr.String())
	}

	// A client that passes the handshake, then sends garbage instead of the OT protocol.
	cf, err := sciir.ReadFile(client)
	if err != nil {
		t.Fatal(err)
	}
	nc, err = net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	hello := serve.HelloFor(cf, 1, sci.Options{}.Describe(ring.Must(cf.Program.Bits)), "garbage test")
	hello.Streams = 2
	if _, _, _, err := serve.Handshake(context.Background(), nc, hello, 5*time.Second); err != nil {
		t.Fatalf("handshake of the garbage client: %v", err)
	}
	// Well-framed junk (a 4-byte length, then that many bytes): the OT session's hello rejects it
	// at once. (Unframed junk is read as a frame length; the session then ends when --timeout
	// passes without that frame arriving.)
	junk := []byte{64, 0, 0, 0}
	for i := range 64 {
		junk = append(junk, byte(i*7+3))
	}
	nc.Write(junk)
	waitFor(t, "the post-handshake garbage client's log line", func() bool { return countLines(ts.stderr.String(), "session failed") == 3 })
	nc.Close()

	// The server still serves, correctly.
	if err := runClient(6); err != nil {
		t.Fatalf("client after the faults: %v", err)
	}
	if err := ts.stop(t); err != nil {
		t.Fatalf("server after drain: %v", err)
	}

	// One JSON report per session.
	f, err := os.Open(report)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var reports []serve.Report
	for sc.Scan() {
		var r serve.Report
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("report line: %v", err)
		}
		reports = append(reports, r)
	}
	failed := 0
	for _, r := range reports {
		if r.Error != "" {
			failed++
		}
	}
	if len(reports) != 10 || failed != 3 {
		t.Errorf("%d reports (%d failed), want 10 (3 failed)", len(reports), failed)
	}
	testenv.CheckNoLeaks(t, base)
}

// TestMismatchedPrograms: client and server compiled with another scale, or from another model,
// are refused at the handshake with the same message on both sides.
func TestMismatchedPrograms(t *testing.T) {
	full, _, data := program(t)
	dir := t.TempDir()
	_, client8 := compileTo(t, filepath.Join(data, "model.onnx"), dir, "s8", 32, 8)
	cases := []struct{ name, client, want string }{
		{"scale", client8, "(different ring or scale: client Z_2^32 scale 8, server Z_2^32 scale 12)"},
	}
	mnist8 := filepath.Join(testenv.RepoRoot(t), "..", "shared", "testdata", "models", "mnist-8", "model.onnx")
	if _, err := os.Stat(mnist8); err == nil {
		_, other := compileTo(t, mnist8, dir, "mnist8", 32, 8)
		cases = append(cases, struct{ name, client, want string }{"model", other, "(compiled from different models: client from model.onnx"})
	} else {
		t.Logf("../shared/testdata absent, skipping the different-model case: %v", err)
	}
	fullFile, err := sciir.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		cf, err := sciir.ReadFile(c.client)
		if err != nil {
			t.Fatal(err)
		}
		msg := "client runs program " + cf.IDString()[:8] + "…, server runs " + fullFile.IDString()[:8] + "…"
		ts := startServer(t, "--party", "0", full, "--quiet")
		_, _, cerr := runArgs("--party", "1", c.client, "--connect", ts.addr, "--input", inputPath(data, 0))
		serr := <-ts.done
		for side, err := range map[string]error{"client": cerr, "server": serr} {
			if err == nil || !strings.Contains(err.Error(), msg) || !strings.Contains(err.Error(), c.want) ||
				!strings.Contains(err.Error(), "recompile or fetch the matching client file") {
				t.Errorf("%s, %s side: %v\nwant %q and %q", c.name, side, err, msg, c.want)
			}
		}
	}
}

func TestTLSEndToEnd(t *testing.T) {
	full, client, data := program(t)
	dir := t.TempDir()
	cert, key := testenv.SelfSigned(t, dir)
	want := clearRaw(t, full, data, dir, 2)
	ts := startServer(t, "--party", "0", full, "--serve", "--tls-cert", cert, "--tls-key", key)
	out := filepath.Join(dir, "tls.npy")
	if _, _, err := runArgs("--party", "1", client, "--connect", ts.addr, "--input", inputPath(data, 2), "--tls-ca", cert, "--output", out, "--raw"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(readInts(t, out), want) {
		t.Error("TLS run differs from the clear run")
	}
	_, _, err := runArgs("--party", "1", client, "--connect", ts.addr, "--input", inputPath(data, 2))
	if err == nil || !strings.Contains(err.Error(), "--tls-ca") {
		t.Errorf("plaintext client to a TLS server: %v", err)
	}
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
	if !strings.Contains(ts.stderr.String(), "TLS") {
		t.Errorf("server log: %s", ts.stderr.String())
	}
}

// TestSignals runs the real binary as a --serve server: it serves a client, and SIGINT makes it
// stop accepting, finish, and exit with status 0. A client interrupted mid-run stops at once.
func TestSignals(t *testing.T) {
	full, client, data := program(t)
	cmd := exec.Command(binary, "--party", "0", full, "--serve", "--listen", "127.0.0.1:0")
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	var addr string
	waitFor(t, "the server's address", func() bool {
		s := stderr.String()
		if i := strings.Index(s, "listening on "); i >= 0 && strings.Contains(s[i:], "\n") {
			addr = strings.TrimSpace(s[i+len("listening on ") : i+strings.Index(s[i:], "\n")])
			return true
		}
		return false
	})
	if _, _, err := runArgs("--party", "1", client, "--connect", addr, "--input", inputPath(data, 1), "--quiet"); err != nil {
		t.Fatal(err)
	}

	// A client interrupted in the middle (the first signal closes drain).
	e, _, _ := testEnv()
	drain := make(chan struct{})
	e.drain = drain
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"--party", "1", client, "--connect", addr, "--input", inputPath(data, 1), "--quiet"}, e)
	}()
	waitFor(t, "the second session", func() bool { return countLines(stderr.String(), "session started") == 2 })
	close(drain)
	select {
	case err := <-done:
		if err == nil || !strings.HasPrefix(err.Error(), "interrupted: ") || !strings.Contains(err.Error(), "context canceled") {
			t.Errorf("interrupted client: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the interrupted client did not stop")
	}
	waitFor(t, "the server to log the interrupted session", func() bool { return countLines(stderr.String(), "session failed") == 1 })

	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("server after SIGINT: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupt: draining: no new sessions, the running ones finish") {
		t.Errorf("server stderr: %s", stderr.String())
	}
}

// TestTLSPinEndToEnd: a server with --tls-self makes and keeps its key and prints the fingerprint;
// a client pinning it gets the bitwise result, a client pinning another key is refused.
func TestTLSPinEndToEnd(t *testing.T) {
	full, client, data := program(t)
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "server.pem")
	want := clearRaw(t, full, data, dir, 1)
	ts := startServer(t, "--party", "0", full, "--serve", "--tls-self", keyFile)
	var pin string
	waitFor(t, "the fingerprint", func() bool {
		_, after, ok := strings.Cut(ts.stderr.String(), "--tls-pin ")
		if ok {
			pin, _, _ = strings.Cut(after, "\n")
		}
		return ok
	})
	if !strings.Contains(ts.stderr.String(), "made and saved to") {
		t.Errorf("server log: %s", ts.stderr.String())
	}
	out := filepath.Join(dir, "pinned.npy")
	if _, _, err := runArgs("--party", "1", client, "--connect", ts.addr, "--input", inputPath(data, 1), "--tls-pin", pin, "--output", out, "--raw"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(readInts(t, out), want) {
		t.Error("pinned TLS run differs from the clear run")
	}
	wrong := "sha256:" + strings.Repeat("ab", 32)
	_, _, err := runArgs("--party", "1", client, "--connect", ts.addr, "--input", inputPath(data, 1), "--tls-pin", wrong)
	if err == nil || !strings.Contains(err.Error(), "not the pinned") {
		t.Errorf("wrong pin: %v", err)
	}
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
	// A second start keeps the key: the same pin.
	ts = startServer(t, "--party", "0", full, "--tls-self", keyFile)
	waitFor(t, "the fingerprint", func() bool { return strings.Contains(ts.stderr.String(), "--tls-pin "+pin) })
	if !strings.Contains(ts.stderr.String(), "kept in") {
		t.Errorf("second start: %s", ts.stderr.String())
	}
	if _, _, err := runArgs("--party", "1", client, "--connect", ts.addr, "--input", inputPath(data, 1), "--tls-pin", pin); err != nil {
		t.Fatal(err)
	}
	<-ts.done
}
