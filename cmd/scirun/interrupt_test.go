package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// tripWriter passes every write to w and, once the k-th line holding sub has been written,
// calls fire (once).
type tripWriter struct {
	mu   sync.Mutex
	w    io.Writer
	sub  string
	k, n int
	fire func()
}

func (t *tripWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.mu.Lock()
	defer t.mu.Unlock()
	before := t.n
	t.n += strings.Count(string(p), t.sub)
	if before < t.k && t.n >= t.k {
		t.fire()
	}
	return n, err
}

// outputsIn lists the .npy files of dir (none when it does not exist).
func outputsIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestBatchInterruptKeepsFinished: a signal (the drain channel closing) after k of a batch's
// results stops the run before the next inference, in the clear, with --local and as a client
// of a --serve server: the k outputs are on disk and were printed as they finished, the report
// says "interrupted after k of n", the run fails (a non-zero exit), and the server serves the
// next client.
func TestBatchInterruptKeepsFinished(t *testing.T) {
	full, client, data := program(t)
	in := batchFolder(t, data, 6)
	const k = 2
	ts := startServer(t, "--party", "0", full, "--serve", "--quiet")
	for _, mode := range []string{"clear", "local", "client"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			out, report := filepath.Join(dir, "out")+"/", filepath.Join(dir, "r.json")
			args := []string{"--input", in, "--output", out, "--quiet"}
			switch mode {
			case "clear":
				args = append(args, "--clear", full)
			case "local":
				args = append(args, "--local", full, "--report", report)
			case "client":
				args = append(args, "--party", "1", client, "--connect", ts.addr, "--report", report)
			}
			e, stdout, _ := testEnv()
			drain := make(chan struct{})
			e.drain = drain
			e.stdout = &tripWriter{w: stdout, sub: "top class", k: k, fire: func() { close(drain) }}
			err := run(context.Background(), args, e)
			if err == nil || !strings.Contains(err.Error(), "interrupted after 2 of 6 inferences") ||
				!strings.Contains(err.Error(), "the outputs of the 2 inferences that finished are in "+out) {
				t.Errorf("error: %v", err)
			}
			if got := outputsIn(t, out); !slices.Equal(got, []string{"00000.npy", "00001.npy"}) {
				t.Errorf("outputs on disk: %v, want the 2 that finished", got)
			}
			if n := countLines(stdout.String(), "top class"); n != k {
				t.Errorf("%d result lines, want %d:\n%s", n, k, stdout.String())
			}
			if !strings.Contains(stdout.String(), "batch: stopped after 2 of 6 inferences; their outputs are in "+out) ||
				!strings.Contains(stdout.String(), "(the 2 that finished)") {
				t.Errorf("summary:\n%s", stdout.String())
			}
			if mode == "clear" {
				return
			}
			rep := readReport(t, report)
			if rep.Inferences != k || rep.Requested != 6 || rep.Interrupted != "interrupted after 2 of 6 inferences" {
				t.Errorf("report: inferences %d, requested %d, interrupted %q", rep.Inferences, rep.Requested, rep.Interrupted)
			}
		})
	}
	// The server logged the interrupted session and serves the next client.
	waitFor(t, "the server to log the interrupted session", func() bool {
		return strings.Contains(ts.stderr.String(), "interrupted after 2 of 6 inferences")
	})
	if _, _, err := runArgs("--party", "1", client, "--connect", ts.addr, "--input", inputPath(data, 0), "--quiet"); err != nil {
		t.Errorf("the next client: %v", err)
	}
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
}

// TestSIGINTMidBatch sends the real process SIGINT in the middle of a --local batch: it exits
// with status 1, every result it printed is on disk (and only those), and the report says how
// many of the batch finished.
func TestSIGINTMidBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 40-inference batch in a child process")
	}
	full, _, data := program(t)
	dir := t.TempDir()
	stack := filepath.Join(dir, "x.npy")
	stackNpy(t, data, stack, 8)
	a, err := npy.ReadFile(stack)
	if err != nil {
		t.Fatal(err)
	}
	x, _ := a.Float32()
	var many []float32
	for range 5 {
		many = append(many, x...)
	}
	if err := npy.WriteFileFloat32(stack, append([]int{40}, a.Shape[1:]...), many); err != nil {
		t.Fatal(err)
	}
	out, report := filepath.Join(dir, "out")+"/", filepath.Join(dir, "r.json")
	cmd := exec.Command(binary, "--local", full, "--input", stack, "--output", out, "--report", report, "--quiet", "--streams", "1")
	stdout, stderr := &testenv.SyncBuffer{}, &testenv.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	waitFor(t, "two results", func() bool { return countLines(stdout.String(), "top class") >= 2 })
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("scirun did not stop after SIGINT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1\n%s", err, stderr.String())
	}
	printed := countLines(stdout.String(), "top class")
	if printed >= 40 {
		t.Fatalf("all 40 ran: the signal came too late to test anything")
	}
	if got := len(outputsIn(t, out)); got != printed {
		t.Errorf("%d outputs on disk, %d printed", got, printed)
	}
	rep := readReport(t, report)
	if rep.Inferences != printed || rep.Requested != 40 || !strings.HasPrefix(rep.Interrupted, "interrupted after ") {
		t.Errorf("report: inferences %d (printed %d), requested %d, interrupted %q", rep.Inferences, printed, rep.Requested, rep.Interrupted)
	}
	if !strings.Contains(stderr.String(), "scirun: interrupted after ") {
		t.Errorf("stderr: %s", stderr.String())
	}
}

// TestProgressLinesOffTerminal: with stderr not a terminal, a client's progress is plain lines
// (no carriage returns): connecting, waiting for the server, the set-up, then on each tick of
// the (injected) clock the inputs done, the rate, and the layer running.
func TestProgressLinesOffTerminal(t *testing.T) {
	full, client, data := program(t)
	in := batchFolder(t, data, 4)
	ts := startServer(t, "--party", "0", full, "--serve", "--quiet")
	e, _, stderr := testEnv()
	tick := make(chan time.Time)
	e.progress.Tick = tick
	stopTicks := make(chan struct{})
	go func() {
		for {
			select {
			case tick <- time.Now():
			case <-stopTicks:
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	err := run(context.Background(), []string{"--party", "1", client, "--connect", ts.addr, "--input", in}, e)
	close(stopTicks)
	if err != nil {
		t.Fatal(err)
	}
	s := stderr.String()
	if strings.Contains(s, "\r") || strings.Contains(s, "\033") {
		t.Errorf("control characters off a terminal: %q", s)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^secure run: [0-9.]+s connecting to ` + regexp.QuoteMeta(ts.addr) + `…$`),
		regexp.MustCompile(`(?m)^secure run: [0-9.]+s waiting for the server at ` + regexp.QuoteMeta(ts.addr) + `… \(a busy server queues its clients\)$`),
		regexp.MustCompile(`(?m)^secure run: [0-9.]+s setting up the session \(backend sciot`),
		regexp.MustCompile(`(?m)^secure run: [1-3]/4 done, [0-9.]+/s, ETA [0-9.]+s, [0-9.]+s running [0-9]+ [a-z]+`),
	} {
		if !want.MatchString(s) {
			t.Errorf("stderr has no line matching %s:\n%s", want, s)
		}
	}
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
}
