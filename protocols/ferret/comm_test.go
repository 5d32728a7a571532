package ferret

import (
	"context"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// checkBytes sets up cfg, checks the setup's bytes, runs iters main
// iterations and checks their bytes against IterationBytes; it returns the
// bits per handed-out COT of a main iteration.
func checkBytes(t *testing.T, cfg Config, iters int) float64 {
	t.Helper()
	s0, s1 := otPair(t)
	ctx := context.Background()
	c0, c1 := s0.Conn(), s1.Conn()
	st0, st1 := c0.Stats(), c1.Stats()
	var snd, rcv *COT
	testenv.MustBoth(t, func() (err error) { snd, err = New(ctx, s0, Sender, cfg, Options{}); return },
		func() (err error) { rcv, err = New(ctx, s1, Receiver, cfg, Options{}); return })
	sent0, sent1 := c0.Stats().Sub(st0).BytesSent, c1.Stats().Sub(st1).BytesSent
	if got, want := sent0+sent1, SetupBytes(cfg); got != want {
		t.Fatalf("%s: setup sent %d + %d = %d bytes, want %d", cfg.Name, sent0, sent1, got, want)
	}
	// Drain what the pre-iteration left over, then run whole iterations.
	first := snd.Available()
	n := first + iters*cfg.Main.Output()
	k := make([]prg.Block, n)
	m := make([]prg.Block, n)
	b := make([]uint64, bitvec.Words(n))
	st0, st1 = c0.Stats(), c1.Stats()
	testenv.MustBoth(t, func() error { return snd.Send(ctx, k) }, func() error { return rcv.Recv(ctx, b, m) })
	d0, d1 := c0.Stats().Sub(st0), c1.Stats().Sub(st1)
	want := int64(iters) * IterationBytes(cfg.Main)
	if d0.BytesSent != want || d1.BytesSent != 0 {
		t.Fatalf("%s: %d iterations: sender sent %d bytes (want %d), receiver %d (want 0)", cfg.Name, iters, d0.BytesSent, want, d1.BytesSent)
	}
	if snd.Iterations() != iters || snd.Available() != 0 {
		t.Fatalf("%s: %d iterations, %d left; want %d, 0", cfg.Name, snd.Iterations(), snd.Available(), iters)
	}
	for _, i := range []int{0, first, n / 2, n - 1} {
		want := k[i]
		if bitvec.Bit(b, i) == 1 {
			want = want.Xor(snd.Delta())
		}
		if m[i] != want {
			t.Fatalf("%s: COT %d wrong", cfg.Name, i)
		}
	}
	return float64(8*IterationBytes(cfg.Main)) / float64(cfg.Main.Output())
}

func TestIterationBytes(t *testing.T) {
	checkBytes(t, tiny, 3)
	checkBytes(t, tinyOdd, 2)
	checkBytes(t, tinyMany, 3)
	// The formula itself, written out for B13(): 1280 trees of 2·13+1 blocks
	// in 80 frames.
	if got, want := IterationBytes(B13().Main), int64(1280*27*16+80*4); got != want {
		t.Fatalf("IterationBytes(B13()) = %d, want %d", got, want)
	}
	if got := B13().Main.Output(); got != 10485760-460000-1280*13 {
		t.Fatalf("B13() output %d", got)
	}
	// The secrets' lengths are what docs/ferret.md's LPN estimates were
	// computed for (emp-ot's k = 452,000 and 32,768 and Small's former
	// 65,536 estimate below 128 bits).
	if k, kp, ks := B13().Main.K, B13().Pre.K, Small().Main.K; k != 460000 || kp != 40000 || ks != 72000 {
		t.Fatalf("LPN secrets k = %d, %d (pre), %d (small): not the estimated sets", k, kp, ks)
	}
}

func TestSmallConfig(t *testing.T) {
	if testing.Short() {
		t.Skip("one 2^20 iteration per party")
	}
	bits := checkBytes(t, Small(), 1)
	t.Logf("small: %.3f bits per COT (%d COTs per iteration)", bits, Small().Main.Output())
}

func TestB13Config(t *testing.T) {
	if testing.Short() {
		t.Skip("one 10M-COT iteration per party and ~200 MB per party")
	}
	bits := checkBytes(t, B13(), 1)
	t.Logf("b13: %.4f bits per COT (%d COTs per iteration)", bits, B13().Main.Output())
	if bits > 0.5 {
		t.Fatalf("b13: %.4f bits per COT, want ≤ 0.5", bits)
	}
}
