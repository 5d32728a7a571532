package nonlinear

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

func TestNewRejectsMismatch(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		l0, l1 int
		o0, o1 Options
		want   string
	}{
		{"ring", 32, 16, Options{}, Options{}, "Z_2^"},
		{"m", 32, 32, Options{M: 4}, Options{M: 7}, "Options.M: the peer's is 7"},
		{"alg5", 32, 32, Options{PaperTrunc: true}, Options{}, "PaperTrunc"},
		{"split", 32, 32, Options{MinSplit: 100}, Options{}, "Options.MinSplit"},
		{"triples", 32, 32, Options{Triples: TriplesROT}, Options{}, "triples from random OT"},
	} {
		ots := newOTPair(t, 1)
		e0, e1 := testenv.Both(func() error { _, err := New(ctx, ring.Must(tc.l0), tc.o0, ots.o0...); return err },
			func() error { _, err := New(ctx, ring.Must(tc.l1), tc.o1, ots.o1...); return err })
		if e0 == nil || e1 == nil || !strings.Contains(e0.Error(), tc.want) {
			t.Errorf("%s: got %v / %v, want errors mentioning %q", tc.name, e0, e1, tc.want)
		}
	}
}

func TestNewArgumentErrors(t *testing.T) {
	ctx := context.Background()
	ots := newOTPair(t, 1)
	for _, tc := range []struct {
		r   ring.Ring
		opt Options
	}{
		{ring.Must(1), Options{}},
		{ring.Ring{}, Options{}},
		{ring.Must(32), Options{M: 9}},
		{ring.Must(32), Options{M: -1}},
		{ring.Must(32), Options{MinSplit: 1}},
		{ring.Must(32), Options{Budget: 10}},
	} {
		if _, err := New(ctx, tc.r, tc.opt, ots.o0...); err == nil {
			t.Errorf("New(%v, %+v) succeeded", tc.r, tc.opt)
		}
	}
	if _, err := New(ctx, ring.Must(32), Options{}); err == nil {
		t.Error("New without OT sessions succeeded")
	}
	if _, err := New(ctx, ring.Must(32), Options{}, nil); err == nil {
		t.Error("New with a nil OT session succeeded")
	}
}

// Argument errors are found before anything is sent and leave the session
// usable.
func TestArgumentErrorsKeepSessionUsable(t *testing.T) {
	p := newPair(t, 32, Options{}, 1)
	ctx := context.Background()
	s := p.s0
	x := make([]uint64, 10)
	bad := []error{
		s.ReLU(ctx, make([]uint64, 9), x),
		s.DReLU(ctx, nil, x),
		s.Trunc(ctx, x, x, 64, false),
		s.Trunc(ctx, x, x, -1, false),
		s.Trunc(ctx, make([]uint64, 3), x, 3, false),
		s.Div(ctx, x, x, 0),
		s.MaxRows(ctx, make([]uint64, 3), x, 3, 3),
		s.ArgMaxRows(ctx, make([]uint64, 2), x, 2, 4),
		s.MaxRows(ctx, make([]uint64, 2), x, 2, 0),
		s.AvgRows(ctx, make([]uint64, 2), x, 2, 4),
		s.Millionaires(ctx, make([]uint64, 1), x, 65),
		s.Millionaires(ctx, make([]uint64, 1), x, 0),
		s.MUX(ctx, x, x, nil),
		s.B2A(ctx, x, nil),
		s.AND(ctx, nil, nil, nil, 100),
	}
	for i, err := range bad {
		if err == nil {
			t.Errorf("bad call %d succeeded", i)
		}
	}
	if s.Err() != nil {
		t.Fatalf("argument errors made the session unusable: %v", s.Err())
	}
	// The session still works.
	z0, z1 := make([]uint64, 10), make([]uint64, 10)
	p.run(t, func(ss *Session, party int) error {
		z := z0
		if party == 1 {
			z = z1
		}
		return ss.ReLU(ctx, z, make([]uint64, 10))
	})
}

// A peer that disappears makes the call fail promptly (not hang), and the
// session refuses further work.
func TestPeerDisconnect(t *testing.T) {
	p := newPair(t, 32, Options{}, 2)
	ctx := context.Background()
	x := make([]uint64, 10000)
	start := time.Now()
	e0, _ := testenv.Both(func() error { return p.s0.ReLU(ctx, make([]uint64, len(x)), x) },
		func() error {
			time.Sleep(20 * time.Millisecond)
			for _, c := range p.ots.c1 {
				c.Close()
			}
			return nil
		})
	if e0 == nil {
		t.Fatal("ReLU succeeded without a peer")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("failure took %v", time.Since(start))
	}
	if !errors.Is(e0, transport.ErrPeerClosed) {
		t.Logf("error (not ErrPeerClosed): %v", e0)
	}
	if p.s0.Err() == nil {
		t.Error("session usable after a failed protocol")
	}
	if err := p.s0.ReLU(ctx, make([]uint64, 3), make([]uint64, 3)); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Errorf("call after failure: %v", err)
	}
}

// Cancelling one party's context fails its call and, through the abort,
// the peer's call too.
func TestCancelAbortsPeer(t *testing.T) {
	p := newPair(t, 32, Options{}, 2)
	x := make([]uint64, 20000)
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()
	e0, e1 := testenv.Both(func() error {
		go func() { time.Sleep(10 * time.Millisecond); cancel() }()
		return p.s0.Trunc(ctx, make([]uint64, len(x)), x, 12, false)
	}, func() error { return p.s1.Trunc(context.Background(), make([]uint64, len(x)), x, 12, false) })
	if e0 == nil || e1 == nil {
		t.Fatalf("cancelled call: party 0 %v, party 1 %v", e0, e1)
	}
	if !errors.Is(e0, context.Canceled) {
		t.Errorf("party 0: %v, want context.Canceled", e0)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("failure took %v", time.Since(start))
	}
}

// Calls that disagree between the parties fail at both, without a timeout.
func TestMismatchedCallsFail(t *testing.T) {
	p := newPair(t, 32, Options{}, 1)
	ctx := context.Background()
	start := time.Now()
	e0, e1 := testenv.Both(func() error { return p.s0.ReLU(ctx, make([]uint64, 100), make([]uint64, 100)) },
		func() error { return p.s1.ReLU(ctx, make([]uint64, 200), make([]uint64, 200)) })
	if e0 == nil || e1 == nil {
		t.Fatalf("mismatched calls: %v / %v", e0, e1)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("failure took %v", time.Since(start))
	}
}
