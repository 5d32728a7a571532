package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// startHelper runs scirun --helper --listen on prog until the test ends.
func startHelper(t *testing.T, prog string, extra ...string) string {
	t.Helper()
	addr := freeAddr(t)
	e, _, errb := testEnv()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = run(ctx, append([]string{"--helper", "--listen", addr, prog}, extra...), e)
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitFor(t, "the helper to listen", func() bool { return strings.Contains(errb.String(), "listening on") })
	return addr
}

// runPair runs the server and the client of a sci3 session against the helper at helper and
// returns their errors and the time until both ended.
func runPair(t *testing.T, full, client, in, out, helper string, extra ...string) (e0, e1 error, d time.Duration) {
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
	return e0, e1, time.Since(start)
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
	helper := startHelper(t, client)
	if e0, e1, _ := runPair(t, full, client, in, secRaw, helper); e0 != nil || e1 != nil {
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

// TestHelperRefusesOtherProgram: a helper started with another program refuses both data
// parties at once, naming the mismatch.
func TestHelperRefusesOtherProgram(t *testing.T) {
	full, client, data := program(t)
	_, other := compileTo(t, filepath.Join(data, "model.onnx"), t.TempDir(), "other", 30, 11)
	helper := startHelper(t, other)
	e0, e1, d := runPair(t, full, client, filepath.Join(data, "inputs", "00001.npy"), filepath.Join(t.TempDir(), "o.npy"), helper)
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
// parties fail at once; one that stops answering makes both fail within --timeout.
func TestHelperDropOrStall(t *testing.T) {
	full, client, data := program(t)
	in := filepath.Join(data, "inputs", "00001.npy")
	helper := startHelper(t, client)
	for _, c := range []struct {
		stall bool
		max   time.Duration
	}{{false, 10 * time.Second}, {true, 20 * time.Second}} {
		t.Run(fmt.Sprintf("stall=%v", c.stall), func(t *testing.T) {
			p := proxy(t, helper, 1<<20, c.stall)
			e0, e1, d := runPair(t, full, client, in, filepath.Join(t.TempDir(), "o.npy"), p, "--timeout", "4s")
			if e0 == nil || e1 == nil {
				t.Fatalf("server: %v; client: %v: want both to fail", e0, e1)
			}
			if d > c.max {
				t.Fatalf("the data parties took %v to fail (server: %v; client: %v)", d, e0, e1)
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
	_, stderr, err := runArgs("--local", full, "--backend", "sci3", "--input", in, "--output", secRaw, "--raw", "--report", rep)
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
	t.Logf("party 1: data parties %d B sent, %d B received; helper %d B received", r.Total.BytesSent, r.Total.BytesRecv, r.Helper.BytesRecv)
}
