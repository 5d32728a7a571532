package ottest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// A Source starts a fresh pair of sessions (party 0, party 1) of one OT source over new
// connections that time out after a few seconds.
type Source func(t testing.TB) (s0, s1 *ot.Session)

// headerSize is the size of the derived layer's batch header.
const headerSize = 24

// Conformance runs the conformance suite of the derived OT kinds on a source: every kind in
// both directions against its cleartext specification on random and edge sizes (0, 1, 63,
// 64, 65, the frame boundaries) and shapes (l = 1, 37, 64; w = 1, 3), the derived layer's own
// bytes against their formulas, and a header mismatch, which must fail both parties at once.
// Adding an OT source means implementing ot.Core and passing this suite.
func Conformance(t *testing.T, src Source) {
	t.Run("kinds", func(t *testing.T) { kinds(t, src) })
	t.Run("bytes", func(t *testing.T) { bytes(t, src) })
	t.Run("mismatch", func(t *testing.T) { mismatch(t, src) })
}

func kinds(t *testing.T, src Source) {
	s0, s1 := src(t)
	fr := s0.Core().Frame()
	sizes := []int{0, 1, 63, 64, 65, 1000}
	if !testing.Short() {
		sizes = append(sizes, fr-1, fr, fr+1)
	}
	r := rand.New(rand.NewPCG(7, 9))
	for _, n := range sizes {
		for _, sh := range []struct{ w, l int }{{1, 1}, {1, 64}, {3, 37}} {
			for dir := 0; dir < 2; dir++ {
				snd, rcv := s0, s1
				if dir == 1 {
					snd, rcv = s1, s0
				}
				name := fmt.Sprintf("n=%d w=%d l=%d dir=%d", n, sh.w, sh.l, dir)
				check1of2(t, name, snd, rcv, r, n, sh.w, sh.l)
			}
		}
		for _, N := range []int{2, 8, 256} {
			checkOTN(t, fmt.Sprintf("n=%d N=%d", n, N), s0, s1, r, n, N, 5)
			checkROTN(t, fmt.Sprintf("n=%d N=%d", n, N), s1, s0, n, N, 5)
		}
		checkBlock(t, fmt.Sprintf("n=%d", n), s1, s0, n)
	}
	checkOTN(t, "l=64", s1, s0, r, 300, 16, 64)
	checkROTN(t, "l=64", s0, s1, 300, 16, 64)
	checkROTN(t, "l=64 N=2", s1, s0, 100, 2, 64)
}

func randWords(r *rand.Rand, n int) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = r.Uint64()
	}
	return v
}

// check1of2 runs COT, RCOT, OT, ROT and ROTChosen of n instances of w l-bit words.
func check1of2(t *testing.T, name string, snd, rcv *ot.Session, r *rand.Rand, n, w, l int) {
	t.Helper()
	ctx := context.Background()
	mask := bitvec.Mask(l)
	nw := n * w
	bw := bitvec.Words(n) + 1
	type call struct {
		kind     string
		send     func(a, b []uint64) error
		recv     func(b, m []uint64) error
		random   bool // the receiver's bits are random
		chosenM  bool // the sender's a and b are chosen messages
		additive bool // COT: receiver gets r + b·x
	}
	calls := []call{
		{"COT", func(a, b []uint64) error { return snd.SendCOTWide(ctx, w, l, a, b) },
			func(b, m []uint64) error { return rcv.RecvCOTWide(ctx, w, l, b, m) }, false, false, true},
		{"RCOT", func(a, b []uint64) error { return snd.SendRCOTWide(ctx, w, l, a, b) },
			func(b, m []uint64) error { return rcv.RecvRCOTWide(ctx, w, l, b, m) }, true, false, true},
		{"OT", func(a, b []uint64) error { return snd.SendOTWide(ctx, w, l, a, b) },
			func(b, m []uint64) error { return rcv.RecvOTWide(ctx, w, l, b, m) }, false, true, false},
		{"ROT", func(a, b []uint64) error { return snd.SendROTWide(ctx, w, l, a, b) },
			func(b, m []uint64) error { return rcv.RecvROTWide(ctx, w, l, b, m) }, true, false, false},
		{"ROTChosen", func(a, b []uint64) error { return snd.SendROTChosenWide(ctx, w, l, a, b) },
			func(b, m []uint64) error { return rcv.RecvROTChosenWide(ctx, w, l, b, m) }, false, false, false},
	}
	for _, c := range calls {
		a, b := randWords(r, nw), randWords(r, nw)
		a0, b0 := append([]uint64(nil), a...), append([]uint64(nil), b...)
		bits := randWords(r, bw)
		bits0 := append([]uint64(nil), bits...)
		m := make([]uint64, nw)
		MustBoth(t, func() error { return c.send(a, b) }, func() error { return c.recv(bits, m) })
		if c.random {
			if n%64 != 0 && bits[n/64]>>(n%64) != 0 {
				t.Fatalf("%s %s: random choice bits past n are not cleared", c.kind, name)
			}
		} else if fmt.Sprint(bits) != fmt.Sprint(bits0) {
			t.Fatalf("%s %s: the receiver's choice bits changed", c.kind, name)
		}
		ones := 0
		for i := 0; i < n; i++ {
			bi := bitvec.Bit(bits, i)
			ones += int(bi)
			for k := 0; k < w; k++ {
				j := i*w + k
				var want uint64
				switch {
				case c.additive:
					if b[j]&^mask != 0 || fmt.Sprint(a[j]) != fmt.Sprint(a0[j]) {
						t.Fatalf("%s %s: r[%d]=%x exceeds l bits or x changed", c.kind, name, j, b[j])
					}
					want = (b[j] + bi*a[j]) & mask
				case c.chosenM:
					if a[j] != a0[j] || b[j] != b0[j] {
						t.Fatalf("%s %s: the sender's messages changed", c.kind, name)
					}
					want = a[j] & mask
					if bi == 1 {
						want = b[j] & mask
					}
				default:
					if a[j]&^mask != 0 || b[j]&^mask != 0 {
						t.Fatalf("%s %s: random messages exceed l bits", c.kind, name)
					}
					want = a[j]
					if bi == 1 {
						want = b[j]
					}
				}
				if m[j] != want {
					t.Fatalf("%s %s: instance %d word %d: got %x, want %x (choice %d)", c.kind, name, i, k, m[j], want, bi)
				}
			}
		}
		if c.random && n >= 1000 && (ones < n/3 || ones > 2*n/3) {
			t.Fatalf("%s %s: %d ones among %d random choice bits", c.kind, name, ones, n)
		}
		if !c.chosenM && !c.additive && n >= 1000 && l == 64 && a[0] == b[0] {
			t.Fatalf("%s %s: equal random messages", c.kind, name)
		}
	}
}

// checkOTN runs n 1-of-N OTs of l-bit messages, choices including 0 and N−1.
func checkOTN(t *testing.T, name string, snd, rcv *ot.Session, r *rand.Rand, n, N, l int) {
	t.Helper()
	ctx := context.Background()
	msgs := randWords(r, n*N)
	c := make([]uint8, n)
	for i := range c {
		c[i] = uint8(r.IntN(N))
	}
	if n > 1 {
		c[0], c[1] = 0, uint8(N-1)
	}
	out := make([]uint64, n)
	MustBoth(t, func() error { return snd.SendOTN(ctx, N, l, msgs) }, func() error { return rcv.RecvOTN(ctx, N, l, c, out) })
	for i := range out {
		if want := msgs[i*N+int(c[i])] & bitvec.Mask(l); out[i] != want {
			t.Fatalf("OTN %s l=%d: instance %d (choice %d): got %x, want %x", name, l, i, c[i], out[i], want)
		}
	}
}

// checkROTN runs n random 1-of-N OTs of l-bit messages: out[i] must be message c[i] of
// instance i; the choices must not all be equal (n ≥ 64: probability N^−63); with l = 64 the N
// messages of an instance must be pairwise distinct (a collision has probability about
// N²·2^−65) and the receiver's output must equal no unchosen one.
func checkROTN(t *testing.T, name string, snd, rcv *ot.Session, n, N, l int) {
	t.Helper()
	ctx := context.Background()
	msgs := make([]uint64, n*N)
	c := make([]uint8, n)
	out := make([]uint64, n)
	MustBoth(t, func() error { return snd.SendROTN(ctx, N, l, msgs) }, func() error { return rcv.RecvROTN(ctx, N, l, c, out) })
	seen := map[uint8]bool{}
	for i := range out {
		if int(c[i]) >= N {
			t.Fatalf("ROTN %s: instance %d: choice %d not below N=%d", name, i, c[i], N)
		}
		seen[c[i]] = true
		inst := msgs[i*N : (i+1)*N]
		if out[i] != inst[c[i]] {
			t.Fatalf("ROTN %s l=%d: instance %d (choice %d): got %x, want %x", name, l, i, c[i], out[i], inst[c[i]])
		}
		for v, x := range inst {
			if x&^bitvec.Mask(l) != 0 {
				t.Fatalf("ROTN %s l=%d: instance %d message %d has bits above l: %x", name, l, i, v, x)
			}
			if l == 64 {
				for u := range v {
					if inst[u] == x {
						t.Fatalf("ROTN %s: instance %d: messages %d and %d are equal (%x)", name, i, u, v, x)
					}
				}
			}
		}
	}
	if n >= 64 && len(seen) < 2 {
		t.Fatalf("ROTN %s: all %d choices are %v", name, n, seen)
	}
}

// checkBlock runs n block COTs: m_i = k_i ⊕ b_i·Δ with the sender's Δ for every instance.
func checkBlock(t *testing.T, name string, snd, rcv *ot.Session, n int) {
	t.Helper()
	ctx := context.Background()
	k, m := make([]prg.Block, n), make([]prg.Block, n)
	b := make([]uint64, bitvec.Words(n))
	MustBoth(t, func() error { return snd.SendBlockCOT(ctx, k) }, func() error { return rcv.RecvBlockCOT(ctx, b, m) })
	d := snd.Delta()
	if d == (prg.Block{}) {
		t.Fatal("Δ is zero")
	}
	for i := range m {
		want := k[i]
		if bitvec.Bit(b, i) == 1 {
			want = want.Xor(d)
		}
		if m[i] != want {
			t.Fatalf("block COT %s: instance %d: got %x, want %x", name, i, m[i], want)
		}
	}
}

// bytes checks the derived layer's own traffic against its formulas: the sender's replies (w·l
// bits per instance for COT, 2·w·l for OT, N·l for 1-of-N, one frame per Frame instances,
// after an 8-byte acknowledgement on a chosen-choice core), the receiver's derandomisation bits
// on a random-choice core (one per COT, one frame per Frame instances) and the 24-byte header.
// The receiver's bytes are checked exactly on a reservoir, where the batch first renews so that
// its draws send nothing, and on a dealt core (ot.DealtCore), whose draws send nothing between
// the parties — there random OT must send nothing at all and RCOT only the sender's header and
// w·l bits per instance; on other cores they include the core's own (e.g. IKNP's extension
// matrix) and are checked to be at least the formula.
func bytes(t *testing.T, src Source) {
	s0, s1 := src(t)
	ctx := context.Background()
	_, chosen := s0.Core().(ot.ChosenCore)
	_, native := s0.Core().(ot.OTNCore)
	_, silent := s0.Reservoir()          // after Renew, its draws send nothing
	_, dealt := s0.Core().(ot.DealtCore) // its draws send nothing between the parties
	fr := s0.Core().Frame()
	H := int64(transport.HeaderSize)
	frames := func(n, bitsPer int) int64 {
		var b int64
		for off := 0; off < n; off += fr {
			b += int64(transport.PackedBytes(min(fr, n-off)*bitsPer, 1)) + H
		}
		return b
	}
	ack := int64(0)
	if chosen {
		ack = 8 + H
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 64, 1000, fr + 3} {
		for _, c := range []struct {
			kind string
			v, k int // reply bits per instance per l; COTs per instance
			N    int
		}{{"COT", 1, 1, 0}, {"OT", 2, 1, 0}, {"ROTChosen", 0, 1, 0}, {"OTN", 8, 3, 8}, {"RCOT", 1, 1, 0}, {"ROT", 0, 1, 0}, {"ROTN", 0, 3, 8}} {
			if (c.kind == "RCOT" || c.kind == "ROT") && !dealt {
				continue // on other cores their bytes are the core's own (IKNP's extension, Ferret's refills)
			}
			if c.kind == "OTN" && native {
				continue // the core's own protocol (its tests check its bytes)
			}
			const w, l = 2, 13
			if res, ok := s0.Reservoir(); ok {
				r1, _ := s1.Reservoir()
				MustBoth(t, func() error { return res.Renew(ctx, n*c.k, n*c.k) }, func() error { return r1.Renew(ctx, n*c.k, n*c.k) })
				if a, _ := res.Available(); a < n*c.k {
					continue // more than a refill makes
				}
			}
			st0, st1 := s0.Conn().Stats(), s1.Conn().Stats()
			if c.kind == "ROTN" && native {
				// KK13: the receiver's extension (checked by the core's tests) and the header;
				// the sender only acknowledges — no message reply.
				MustBoth(t, func() error { return s0.SendROTN(ctx, c.N, 13, make([]uint64, n*c.N)) },
					func() error { return s1.RecvROTN(ctx, c.N, 13, make([]uint8, n), make([]uint64, n)) })
				if d0 := s0.Conn().Stats().Sub(st0); d0.BytesSent != ack {
					t.Fatalf("ROTN n=%d (native): sender sent %d bytes, want %d", n, d0.BytesSent, ack)
				}
				if d1 := s1.Conn().Stats().Sub(st1); d1.BytesSent < headerSize+H {
					t.Fatalf("ROTN n=%d (native): receiver sent %d bytes, want at least %d", n, d1.BytesSent, headerSize+H)
				}
				continue
			}
			var f0, f1 func() error
			switch c.kind {
			case "COT":
				f0 = func() error { return s0.SendCOTWide(ctx, w, l, make([]uint64, n*w), make([]uint64, n*w)) }
				f1 = func() error { return s1.RecvCOTWide(ctx, w, l, randWords(r, bitvec.Words(n)), make([]uint64, n*w)) }
			case "OT":
				f0 = func() error { return s0.SendOTWide(ctx, w, l, make([]uint64, n*w), make([]uint64, n*w)) }
				f1 = func() error { return s1.RecvOTWide(ctx, w, l, randWords(r, bitvec.Words(n)), make([]uint64, n*w)) }
			case "ROTChosen":
				f0 = func() error { return s0.SendROTChosenWide(ctx, w, l, make([]uint64, n*w), make([]uint64, n*w)) }
				f1 = func() error {
					return s1.RecvROTChosenWide(ctx, w, l, randWords(r, bitvec.Words(n)), make([]uint64, n*w))
				}
			case "OTN":
				f0 = func() error { return s0.SendOTN(ctx, c.N, l, make([]uint64, n*c.N)) }
				f1 = func() error { return s1.RecvOTN(ctx, c.N, l, make([]uint8, n), make([]uint64, n)) }
			case "ROTN":
				f0 = func() error { return s0.SendROTN(ctx, c.N, l, make([]uint64, n*c.N)) }
				f1 = func() error { return s1.RecvROTN(ctx, c.N, l, make([]uint8, n), make([]uint64, n)) }
			case "RCOT":
				f0 = func() error { return s0.SendRCOTWide(ctx, w, l, make([]uint64, n*w), make([]uint64, n*w)) }
				f1 = func() error { return s1.RecvRCOTWide(ctx, w, l, make([]uint64, bitvec.Words(n)), make([]uint64, n*w)) }
			case "ROT":
				f0 = func() error { return s0.SendROTWide(ctx, w, l, make([]uint64, n*w), make([]uint64, n*w)) }
				f1 = func() error { return s1.RecvROTWide(ctx, w, l, make([]uint64, bitvec.Words(n)), make([]uint64, n*w)) }
			}
			MustBoth(t, f0, f1)
			d0, d1 := s0.Conn().Stats().Sub(st0), s1.Conn().Stats().Sub(st1)
			wantS := int64(0)
			if c.v > 0 {
				wantS = ack
				bitsPer := c.v * w * l
				if c.kind == "OTN" {
					bitsPer = c.N * l
				}
				wantS += frames(n, bitsPer)
			}
			wantR := headerSize + H
			switch c.kind {
			case "RCOT": // random choices: the sender sends the header, the receiver nothing
				wantR, wantS = 0, wantS+headerSize+H
			case "ROT": // random choices and no reply: no header
				wantR = 0
			case "ROTN": // random choices (the COTs' own) and no message reply
				wantS, wantR = ack, 0
				if chosen {
					wantR = headerSize + H
				}
			}
			if !chosen && wantR > 0 && c.kind != "ROTN" { // one derandomisation bit per COT, one frame per Frame instances
				for off := 0; off < n; off += fr {
					wantR += int64(transport.PackedBytes(min(fr, n-off)*c.k, 1)) + H
				}
			}
			if d0.BytesSent != wantS || ((silent || dealt) && d1.BytesSent != wantR) || d1.BytesSent < wantR {
				t.Fatalf("%s n=%d: sender sent %d bytes (want %d), receiver %d (want %d; chosen-choice core: %v)",
					c.kind, n, d0.BytesSent, wantS, d1.BytesSent, wantR, chosen)
			}
		}
	}
}

// mismatch calls different kinds at the two parties: both must fail within the connections'
// timeout, the sessions must refuse further work, and argument errors must leave a session
// usable.
func mismatch(t *testing.T, src Source) {
	s0, s1 := src(t)
	ctx := context.Background()
	if err := s0.SendCOT(ctx, 0, make([]uint64, 3), make([]uint64, 3)); err == nil {
		t.Fatal("l=0 accepted")
	}
	if err := s1.RecvCOT(ctx, 8, nil, make([]uint64, 3)); err == nil {
		t.Fatal("short choice vector accepted")
	}
	if err := s1.RecvOTN(ctx, 8, 8, []uint8{8}, make([]uint64, 1)); err == nil {
		t.Fatal("choice 8 of N=8 accepted")
	}
	if s0.Err() != nil || s1.Err() != nil {
		t.Fatalf("argument errors made the sessions unusable: %v / %v", s0.Err(), s1.Err())
	}
	start := time.Now()
	e0, e1 := Both(func() error { return s0.SendCOT(ctx, 8, make([]uint64, 100), make([]uint64, 100)) },
		func() error { return s1.RecvOT(ctx, 8, make([]uint64, 2), make([]uint64, 100)) })
	if e0 == nil || e1 == nil {
		t.Fatalf("COT against OT: errors %v / %v, want both", e0, e1)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the mismatch took %v to fail: not at once", d)
	}
	if s0.Err() == nil || s1.Err() == nil {
		t.Fatal("the sessions stay usable after a mismatch")
	}
	if err := s0.SendCOT(ctx, 8, make([]uint64, 1), make([]uint64, 1)); err == nil {
		t.Fatal("a failed session accepted a call")
	}
}
