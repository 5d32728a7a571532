package iknp

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// checkROTChosen checks the outputs of n random OTs with w words of l bits
// and choice bits b: the receiver holds m_{b_i}, the sender's messages are
// l-bit and (for l ≥ 32) not equal to each other.
func checkROTChosen(t *testing.T, name string, n, w, l int, b, m0, m1, m []uint64) {
	t.Helper()
	diff := 0
	for i := 0; i < n; i++ {
		for k := 0; k < w; k++ {
			j := i*w + k
			want := m0[j]
			if bitvec.Bit(b, i) == 1 {
				want = m1[j]
			}
			if m[j] != want || (m0[j]|m1[j])&^bitvec.Mask(l) != 0 {
				t.Fatalf("%s: instance %d word %d: got %x, want %x (m0 %x, m1 %x)", name, i, k, m[j], want, m0[j], m1[j])
			}
			if m0[j] != m1[j] {
				diff++
			}
		}
	}
	if l >= 32 && diff < n*w-1 {
		t.Fatalf("%s: m0 and m1 coincide %d times", name, n*w-diff)
	}
}

func TestROTChosen(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	r := rand.New(rand.NewPCG(11, 11))
	ctx := context.Background()
	for _, l := range []int{1, 19, 32, 41, 64} {
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
					// Garbage must be overwritten; choice bits past n are
					// the caller's and must be left alone.
					m0, m1, m := randWords(r, n*w), randWords(r, n*w), randWords(r, n*w)
					b := choices(r, n)
					b0 := slices.Clone(b)
					name := fmt.Sprintf("l=%d n=%d w=%d dir=%d", l, n, w, dir)
					if w == 1 {
						testenv.MustBoth(t, func() error { return snd.SendROTChosen(ctx, l, m0, m1) },
							func() error { return rcv.RecvROTChosen(ctx, l, b, m) })
					} else {
						testenv.MustBoth(t, func() error { return snd.SendROTChosenWide(ctx, w, l, m0, m1) },
							func() error { return rcv.RecvROTChosenWide(ctx, w, l, b, m) })
					}
					if !slices.Equal(b, b0) {
						t.Fatalf("%s: the choice bits were modified", name)
					}
					checkROTChosen(t, name, n, w, l, b, m0, m1, m)
				}
			}
		}
	}
	// 128-bit messages (w=2, l=64) and many hash blocks per instance.
	for _, c := range []struct{ w, l int }{{2, 64}, {5, 37}, {17, 64}} {
		n := 300
		m0, m1, m := make([]uint64, n*c.w), make([]uint64, n*c.w), make([]uint64, n*c.w)
		b := choices(r, n)
		testenv.MustBoth(t, func() error { return s0.SendROTChosenWide(ctx, c.w, c.l, m0, m1) },
			func() error { return s1.RecvROTChosenWide(ctx, c.w, c.l, b, m) })
		checkROTChosen(t, fmt.Sprintf("w=%d l=%d", c.w, c.l), n, c.w, c.l, b, m0, m1, m)
	}
}

// The receiver waits for nothing: one goroutine can run the whole receiver
// side and then the whole sender side.
func TestROTChosenNeedsNoReply(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(12, 12))
	const batches = 3
	n := []int{100, chunkOTs + 5, 64}
	var b, m, m0, m1 [batches][]uint64
	for k := range batches {
		b[k], m[k] = choices(r, n[k]), make([]uint64, n[k])
		m0[k], m1[k] = make([]uint64, n[k]), make([]uint64, n[k])
		if err := s1.RecvROTChosen(ctx, 41, b[k], m[k]); err != nil {
			t.Fatalf("receiver batch %d: %v", k, err)
		}
	}
	for k := range batches {
		if err := s0.SendROTChosen(ctx, 41, m0[k], m1[k]); err != nil {
			t.Fatalf("sender batch %d: %v", k, err)
		}
	}
	for k := range batches {
		checkROTChosen(t, fmt.Sprintf("batch %d", k), n[k], 1, 41, b[k], m0[k], m1[k], m[k])
	}
}

// Communication of ROTChosen, to the byte: the receiver sends the batch
// header and λ bits per instance (whole 64-instance words per chunk), the
// sender nothing; one flight per batch.
func TestROTChosenCommunication(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(13, 13))
	// Frames: the header, then one per chunk.
	recvBytes := func(n int) (bytes, frames int64) {
		bytes, frames = int64(transport.HeaderSize+headerSize), 1
		for off := 0; off < n; off += chunkOTs {
			nc := min(chunkOTs, n-off)
			bytes += int64(transport.HeaderSize + ot.Lambda*8*((nc+63)/64)) // λ columns of ⌈nc/64⌉ words
			frames++
		}
		return bytes, frames
	}
	// Start from a flight of party 0 so that each batch below is exactly
	// one new flight of party 1.
	handOver(t, s0, s1)
	for _, c := range []struct{ n, w, l int }{
		{1, 1, 64}, {63, 1, 19}, {64, 1, 1}, {1000, 1, 37}, {1 << 16, 1, 41}, {3*chunkOTs + 1, 2, 64}, {4096, 9, 64},
	} {
		b := choices(r, c.n)
		m0, m1, m := make([]uint64, c.n*c.w), make([]uint64, c.n*c.w), make([]uint64, c.n*c.w)
		st0, st1 := exchange(t, s0, s1, func() error { return s0.SendROTChosenWide(ctx, c.w, c.l, m0, m1) },
			func() error { return s1.RecvROTChosenWide(ctx, c.w, c.l, b, m) })
		name := fmt.Sprintf("n=%d w=%d l=%d", c.n, c.w, c.l)
		if st0.BytesSent != 0 || st0.FramesSent != 0 || st0.Rounds != 0 || st1.BytesRecv != 0 {
			t.Fatalf("%s: the sender sent %d bytes in %d frames", name, st0.BytesSent, st0.FramesSent)
		}
		wantB, wantF := recvBytes(c.n)
		if st1.BytesSent != wantB || st1.FramesSent != wantF || st0.BytesRecv != wantB || st0.FramesRecv != wantF {
			t.Fatalf("%s: receiver sent %d bytes in %d frames, want %d in %d", name, st1.BytesSent, st1.FramesSent, wantB, wantF)
		}
		if st1.Rounds != 1 {
			t.Fatalf("%s: %d receiver flights, want 1", name, st1.Rounds)
		}
		// Payload net of the batch header: exactly λ bits per instance
		// when n is a multiple of 64, whatever w and l.
		if c.n%64 == 0 {
			if got := 8 * (st1.PayloadSent() - headerSize); got != int64(ot.Lambda*c.n) {
				t.Fatalf("%s: %d payload bits, want λ·n = %d", name, got, ot.Lambda*c.n)
			}
		}
		checkROTChosen(t, name, c.n, c.w, c.l, b, m0, m1, m)
		handOver(t, s0, s1) // the next batch starts a new flight
	}
}

// handOver has from send one byte to to, so that to's next send starts a
// new flight.
func handOver(t *testing.T, from, to *ot.Session) {
	t.Helper()
	ctx := context.Background()
	testenv.MustBoth(t, func() error {
		if err := from.Conn().Send(ctx, []byte{1}); err != nil {
			return err
		}
		return from.Conn().Flush(ctx)
	}, func() error { return to.Conn().Recv(ctx, make([]byte, 1)) })
}

// The linear layers' use: per chunk, the receiver's flight carries the
// extension matrix of the random OTs together with its own message, and the
// sender answers with messages masked by its random pads (here: a chosen
// 1-of-2 OT derived from the random one). Two flights per chunk, and the
// ROTChosen batches interleave with the other calls of the session in both
// directions.
func TestROTChosenInterplay(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(14, 14))
	const chunks, n, w, l = 3, 500, 2, 64
	x0, x1 := randWords(r, chunks*n*w), randWords(r, chunks*n*w)
	b := choices(r, chunks*n)
	got := make([]uint64, chunks*n*w)
	ping := []byte("p1")
	handOver(t, s0, s1) // NewSession ended with a flight of party 1
	var st0, st1 transport.Stats
	testenv.MustBoth(t, func() error {
		before := s0.Conn().Stats()
		defer func() { st0 = s0.Conn().Stats().Sub(before) }()
		m0, m1 := make([]uint64, n*w), make([]uint64, n*w)
		e := make([]uint64, 2*n*w)
		for c := 0; c < chunks; c++ {
			if err := s0.SendROTChosenWide(ctx, w, l, m0, m1); err != nil {
				return err
			}
			p := make([]byte, len(ping))
			if err := s0.Conn().Recv(ctx, p); err != nil || string(p) != string(ping) {
				return fmt.Errorf("chunk %d: receiver's message: %q, %v", c, p, err)
			}
			for i := 0; i < n*w; i++ {
				e[i] = x0[c*n*w+i] ^ m0[i]
				e[n*w+i] = x1[c*n*w+i] ^ m1[i]
			}
			if err := s0.Conn().SendUint64s(ctx, e); err != nil {
				return err
			}
		}
		return s0.Conn().Flush(ctx)
	}, func() error {
		before := s1.Conn().Stats()
		defer func() { st1 = s1.Conn().Stats().Sub(before) }()
		m := make([]uint64, n*w)
		e := make([]uint64, 2*n*w)
		for c := 0; c < chunks; c++ {
			bc := b[c*n/64:] // n is not a multiple of 64: shift the bits
			bc = shiftBits(bc, c*n%64, n)
			if err := s1.RecvROTChosenWide(ctx, w, l, bc, m); err != nil {
				return err
			}
			if err := s1.Conn().Send(ctx, ping); err != nil {
				return err
			}
			if err := s1.Conn().RecvUint64s(ctx, e); err != nil {
				return err
			}
			for i := 0; i < n; i++ {
				sel := bitvec.Bit(bc, i)
				for k := 0; k < w; k++ {
					got[(c*n+i)*w+k] = e[int(sel)*n*w+i*w+k] ^ m[i*w+k]
				}
			}
		}
		return nil
	})
	for i := 0; i < chunks*n; i++ {
		for k := 0; k < w; k++ {
			j := i*w + k
			want := x0[j]
			if bitvec.Bit(b, i) == 1 {
				want = x1[j]
			}
			if got[j] != want {
				t.Fatalf("instance %d word %d: got %x want %x", i, k, got[j], want)
			}
		}
	}
	if st0.Rounds != chunks || st1.Rounds != chunks {
		t.Fatalf("flights %d + %d, want %d + %d", st0.Rounds, st1.Rounds, chunks, chunks)
	}

	// Other calls, in both directions, before and after ROTChosen batches.
	for round := 0; round < 3; round++ {
		nn := 200 + 700*round
		x, bb, rr, y := randWords(r, nn), choices(r, nn), make([]uint64, nn), make([]uint64, nn)
		cb, cm0, cm1, cm := choices(r, nn), make([]uint64, nn), make([]uint64, nn), make([]uint64, nn)
		rb, rm0, rm1, rm := make([]uint64, bitvec.Words(nn)), make([]uint64, nn), make([]uint64, nn), make([]uint64, nn)
		msgs, oc, om := randWords(r, 4*nn), make([]uint8, nn), make([]uint64, nn)
		for i := range oc {
			oc[i] = uint8(r.IntN(4))
		}
		testenv.MustBoth(t, func() error {
			if err := s0.RecvROTChosen(ctx, 19, cb, cm); err != nil {
				return err
			}
			if err := s0.SendCOT(ctx, 32, x, rr); err != nil {
				return err
			}
			if err := s0.SendROT(ctx, 64, rm0, rm1); err != nil {
				return err
			}
			return s0.RecvOTN(ctx, 4, 3, oc, om)
		}, func() error {
			if err := s1.SendROTChosen(ctx, 19, cm0, cm1); err != nil {
				return err
			}
			if err := s1.RecvCOT(ctx, 32, bb, y); err != nil {
				return err
			}
			if err := s1.RecvROT(ctx, 64, rb, rm); err != nil {
				return err
			}
			return s1.SendOTN(ctx, 4, 3, msgs)
		})
		checkROTChosen(t, fmt.Sprintf("round %d ROTChosen", round), nn, 1, 19, cb, cm0, cm1, cm)
		checkROTChosen(t, fmt.Sprintf("round %d ROT", round), nn, 1, 64, rb, rm0, rm1, rm)
		for i := 0; i < nn; i++ {
			if y[i] != (rr[i]+bitvec.Bit(bb, i)*x[i])&0xffffffff || om[i] != msgs[4*i+int(oc[i])]&7 {
				t.Fatalf("round %d instance %d: COT or OTN wrong", round, i)
			}
		}
	}
}

// shiftBits returns the n bits of b starting at bit off, packed from bit 0.
func shiftBits(b []uint64, off, n int) []uint64 {
	out := make([]uint64, bitvec.Words(n))
	for i := 0; i < n; i++ {
		out[i/64] |= bitvec.Bit(b, off+i) << (i % 64)
	}
	return out
}

func TestROTChosenMismatch(t *testing.T) {
	ctx := context.Background()
	t.Run("sender expects ROT", func(t *testing.T) {
		s0, s1 := newPair(t, testOpt)
		e0, e1 := testenv.Both(func() error { return s0.SendROT(ctx, 8, make([]uint64, 100), make([]uint64, 100)) },
			func() error { return s1.RecvROTChosen(ctx, 8, make([]uint64, 2), make([]uint64, 100)) })
		if e0 == nil || !strings.Contains(e0.Error(), "receiver called random OT with the receiver's choice bits") {
			t.Fatalf("sender: got %v, want a mismatch error", e0)
		}
		// The receiver waited for nothing; its next receive sees the abort.
		if e1 != nil {
			t.Fatalf("receiver: %v", e1)
		}
		err := s1.RecvCOT(ctx, 8, make([]uint64, 1), make([]uint64, 10))
		var ae *transport.AbortError
		if !errors.As(err, &ae) || s1.Err() == nil {
			t.Fatalf("receiver's next call: got %v, want the sender's abort", err)
		}
	})
	t.Run("receiver expects ROT", func(t *testing.T) {
		s0, s1 := newPair(t, testOpt)
		e0, e1 := testenv.Both(func() error { return s0.SendROTChosen(ctx, 8, make([]uint64, 100), make([]uint64, 100)) },
			func() error { return s1.RecvROT(ctx, 8, make([]uint64, 2), make([]uint64, 100)) })
		if e0 == nil || !strings.Contains(e0.Error(), "OT sender called random OT with the receiver's choice bits") {
			t.Fatalf("sender: got %v, want a mismatch error", e0)
		}
		var ae *transport.AbortError
		if !errors.As(e1, &ae) {
			t.Fatalf("receiver: got %v, want the sender's abort", e1)
		}
	})
	t.Run("width differs", func(t *testing.T) {
		s0, s1 := newPair(t, testOpt)
		e0, _ := testenv.Both(func() error { return s0.SendROTChosenWide(ctx, 2, 64, make([]uint64, 200), make([]uint64, 200)) },
			func() error { return s1.RecvROTChosenWide(ctx, 1, 64, make([]uint64, 4), make([]uint64, 200)) })
		if e0 == nil || !strings.Contains(e0.Error(), "receiver called") || s0.Err() == nil {
			t.Fatalf("sender: got %v, want a mismatch error", e0)
		}
	})
}

func TestROTChosenArgumentsAndEmpty(t *testing.T) {
	s0, s1 := newPair(t, testOpt)
	ctx := context.Background()
	ten := make([]uint64, 10)
	for name, err := range map[string]error{
		"short choice":        s1.RecvROTChosen(ctx, 8, nil, ten),
		"l=0":                 s1.RecvROTChosen(ctx, 0, ten, ten),
		"l=65":                s0.SendROTChosen(ctx, 65, ten, ten),
		"len(m0) != len(m1)":  s0.SendROTChosen(ctx, 8, ten, ten[:9]),
		"w=0":                 s0.SendROTChosenWide(ctx, 0, 8, ten, ten),
		"not a multiple of w": s1.RecvROTChosenWide(ctx, 3, 8, ten, ten),
	} {
		if err == nil || !strings.HasPrefix(err.Error(), "ot: ") {
			t.Errorf("%s: got %v, want an ot: error", name, err)
		}
	}
	before0, before1 := s0.Conn().Stats(), s1.Conn().Stats()
	if err := s0.SendROTChosen(ctx, 8, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := s1.RecvROTChosenWide(ctx, 4, 8, nil, nil); err != nil {
		t.Fatal(err)
	}
	if s0.Conn().Stats() != before0 || s1.Conn().Stats() != before1 {
		t.Fatal("an empty batch talked")
	}
	// Still usable.
	b, m0, m1, m := []uint64{0b10}, make([]uint64, 2), make([]uint64, 2), make([]uint64, 2)
	testenv.MustBoth(t, func() error { return s0.SendROTChosen(ctx, 8, m0, m1) },
		func() error { return s1.RecvROTChosen(ctx, 8, b, m) })
	checkROTChosen(t, "after errors", 2, 1, 8, b, m0, m1, m)
}
