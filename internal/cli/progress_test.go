package cli

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is an injected clock: Now returns the time last set.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// waitFor waits until sub occurs n times in l (the ticker draws after it received the tick).
func (l *lockedBuffer) waitFor(t *testing.T, sub string, n int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); strings.Count(l.String(), sub) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("no %d× %q in %q", n, sub, l.String())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestProgressLinesTick: off a terminal the progress is plain lines (no carriage returns or
// escapes): one when the status changes, one per clock tick, and the clock moves on while one
// layer runs (no Update between the ticks); a batch shows its items, rate and time left.
func TestProgressLinesTick(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &fakeClock{t: t0}
	tick := make(chan time.Time)
	var out lockedBuffer
	p := NewProgressWith(&out, "secure run", ProgressOptions{Mode: ProgressLines, Now: clock.Now, Tick: tick})
	p.Status("waiting for the server at 10.0.0.5:7070…")
	clock.set(t0.Add(2 * time.Second))
	p.Items(0, 50)
	p.Update(0, 850, "conv Convolution28")
	tick <- t0.Add(3 * time.Second)
	tick <- t0.Add(4 * time.Second) // the same layer still runs: the clock still moves
	out.waitFor(t, "\n", 3)
	clock.set(t0.Add(12 * time.Second))
	p.Items(5, 50)
	p.Update(5*17+3, 850, "relu ReLU32")
	tick <- t0.Add(12 * time.Second)
	out.waitFor(t, "\n", 4)
	p.Done()
	got := out.String()
	want := "secure run: 0.0s waiting for the server at 10.0.0.5:7070…\n" +
		"secure run: 0/50 done, 3.0s running conv Convolution28\n" +
		"secure run: 0/50 done, 4.0s running conv Convolution28\n" +
		"secure run: 5/50 done, 0.5/s, ETA 1m30s, 12s running relu ReLU32\n"
	if got != want {
		t.Errorf("lines:\n%s\nwant:\n%s", got, want)
	}
	if strings.ContainsAny(got, "\r\033") {
		t.Errorf("control characters off a terminal: %q", got)
	}
}

// TestProgressTerminalTicks: on a terminal the line is redrawn in place on every tick, with the
// running layer named and the time moving on, and Done erases it.
func TestProgressTerminalTicks(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := &fakeClock{t: t0}
	tick := make(chan time.Time)
	var out lockedBuffer
	p := NewProgressWith(&out, "secure run", ProgressOptions{Mode: ProgressTerminal, Now: clock.Now, Tick: tick})
	p.Update(1, 4, "conv Convolution110")
	for s := 1; s <= 3; s++ {
		tick <- t0.Add(time.Duration(s) * 7 * time.Second)
	}
	p.Done()
	got := out.String()
	for _, want := range []string{
		"\r\033[Ksecure run [#######.......................] 1/4 0.0s running conv Convolution110",
		"\r\033[Ksecure run [#######.......................] 1/4 7.0s running conv Convolution110",
		"\r\033[Ksecure run [#######.......................] 1/4 14s running conv Convolution110",
		"\r\033[Ksecure run [#######.......................] 1/4 21s running conv Convolution110\r\033[K",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}
}

// TestProgressOff: a Progress that is off, or nil, writes nothing and starts no clock.
func TestProgressOff(t *testing.T) {
	var out lockedBuffer
	p := NewProgress(&out, "x", false)
	p.Status("s")
	p.Update(1, 2, "d")
	p.Items(1, 2)
	p.Done()
	var nilp *Progress
	nilp.Update(1, 2, "d")
	nilp.Done()
	if out.String() != "" {
		t.Errorf("wrote %q", out.String())
	}
}
