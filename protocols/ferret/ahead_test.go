package ferret

import (
	"context"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// TestAhead: iterations run ahead cost exactly their flights when they run, then serve
// refills with no communication and correct correlations; past them, refills run online
// again. A share carved from an iteration that a refill retired fails as stale.
func TestAhead(t *testing.T) {
	ctx := context.Background()
	for _, cfg := range []Config{tiny, tinyOdd, tinyMany} {
		for _, workers := range []int{1, 3} {
			snd, rcv := cotPair(t, cfg, Options{Workers: workers})
			out := cfg.Main.Output()
			draw(t, snd, rcv, snd.Available()+5) // the pre-iteration's outputs, then the first iteration online
			if snd.OnlineIterations() != 1 || rcv.OnlineIterations() != 1 {
				t.Fatalf("%s: %d/%d online iterations after the first draw, want 1", cfg.Name, snd.OnlineIterations(), rcv.OnlineIterations())
			}
			const n = 3
			s0, r0 := snd.conn.Stats(), rcv.conn.Stats()
			testenv.MustBoth(t, func() error { return snd.Ahead(ctx, n) }, func() error { return rcv.Ahead(ctx, n) })
			if got, want := snd.conn.Stats().Sub(s0).BytesSent, n*IterationBytes(cfg.Main); got != want {
				t.Fatalf("%s: Ahead(%d) sent %d bytes, want %d", cfg.Name, n, got, want)
			}
			if got := rcv.conn.Stats().Sub(r0).BytesSent; got != 0 {
				t.Fatalf("%s: the receiver sent %d bytes while running ahead", cfg.Name, got)
			}
			if snd.Queued() != n || rcv.Queued() != n {
				t.Fatalf("%s: %d/%d queued, want %d", cfg.Name, snd.Queued(), rcv.Queued(), n)
			}
			// Everything left in the current iteration and n more, in uneven draws.
			s0, r0 = snd.conn.Stats(), rcv.conn.Stats()
			left := snd.Available() + n*out
			for _, k := range []int{1, 63, out + 1, 700} {
				k = min(k, left)
				draw(t, snd, rcv, k)
				left -= k
			}
			draw(t, snd, rcv, left)
			if d0, d1 := snd.conn.Stats().Sub(s0), rcv.conn.Stats().Sub(r0); d0.BytesSent+d1.BytesSent != 0 {
				t.Fatalf("%s: drawing from iterations run ahead sent %d + %d bytes", cfg.Name, d0.BytesSent, d1.BytesSent)
			}
			if snd.OnlineIterations() != 1 || rcv.OnlineIterations() != 1 || snd.AheadTaken() != n || rcv.AheadTaken() != n ||
				snd.Queued() != 0 || snd.Available() != 0 {
				t.Fatalf("%s: online %d/%d, taken %d/%d, queued %d, available %d; want 1, %d, 0, 0", cfg.Name,
					snd.OnlineIterations(), rcv.OnlineIterations(), snd.AheadTaken(), rcv.AheadTaken(), snd.Queued(), snd.Available(), n)
			}
			// Past the queue: online again, with its flight.
			s0 = snd.conn.Stats()
			draw(t, snd, rcv, 1)
			if got, want := snd.conn.Stats().Sub(s0).BytesSent, IterationBytes(cfg.Main); snd.OnlineIterations() != 2 || got != want {
				t.Fatalf("%s: after the queue: %d online iterations, %d bytes; want 2, %d", cfg.Name, snd.OnlineIterations(), got, want)
			}
			// A carved share of an iteration that a refill from the queue retired is stale.
			testenv.MustBoth(t, func() error { return snd.Ahead(ctx, 1) }, func() error { return rcv.Ahead(ctx, 1) })
			share := snd.carve(10)
			snd.drop()
			if err := snd.refill(ctx); err != nil || snd.AheadTaken() != n+1 {
				t.Fatalf("%s: refill from the queue: %v (taken %d)", cfg.Name, err, snd.AheadTaken())
			}
			if _, err := share.view(ctx, 1, 1); err == nil {
				t.Fatalf("%s: a share of a retired iteration drew", cfg.Name)
			}
		}
	}
}

// TestCoreAhead: Core.Ahead with the amounts mirrored, then batches of derived OTs in both
// directions that use exactly the iterations run ahead send nothing but their own messages.
func TestCoreAhead(t *testing.T) {
	ctx := context.Background()
	f0, f1 := sessionPair(t, tiny)
	c0, c1 := CoreOf(f0), CoreOf(f1)
	testenv.MustBoth(t, func() error { return c0.Ahead(ctx, 2, 1) }, func() error { return c1.Ahead(ctx, 1, 2) })
	if got := c0.Counts(true); got != (Counts{Run: 2, Queued: 2}) {
		t.Fatalf("party 0 sender counts %+v", got)
	}
	if got := c1.Counts(false); got != (Counts{Run: 2, Queued: 2}) {
		t.Fatalf("party 1 receiver counts %+v", got)
	}
	out := tiny.Main.Output()
	// Party 0 sends ROTs for its pre-iteration's rest and two iterations; party 1 one.
	a0, a1 := c0.Available()
	n0, n1 := a0+2*out, a1+out
	m0, m1, m := make([]uint64, n0), make([]uint64, n0), make([]uint64, n0)
	b := make([]uint64, (n0+63)/64)
	testenv.MustBoth(t, func() error { return f0.SendROT(ctx, 16, m0, m1) }, func() error { return f1.RecvROT(ctx, 16, b, m) })
	for i := range m {
		want := m0[i]
		if b[i/64]>>(i%64)&1 == 1 {
			want = m1[i]
		}
		if m[i] != want {
			t.Fatalf("ROT %d: got %x, want %x", i, m[i], want)
		}
	}
	p0, p1, p := make([]uint64, n1), make([]uint64, n1), make([]uint64, n1)
	testenv.MustBoth(t, func() error { return f1.SendROT(ctx, 16, p0, p1) }, func() error { return f0.RecvROT(ctx, 16, b, p) })
	for _, c := range []*Core{c0, c1} {
		if s, r := c.Counts(true), c.Counts(false); s.Online+r.Online != 0 || s.Queued+r.Queued != 0 || s.Taken+r.Taken != 3 {
			t.Fatalf("party %d: sender %+v, receiver %+v: want every iteration taken from the queue, none online", c.Party(), s, r)
		}
	}
	if err := c0.Ahead(ctx, -1, 0); err == nil {
		t.Fatal("a negative count was accepted")
	}
}

// TestPrebuild: the outputs of the current iteration's remaining units and of a queued
// iteration built ahead (at one party only: it is local work) are drawn with no unit built at
// the draw and the same correlations; a budget too small builds nothing; the iteration after
// them is built as it is drawn again.
func TestPrebuild(t *testing.T) {
	ctx := context.Background()
	for _, workers := range []int{1, 2} {
		snd, rcv := cotPair(t, cacheCfg, Options{Workers: workers})
		out := cacheCfg.Main.Output()
		draw(t, snd, rcv, 3*unitRows+5) // the first iteration online, into its fourth unit
		testenv.MustBoth(t, func() error { return snd.Ahead(ctx, 2) }, func() error { return rcv.Ahead(ctx, 2) })
		units := snd.it.units()
		cur := BuiltBytes(unitRows, units-3, Sender)
		all := ^uint64(0)
		if got, _ := snd.PrebuildCurrent(BuiltBytes(unitRows, 1, Sender)-1, all); got != 0 {
			t.Fatalf("a budget one byte short of a unit built %d bytes", got)
		}
		if got, n := snd.PrebuildCurrent(1<<30, all); got != cur || n != uint64(snd.Available()) {
			t.Fatalf("PrebuildCurrent: %d bytes for %d COTs, want %d for %d", got, n, cur, snd.Available())
		}
		// The queued iteration: only the units holding its first 2 units' worth of outputs.
		want := uint64(2*unitRows - cacheCfg.Main.Reserve())
		if got, n := snd.PrebuildQueued(1<<30, want); got != BuiltBytes(unitRows, 2, Sender) || n != want {
			t.Fatalf("PrebuildQueued: %d bytes for %d COTs, want %d for %d", got, n, BuiltBytes(unitRows, 2, Sender), want)
		}
		if got, _ := rcv.PrebuildCurrent(1<<30, all); got != BuiltBytes(unitRows, units-3, Receiver) {
			t.Fatalf("receiver PrebuildCurrent: %d bytes, want %d", got, BuiltBytes(unitRows, units-3, Receiver))
		}
		if p := snd.Prebuilt(); p != cur+BuiltBytes(unitRows, 2, Sender) {
			t.Fatalf("Prebuilt %d", p)
		}
		b0, r0 := snd.builds, rcv.builds
		draw(t, snd, rcv, snd.Available()+out) // the rest of the current iteration and the first queued one
		if snd.builds-b0 != units-2 {
			t.Fatalf("the sender built %d units drawing, want the queued iteration's %d not prebuilt", snd.builds-b0, units-2)
		}
		if rcv.builds-r0 != units {
			t.Fatalf("the receiver built %d units, want the queued iteration's %d", rcv.builds-r0, units)
		}
		draw(t, snd, rcv, 100) // the second queued iteration, not prebuilt
		if snd.builds == b0 || snd.it.built {
			t.Fatalf("the iteration after the prebuilt ones was not built as drawn")
		}
		if snd.OnlineIterations() != 1 || snd.AheadTaken() != 2 {
			t.Fatalf("online %d, taken %d", snd.OnlineIterations(), snd.AheadTaken())
		}
	}
}

// TestPrebuildPartial: a budget of two units builds the two units the next draws need and no
// more; the draws past them build the rest as they go, with the same correlations.
func TestPrebuildPartial(t *testing.T) {
	snd, rcv := cotPair(t, cacheCfg, Options{})
	draw(t, snd, rcv, unitRows+7) // the first iteration, into its second unit
	units := snd.it.units()
	two := BuiltBytes(unitRows, 2, Receiver)
	got, n := rcv.PrebuildCurrent(two+BuiltBytes(unitRows, 1, Receiver)-1, ^uint64(0))
	if want := uint64(3*unitRows - rcv.pos); got != two || n != want {
		t.Fatalf("PrebuildCurrent: %d bytes for %d COTs, want %d for %d", got, n, two, want)
	}
	r0 := rcv.builds
	draw(t, snd, rcv, int(n))
	if rcv.builds != r0 {
		t.Fatalf("drawing the prebuilt units built %d", rcv.builds-r0)
	}
	draw(t, snd, rcv, snd.Available())
	if rcv.builds-r0 != units-3 {
		t.Fatalf("the rest built %d units, want %d", rcv.builds-r0, units-3)
	}
}
