package streams

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

func pipes(t *testing.T, k int) (a, b []*transport.Conn) {
	t.Helper()
	for i := 0; i < k; i++ {
		x, y := transport.Pipe(transport.Options{Timeout: 10 * time.Second})
		t.Cleanup(func() { x.Close(); y.Close() })
		a, b = append(a, x), append(b, y)
	}
	return a, b
}

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
		a, _ := pipes(t, tc.k)
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
	a, b := pipes(t, 3)
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
	a, _ := pipes(t, 2)
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

func TestPartyAndHello(t *testing.T) {
	if _, err := Party("p", nil); err == nil || !strings.Contains(err.Error(), "p: New: no OT session") {
		t.Fatalf("no sessions: %v", err)
	}
	if _, err := Party("p", make([]*ot.Session, MaxStreams+1)); err == nil || !strings.Contains(err.Error(), "at most 255") {
		t.Fatalf("too many sessions: %v", err)
	}
	if _, err := Party("p", []*ot.Session{nil}); err == nil || !strings.Contains(err.Error(), "OT session 0 is nil") {
		t.Fatalf("nil session: %v", err)
	}
	a, b := pipes(t, 1)
	ctx := context.Background()
	var s0, s1 *ot.Session
	var e0, e1 error
	done := make(chan struct{})
	go func() { s1, e1 = ot.NewSession(ctx, b[0], 1); close(done) }()
	s0, e0 = ot.NewSession(ctx, a[0], 0)
	<-done
	if e0 != nil || e1 != nil {
		t.Fatal(e0, e1)
	}
	if p, err := Party("p", []*ot.Session{s0}); err != nil || p != 0 {
		t.Fatalf("Party = %d, %v", p, err)
	}
	if _, err := Party("p", []*ot.Session{s0, s1}); err == nil || !strings.Contains(err.Error(), "disagree") {
		t.Fatalf("mixed parties: %v", err)
	}
	var peer1 []byte
	done = make(chan struct{})
	go func() { peer1, e1 = Hello(ctx, "p", b[0], 0, []byte("from1")); close(done) }()
	peer0, e0 := Hello(ctx, "p", a[0], 0, []byte("from0"))
	<-done
	if e0 != nil || e1 != nil || string(peer0) != "from1" || string(peer1) != "from0" {
		t.Fatalf("Hello: %q %v, %q %v", peer0, e0, peer1, e1)
	}
	a[0].Close()
	if _, err := Hello(ctx, "p", a[0], 3, []byte("x")); err == nil || !strings.Contains(err.Error(), "p: New: hello on stream 3") {
		t.Fatalf("Hello on a closed conn: %v", err)
	}
}
