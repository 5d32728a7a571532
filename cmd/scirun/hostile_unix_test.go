//go:build unix

package main

import (
	"bytes"
	"context"
	bin "encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// runWithin runs scirun's run with args and fails the test if it does not return within d.
func runWithin(t *testing.T, d time.Duration, args ...string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, _, err := runArgs(args...)
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("%q did not return within %v", args, d)
		return nil
	}
}

// Issue 24, finding 4: a named pipe given as --input, or lying in a batch folder, is refused at
// once with an error naming it; before the fix the open blocked forever (and the process then
// ignored SIGTERM twice and SIGINT).
func TestFIFOInputsRefused(t *testing.T) {
	full, _, data := program(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "x.npy")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	err := runWithin(t, 10*time.Second, "--clear", full, "--input", fifo)
	if err == nil || !strings.Contains(err.Error(), fifo+" is a named pipe (FIFO), not a regular file") {
		t.Errorf("FIFO input: %v", err)
	}

	folder := filepath.Join(dir, "batch")
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(data, "inputs", "00000.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "a.npy"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(folder, "b.npy"), 0o600); err != nil {
		t.Fatal(err)
	}
	err = runWithin(t, 10*time.Second, "--clear", full, "--input", folder)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(folder, "b.npy")+" is a named pipe") {
		t.Errorf("FIFO in a batch folder: %v", err)
	}
}

// Issue 24, finding 5: a batched .npy in a batch folder was read whole before being refused
// (a 1.25 GB file took 5.4 GB of RSS). Its header says its shape: it is now refused from the
// header, without its data being read. The file here is sparse: 62.7 MB announced and held as a
// hole.
func TestBatchedNpyInFolderRefusedFromHeader(t *testing.T) {
	full, _, data := program(t)
	folder := t.TempDir()
	b, err := os.ReadFile(filepath.Join(data, "inputs", "00000.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(folder, "a.npy"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	// A version 1.0 header announcing float32 [20000, 1, 28, 28], padded to 128 bytes.
	dict := "{'descr': '<f4', 'fortran_order': False, 'shape': (20000, 1, 28, 28), }"
	hdr := []byte("\x93NUMPY\x01\x00")
	hdr = bin.LittleEndian.AppendUint16(hdr, uint16(128-10))
	hdr = append(hdr, dict...)
	for len(hdr) < 127 {
		hdr = append(hdr, ' ')
	}
	hdr = append(hdr, '\n')
	big := filepath.Join(folder, "b.npy")
	if err := os.WriteFile(big, hdr, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 128+4*20000*28*28); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	err = runWithin(t, 30*time.Second, "--clear", full, "--input", folder)
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("batch folder with a 62.7 MB batched .npy: %v; %.1f MiB allocated", err, float64(alloc)/(1<<20))
	if err == nil || !strings.Contains(err.Error(), big) || !strings.Contains(err.Error(), "[20000,1,28,28]") {
		t.Errorf("got %v, want a refusal of %s naming its shape", err, big)
	}
	if alloc > 32<<20 {
		t.Errorf("refusing the batched .npy allocated %.1f MiB: its data was read", float64(alloc)/(1<<20))
	}
}

// Issue 24, findings 4 and 7: a client given SIGTERM while it waits for the server stops at once
// (docs/usage.md: the first signal cancels the run), saying so, without the --serve server's
// drain message.
func TestClientStopsOnFirstSignal(t *testing.T) {
	_, client, data := program(t)
	ln := testenv.ListenLoopback(t)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // accepts and never answers
		}
	}()
	cmd := exec.Command(binary, "--party", "1", client, "--connect", ln.Addr().String(),
		"--input", filepath.Join(data, "inputs", "00000.npy"), "--streams", "1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Errorf("exit: %v, want a failure status", err)
		}
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the client did not stop within 10 s of SIGTERM; stderr:\n%s", stderr.String())
	}
	out := stderr.String()
	t.Logf("stopped %v after SIGTERM:\n%s", time.Since(start).Round(time.Millisecond), out)
	if strings.Contains(out, "--serve") || strings.Contains(out, "sessions") {
		t.Errorf("the client printed the server's drain message:\n%s", out)
	}
	if !strings.Contains(out, "stopping") || !strings.Contains(out, "interrupted") {
		t.Errorf("stderr does not say the run was stopped by the signal:\n%s", out)
	}
}

// No signal is ever ignored: without --serve the first cancels the run and the second exits at
// once; a --serve server drains, aborts, then exits.
func TestSignalsNeverIgnored(t *testing.T) {
	for _, serving := range []bool{false, true} {
		t.Run(fmt.Sprintf("serving=%v", serving), func(t *testing.T) {
			e, _, errb := testEnv()
			e.serving.Store(serving)
			sig := make(chan os.Signal, 3)
			ctx, cancel := context.WithCancel(context.Background())
			exited := make(chan int, 1)
			go onSignals(sig, e, cancel, func(code int) { exited <- code })
			sig <- syscall.SIGTERM
			testenv.WaitFor(t, 5*time.Second, "the drain", func() bool {
				select {
				case <-e.drain:
					return true
				default:
					return false
				}
			})
			if serving {
				if ctx.Err() != nil {
					t.Fatal("the first signal aborted a draining server's sessions")
				}
				sig <- syscall.SIGTERM
			}
			testenv.WaitFor(t, 5*time.Second, "the cancellation", func() bool { return ctx.Err() != nil })
			sig <- syscall.SIGINT
			select {
			case code := <-exited:
				if code != 130 {
					t.Errorf("exit status %d", code)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the signal after the cancellation was ignored; stderr:\n%s", errb.String())
			}
			t.Logf("%s", errb.String())
		})
	}
}
