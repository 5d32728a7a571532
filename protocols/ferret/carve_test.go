package ferret

import (
	"context"
	"errors"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// Renew and Carve: carved sessions drawn in different orders at the two
// parties still pair the right COTs (each draws from its own range), a
// carved session never refills, and Renew drops the same leftover at both
// parties and refills in both directions without a deadlock.
func TestRenewAndCarve(t *testing.T) {
	f0, f1 := sessionPair(t, tiny)
	ctx := context.Background()
	out := tiny.Main.Output()
	// Leave fewer than 100 COTs in both directions, then renew.
	testenv.MustBoth(t, func() error { return drain(ctx, f0, 100) }, func() error { return drain(ctx, f1, 100) })
	s0, r0 := CoreOf(f0).Drawn()
	testenv.MustBoth(t, func() error { return CoreOf(f0).Renew(ctx, 100, 100) }, func() error { return CoreOf(f1).Renew(ctx, 100, 100) })
	if a, b := CoreOf(f0).Available(); a != out || b != out {
		t.Fatalf("after Renew: %d and %d available, want a fresh iteration's %d each", a, b, out)
	}
	if s1, r1 := CoreOf(f0).Drawn(); s1 <= s0 || r1 <= r0 {
		t.Fatalf("Renew did not count the dropped COTs: drawn %d,%d -> %d,%d", s0, r0, s1, r1)
	}
	// Three carved pairs; party 1 uses them in reverse order.
	const per = 30
	var c0, c1 [3]*ot.Session
	for i := range c0 {
		var err error
		if c0[i], err = f0.Carve(per, per); err != nil {
			t.Fatal(err)
		}
		if c1[i], err = f1.Carve(per, per); err != nil {
			t.Fatal(err)
		}
	}
	var got [3][]uint64
	var keep [3][]uint64
	var bits [3][]uint64
	testenv.MustBoth(t, func() error {
		for i := range c0 {
			keep[i] = make([]uint64, per)
			if err := c0[i].SendROTWide(ctx, 1, 32, keep[i], make([]uint64, per)); err != nil {
				return err
			}
		}
		return nil
	}, func() error {
		for i := len(c1) - 1; i >= 0; i-- {
			got[i], bits[i] = make([]uint64, per), make([]uint64, 1)
			if err := c1[i].RecvROTWide(ctx, 1, 32, bits[i], got[i]); err != nil {
				return err
			}
		}
		return nil
	})
	// With choice bit 0 the receiver holds the sender's first message.
	for i := range got {
		for j := range per {
			if bits[i][0]>>j&1 == 0 && got[i][j] != keep[i][j] {
				t.Fatalf("carved range %d, COT %d: receiver %x, sender m0 %x", i, j, got[i][j], keep[i][j])
			}
		}
	}
	// A carved session that runs dry fails instead of refilling.
	if err := c0[0].SendROTWide(ctx, 1, 32, make([]uint64, 1), make([]uint64, 1)); !errors.Is(err, errRefillHeld) {
		t.Fatalf("a draw beyond the carved range: %v", err)
	}
	// Carving more than is available is refused.
	if _, err := f0.Carve(out+1, 0); err == nil {
		t.Fatal("Carve beyond the reservoir succeeded")
	}
}

// drain draws as sender and receiver (random OT, no traffic) until fewer
// than keep COTs are left in each direction.
func drain(ctx context.Context, f *ot.Session, keep int) error {
	for {
		a, b := CoreOf(f).Available()
		if a < keep && b < keep {
			return nil
		}
		if n := a - keep/2; a >= keep {
			if err := f.SendROTWide(ctx, 1, 1, make([]uint64, n), make([]uint64, n)); err != nil {
				return err
			}
		}
		if n := b - keep/2; b >= keep {
			if err := f.RecvROTWide(ctx, 1, 1, make([]uint64, (n+63)/64), make([]uint64, n)); err != nil {
				return err
			}
		}
	}
}

// cacheCfg has 10 units of 8 trees (2^10 outputs each) per iteration.
var cacheCfg = Config{Name: "cache", Main: Params{N: 80 << 10, T: 80, K: 1000, LogBin: 10}}

// Units evicted from a two-unit cache and built again give the same COTs:
// four carved shares drawn in pieces, round-robin at the sender and in
// the reverse order with other piece sizes at the receiver, pair up COT by
// COT. A share drawn from after its reservoir refilled fails.
func TestUnitCacheRebuild(t *testing.T) {
	snd, rcv := cotPair(t, cacheCfg, Options{})
	ctx := context.Background()
	draw(t, snd, rcv, 5) // the first iteration
	snd.it.maxUnits, rcv.it.maxUnits = 2, 2
	const shares, per = 4, 6000
	var cs, cr [shares]*COT
	for i := range cs {
		cs[i], cr[i] = snd.carve(per+1), rcv.carve(per+1) // one left over
	}
	var k, m [shares][]prg.Block
	var b [shares][]uint64
	for i := range k {
		k[i], m[i], b[i] = make([]prg.Block, per), make([]prg.Block, per), make([]uint64, bitvec.Words(per))
	}
	testenv.MustBoth(t, func() error {
		for off := 0; off < per; off += 900 {
			for i := range cs {
				if err := cs[i].Send(ctx, k[i][off:min(per, off+900)]); err != nil {
					return err
				}
			}
		}
		return nil
	}, func() error {
		pb := make([]uint64, bitvec.Words(700))
		for off := 0; off < per; off += 700 {
			for i := shares - 1; i >= 0; i-- {
				n := min(per, off+700) - off
				if err := cr[i].Recv(ctx, pb, m[i][off:off+n]); err != nil {
					return err
				}
				bitvec.Copy(b[i], off, pb, 0, n)
			}
		}
		return nil
	})
	if len(snd.it.slots) != 2 {
		t.Fatalf("the cache holds %d units, want 2", len(snd.it.slots))
	}
	d := snd.Delta()
	for i := range k {
		for j := range per {
			want := k[i][j]
			if bitvec.Bit(b[i], j) == 1 {
				want = want.Xor(d)
			}
			if m[i][j] != want {
				t.Fatalf("share %d, COT %d: M=%x, K=%x, Δ=%x", i, j, m[i][j], k[i][j], d)
			}
		}
	}
	// Drain the parent into a refill; the old shares are stale then.
	draw(t, snd, rcv, snd.Available()+1)
	if err := cs[0].Send(ctx, make([]prg.Block, 1)); !errors.Is(err, errStale) {
		t.Fatalf("a draw from a share of a refilled reservoir: %v", err)
	}
}
