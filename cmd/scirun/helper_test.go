package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// freeAddr returns a loopback address with a free port.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln := testenv.ListenLoopback(t)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// startHelper runs scirun --helper --listen --tls-self on prog until the test ends and returns
// its address and the fingerprint it printed.
func startHelper(t *testing.T, prog string, extra ...string) (addr, pin string) {
	t.Helper()
	addr = freeAddr(t)
	e, _, errb := testEnv()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = run(ctx, append([]string{"--helper", "--listen", addr, "--tls-self", filepath.Join(t.TempDir(), "helper.pem"), prog}, extra...), e)
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the helper to listen", func() bool { return strings.Contains(errb.String(), "listening on") })
	_, after, ok := strings.Cut(errb.String(), "--helper-tls-pin ")
	if !ok {
		t.Fatalf("the helper printed no fingerprint: %s", errb.String())
	}
	return addr, strings.Fields(after)[0]
}

// runPair runs the server and the client of a sci3 session against the helper at helper, which
// they pin (--helper-tls-pin pin), and returns their errors and the time until both ended.
func runPair(t *testing.T, full, client, in, out, helper, pin string, extra ...string) (d time.Duration, e0, e1 error) {
	extra = append([]string{"--helper-tls-pin", pin}, extra...)
	t.Helper()
	srv := freeAddr(t)
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _, e0 = runArgs(append([]string{"--party", "0", full, "--backend", "sci3", "--listen", srv, "--helper", helper}, extra...)...)
	}()
	_, _, e1 = runArgs(append([]string{"--party", "1", client, "--backend", "sci3", "--connect", srv, "--helper", helper,
		"--input", in, "--output", out, "--raw"}, extra...)...)
	wg.Wait()
	return time.Since(start), e0, e1
}

// TestHelperThreeProcesses: the helper with the client copy only, a server and a client, each
// in its own scirun run over loopback TCP: the client's output equals the clear run bitwise.
func TestHelperThreeProcesses(t *testing.T) {
	full, client, data := program(t)
	in := filepath.Join(data, "inputs", "00001.npy")
	dir := t.TempDir()
	clearRaw, secRaw := filepath.Join(dir, "c.npy"), filepath.Join(dir, "s.npy")
	if _, _, err := runArgs("--clear", full, "--input", in, "--output", clearRaw, "--raw"); err != nil {
		t.Fatal(err)
	}
	helper, pin := startHelper(t, client)
	if _, e0, e1 := runPair(t, full, client, in, secRaw, helper, pin); e0 != nil || e1 != nil {
		t.Fatalf("server: %v; client: %v", e0, e1)
	}
	if !slices.Equal(readInts(t, clearRaw), readInts(t, secRaw)) {
		t.Fatal("the three-party output differs from the clear run")
	}
	// A data party without --helper is told what to do.
	_, _, err := runArgs("--party", "1", client, "--backend", "sci3", "--connect", freeAddr(t), "--input", in)
	if err == nil || !strings.Contains(err.Error(), "--helper HOST:PORT") {
		t.Fatalf("sci3 without --helper: %v", err)
	}
}

// TestHelperTLSFlags: the data parties refuse a plaintext link to the helper unless
// --helper-insecure says so (and then warn), and refuse a helper whose key is not the pinned
// one before sending anything; the helper refuses to serve without TLS unless told.
func TestHelperTLSFlags(t *testing.T) {
	full, client, data := program(t)
	in := filepath.Join(data, "inputs", "00001.npy")
	_, _, err := runArgs("--party", "1", client, "--backend", "sci3", "--connect", freeAddr(t), "--helper", freeAddr(t), "--input", in)
	if err == nil || !strings.Contains(err.Error(), "--helper-insecure") || !strings.Contains(err.Error(), "--helper-tls-pin") {
		t.Fatalf("plaintext helper link without --helper-insecure: %v", err)
	}
	_, _, err = runArgs("--helper", "--listen", freeAddr(t), client)
	if err == nil || !strings.Contains(err.Error(), "--tls-self") {
		t.Fatalf("helper without TLS or --helper-insecure: %v", err)
	}
	_, _, err = runArgs("--party", "0", full, "--backend", "sci3", "--helper", freeAddr(t), "--helper-tls-pin", "sha256:00", "--helper-insecure")
	if err == nil || !strings.Contains(err.Error(), "exclude each other") {
		t.Fatalf("--helper-tls-pin with --helper-insecure: %v", err)
	}
	helper, _ := startHelper(t, client)
	_, wrong := startHelper(t, client)
	d, e0, e1 := runPair(t, full, client, in, filepath.Join(t.TempDir(), "o.npy"), helper, wrong)
	for p, err := range []error{e0, e1} {
		if err == nil || !strings.Contains(err.Error(), "the helper at "+helper) || !strings.Contains(err.Error(), "TLS pin") {
			t.Fatalf("party %d with a wrong pin: %v", p, err)
		}
	}
	if d > 20*time.Second {
		t.Fatalf("the refusal took %v", d)
	}
	// Plaintext on both sides, explicitly: it runs, and every party says it is insecure.
	addr := freeAddr(t)
	e, _, errb := testEnv()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = run(ctx, []string{"--helper", "--listen", addr, "--helper-insecure", client}, e)
	}()
	defer func() { cancel(); <-done }()
	waitFor(t, "the helper to listen", func() bool { return strings.Contains(errb.String(), "listening on") })
	if !strings.Contains(errb.String(), "WARNING: --helper-insecure") {
		t.Errorf("the plaintext helper does not warn: %s", errb.String())
	}
	srv := freeAddr(t)
	var wg sync.WaitGroup
	var out0 string
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, out0, e0 = runArgs("--party", "0", full, "--backend", "sci3", "--listen", srv, "--helper", addr, "--helper-insecure")
	}()
	_, out1, e1 := runArgs("--party", "1", client, "--backend", "sci3", "--connect", srv, "--helper", addr, "--helper-insecure", "--input", in)
	wg.Wait()
	if e0 != nil || e1 != nil {
		t.Fatalf("--helper-insecure: server: %v; client: %v", e0, e1)
	}
	for p, out := range []string{out0, out1} {
		if !strings.Contains(out, "WARNING: --helper-insecure") {
			t.Errorf("party %d does not warn of the plaintext link: %s", p, out)
		}
	}
}

// TestHelperRefusesOtherProgram: a helper started with another program refuses both data
// parties at once, naming the mismatch.
func TestHelperRefusesOtherProgram(t *testing.T) {
	full, client, data := program(t)
	_, other := compileTo(t, filepath.Join(data, "model.onnx"), t.TempDir(), "other", 30, 11)
	helper, pin := startHelper(t, other)
	d, e0, e1 := runPair(t, full, client, filepath.Join(data, "inputs", "00001.npy"), filepath.Join(t.TempDir(), "o.npy"), helper, pin)
	for p, err := range []error{e0, e1} {
		if err == nil || !strings.Contains(err.Error(), "the helper refused: program") {
			t.Fatalf("party %d: %v", p, err)
		}
	}
	if d > 20*time.Second {
		t.Fatalf("the refusal took %v", d)
	}
}

// proxy forwards connections to target; after limit bytes from the helper in total, it drops
// every connection (stall false) or stops forwarding while keeping them open (stall true).
func proxy(t *testing.T, target string, limit int64, stall bool) string {
	t.Helper()
	ln := testenv.ListenLoopback(t)
	var sent atomic.Int64
	var mu sync.Mutex
	var conns []net.Conn
	tripped := make(chan struct{})
	var once sync.Once
	trip := func() {
		once.Do(func() {
			close(tripped)
			if !stall {
				mu.Lock()
				for _, c := range conns {
					c.Close()
				}
				mu.Unlock()
			}
		})
	}
	go func() {
		for {
			a, err := ln.Accept()
			if err != nil {
				return
			}
			b, err := net.Dial("tcp", target)
			if err != nil {
				a.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, a, b)
			mu.Unlock()
			go func() { _, _ = io.Copy(b, a) }()
			go func() {
				buf := make([]byte, 32<<10)
				for {
					n, err := b.Read(buf)
					if n > 0 {
						if sent.Add(int64(n)) > limit {
							trip()
							<-tripped
							if stall {
								select {} // hold the connection open, forward nothing
							}
							return
						}
						if _, werr := a.Write(buf[:n]); werr != nil {
							return
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return ln.Addr().String()
}

// TestHelperDropOrStall: a helper that disappears in the middle of a session makes both data
// parties fail at once; one that stops answering makes both fail within --timeout; both name
// the helper and its address.
func TestHelperDropOrStall(t *testing.T) {
	full, client, data := program(t)
	in := filepath.Join(data, "inputs", "00001.npy")
	helper, pin := startHelper(t, client)
	for _, c := range []struct {
		stall bool
		max   time.Duration
	}{{false, 10 * time.Second}, {true, 20 * time.Second}} {
		t.Run(fmt.Sprintf("stall=%v", c.stall), func(t *testing.T) {
			// Mid-session: the helper sends a mnist-small inference ~90 kB (dealt short OTs).
			p := proxy(t, helper, 1<<14, c.stall)
			d, e0, e1 := runPair(t, full, client, in, filepath.Join(t.TempDir(), "o.npy"), p, pin, "--timeout", "4s")
			if e0 == nil || e1 == nil {
				t.Fatalf("server: %v; client: %v: want both to fail", e0, e1)
			}
			if d > c.max {
				t.Fatalf("the data parties took %v to fail (server: %v; client: %v)", d, e0, e1)
			}
			for party, err := range []error{e0, e1} {
				// The failure is the helper's, with its address, not the other data party's.
				msg := err.Error()
				if !strings.HasPrefix(msg, "the helper at "+p+" ") && !strings.Contains(msg, "lost its link to the helper at "+p+": ") {
					t.Errorf("party %d does not name the helper: %v", party, err)
				}
			}
			t.Logf("both failed in %v; server: %v; client: %v", d.Round(time.Millisecond), e0, e1)
		})
	}
}

// TestSci3LocalReport: --local runs the three parties of a sci3 program in one process, bitwise
// equal to the clear run, and the report gives the traffic with the helper beside the data
// parties' own.
func TestSci3LocalReport(t *testing.T) {
	full, _, data := program(t)
	in := filepath.Join(data, "inputs", "00002.npy")
	dir := t.TempDir()
	clearRaw, secRaw, rep := filepath.Join(dir, "c.npy"), filepath.Join(dir, "s.npy"), filepath.Join(dir, "r.json")
	if _, _, err := runArgs("--clear", full, "--input", in, "--output", clearRaw, "--raw"); err != nil {
		t.Fatal(err)
	}
	// The prefetch changes what the helper deals ahead, not the result (bitwise equal below).
	_, stderr, err := runArgs("--local", full, "--backend", "sci3", "--input", in, "--output", secRaw, "--raw", "--report", rep, "--helper-prefetch", "100000")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(readInts(t, clearRaw), readInts(t, secRaw)) {
		t.Fatal("the sci3 output differs from the clear run")
	}
	r := readReport(t, rep)
	if r.Backend != "sci3" || r.Helper == nil || r.Helper.BytesRecv == 0 || r.Helper.BytesSent == 0 || r.Total.BytesSent == 0 {
		t.Fatalf("report: backend %q, helper %+v, total %+v", r.Backend, r.Helper, r.Total)
	}
	if !strings.Contains(stderr, "sci3: party 1 ↔ helper:") {
		t.Errorf("stderr has no helper traffic line: %q", stderr)
	}
	// The offline/online split: one inference without a trace (--helper-traces): nothing is
	// dealt before the input, the whole run is online, its waits on the helper included; each
	// pair's bytes are in their phase (the helper deals everything on demand, online; the data
	// parties' protocol is online).
	h := r.Helper
	if h.OfflineMS != 0 || h.HelperWaitMS <= 0 || h.OnlineMS != r.RunMS || h.HelperWaitMS > h.OnlineMS || h.FirstRequests != 0 {
		t.Errorf("times: offline %v, online %v (waits on the helper %v), run %v; first inference's trace %d requests", h.OfflineMS, h.OnlineMS, h.HelperWaitMS, r.RunMS, h.FirstRequests)
	}
	pairs := map[string]serve.PairTraffic{}
	for _, p := range h.Pairs {
		pairs[p.Pair] = p
	}
	if p := pairs["0-1"]; p.Online == 0 || p.Offline != 0 || p.Setup == 0 {
		t.Errorf("pair 0-1: %+v", p)
	}
	for _, name := range []string{"0-2", "1-2"} {
		if p := pairs[name]; p.Offline != 0 || p.Online == 0 || p.Setup == 0 {
			t.Errorf("pair %s: %+v", name, p)
		}
	}
	if got, want := pairs["1-2"].Setup+pairs["1-2"].Online, h.BytesSent+h.BytesRecv; got != want {
		t.Errorf("pair 1-2: %d bytes, the link %d", got, want)
	}
	for _, want := range []string{"conv by dealer", "three parties: helper set-up", "0↔1: set-up", "0↔2: set-up", "1↔2: set-up"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("the table has no %q:\n%s", want, stderr)
		}
	}
	if _, tail, ok := strings.Cut(stderr, "three parties:"); ok {
		t.Logf("three parties:%s", tail)
	}
	t.Logf("party 1: data parties %d B sent, %d B received; helper %d B received", r.Total.BytesSent, r.Total.BytesRecv, r.Helper.BytesRecv)
}

// TestSci3LocalBatchAhead: a --local batch of three inferences deals the second and third
// ahead (--helper-ahead, on by default): bitwise equal to the clear run, and the report splits
// each helper link into set-up, offline (dealt ahead) and online (dealt on demand) bytes that
// add up to the link's traffic, with no request on the critical path after the second.
func TestSci3LocalBatchAhead(t *testing.T) {
	full, _, data := program(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"00000.npy", "00001.npy", "00002.npy"} {
		b, err := os.ReadFile(filepath.Join(data, "inputs", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(in, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clr, sec, rep := filepath.Join(dir, "clr")+"/", filepath.Join(dir, "sec")+"/", filepath.Join(dir, "r.json")
	if _, _, err := runArgs("--clear", full, "--input", in+"/", "--output", clr, "--raw"); err != nil {
		t.Fatal(err)
	}
	var reps [2]*serve.Report
	for i, ahead := range []string{"256", "0"} {
		_, stderr, err := runArgs("--local", full, "--backend", "sci3", "--input", in+"/", "--output", sec, "--raw", "--report", rep, "--helper-ahead", ahead)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"00000.npy", "00001.npy", "00002.npy"} {
			if !slices.Equal(readInts(t, filepath.Join(clr, name)), readInts(t, filepath.Join(sec, name))) {
				t.Fatalf("--helper-ahead %s: %s differs from the clear run", ahead, name)
			}
		}
		reps[i] = readReport(t, rep)
		if i == 0 && !strings.Contains(stderr, "dealt ahead: 2 inferences") {
			t.Errorf("the table does not say what was dealt ahead:\n%s", stderr)
		}
	}
	h, od := reps[0].Helper, reps[1].Helper
	if h.AheadInferences != 2 || h.AheadLateWaits != 0 || h.AheadOff != "" || h.AheadPeriod == 0 || od.AheadInferences != 0 {
		t.Fatalf("dealing ahead: %+v; off: %+v", h, od)
	}
	// Party 1's requests on the critical path: the first inference's (as many as a session of
	// one inference sends) and the second's misses (period 2: the streams whose roles swapped);
	// none from the third.
	if _, _, err := runArgs("--local", full, "--backend", "sci3", "--input", filepath.Join(in, "00000.npy"), "--output", filepath.Join(dir, "one.npy"), "--raw", "--report", rep); err != nil {
		t.Fatal(err)
	}
	one := readReport(t, rep).Helper
	if h.OnDemandRequests != one.OnDemandRequests+h.AheadMisses || h.AheadPeriod == 1 && h.AheadMisses != 0 || h.AheadPeriod == 2 && h.AheadMisses == 0 {
		t.Errorf("%d requests on demand (%d missed, period %d); one inference: %d", h.OnDemandRequests, h.AheadMisses, h.AheadPeriod, one.OnDemandRequests)
	}
	if h.OfflineMS+h.OnlineMS < reps[0].RunMS-0.01 || h.OfflineMS+h.OnlineMS > reps[0].RunMS+0.01 || h.AheadMS <= 0 {
		t.Errorf("times: offline %v + online %v, run %v; dealing ahead %v", h.OfflineMS, h.OnlineMS, reps[0].RunMS, h.AheadMS)
	}
	pairs := map[string]serve.PairTraffic{}
	for _, p := range h.Pairs {
		pairs[p.Pair] = p
	}
	for _, name := range []string{"0-2", "1-2"} {
		if p := pairs[name]; p.Offline == 0 || p.Online == 0 || p.Setup == 0 {
			t.Errorf("pair %s: %+v", name, p)
		}
	}
	if p, want := pairs["1-2"], h.BytesSent+h.BytesRecv; p.Setup+p.Offline+p.Online != want {
		t.Errorf("pair 1-2: %+v, the link %d bytes", p, want)
	}
	// Times per pair: the helper links' dealing ahead and waits, the data parties' run outside
	// party 1's waits.
	if p := pairs["1-2"]; p.OfflineMS != h.AheadMS || p.OnlineMS != h.HelperWaitMS || pairs["0-2"].OfflineMS <= 0 || pairs["0-1"].OnlineMS != h.OnlineMS || pairs["0-1"].OfflineMS != 0 {
		t.Errorf("pair times: %+v", h.Pairs)
	}
	// The same dealing as on demand, plus the replies dealt for the second inference and not
	// used (period 2 only).
	if got, want := h.BytesSent+h.BytesRecv-h.AheadWastedBytes, od.BytesSent+od.BytesRecv; got != want {
		t.Errorf("helper link: %d bytes less %d unused, %d dealt on demand", h.BytesSent+h.BytesRecv, h.AheadWastedBytes, want)
	}
	t.Logf("party 1: %d requests on demand (%d dealt on demand in all), %d dealt ahead, period %d, %d missed, %d B unused; pairs %+v",
		h.OnDemandRequests, od.OnDemandRequests, h.AheadRequests, h.AheadPeriod, h.AheadMisses, h.AheadWastedBytes, h.Pairs)
}

// TestHelperStopsOnFirstSignal: one SIGINT stops a helper process at once, with a connection
// that never sent its hello and a session running; both data parties fail naming the helper
// and saying it was stopped.
func TestHelperStopsOnFirstSignal(t *testing.T) {
	full, client, data := program(t)
	addr := freeAddr(t)
	cmd := exec.Command(binary, "--helper", "--listen", addr, "--helper-insecure", client)
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, "the helper to listen", func() bool { return strings.Contains(stderr.String(), "listening on") })
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	srv := freeAddr(t)
	in := filepath.Join(data, "inputs", "00001.npy")
	var e0, e1 error
	var wg sync.WaitGroup
	wg.Add(2)
	// A slow emulated link keeps the session running for seconds.
	slow := []string{"--backend", "sci3", "--helper", addr, "--helper-insecure", "--net", "20Mbit/s", "--quiet"}
	go func() {
		defer wg.Done()
		_, _, e0 = runArgs(append([]string{"--party", "0", full, "--listen", srv}, slow...)...)
	}()
	go func() {
		defer wg.Done()
		_, _, e1 = runArgs(append([]string{"--party", "1", client, "--connect", srv, "--input", in}, slow...)...)
	}()
	waitFor(t, "the session to start at the helper", func() bool { return strings.Contains(stderr.String(), "session started") })
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("the helper still runs 10 s after one SIGINT:\n%s", stderr.String())
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the helper took %v to stop", d)
	}
	wg.Wait()
	for p, err := range []error{e0, e1} {
		if err == nil || !strings.Contains(err.Error(), "the helper at "+addr) || !strings.Contains(err.Error(), "the helper was stopped") {
			t.Errorf("party %d: %v", p, err)
		}
	}
	t.Logf("server: %v\nclient: %v", e0, e1)
}

// TestSci3LocalSessionTimeout: --local honours --session-timeout (a long --local run is not cut
// at the server's 10-minute default, and a short bound ends it).
func TestSci3LocalSessionTimeout(t *testing.T) {
	full, _, data := program(t)
	in := filepath.Join(data, "inputs", "00001.npy")
	_, _, err := runArgs("--local", full, "--backend", "sci3", "--input", in, "--session-timeout", "1ms", "--quiet")
	if err == nil || !strings.Contains(err.Error(), "time limit") {
		t.Fatalf("--local --session-timeout 1ms: %v", err)
	}
	if _, _, err := runArgs("--local", full, "--backend", "sci3", "--input", in, "--session-timeout", "0", "--quiet"); err != nil {
		t.Fatalf("--local --session-timeout 0: %v", err)
	}
}

// TestSci3AheadSharedProducts: dealing ahead covers the helper's matrix triples of products of
// two shared matrices (attention): a batch of three ViT images with --helper-ahead is bitwise
// equal to the clear run and sends no request on demand from the third inference on.
func TestSci3AheadSharedProducts(t *testing.T) {
	data := filepath.Join(testenv.RepoRoot(t), "testdata", "vit-mnist")
	if _, err := os.Stat(filepath.Join(data, "inputs", "00002.npy")); err != nil {
		t.Skipf("testdata/vit-mnist not present: %v", err)
	}
	dir := t.TempDir()
	full, _ := compileTo(t, filepath.Join(data, "model.onnx"), dir, "vit", 38, 12)
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"00000.npy", "00001.npy", "00002.npy"}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(data, "inputs", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(in, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	clr, sec, rep := filepath.Join(dir, "clr")+"/", filepath.Join(dir, "sec")+"/", filepath.Join(dir, "r.json")
	if _, _, err := runArgs("--clear", full, "--input", in+"/", "--output", clr, "--raw"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runArgs("--local", full, "--backend", "sci3", "--input", in+"/", "--output", sec, "--raw", "--report", rep, "--helper-ahead", "256"); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if !slices.Equal(readInts(t, filepath.Join(clr, name)), readInts(t, filepath.Join(sec, name))) {
			t.Fatalf("%s differs from the clear run", name)
		}
	}
	h := readReport(t, rep).Helper
	if h == nil || h.AheadInferences != 2 || h.AheadOff != "" || h.AheadLateWaits != 0 {
		t.Fatalf("dealing ahead: %+v", h)
	}
}

// TestSci3LocalTraces: with --helper-traces, a first session writes each data party's
// first-inference trace; a second session deals its first inference from it before the input is
// used: no request to the helper on the critical path, the same bytes on each helper link,
// bitwise equal to the clear run. A corrupt file is noted, not used, and rewritten.
func TestSci3LocalTraces(t *testing.T) {
	full, _, data := program(t)
	in := filepath.Join(data, "inputs", "00002.npy")
	dir := t.TempDir()
	traces := filepath.Join(dir, "traces")
	clr, sec, rep := filepath.Join(dir, "c.npy"), filepath.Join(dir, "s.npy"), filepath.Join(dir, "r.json")
	if _, _, err := runArgs("--clear", full, "--input", in, "--output", clr, "--raw"); err != nil {
		t.Fatal(err)
	}
	run := func() (*serve.Report, string) {
		t.Helper()
		_, stderr, err := runArgs("--local", full, "--backend", "sci3", "--input", in, "--output", sec, "--raw", "--report", rep, "--helper-traces", traces)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(readInts(t, clr), readInts(t, sec)) {
			t.Fatal("the sci3 output differs from the clear run")
		}
		return readReport(t, rep), stderr
	}
	first, stderr := run()
	if !strings.Contains(stderr, "no trace") || first.Helper.FirstRequests != 0 || first.Helper.OnDemandRequests == 0 {
		t.Fatalf("first session: %+v\n%s", first.Helper, stderr)
	}
	files, err := filepath.Glob(filepath.Join(traces, "*.trace"))
	if err != nil || len(files) != 2 {
		t.Fatalf("trace files %v (%v), want one per data party", files, err)
	}
	second, stderr := run()
	h := second.Helper
	if h.FirstRequests != int(first.Helper.OnDemandRequests) || h.FirstAheadRequests != h.FirstRequests || h.OnDemandRequests != 0 || h.AheadLateWaits != 0 || h.OfflineMS <= 0 {
		t.Errorf("second session: %+v; first: %d requests on demand", h, first.Helper.OnDemandRequests)
	}
	if !strings.Contains(stderr, fmt.Sprintf("first inference: all %d requests", h.FirstRequests)) {
		t.Errorf("the table does not say the first inference was dealt ahead:\n%s", stderr)
	}
	if got, want := h.BytesSent+h.BytesRecv, first.Helper.BytesSent+first.Helper.BytesRecv; got != want {
		t.Errorf("helper link: %d B with the trace, %d B without", got, want)
	}
	pairs := map[string]serve.PairTraffic{}
	for _, p := range h.Pairs {
		pairs[p.Pair] = p
	}
	for _, name := range []string{"0-2", "1-2"} {
		// Online: nothing, or the "done" request at the session's end (260 B) when the link's
		// traffic is read after it.
		if p := pairs[name]; p.Offline == 0 || p.Online != 0 && p.Online != 260 {
			t.Errorf("pair %s: %+v", name, p)
		}
	}
	if second.Total != first.Total {
		t.Errorf("data parties: %+v with the trace, %+v without", second.Total, first.Total)
	}
	// The client's linear shares: during the first session's inference (no trace), all before
	// the input in the second's.
	if second.Party != 1 || first.Helper.LinearAhead != 0 || first.Helper.LinearOnline == 0 || h.LinearAhead != first.Helper.LinearOnline || h.LinearOnline != 0 || h.PrecomputeMS <= 0 || h.PrecomputeMS > h.OfflineMS {
		t.Errorf("party %d's linear shares ahead / during: first session %d / %d, second %d / %d (%.1f ms of %.1f ms offline)", second.Party,
			first.Helper.LinearAhead, first.Helper.LinearOnline, h.LinearAhead, h.LinearOnline, h.PrecomputeMS, h.OfflineMS)
	}
	if !strings.Contains(stderr, fmt.Sprintf("linear layers: %d shares computed before their inference's input", h.LinearAhead)) {
		t.Errorf("the table does not say the linear shares were computed ahead:\n%s", stderr)
	}
	t.Logf("first session: %d requests on demand; second: %d dealt before the input (%d B), offline %.1f ms, online %.1f ms",
		first.Helper.OnDemandRequests, h.FirstAheadRequests, h.FirstBytes, h.OfflineMS, h.OnlineMS)

	if err := os.WriteFile(files[0], []byte("not a trace"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr := run(); !strings.Contains(stderr, "not used") {
		t.Errorf("a corrupt trace was not noted:\n%s", stderr)
	}
	if b, err := os.ReadFile(files[0]); err != nil || string(b) == "not a trace" {
		t.Errorf("the corrupt trace was not rewritten (%v)", err)
	}
}
