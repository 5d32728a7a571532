package ferret

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/iknp"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

var testOpt = transport.Options{Timeout: 30 * time.Second}

// tiny is a toy parameter set (no security) that makes many iterations
// cheap: 264 outputs per main iteration, a pre-iteration of 512.
var tiny = Config{
	Name: "tiny",
	Main: Params{N: 8 << 6, T: 8, K: 200, LogBin: 6},
	Pre:  Params{N: 4 << 7, T: 4, K: 100, LogBin: 7},
}

// tinyOdd has one partial frame of trees (T = 19 > 16) and no pre-iteration.
var tinyOdd = Config{
	Name: "tinyOdd",
	Main: Params{N: 19 << 5, T: 19, K: 150, LogBin: 5},
}

// tinyMany has ten frames of trees (the last one partial), so that several
// workers each take runs of frames.
var tinyMany = Config{
	Name: "tinyMany",
	Main: Params{N: 147 << 4, T: 147, K: 300, LogBin: 4},
}

// otPair returns two OT sessions over an in-memory pipe.
func otPair(t testing.TB) (*ot.Session, *ot.Session) {
	t.Helper()
	c0, c1 := transport.Pipe(testOpt)
	t.Cleanup(func() { c0.Close(); c1.Close() })
	ctx := context.Background()
	var s0, s1 *ot.Session
	testenv.MustBoth(t, func() (err error) { s0, err = iknp.NewSession(ctx, c0, 0); return },
		func() (err error) { s1, err = iknp.NewSession(ctx, c1, 1); return })
	return s0, s1
}

func cotPair(t testing.TB, cfg Config, opt Options) (*COT, *COT) {
	t.Helper()
	s0, s1 := otPair(t)
	ctx := context.Background()
	var snd, rcv *COT
	testenv.MustBoth(t, func() (err error) { snd, err = New(ctx, s0, Sender, cfg, opt); return },
		func() (err error) { rcv, err = New(ctx, s1, Receiver, cfg, opt); return })
	return snd, rcv
}

// draw draws n COTs at both ends and checks M = K ⊕ b·Δ, with b the low
// bit of M and K's low bit clear; it returns the
// number of ones among the choice bits.
func draw(t *testing.T, snd, rcv *COT, n int) int {
	t.Helper()
	ctx := context.Background()
	k := make([]prg.Block, n)
	m := make([]prg.Block, n)
	b := make([]uint64, bitvec.Words(n)+1)
	for i := range b {
		b[i] = ^uint64(0) // garbage that Recv must overwrite / clear
	}
	testenv.MustBoth(t, func() error { return snd.Send(ctx, k) }, func() error { return rcv.Recv(ctx, b, m) })
	d := snd.Delta()
	ones := 0
	for i := 0; i < n; i++ {
		bi := bitvec.Bit(b, i)
		want := k[i]
		if bi == 1 {
			want = want.Xor(d)
		}
		if m[i] != want {
			t.Fatalf("COT %d of %d (used %d): b=%d K=%x M=%x Δ=%x", i, n, snd.Used(), bi, k[i], m[i], d)
		}
		if k[i][0]&1 != 0 || m[i][0]&1 != bi {
			t.Fatalf("COT %d of %d: the low bits of K (%d) and M (%d) are not 0 and b = %d", i, n, k[i][0]&1, m[i][0]&1, bi)
		}
		ones += int(bi)
	}
	if r := n % 64; r != 0 && b[n/64]>>r != 0 {
		t.Fatalf("bits past n=%d not cleared: %x", n, b[n/64])
	}
	return ones
}

func TestCOTCorrelation(t *testing.T) {
	for _, cfg := range []Config{tiny, tinyOdd, tinyMany, cacheCfg} { // cacheCfg: several units per draw, built by several workers
		for _, workers := range []int{1, 2, 3} {
			snd, rcv := cotPair(t, cfg, Options{Workers: workers})
			if snd.Delta() == (prg.Block{}) {
				t.Fatal("zero Δ")
			}
			r := rand.New(rand.NewPCG(7, uint64(workers)))
			sizes := []int{1, 0, 63, 64, 65, 1, cfg.Main.Output(), 2*cfg.Main.Output() + 3, 1000}
			for range 10 {
				sizes = append(sizes, 1+r.IntN(700))
			}
			ones, total := 0, 0
			for _, n := range sizes {
				ones += draw(t, snd, rcv, n)
				total += n
			}
			if snd.Iterations() < 4 || snd.Iterations() != rcv.Iterations() {
				t.Fatalf("%s: iterations %d / %d", cfg.Name, snd.Iterations(), rcv.Iterations())
			}
			// The choice bits are pseudorandom: far from all equal.
			if ones < total/3 || ones > 2*total/3 {
				t.Fatalf("%s: %d ones among %d choice bits", cfg.Name, ones, total)
			}
		}
	}
}
