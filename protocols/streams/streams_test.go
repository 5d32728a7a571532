package streams

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

var pipeOpt = transport.Options{Timeout: 10 * time.Second}

func TestParts(t *testing.T) {
	for _, tc := range []struct {
		k, minSplit, n, work, unit int
		want                       [][2]int
	}{
		{1, 1, 1000, 1000, 64, [][2]int{{0, 1000}}},
		{2, 2000, 1000, 1000, 64, [][2]int{{0, 1000}}}, // below the threshold
		{2, 100, 1000, 100, 64, [][2]int{{0, 448}, {448, 1000}}},
		{2, 100, 1000, 99, 64, [][2]int{{0, 1000}}}, // work decides, not n
		{4, 1, 100, 100, 64, [][2]int{{0, 100}}},    // fewer units than streams
		{3, 1, 10, 10, 1, [][2]int{{0, 3}, {3, 6}, {6, 10}}},
		{3, 1, 0, 0, 1, [][2]int{{0, 0}}},
	} {
		a, _ := ottest.Pipes(t, tc.k, pipeOpt)
		got := NewGroup("x", tc.minSplit, a).Parts(tc.n, tc.work, tc.unit)
		if len(got) != len(tc.want) {
			t.Fatalf("%+v: got %v", tc, got)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%+v: got %v", tc, got)
			}
		}
	}
}

func TestRunReportsRootCauseAndFails(t *testing.T) {
	a, b := ottest.Pipes(t, 3, pipeOpt)
	g := NewGroup("proto", 1, a)
	boom := errors.New("boom")
	err := g.Run(context.Background(), "Op", g.Parts(300, 300, 1), func(ctx context.Context, i, lo, hi int) error {
		if i == 1 {
			return boom
		}
		<-ctx.Done()
		return ctx.Err()
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "proto: Op: stream 1: boom") {
		t.Fatalf("Run: %v, want the root cause on stream 1", err)
	}
	if !errors.Is(g.Err(), boom) {
		t.Fatalf("Err: %v", g.Err())
	}
	if err := g.Usable("Next"); err == nil || !strings.Contains(err.Error(), "proto: Next: session unusable") {
		t.Fatalf("Usable: %v", err)
	}
	// Every connection was aborted: the peer's receives fail at once.
	for i, c := range b {
		if err := c.Recv(context.Background(), make([]byte, 1)); err == nil {
			t.Fatalf("peer stream %d: receive succeeded after the abort", i)
		}
	}
	// A later failure does not replace the first.
	_ = g.Fail(context.Background(), "Other", errors.New("later"))
	if !errors.Is(g.Err(), boom) {
		t.Fatalf("Err after a second failure: %v", g.Err())
	}
}

func TestRunSingleAndSuccess(t *testing.T) {
	a, _ := ottest.Pipes(t, 2, pipeOpt)
	g := NewGroup("proto", 10, a)
	seen := make([]int, 20)
	for _, n := range []int{5, 20} {
		if err := g.Run(context.Background(), "Op", g.Parts(n, n, 1), func(_ context.Context, i, lo, hi int) error {
			for j := lo; j < hi; j++ {
				seen[j]++
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	for j, c := range seen {
		if want := map[bool]int{true: 2, false: 1}[j < 5]; c != want {
			t.Fatalf("item %d ran %d times, want %d", j, c, want)
		}
	}
	if g.Err() != nil || g.Usable("Op") != nil {
		t.Fatalf("group failed after successful runs: %v", g.Err())
	}
}

func TestPartyAndOpen(t *testing.T) {
	if _, err := Party("p", nil); err == nil || !strings.Contains(err.Error(), "p: New: no OT session") {
		t.Fatalf("no sessions: %v", err)
	}
	if _, err := Party("p", make([]*ot.Session, MaxStreams+1)); err == nil || !strings.Contains(err.Error(), "at most 255") {
		t.Fatalf("too many sessions: %v", err)
	}
	if _, err := Party("p", []*ot.Session{nil}); err == nil || !strings.Contains(err.Error(), "OT session 0 is nil") {
		t.Fatalf("nil session: %v", err)
	}
	c0, c1 := ottest.Pipes(t, 2, pipeOpt)
	o0, o1 := ottest.Sessions(t, c0, c1) // a session and a fork of it per party
	s0, s1 := o0[0], o1[0]
	if p, err := Party("p", []*ot.Session{s0}); err != nil || p != 0 {
		t.Fatalf("Party = %d, %v", p, err)
	}
	if _, err := Party("p", []*ot.Session{s0, s1}); err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Fatalf("mixed parties: %v", err)
	}

	// Open: party, hello on every stream, and a group of them.
	ctx := context.Background()
	var e0, e1 error
	h := Hello{Magic: "TEST", Version: 1, Bits: 32, Params: []HelloParam{{Name: "Options.X", Value: 9}}}
	var p1 int
	var g1 *Group
	before := []int64{c0[0].Stats().BytesSent, c0[1].Stats().BytesSent}
	done := make(chan struct{})
	go func() { p1, g1, e1 = Open(ctx, "p", h, 10, o1); close(done) }()
	p0, g0, e0 := Open(ctx, "p", h, 10, o0)
	<-done
	if e0 != nil || e1 != nil || p0 != 0 || p1 != 1 {
		t.Fatalf("Open: party %d, %v; party %d, %v", p0, e0, p1, e1)
	}
	if parts := g0.Parts(100, 100, 1); len(parts) != 2 || len(g1.Parts(5, 5, 1)) != 1 {
		t.Fatalf("Open's group splits 100 items with MinSplit 10 into %v", parts)
	}
	for i, c := range c0 {
		if sent := c.Stats().BytesSent - before[i]; sent != int64(transport.HeaderSize+HelloSize(1)) {
			t.Fatalf("Open sent %d bytes on stream %d, want one hello of %d", sent, i, transport.HeaderSize+HelloSize(1))
		}
	}
	// A mismatch fails Open at both parties.
	h1 := h
	h1.Params = []HelloParam{{Name: "Options.X", Value: 8}}
	done = make(chan struct{})
	go func() { _, _, e1 = Open(ctx, "p", h1, 10, []*ot.Session{s1}); close(done) }()
	_, _, e0 = Open(ctx, "p", h, 10, []*ot.Session{s0})
	<-done
	if e0 == nil || e1 == nil || !strings.Contains(e0.Error(), "p: New: stream 0: the parties disagree on Options.X") {
		t.Fatalf("Open with different options: %v / %v", e0, e1)
	}
}

// exchange runs the hellos h0 (party 0) and h1 (party 1) of stream idx of nstreams over a fresh
// pipe and returns the bytes party 0 sent and both parties' errors.
func exchange(t *testing.T, h0, h1 Hello, nstreams0, nstreams1, idx0, idx1 int) (sent int64, e0, e1 error) {
	t.Helper()
	a, b := ottest.Pipes(t, 1, pipeOpt)
	ctx := context.Background()
	done := make(chan struct{})
	go func() { e1 = h1.Exchange(ctx, "p", b[0], nstreams1, idx1); close(done) }()
	e0 = h0.Exchange(ctx, "p", a[0], nstreams0, idx0)
	<-done
	return a[0].Stats().BytesSent, e0, e1
}

func TestHello(t *testing.T) {
	base := func(party int) Hello {
		return Hello{Magic: "TEST", Version: 3, Party: party, Bits: 37, Params: []HelloParam{
			{Name: "Options.Size", Value: 1 << 40}, HelloFlag("Options.Fast", true),
		}}
	}
	sent, e0, e1 := exchange(t, base(0), base(1), 3, 3, 2, 2)
	if e0 != nil || e1 != nil {
		t.Fatalf("matching hellos: %v / %v", e0, e1)
	}
	if want := int64(transport.HeaderSize + HelloSize(2)); sent != want || HelloSize(2) != 32 {
		t.Fatalf("a hello with 2 parameters sent %d bytes, want %d", sent, want)
	}
	for _, tc := range []struct {
		name         string
		edit         func(h *Hello)
		n1, idx1     int
		want0, want1 string
	}{
		{"magic", func(h *Hello) { h.Magic = "ELSE" }, 3, 2, "not a p session", "not a p session"},
		{"version", func(h *Hello) { h.Version = 4 }, 3, 2, "the peer speaks version 4, this party 3", "version 3, this party 4"},
		{"party", func(h *Hello) { h.Party = 0 }, 3, 2, "both parties are party 0", "both parties are party 0"},
		{"ring", func(h *Hello) { h.Bits = 32 }, 3, 2, "the peer uses Z_2^32, this party Z_2^37", "Z_2^37, this party Z_2^32"},
		{"streams", func(h *Hello) {}, 4, 2, "the peer has 4 streams", "the peer has 3 streams"},
		{"index", func(h *Hello) {}, 3, 1, "this is its stream 1", "this is its stream 2"},
		{"param", func(h *Hello) { h.Params[0].Value = 5 }, 3, 2,
			"stream 2: the parties disagree on Options.Size: the peer's is 5, this party's 1099511627776",
			"stream 2: the parties disagree on Options.Size: the peer's is 1099511627776, this party's 5"},
		{"flag", func(h *Hello) { h.Params[1] = HelloFlag("Options.Fast", false) }, 3, 2,
			"disagree on Options.Fast: the peer's is 0, this party's 1", "disagree on Options.Fast"},
	} {
		h1 := base(1)
		tc.edit(&h1)
		_, e0, e1 := exchange(t, base(0), h1, 3, tc.n1, 2, tc.idx1)
		if e0 == nil || e1 == nil || !strings.Contains(e0.Error(), tc.want0) || !strings.Contains(e1.Error(), tc.want1) ||
			!strings.HasPrefix(e0.Error(), "p: New: stream ") {
			t.Errorf("%s: got %v / %v, want errors with %q / %q", tc.name, e0, e1, tc.want0, tc.want1)
		}
	}
	// A hello that cannot be encoded is refused before anything is sent.
	for _, h := range []Hello{{Magic: "TOOLONG", Bits: 32}, {Magic: "TEST", Party: 2, Bits: 32}, {Magic: "TEST", Bits: 65}} {
		a, _ := ottest.Pipes(t, 1, pipeOpt)
		if err := h.Exchange(context.Background(), "p", a[0], 1, 0); err == nil || !strings.Contains(err.Error(), "invalid hello") {
			t.Errorf("%+v: %v", h, err)
		}
		if a[0].Stats().BytesSent != 0 {
			t.Errorf("%+v: an invalid hello was sent", h)
		}
	}
	a, _ := ottest.Pipes(t, 1, pipeOpt)
	if err := base(0).Exchange(context.Background(), "p", a[0], 1, 1); err == nil {
		t.Error("stream index 1 of 1 accepted")
	}
	a[0].Close()
	if err := base(0).Exchange(context.Background(), "p", a[0], 4, 3); err == nil || !strings.Contains(err.Error(), "p: New: hello on stream 3") {
		t.Fatalf("Hello on a closed conn: %v", err)
	}
}
