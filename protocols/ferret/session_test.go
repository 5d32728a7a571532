package ferret

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

func sessionPair(t testing.TB, cfg Config) (*ot.Session, *ot.Session) {
	t.Helper()
	s0, s1 := otPair(t)
	ctx := context.Background()
	var f0, f1 *ot.Session
	testenv.MustBoth(t, func() (err error) { f0, err = NewSession(ctx, s0, cfg, Options{}); return },
		func() (err error) { f1, err = NewSession(ctx, s1, cfg, Options{}); return })
	return f0, f1
}

func randWords(r *rand.Rand, n int) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = r.Uint64()
	}
	return v
}

// inputs: random words with edge values first (and garbage above bit l).
func inputs(r *rand.Rand, n, l int) []uint64 {
	v := randWords(r, n)
	edges := []uint64{0, ^uint64(0), 1 << (l - 1), bitvec.Mask(l), 1}
	for i := 0; i < len(v) && i < len(edges); i++ {
		v[i] = edges[i]
	}
	return v
}

// headerSize is the size of package ot's batch header.
const headerSize = 24

var sessionSizes = []int{0, 1, 63, 64, 65, 129, 1000, chunk + 77}

// sent returns the bytes the two parties sent during f.
func sent(a, b *ot.Session, f func()) (int64, int64) {
	s0, s1 := a.Conn().Stats(), b.Conn().Stats()
	f()
	return a.Conn().Stats().Sub(s0).BytesSent, b.Conn().Stats().Sub(s1).BytesSent
}

// refillBytes is what the refills of c's stream cost for the iterations run
// since it had run iters0.
func refillBytes(c *COT, iters0 int) int64 {
	return int64(c.Iterations()-iters0) * IterationBytes(c.Config().Main)
}

func TestDerived(t *testing.T) {
	f0, f1 := sessionPair(t, tiny)
	r := rand.New(rand.NewPCG(9, 9))
	ctx := context.Background()
	for _, l := range []int{1, 7, 32, 37, 64} {
		for _, n := range sessionSizes {
			for _, w := range []int{1, 3} {
				if w > 1 && n > 1000 {
					continue
				}
				for dir := 0; dir < 2; dir++ {
					snd, rcv := f0, f1
					if dir == 1 {
						snd, rcv = f1, f0
					}
					m := bitvec.Mask(l)
					nw := n * w
					it := CoreOf(snd).out.Iterations()
					const H = transport.HeaderSize

					// ROT: random choice bits, no communication but refills.
					m0, m1, mb := make([]uint64, nw), make([]uint64, nw), make([]uint64, nw)
					b := randWords(r, bitvec.Words(n)+1)
					bs, br := sent(snd, rcv, func() {
						testenv.MustBoth(t, func() error { return snd.SendROTWide(ctx, w, l, m0, m1) },
							func() error { return rcv.RecvROTWide(ctx, w, l, b, mb) })
					})
					if bs != refillBytes(CoreOf(snd).out, it) || br != 0 {
						t.Fatalf("ROT l=%d n=%d w=%d: sent %d/%d bytes", l, n, w, bs, br)
					}
					ones := 0
					for i := 0; i < n; i++ {
						bi := bitvec.Bit(b, i)
						ones += int(bi)
						for k := 0; k < w; k++ {
							j := i*w + k
							want := m0[j]
							if bi == 1 {
								want = m1[j]
							}
							if mb[j] != want || m0[j]&^m != 0 || m1[j]&^m != 0 {
								t.Fatalf("ROT l=%d n=%d w=%d i=%d k=%d", l, n, w, i, k)
							}
						}
					}
					if n >= 1000 && (ones < n/3 || ones > 2*n/3) {
						t.Fatalf("ROT: %d ones among %d random choice bits", ones, n)
					}
					if n >= 1000 && l >= 32 && m0[0] == m1[0] && m0[1] == m1[1] {
						t.Fatal("ROT: equal messages")
					}

					// COT with random choice: l·w bits per instance.
					for _, chosen := range []bool{false, true} {
						it = CoreOf(snd).out.Iterations()
						x := inputs(r, nw, l)
						rr, y := make([]uint64, nw), make([]uint64, nw)
						b := randWords(r, bitvec.Words(n)+1)
						var bs, br int64
						if chosen {
							bs, br = sent(snd, rcv, func() {
								testenv.MustBoth(t, func() error { return snd.SendCOTWide(ctx, w, l, x, rr) },
									func() error { return rcv.RecvCOTWide(ctx, w, l, b, y) })
							})
						} else {
							bs, br = sent(snd, rcv, func() {
								testenv.MustBoth(t, func() error { return snd.SendRCOTWide(ctx, w, l, x, rr) },
									func() error { return rcv.RecvRCOTWide(ctx, w, l, b, y) })
							})
						}
						wantS := refillBytes(CoreOf(snd).out, it)
						wantR := int64(0)
						if n > 0 && chosen {
							wantR += headerSize + H
						} else if n > 0 {
							wantS += headerSize + H
						}
						for off := 0; off < n; off += chunk {
							nc := min(chunk, n-off)
							wantS += int64(transport.PackedBytes(nc*w, l)) + H
							if chosen {
								wantR += int64((nc+7)/8) + H
							}
						}
						if bs != wantS || br != wantR {
							t.Fatalf("COT chosen=%v l=%d n=%d w=%d: sent %d/%d bytes, want %d/%d", chosen, l, n, w, bs, br, wantS, wantR)
						}
						for i := 0; i < n; i++ {
							for k := 0; k < w; k++ {
								j := i*w + k
								want := (rr[j] + bitvec.Bit(b, i)*x[j]) & m
								if y[j] != want || rr[j]&^m != 0 {
									t.Fatalf("COT chosen=%v l=%d n=%d w=%d i=%d: r=%x y=%x want %x", chosen, l, n, w, i, rr[j], y[j], want)
								}
							}
						}
					}

					// Chosen-message OT.
					it = CoreOf(snd).out.Iterations()
					a0, a1 := inputs(r, nw, l), randWords(r, nw)
					b = randWords(r, bitvec.Words(n)+1)
					got := make([]uint64, nw)
					bs, br = sent(snd, rcv, func() {
						testenv.MustBoth(t, func() error { return snd.SendOTWide(ctx, w, l, a0, a1) },
							func() error { return rcv.RecvOTWide(ctx, w, l, b, got) })
					})
					wantS, wantR := refillBytes(CoreOf(snd).out, it), int64(0)
					if n > 0 {
						wantR += headerSize + H
					}
					for off := 0; off < n; off += chunk {
						nc := min(chunk, n-off)
						wantS += int64(transport.PackedBytes(2*nc*w, l)) + H
						wantR += int64((nc+7)/8) + H
					}
					if bs != wantS || br != wantR {
						t.Fatalf("OT l=%d n=%d w=%d: sent %d/%d bytes, want %d/%d", l, n, w, bs, br, wantS, wantR)
					}
					for i := 0; i < n; i++ {
						for k := 0; k < w; k++ {
							j := i*w + k
							want := a0[j] & m
							if bitvec.Bit(b, i) == 1 {
								want = a1[j] & m
							}
							if got[j] != want {
								t.Fatalf("OT l=%d n=%d w=%d i=%d: got %x want %x", l, n, w, i, got[j], want)
							}
						}
					}
				}
			}
		}
	}
	if CoreOf(f0).out.Iterations() < 10 || CoreOf(f1).out.Iterations() < 10 {
		t.Fatalf("only %d/%d iterations: the test should span many", CoreOf(f0).out.Iterations(), CoreOf(f1).out.Iterations())
	}
}

func TestNarrowForms(t *testing.T) {
	f0, f1 := sessionPair(t, tinyOdd)
	r := rand.New(rand.NewPCG(2, 2))
	ctx := context.Background()
	const n, l = 777, 20
	x, rr, y := inputs(r, n, l), make([]uint64, n), make([]uint64, n)
	b := randWords(r, bitvec.Words(n))
	testenv.MustBoth(t, func() error { return f1.SendCOT(ctx, l, x, rr) }, func() error { return f0.RecvCOT(ctx, l, b, y) })
	for i := range y {
		if y[i] != (rr[i]+bitvec.Bit(b, i)*x[i])&bitvec.Mask(l) {
			t.Fatalf("COT %d", i)
		}
	}
	testenv.MustBoth(t, func() error { return f1.SendRCOT(ctx, l, x, rr) }, func() error { return f0.RecvRCOT(ctx, l, b, y) })
	for i := range y {
		if y[i] != (rr[i]+bitvec.Bit(b, i)*x[i])&bitvec.Mask(l) {
			t.Fatalf("RCOT %d", i)
		}
	}
	m0, m1, m := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	testenv.MustBoth(t, func() error { return f0.SendROT(ctx, l, m0, m1) }, func() error { return f1.RecvROT(ctx, l, b, m) })
	for i := range m {
		if (bitvec.Bit(b, i) == 0 && m[i] != m0[i]) || (bitvec.Bit(b, i) == 1 && m[i] != m1[i]) {
			t.Fatalf("ROT %d", i)
		}
	}
	testenv.MustBoth(t, func() error { return f0.SendOT(ctx, l, x, rr) }, func() error { return f1.RecvOT(ctx, l, b, m) })
	for i := range m {
		want := x[i]
		if bitvec.Bit(b, i) == 1 {
			want = rr[i]
		}
		if m[i] != want&bitvec.Mask(l) {
			t.Fatalf("OT %d", i)
		}
	}
}

func TestArgumentErrors(t *testing.T) {
	f0, _ := sessionPair(t, tinyOdd)
	ctx := context.Background()
	for name, err := range map[string]error{
		"l=0":         f0.SendCOT(ctx, 0, make([]uint64, 2), make([]uint64, 2)),
		"l=65":        f0.SendROT(ctx, 65, make([]uint64, 2), make([]uint64, 2)),
		"w=0":         f0.SendOTWide(ctx, 0, 8, make([]uint64, 2), make([]uint64, 2)),
		"ragged":      f0.SendCOTWide(ctx, 3, 8, make([]uint64, 4), make([]uint64, 4)),
		"len":         f0.SendCOT(ctx, 8, make([]uint64, 4), make([]uint64, 3)),
		"short bits":  f0.RecvCOT(ctx, 8, nil, make([]uint64, 3)),
		"short bits2": f0.RecvOT(ctx, 8, make([]uint64, 1), make([]uint64, 65)),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if f0.Err() != nil {
		t.Fatalf("argument errors made the session unusable: %v", f0.Err())
	}
	var c COT
	c.role = Receiver
	if c.Send(ctx, nil) == nil {
		t.Error("Send at a receiver accepted")
	}
}

func TestConfigMismatch(t *testing.T) {
	s0, s1 := otPair(t)
	ctx := context.Background()
	e0, e1 := testenv.Both(func() error { _, err := New(ctx, s0, Sender, tiny, Options{}); return err },
		func() error { _, err := New(ctx, s1, Receiver, tinyOdd, Options{}); return err })
	if e0 == nil || e1 == nil {
		t.Fatalf("mismatched configs accepted: %v / %v", e0, e1)
	}
	bad := Config{Name: "bad", Main: Params{N: 100, T: 3, K: 10, LogBin: 5}}
	if _, err := New(ctx, s0, Sender, bad, Options{}); err == nil {
		t.Fatal("invalid config accepted")
	}
	if err := (Config{Main: tiny.Main, Pre: Params{N: 64, T: 2, K: 10, LogBin: 5}}).Validate(); err == nil {
		t.Fatal("a pre-iteration too small for the main one accepted")
	}
}

// TestPeerGone: a refill whose peer has gone fails with an error (no hang,
// no panic) and makes the stream unusable.
func TestPeerGone(t *testing.T) {
	s0, s1 := otPair(t)
	ctx := context.Background()
	var snd, rcv *COT
	testenv.MustBoth(t, func() (err error) { snd, err = New(ctx, s0, Sender, tinyOdd, Options{}); return },
		func() (err error) { rcv, err = New(ctx, s1, Receiver, tinyOdd, Options{}); return })
	s0.Conn().Close()
	m := make([]prg.Block, tinyOdd.Main.Output()+1)
	if err := rcv.Recv(ctx, make([]uint64, bitvec.Words(len(m))), m); err == nil {
		t.Fatal("Recv with the sender gone succeeded")
	}
	if err := rcv.Recv(ctx, make([]uint64, 1), m[:1]); err == nil {
		t.Fatal("stream usable after a failed refill")
	}
	_ = snd
}

// TestFlights: a chosen-bit batch of many chunks that needs no refill is
// two flights (one per party); one that spans refills adds at most two per
// refill.
func TestFlights(t *testing.T) {
	f0, f1 := sessionPair(t, Small())
	ctx := context.Background()
	// Prime party 0's sending stream so that the next batch fits in the
	// reservoir.
	n := 3*chunk + 5
	testenv.MustBoth(t, func() error { return f0.SendROT(ctx, 8, make([]uint64, 1), make([]uint64, 1)) },
		func() error { return f1.RecvROT(ctx, 8, make([]uint64, 1), make([]uint64, 1)) })
	x, r, y := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	b := make([]uint64, bitvec.Words(n))
	st0, st1 := f0.Conn().Stats(), f1.Conn().Stats()
	testenv.MustBoth(t, func() error { return f0.SendCOT(ctx, 32, x, r) }, func() error { return f1.RecvCOT(ctx, 32, b, y) })
	r0, r1 := f0.Conn().Stats().Sub(st0).Rounds, f1.Conn().Stats().Sub(st1).Rounds
	if r0 != 1 || r1 != 1 {
		t.Fatalf("COT of %d without refill: %d + %d flights, want 1 + 1", n, r0, r1)
	}
	st0, st1 = f0.Conn().Stats(), f1.Conn().Stats()
	it := CoreOf(f0).out.Iterations()
	m := Small().Main.Output() + 1000
	a0, a1, got := make([]uint64, m), make([]uint64, m), make([]uint64, m)
	bm := make([]uint64, bitvec.Words(m))
	testenv.MustBoth(t, func() error { return f0.SendOT(ctx, 16, a0, a1) }, func() error { return f1.RecvOT(ctx, 16, bm, got) })
	refills := int64(CoreOf(f0).out.Iterations() - it)
	r0, r1 = f0.Conn().Stats().Sub(st0).Rounds, f1.Conn().Stats().Sub(st1).Rounds
	if refills < 1 || r0+r1 > 2+2*refills {
		t.Fatalf("OT of %d with %d refills: %d + %d flights", m, refills, r0, r1)
	}
}

func TestOTN(t *testing.T) {
	f0, f1 := sessionPair(t, tiny)
	r := rand.New(rand.NewPCG(4, 4))
	ctx := context.Background()
	for _, N := range []int{2, 4, 16, 256} {
		for _, l := range []int{1, 8, 37, 64} {
			for _, n := range []int{0, 1, 65, 700} {
				for dir := 0; dir < 2; dir++ {
					snd, rcv := f0, f1
					if dir == 1 {
						snd, rcv = f1, f0
					}
					msgs := inputs(r, n*N, l)
					c := make([]uint8, n)
					for i := range c {
						c[i] = uint8(r.IntN(N))
					}
					if n > 1 {
						c[0], c[1] = 0, uint8(N-1)
					}
					out := make([]uint64, n)
					it := CoreOf(snd).out.Iterations()
					bs, br := sent(snd, rcv, func() {
						testenv.MustBoth(t, func() error { return snd.SendOTN(ctx, N, l, msgs) },
							func() error { return rcv.RecvOTN(ctx, N, l, c, out) })
					})
					m := 0
					for 1<<m < N {
						m++
					}
					wantS, wantR := refillBytes(CoreOf(snd).out, it), int64(0)
					if n > 0 {
						wantR += headerSize + transport.HeaderSize
					}
					for off := 0; off < n; off += chunk {
						wantR += int64((min(chunk, n-off)*m+7)/8) + transport.HeaderSize
					}
					// The replies go in one frame per chunk, as every derived kind's (package ot).
					for off := 0; off < n; off += chunk {
						wantS += int64(transport.PackedBytes(min(chunk, n-off)*N, l)) + transport.HeaderSize
					}
					if bs != wantS || br != wantR {
						t.Fatalf("N=%d l=%d n=%d: sent %d/%d bytes, want %d/%d", N, l, n, bs, br, wantS, wantR)
					}
					for i := 0; i < n; i++ {
						if want := msgs[i*N+int(c[i])] & bitvec.Mask(l); out[i] != want {
							t.Fatalf("N=%d l=%d n=%d dir=%d i=%d c=%d: got %x want %x", N, l, n, dir, i, c[i], out[i], want)
						}
					}
				}
			}
		}
	}
	if err := f1.RecvOTN(ctx, 4, 8, []uint8{4}, make([]uint64, 1)); err == nil {
		t.Fatal("choice ≥ N accepted")
	}
	if err := f0.SendOTN(ctx, 3, 8, make([]uint64, 3)); err == nil {
		t.Fatal("N=3 accepted")
	}
	if f0.Err() != nil || f1.Err() != nil {
		t.Fatal("argument errors made a session unusable")
	}
}

func TestFork(t *testing.T) {
	f0, f1 := sessionPair(t, tinyOdd)
	c0, c1 := transport.Pipe(testOpt)
	t.Cleanup(func() { c0.Close(); c1.Close() })
	ctx := context.Background()
	var g0, g1 *ot.Session
	testenv.MustBoth(t, func() (err error) { g0, err = f0.Fork(ctx, c0); return },
		func() (err error) { g1, err = f1.Fork(ctx, c1); return })
	if CoreOf(g0).SenderCOT().Delta() != CoreOf(f0).SenderCOT().Delta() {
		t.Fatal("a fork's Δ differs from its parent's (same IKNP secret expected)")
	}
	// The parent and the fork run at the same time.
	const n, l = 3000, 16
	r := rand.New(rand.NewPCG(8, 8))
	x, y := inputs(r, n, l), inputs(r, n, l)
	rx, ry, ox, oy := make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, n)
	b := randWords(r, bitvec.Words(n))
	e0, e1 := testenv.Both(func() error {
		e0, e1 := testenv.Both(func() error { return f0.SendCOT(ctx, l, x, rx) }, func() error { return g0.SendCOT(ctx, l, y, ry) })
		return errors.Join(e0, e1)
	}, func() error {
		e0, e1 := testenv.Both(func() error { return f1.RecvCOT(ctx, l, b, ox) }, func() error { return g1.RecvCOT(ctx, l, b, oy) })
		return errors.Join(e0, e1)
	})
	if e0 != nil || e1 != nil {
		t.Fatal(e0, e1)
	}
	for i := 0; i < n; i++ {
		bi := bitvec.Bit(b, i)
		if ox[i] != (rx[i]+bi*x[i])&bitvec.Mask(l) || oy[i] != (ry[i]+bi*y[i])&bitvec.Mask(l) {
			t.Fatalf("instance %d wrong", i)
		}
	}
}

// TestMismatch: calls that differ between the parties fail at both (the
// batch header), also when the difference was an earlier random OT.
func TestMismatch(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		f0, f1 func(f0, f1 *ot.Session) error
	}{
		{"COT l", func(f0, _ *ot.Session) error { return f0.SendCOT(ctx, 8, make([]uint64, 100), make([]uint64, 100)) },
			func(_, f1 *ot.Session) error { return f1.RecvCOT(ctx, 9, make([]uint64, 2), make([]uint64, 100)) }},
		// The sender of a one-flight batch returns before the receiver's
		// check; it sees the abort at its next receive.
		{"RCOT n", func(f0, _ *ot.Session) error {
			if err := f0.SendRCOT(ctx, 8, make([]uint64, 100), make([]uint64, 100)); err != nil {
				return err
			}
			return f0.SendCOT(ctx, 8, make([]uint64, 10), make([]uint64, 10))
		}, func(_, f1 *ot.Session) error { return f1.RecvRCOT(ctx, 8, make([]uint64, 2), make([]uint64, 101)) }},
		{"COT vs OT", func(f0, _ *ot.Session) error { return f0.SendCOT(ctx, 8, make([]uint64, 100), make([]uint64, 100)) },
			func(_, f1 *ot.Session) error { return f1.RecvOT(ctx, 8, make([]uint64, 2), make([]uint64, 100)) }},
		{"OTN N", func(f0, _ *ot.Session) error { return f0.SendOTN(ctx, 4, 8, make([]uint64, 400)) },
			func(_, f1 *ot.Session) error { return f1.RecvOTN(ctx, 8, 8, make([]uint8, 100), make([]uint64, 100)) }},
		{"earlier ROT", func(f0, _ *ot.Session) error {
			if err := f0.SendROT(ctx, 8, make([]uint64, 5), make([]uint64, 5)); err != nil {
				return err
			}
			return f0.SendOT(ctx, 8, make([]uint64, 100), make([]uint64, 100))
		}, func(_, f1 *ot.Session) error {
			if err := f1.RecvROT(ctx, 8, make([]uint64, 1), make([]uint64, 6)); err != nil {
				return err
			}
			return f1.RecvOT(ctx, 8, make([]uint64, 2), make([]uint64, 100))
		}},
	}
	for _, c := range cases {
		f0, f1 := sessionPair(t, tinyOdd)
		e0, e1 := testenv.Both(func() error { return c.f0(f0, f1) }, func() error { return c.f1(f0, f1) })
		if e0 == nil || e1 == nil {
			t.Errorf("%s: party 0: %v; party 1: %v (both should fail)", c.name, e0, e1)
		}
	}
}
