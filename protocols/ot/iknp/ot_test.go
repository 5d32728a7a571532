package iknp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// newPair returns two sessions over an in-memory pipe.
func newPair(t testing.TB, opt transport.Options) (*ot.Session, *ot.Session) {
	t.Helper()
	c0, c1 := transport.Pipe(opt)
	t.Cleanup(func() { c0.Close(); c1.Close() })
	ctx := context.Background()
	var s0, s1 *ot.Session
	e0, e1 := testenv.Both(func() (err error) { s0, err = NewSession(ctx, c0, 0); return },
		func() (err error) { s1, err = NewSession(ctx, c1, 1); return })
	if e0 != nil || e1 != nil {
		t.Fatalf("NewSession: %v / %v", e0, e1)
	}
	return s0, s1
}

var testOpt = transport.Options{Timeout: 20 * time.Second}

// headerSize is the size of the batch header of package ot's derived layer.
const headerSize = 24

// cotHeader is the batch header that package ot's COT receiver sends first: kind 2 (COT), l, w,
// n and the stream index ctr of the batch's first instance.
func cotHeader(l, w int, n, ctr uint64) [headerSize]byte {
	var b [headerSize]byte
	b[0], b[1] = 2, byte(l)
	binary.LittleEndian.PutUint32(b[4:], uint32(w))
	binary.LittleEndian.PutUint64(b[8:], n)
	binary.LittleEndian.PutUint64(b[16:], ctr)
	return b
}

// tcpPair returns two sessions over loopback TCP.
func tcpPair(t *testing.T) (*ot.Session, *ot.Session) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback TCP:", err)
	}
	defer ln.Close()
	ctx := context.Background()
	var c0, c1 *transport.Conn
	testenv.MustBoth(t, func() (err error) { c0, err = transport.Accept(ctx, ln, testOpt); return },
		func() (err error) { c1, err = transport.Dial(ctx, ln.Addr().String(), testOpt); return })
	t.Cleanup(func() { c0.Close(); c1.Close() })
	var s0, s1 *ot.Session
	testenv.MustBoth(t, func() (err error) { s0, err = NewSession(ctx, c0, 0); return },
		func() (err error) { s1, err = NewSession(ctx, c1, 1); return })
	return s0, s1
}

func randWords(r *rand.Rand, n int) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = r.Uint64()
	}
	return v
}

// inputs returns n·w test words: random, with edge values first (0, all
// ones, 2^(l-1), and garbage above bit l which must be ignored).
func inputs(r *rand.Rand, n, w, l int) []uint64 {
	v := randWords(r, n*w)
	edges := []uint64{0, ^uint64(0), 1 << (l - 1), bitvec.Mask(l), 1}
	for i := 0; i < len(v) && i < len(edges); i++ {
		v[i] = edges[i]
	}
	return v
}

// choices returns n packed choice bits: the first 64 all ones, the next 64
// all zeros, then random; garbage past n.
func choices(r *rand.Rand, n int) []uint64 {
	b := randWords(r, bitvec.Words(n)+1)
	if len(b) > 0 {
		b[0] = ^uint64(0)
	}
	if len(b) > 2 {
		b[1] = 0
	}
	return b
}

var sizes = []int{1, 63, 64, 65, 128, 129, 1000, chunkOTs + 200}

func TestCOT(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	r := rand.New(rand.NewPCG(1, 1))
	ctx := context.Background()
	for _, l := range []int{1, 2, 7, 8, 16, 31, 32, 33, 63, 64} {
		for _, n := range sizes {
			for _, w := range []int{1, 3} {
				if w > 1 && n > 1000 {
					continue
				}
				for dir := 0; dir < 2; dir++ {
					snd, rcv := s0, s1
					if dir == 1 {
						snd, rcv = s1, s0
					}
					x := inputs(r, n, w, l)
					b := choices(r, n)
					rr := make([]uint64, n*w)
					y := make([]uint64, n*w)
					testenv.MustBoth(t, func() error { return snd.SendCOTWide(ctx, w, l, x, rr) },
						func() error { return rcv.RecvCOTWide(ctx, w, l, b, y) })
					m := bitvec.Mask(l)
					for i := 0; i < n; i++ {
						for k := 0; k < w; k++ {
							j := i*w + k
							want := (rr[j] + bitvec.Bit(b, i)*x[j]) & m
							if rr[j]&^m != 0 || y[j] != want {
								t.Fatalf("l=%d n=%d w=%d dir=%d i=%d k=%d: r=%x y=%x want %x", l, n, w, dir, i, k, rr[j], y[j], want)
							}
						}
					}
				}
			}
		}
	}
}

func TestCOTWideLarge(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	r := rand.New(rand.NewPCG(2, 2))
	ctx := context.Background()
	// Several hash blocks per instance (w·l up to 1600 bits) and odd widths.
	for _, c := range []struct{ w, l int }{{2, 64}, {4, 33}, {5, 37}, {17, 32}, {25, 64}, {100, 16}} {
		n := 300
		x := inputs(r, n, c.w, c.l)
		b := choices(r, n)
		rr, y := make([]uint64, n*c.w), make([]uint64, n*c.w)
		testenv.MustBoth(t, func() error { return s0.SendCOTWide(ctx, c.w, c.l, x, rr) },
			func() error { return s1.RecvCOTWide(ctx, c.w, c.l, b, y) })
		m := bitvec.Mask(c.l)
		for i := 0; i < n; i++ {
			for k := 0; k < c.w; k++ {
				j := i*c.w + k
				if y[j] != (rr[j]+bitvec.Bit(b, i)*x[j])&m {
					t.Fatalf("w=%d l=%d: instance %d word %d wrong", c.w, c.l, i, k)
				}
			}
		}
		// The words of one instance are not all equal (independent pads).
		if c.w > 1 && rr[0] == rr[1] && rr[1] == rr[2%c.w] {
			t.Fatalf("w=%d: pad words repeat", c.w)
		}
	}
}

func TestChosenOT(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	r := rand.New(rand.NewPCG(3, 3))
	ctx := context.Background()
	for _, l := range []int{1, 5, 8, 32, 41, 64} {
		for _, n := range sizes {
			for _, w := range []int{1, 2, 7} {
				if w > 1 && n > 1000 {
					continue
				}
				for dir := 0; dir < 2; dir++ {
					snd, rcv := s0, s1
					if dir == 1 {
						snd, rcv = s1, s0
					}
					m0, m1 := inputs(r, n, w, l), randWords(r, n*w)
					b := choices(r, n)
					got := make([]uint64, n*w)
					testenv.MustBoth(t, func() error { return snd.SendOTWide(ctx, w, l, m0, m1) },
						func() error { return rcv.RecvOTWide(ctx, w, l, b, got) })
					mk := bitvec.Mask(l)
					for i := 0; i < n; i++ {
						for k := 0; k < w; k++ {
							j := i*w + k
							want := m0[j] & mk
							if bitvec.Bit(b, i) == 1 {
								want = m1[j] & mk
							}
							if got[j] != want {
								t.Fatalf("l=%d n=%d w=%d dir=%d i=%d: got %x want %x", l, n, w, dir, i, got[j], want)
							}
						}
					}
				}
			}
		}
	}
}

func TestROT(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	ctx := context.Background()
	for _, l := range []int{1, 32, 64} {
		for _, n := range sizes {
			for _, w := range []int{1, 2} {
				m0, m1 := make([]uint64, n*w), make([]uint64, n*w)
				b := make([]uint64, bitvec.Words(n))
				for i := range b {
					b[i] = ^uint64(0) // must be overwritten
				}
				m := make([]uint64, n*w)
				testenv.MustBoth(t, func() error { return s1.SendROTWide(ctx, w, l, m0, m1) },
					func() error { return s0.RecvROTWide(ctx, w, l, b, m) })
				ones, diff := 0, 0
				for i := 0; i < n; i++ {
					c := bitvec.Bit(b, i)
					ones += int(c)
					for k := 0; k < w; k++ {
						j := i*w + k
						want := m0[j]
						if c == 1 {
							want = m1[j]
						}
						if m[j] != want || m0[j]&^bitvec.Mask(l) != 0 {
							t.Fatalf("l=%d n=%d i=%d: wrong message", l, n, i)
						}
						if m0[j] != m1[j] {
							diff++
						}
					}
				}
				if n%64 != 0 && b[len(b)-1]>>(n%64) != 0 {
					t.Fatal("choice bits past n not cleared")
				}
				if n >= 1000 && (ones < n/3 || ones > 2*n/3) {
					t.Fatalf("n=%d: %d choice bits set, not random-looking", n, ones)
				}
				if l >= 32 && diff < n*w-1 {
					t.Fatalf("l=%d: m0 and m1 coincide %d times", l, n*w-diff)
				}
			}
		}
	}
}

func TestOTN(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	r := rand.New(rand.NewPCG(4, 4))
	ctx := context.Background()
	for _, N := range []int{2, 4, 8, 16, 128, 256} {
		for _, l := range []int{1, 2, 8, 33, 64} {
			for _, n := range []int{1, 65, 128, 1000, chunkOTs + 3} {
				if N*n > 1<<20 {
					continue
				}
				for dir := 0; dir < 2; dir++ {
					snd, rcv := s0, s1
					if dir == 1 {
						snd, rcv = s1, s0
					}
					msgs := inputs(r, n, N, l)
					c := make([]uint8, n)
					for i := range c {
						c[i] = uint8(r.IntN(N))
					}
					c[0] = uint8(N - 1)
					got := make([]uint64, n)
					testenv.MustBoth(t, func() error { return snd.SendOTN(ctx, N, l, msgs) },
						func() error { return rcv.RecvOTN(ctx, N, l, c, got) })
					for i := range got {
						if want := msgs[i*N+int(c[i])] & bitvec.Mask(l); got[i] != want {
							t.Fatalf("N=%d l=%d n=%d dir=%d i=%d: got %x want %x", N, l, n, dir, i, got[i], want)
						}
					}
				}
			}
		}
	}
}

// Mixed traffic in both directions keeps both streams in step.
func TestInterleavedDirections(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	r := rand.New(rand.NewPCG(5, 5))
	ctx := context.Background()
	for round := 0; round < 6; round++ {
		n := 100 + round*300
		x, b := randWords(r, n), choices(r, n)
		rr, y := make([]uint64, n), make([]uint64, n)
		msgs := randWords(r, 4*n)
		c := make([]uint8, n)
		for i := range c {
			c[i] = uint8(r.IntN(4))
		}
		got := make([]uint64, n)
		testenv.MustBoth(t, func() error {
			if err := s0.SendCOT(ctx, 32, x, rr); err != nil {
				return err
			}
			return s0.RecvOTN(ctx, 4, 3, c, got)
		}, func() error {
			if err := s1.RecvCOT(ctx, 32, b, y); err != nil {
				return err
			}
			return s1.SendOTN(ctx, 4, 3, msgs)
		})
		for i := 0; i < n; i++ {
			if y[i] != (rr[i]+bitvec.Bit(b, i)*x[i])&0xffffffff || got[i] != msgs[4*i+int(c[i])]&7 {
				t.Fatalf("round %d instance %d wrong", round, i)
			}
		}
	}
}

func TestZeroInstances(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	ctx := context.Background()
	if err := s0.SendCOT(ctx, 8, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s1.RecvOTN(ctx, 4, 2, nil, nil); err != nil {
		t.Fatal(err)
	}
	if s0.Conn().Stats().BytesSent != s1.Conn().Stats().BytesRecv {
		t.Fatal("an empty batch talked")
	}
}

// exchange returns the per-direction statistics of one batch.
func exchange(t *testing.T, s0, s1 *ot.Session, f0, f1 func() error) (transport.Stats, transport.Stats) {
	t.Helper()
	b0, b1 := s0.Conn().Stats(), s1.Conn().Stats()
	testenv.MustBoth(t, f0, f1)
	return s0.Conn().Stats().Sub(b0), s1.Conn().Stats().Sub(b1)
}

// Communication per batch, asserted exactly, and the amortised per-instance
// cost against CrypTFlow2 §2.2.2 (λ = 128): COT_l ≤ λ + l, OT_l ≤ λ + 2l,
// (N choose 1)-OT_l ≤ 2λ + N·l bits, excluding the one-time base OTs.
func TestCommunication(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	ctx := context.Background()
	const lambda = ot.Lambda
	// Receiver: header frame + one frame per chunk of cols·⌈nc/64⌉ words.
	recvBytes := func(n, cols int) int64 {
		b := int64(transport.HeaderSize + headerSize)
		for off := 0; off < n; off += chunkOTs {
			nc := min(chunkOTs, n-off)
			b += int64(transport.HeaderSize + cols*8*((nc+63)/64))
		}
		return b
	}
	// Sender: ack frame + one frame per chunk of ⌈nc·v·l/8⌉ bytes.
	sendBytes := func(n, v, l int) int64 {
		b := int64(transport.HeaderSize + 8)
		if v == 0 {
			return b
		}
		for off := 0; off < n; off += chunkOTs {
			nc := min(chunkOTs, n-off)
			b += int64(transport.HeaderSize + transport.PackedBytes(nc*v, l))
		}
		return b
	}
	check := func(name string, n int, st0, st1 transport.Stats, wantS, wantR int64, boundBits float64) {
		t.Helper()
		if st0.BytesSent != wantS || st1.BytesSent != wantR || st0.BytesRecv != wantR || st1.BytesRecv != wantS {
			t.Fatalf("%s n=%d: sender sent %d (want %d), receiver sent %d (want %d)", name, n, st0.BytesSent, wantS, st1.BytesSent, wantR)
		}
		if st0.Rounds != 1 || st1.Rounds != 1 {
			t.Fatalf("%s: rounds %d + %d, want 1 + 1", name, st0.Rounds, st1.Rounds)
		}
		// Amortised, all wire bytes included (headers, acks, frame headers).
		perOT := float64(8*(st0.BytesSent+st1.BytesSent)) / float64(n)
		if n%64 == 0 && n >= 1<<16 && perOT > boundBits*1.001 {
			t.Fatalf("%s n=%d: %.3f bits per instance > bound %.0f", name, n, perOT, boundBits)
		}
		// Payload without per-batch constants is within the bound exactly
		// when n is a multiple of 64 (no padding).
		payload := float64(8*(st0.PayloadSent()-8+st1.PayloadSent()-headerSize)) / float64(n)
		if n%64 == 0 && payload > boundBits {
			t.Fatalf("%s n=%d: payload %.3f bits per instance > bound %.0f", name, n, payload, boundBits)
		}
		t.Logf("%-10s n=%-6d %8.3f bits/OT on the wire (bound %.0f)", name, n, perOT, boundBits)
	}
	r := rand.New(rand.NewPCG(6, 6))
	// NewSession ends with a send at party 1, so its first receiver batch
	// continues that flight; warm up so that every batch below is 1 + 1.
	testenv.MustBoth(t, func() error { return s0.SendCOT(ctx, 8, []uint64{1}, []uint64{0}) },
		func() error { return s1.RecvCOT(ctx, 8, []uint64{1}, []uint64{0}) })
	for _, n := range []int{1000, 1 << 16} {
		b := choices(r, n)
		for _, l := range []int{1, 8, 32, 64} {
			x, rr, y := randWords(r, n), make([]uint64, n), make([]uint64, n)
			st0, st1 := exchange(t, s0, s1, func() error { return s0.SendCOT(ctx, l, x, rr) },
				func() error { return s1.RecvCOT(ctx, l, b, y) })
			check(fmt.Sprintf("COT_%d", l), n, st0, st1, sendBytes(n, 1, l), recvBytes(n, 128), lambda+float64(l))

			m0, m1, m := randWords(r, n), randWords(r, n), make([]uint64, n)
			st0, st1 = exchange(t, s0, s1, func() error { return s0.SendOT(ctx, l, m0, m1) },
				func() error { return s1.RecvOT(ctx, l, b, m) })
			check(fmt.Sprintf("OT_%d", l), n, st0, st1, sendBytes(n, 2, l), recvBytes(n, 128), lambda+2*float64(l))
		}
		w := 10
		xw, rw, yw := randWords(r, n*w), make([]uint64, n*w), make([]uint64, n*w)
		st0, st1 := exchange(t, s0, s1, func() error { return s0.SendCOTWide(ctx, w, 32, xw, rw) },
			func() error { return s1.RecvCOTWide(ctx, w, 32, b, yw) })
		check("COT_32x10", n, st0, st1, sendBytes(n, w, 32), recvBytes(n, 128), lambda+float64(w*32))

		m0, m1, m := make([]uint64, n), make([]uint64, n), make([]uint64, n)
		bb := make([]uint64, bitvec.Words(n))
		st0, st1 = exchange(t, s0, s1, func() error { return s0.SendROT(ctx, 64, m0, m1) },
			func() error { return s1.RecvROT(ctx, 64, bb, m) })
		check("ROT", n, st0, st1, sendBytes(n, 0, 64), recvBytes(n, 128), lambda)

		for _, c := range []struct{ N, l int }{{16, 2}, {8, 2}, {256, 1}, {4, 64}} {
			if n*c.N > 1<<21 {
				continue
			}
			msgs, ch, got := randWords(r, n*c.N), make([]uint8, n), make([]uint64, n)
			st0, st1 = exchange(t, s0, s1, func() error { return s0.SendOTN(ctx, c.N, c.l, msgs) },
				func() error { return s1.RecvOTN(ctx, c.N, c.l, ch, got) })
			check(fmt.Sprintf("OT%d_%d", c.N, c.l), n, st0, st1, sendBytes(n, c.N, c.l), recvBytes(n, kkCols), 2*lambda+float64(c.N*c.l))
		}
	}
}

func TestArgumentErrorsKeepSessionUsable(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	ctx := context.Background()
	ten := make([]uint64, 10)
	bad := []struct {
		name string
		err  error
	}{
		{"l=0", s0.SendCOT(ctx, 0, ten, ten)},
		{"l=65", s1.RecvCOT(ctx, 65, ten, ten)},
		{"w=0", s0.SendCOTWide(ctx, 0, 8, ten, ten)},
		{"w too big", s0.SendOTWide(ctx, ot.MaxWidth+1, 8, ten, ten)},
		{"len not multiple of w", s1.RecvCOTWide(ctx, 3, 8, ten, ten)},
		{"len(x) != len(r)", s0.SendCOT(ctx, 8, ten, ten[:9])},
		{"len(m0) != len(m1)", s0.SendOT(ctx, 8, ten, ten[:9])},
		{"short choice", s1.RecvCOT(ctx, 8, nil, ten)},
		{"short ROT choice", s1.RecvROT(ctx, 8, nil, ten)},
		{"N=3", s0.SendOTN(ctx, 3, 8, ten[:9])},
		{"N=512", s0.SendOTN(ctx, 512, 8, make([]uint64, 512))},
		{"N=1", s1.RecvOTN(ctx, 1, 8, []uint8{0}, ten[:1])},
		{"msgs not multiple of N", s0.SendOTN(ctx, 4, 8, ten)},
		{"choice >= N", s1.RecvOTN(ctx, 4, 8, []uint8{1, 4}, ten[:2])},
		{"len(c) != len(m)", s1.RecvOTN(ctx, 4, 8, []uint8{1}, ten[:2])},
		{"OTN l=0", s1.RecvOTN(ctx, 4, 0, []uint8{1}, ten[:1])},
	}
	for _, b := range bad {
		if b.err == nil || !strings.HasPrefix(b.err.Error(), "ot: ") {
			t.Errorf("%s: got %v, want an ot: error", b.name, b.err)
		}
	}
	// Nothing was sent, so the sessions still work.
	x, rr, y := []uint64{5, 6}, make([]uint64, 2), make([]uint64, 2)
	testenv.MustBoth(t, func() error { return s0.SendCOT(ctx, 8, x, rr) },
		func() error { return s1.RecvCOT(ctx, 8, []uint64{2}, y) })
	if y[0] != rr[0] || y[1] != (rr[1]+6)&0xff {
		t.Fatal("COT after argument errors is wrong")
	}
}

func TestPeerMismatchAborts(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name   string
		f0, f1 func(s0, s1 *ot.Session) error
	}{
		{"n differs", func(s0, _ *ot.Session) error { return s0.SendCOT(ctx, 8, make([]uint64, 100), make([]uint64, 100)) },
			func(_, s1 *ot.Session) error { return s1.RecvCOT(ctx, 8, make([]uint64, 4), make([]uint64, 200)) }},
		{"l differs", func(s0, _ *ot.Session) error { return s0.SendOT(ctx, 8, make([]uint64, 100), make([]uint64, 100)) },
			func(_, s1 *ot.Session) error { return s1.RecvOT(ctx, 9, make([]uint64, 2), make([]uint64, 100)) }},
		{"kind differs", func(s0, _ *ot.Session) error { return s0.SendOT(ctx, 8, make([]uint64, 100), make([]uint64, 100)) },
			func(_, s1 *ot.Session) error { return s1.RecvCOT(ctx, 8, make([]uint64, 2), make([]uint64, 100)) }},
		{"N differs", func(s0, _ *ot.Session) error { return s0.SendOTN(ctx, 8, 2, make([]uint64, 800)) },
			func(_, s1 *ot.Session) error { return s1.RecvOTN(ctx, 4, 2, make([]uint8, 200), make([]uint64, 200)) }},
		{"w differs", func(s0, _ *ot.Session) error {
			return s0.SendCOTWide(ctx, 2, 8, make([]uint64, 200), make([]uint64, 200))
		},
			func(_, s1 *ot.Session) error {
				return s1.RecvCOTWide(ctx, 1, 8, make([]uint64, 4), make([]uint64, 200))
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s0, s1 := newPair(t, testOpt)
			e0, e1 := testenv.Both(func() error { return c.f0(s0, s1) }, func() error { return c.f1(s0, s1) })
			if e0 == nil || !strings.Contains(e0.Error(), "receiver called") {
				t.Fatalf("sender: got %v, want a mismatch error", e0)
			}
			var ae *transport.AbortError
			if !errors.As(e1, &ae) {
				t.Fatalf("receiver: got %v, want the sender's abort", e1)
			}
			if s0.Err() == nil || s1.Err() == nil {
				t.Fatal("sessions still usable after a mismatch")
			}
			if err := s0.SendCOT(ctx, 8, []uint64{1}, []uint64{0}); err == nil || !strings.Contains(err.Error(), "unusable") {
				t.Fatalf("call after failure: %v", err)
			}
		})
	}
}

func TestPeerDisconnects(t *testing.T) {
	ctx := context.Background()
	opt := transport.Options{Timeout: 10 * time.Second}
	t.Run("receiver dies after its first chunk", func(t *testing.T) {
		s0, s1 := newPair(t, opt)
		n := 3 * chunkOTs
		e0, _ := testenv.Both(func() error { return s0.SendCOT(ctx, 32, make([]uint64, n), make([]uint64, n)) },
			func() error {
				// Send a valid header and one chunk of the extension matrix, then vanish.
				h := cotHeader(32, 1, uint64(n), s1.Core().Count(false))
				if err := s1.Conn().Send(ctx, h[:]); err != nil {
					return err
				}
				u := make([]uint64, 128*chunkOTs/64)
				if err := s1.Conn().SendUint64s(ctx, u); err != nil {
					return err
				}
				return s1.Conn().Close()
			})
		if !errors.Is(e0, transport.ErrPeerClosed) {
			t.Fatalf("sender: got %v, want ErrPeerClosed", e0)
		}
	})
	t.Run("sender dies before replying", func(t *testing.T) {
		s0, s1 := newPair(t, opt)
		n := 1000
		_, e1 := testenv.Both(func() error {
			var hb [headerSize]byte
			if err := s0.Conn().Recv(ctx, hb[:]); err != nil {
				return err
			}
			return s0.Conn().Close()
		}, func() error { return s1.RecvOTN(ctx, 16, 2, make([]uint8, n), make([]uint64, n)) })
		if !errors.Is(e1, transport.ErrPeerClosed) {
			t.Fatalf("receiver: got %v, want ErrPeerClosed", e1)
		}
	})
	t.Run("stalled peer times out", func(t *testing.T) {
		// The base OTs run under the generous test timeout (they can take longer than the short
		// one on a loaded machine); the stall is tested on a fork over a connection with the
		// short timeout, which needs only a hello.
		p0, p1 := newPair(t, opt)
		c0, c1 := transport.Pipe(transport.Options{Timeout: 300 * time.Millisecond})
		t.Cleanup(func() { c0.Close(); c1.Close() })
		var s0 *ot.Session
		if e0, e1 := testenv.Both(func() (err error) { s0, err = p0.Fork(ctx, c0); return },
			func() error { _, err := p1.Fork(ctx, c1); return err }); e0 != nil || e1 != nil {
			t.Fatalf("Fork: %v / %v", e0, e1)
		}
		err := s0.SendCOT(ctx, 32, make([]uint64, 10), make([]uint64, 10))
		if !errors.Is(err, transport.ErrTimeout) {
			t.Fatalf("got %v, want ErrTimeout", err)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		s0, _ := newPair(t, opt)
		cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		err := s0.RecvCOT(cctx, 32, make([]uint64, 1), make([]uint64, 10))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want context.DeadlineExceeded", err)
		}
	})
	t.Run("peer closes during NewSession", func(t *testing.T) {
		c0, c1 := transport.Pipe(opt)
		defer c0.Close()
		go func() {
			var hello [helloSize]byte
			_ = c1.Recv(ctx, hello[:])
			c1.Close()
		}()
		if _, err := NewSession(ctx, c0, 0); err == nil {
			t.Fatal("NewSession succeeded against a vanished peer")
		}
	})
}

func TestHandshakeErrors(t *testing.T) {
	ctx := context.Background()
	c0, c1 := transport.Pipe(testOpt)
	defer c0.Close()
	defer c1.Close()
	e0, e1 := testenv.Both(func() error { _, err := NewSession(ctx, c0, 0); return err },
		func() error { _, err := NewSession(ctx, c1, 0); return err })
	if e0 == nil || e1 == nil || !strings.Contains(e0.Error(), "both parties") {
		t.Fatalf("two party-0s: %v / %v", e0, e1)
	}
	if _, err := NewSession(ctx, c0, 2); err == nil {
		t.Fatal("party 2 accepted")
	}
	if _, err := NewSession(ctx, nil, 0); err == nil {
		t.Fatal("nil conn accepted")
	}
}

func TestForkConcurrentStreams(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	ctx := context.Background()
	a0, a1 := transport.Pipe(testOpt)
	defer a0.Close()
	defer a1.Close()
	var f0, f1 *ot.Session
	testenv.MustBoth(t, func() (err error) { f0, err = s0.Fork(ctx, a0); return },
		func() (err error) { f1, err = s1.Fork(ctx, a1); return })
	r := rand.New(rand.NewPCG(7, 7))
	n := 5000
	type res struct{ x, rr, y, b []uint64 }
	mk := func() *res { return &res{randWords(r, n), make([]uint64, n), make([]uint64, n), choices(r, n)} }
	main, fork := mk(), mk()
	// Root and fork run at the same time, in opposite directions.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	wg.Add(4)
	go func() { defer wg.Done(); errs[0] = s0.SendCOT(ctx, 16, main.x, main.rr) }()
	go func() { defer wg.Done(); errs[1] = s1.RecvCOT(ctx, 16, main.b, main.y) }()
	go func() { defer wg.Done(); errs[2] = f1.SendCOT(ctx, 16, fork.x, fork.rr) }()
	go func() { defer wg.Done(); errs[3] = f0.RecvCOT(ctx, 16, fork.b, fork.y) }()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("goroutine %d: %v", i, err)
		}
	}
	for _, v := range []*res{main, fork} {
		for i := 0; i < n; i++ {
			if v.y[i] != (v.rr[i]+bitvec.Bit(v.b, i)*v.x[i])&0xffff {
				t.Fatalf("instance %d wrong", i)
			}
		}
	}
	// The fork's pads are not the root's (independent streams).
	if main.rr[0] == fork.rr[0] && main.rr[1] == fork.rr[1] {
		t.Fatal("fork repeats the root's stream")
	}
	// Forks also do KK13.
	msgs, c, got := randWords(r, 16*100), make([]uint8, 100), make([]uint64, 100)
	for i := range c {
		c[i] = uint8(i % 16)
	}
	testenv.MustBoth(t, func() error { return f0.SendOTN(ctx, 16, 4, msgs) },
		func() error { return f1.RecvOTN(ctx, 16, 4, c, got) })
	for i := range got {
		if got[i] != msgs[16*i+int(c[i])]&15 {
			t.Fatal("KK13 on a fork is wrong")
		}
	}
}

func TestForkOrderMismatch(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	ctx := context.Background()
	a0, a1 := transport.Pipe(testOpt)
	defer a0.Close()
	defer a1.Close()
	s0.Core().(*iknpCore).sh.forks.Add(1) // party 0 "already forked once"
	e0, e1 := testenv.Both(func() error { _, err := s0.Fork(ctx, a0); return err },
		func() error { _, err := s1.Fork(ctx, a1); return err })
	if e0 == nil || e1 == nil || !strings.Contains(e0.Error(), "fork order") {
		t.Fatalf("got %v / %v, want fork-order errors", e0, e1)
	}
}

func TestBaseOT(t *testing.T) {
	c0, c1 := transport.Pipe(testOpt)
	defer c0.Close()
	defer c1.Close()
	ctx := context.Background()
	g0, g1 := prg.New(prg.Seed{1}), prg.New(prg.Seed{2})
	var b0, b1 *baseOTs
	testenv.MustBoth(t, func() (err error) { b0, err = runBaseOTs(ctx, c0, g0, 0); return },
		func() (err error) { b1, err = runBaseOTs(ctx, c1, g1, 1); return })
	for _, p := range []struct{ snd, rcv *baseOTs }{{b0, b1}, {b1, b0}} {
		for j := 0; j < numBase; j++ {
			kc, kn := p.snd.k0[j], p.snd.k1[j]
			if bitvec.Bit(p.rcv.choice, j) == 1 {
				kc, kn = kn, kc
			}
			if p.rcv.keys[j] != kc || p.rcv.keys[j] == kn {
				t.Fatalf("base OT %d: receiver key does not match the chosen sender key only", j)
			}
		}
	}
	if b0.k0[0] == b1.k0[0] {
		t.Fatal("the two directions share keys")
	}
}

func TestHadamardDistance(t *testing.T) {
	for a := 0; a < ot.MaxN; a++ {
		ca := hadamard(a)
		for b := a + 1; b < ot.MaxN; b++ {
			cb := hadamard(b)
			d := 0
			for h := 0; h < 2; h++ {
				for k := 0; k < 2; k++ {
					d += bits.OnesCount64(ca[h][k] ^ cb[h][k])
				}
			}
			if d != 128 {
				t.Fatalf("codewords %d and %d at distance %d", a, b, d)
			}
		}
	}
}

func TestCodeColumns(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	for _, nc := range []int{1, 7, 64, 100, 130, 1000} {
		c := make([]uint8, nc)
		for i := range c {
			c[i] = uint8(r.IntN(256))
		}
		c[0] = 255
		Wt := (nc + 63) / 64
		cb := make([]uint64, kkCols*Wt)
		for i := range cb {
			cb[i] = r.Uint64() // must be overwritten
		}
		codeColumns(cb, c, Wt, make([]uint64, 8*Wt))
		for i := 0; i < nc; i++ {
			cw := hadamard(int(c[i]))
			for j := 0; j < kkCols; j++ {
				want := cw[j/128][(j%128)/64] >> (j % 64) & 1
				if got := cb[j*Wt+i/64] >> (i % 64) & 1; got != want {
					t.Fatalf("nc=%d: column %d, instance %d: got %d want %d", nc, j, i, got, want)
				}
			}
		}
	}
}

// Steady-state batches must not allocate per instance (only a constant
// number of closures and frame buffers per batch).
func TestBatchesDoNotAllocatePerInstance(t *testing.T) {
	// Over TCP: net.Pipe allocates a timer per write deadline.
	s0, s1 := tcpPair(t)
	ctx := context.Background()
	allocs := func(n int) float64 {
		x, r, y, b := make([]uint64, n), make([]uint64, n), make([]uint64, n), make([]uint64, bitvec.Words(n))
		msgs, c, m := make([]uint64, 16*n), make([]uint8, n), make([]uint64, n)
		m0, m1 := make([]uint64, n), make([]uint64, n)
		run := func() {
			testenv.MustBoth(t, func() error {
				if err := s0.SendCOT(ctx, 32, x, r); err != nil {
					return err
				}
				if err := s0.SendROTChosen(ctx, 41, m0, m1); err != nil {
					return err
				}
				return s0.SendOTN(ctx, 16, 2, msgs)
			}, func() error {
				if err := s1.RecvCOT(ctx, 32, b, y); err != nil {
					return err
				}
				if err := s1.RecvROTChosen(ctx, 41, b, m); err != nil {
					return err
				}
				return s1.RecvOTN(ctx, 16, 2, c, m)
			})
		}
		run() // grow the scratch buffers
		return testing.AllocsPerRun(5, run)
	}
	small, big := allocs(2*chunkOTs), allocs(8*chunkOTs)
	t.Logf("allocations per COT+ROTChosen+OTN batches: %.0f (n=%d), %.0f (n=%d)", small, 2*chunkOTs, big, 8*chunkOTs)
	if big > small+16 || big > 200 {
		t.Fatalf("allocations grow with the batch size: %.0f at n=%d vs %.0f at n=%d", big, 8*chunkOTs, small, 2*chunkOTs)
	}
}
