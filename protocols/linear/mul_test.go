package linear

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// mulOperands returns x and y of n ≥ 49 elements: first every pair of the edge values 0, 1, −1,
// the most negative and the largest signed value, 2 and −2, then random values of random
// magnitude.
func mulOperands(r ring.Ring, rng *rand.Rand, n int) (x, y []uint64) {
	half := uint64(1) << (r.Bits - 1)
	edges := []uint64{0, 1, r.Mask(), half, half - 1, r.Reduce(2), r.Reduce(^uint64(1))}
	for _, a := range edges {
		for _, b := range edges {
			x, y = append(x, a), append(y, b)
		}
	}
	rest := ringtest.Values(r, rng, n)
	x = append(x, rest[len(x):]...)
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	y = append(y, rest[len(y):]...)
	return x[:n], y[:n]
}

// runMul shares x and y, runs Mul at both parties (party 0 in place on its share of x, party 1 in
// place on its share of y) and returns the reconstructed product.
func runMul(t *testing.T, p *pair, rng *rand.Rand, x, y []uint64) []uint64 {
	t.Helper()
	x0, x1 := ringtest.Share(p.r, rng, x)
	y1, y0 := ringtest.Share(p.r, rng, y) // the edge share patterns at party 0 this time
	ctx := context.Background()
	testenv.MustBoth(t, func() error { return p.s0.Mul(ctx, x0, x0, y0) },
		func() error { return p.s1.Mul(ctx, y1, x1, y1) })
	for i := range x0 {
		if x0[i] > p.r.Mask() || y1[i] > p.r.Mask() {
			t.Fatalf("share %d not reduced: %#x / %#x", i, x0[i], y1[i])
		}
	}
	return ringtest.Reconstruct(p.r, x0, y1)
}

func TestMulCorrect(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, l := range []int{1, 2, 8, 32, 37, 64} {
		for _, mode := range []struct {
			streams int
			one     bool
		}{{1, false}, {2, false}, {1, true}, {2, true}} {
			// A small budget and split threshold force several chunks, frames and streams.
			p := newPair(t, l, Options{Budget: 4096, MinSplit: 64, OneBatch: mode.one}, mode.streams)
			for _, n := range []int{49, 50, 64, 300, 5000} {
				x, y := mulOperands(p.r, rng, n)
				got := runMul(t, p, rng, x, y)
				for i := range got {
					if want := p.r.Mul(x[i], y[i]); got[i] != want {
						t.Fatalf("l=%d streams=%d one=%v n=%d element %d: %#x·%#x gave %#x, want %#x",
							l, mode.streams, mode.one, n, i, x[i], y[i], got[i], want)
					}
				}
			}
		}
	}
}

func TestMulZeroOperand(t *testing.T) {
	// A whole operand 0 or −1 (as a value; its shares are random).
	rng := rand.New(rand.NewPCG(23, 24))
	p := newPair(t, 37, Options{}, 1)
	n := 200
	_, y := mulOperands(p.r, rng, n)
	for _, c := range []uint64{0, p.r.Mask(), 1 << 36} {
		x := make([]uint64, n)
		for i := range x {
			x[i] = c
		}
		for _, swap := range []bool{false, true} {
			a, b := x, y
			if swap {
				a, b = y, x
			}
			got := runMul(t, p, rng, a, b)
			for i := range got {
				if want := p.r.Mul(c, y[i]); got[i] != want {
					t.Fatalf("constant %#x swap=%v element %d: %#x, want %#x", c, swap, i, got[i], want)
				}
			}
		}
	}
}

// mulPayloadBytes is the exact payload (bytes, both parties, frame headers excluded) of Mul on
// parts of the given sizes in the per-bit mode: per direction, part and bit i one batch of np COTs
// of l−i bits (a 24-byte header and 128 bits of extension matrix per instance, rounded up to whole
// words per column, from the receiver; an 8-byte acknowledgement and np·(l−i) bits, whole bytes,
// from the sender). With every part a multiple of 64 elements this is MulBits/8 + 2·l·32 per part.
func mulPayloadBytes(parts [][2]int, l int) int64 {
	var b int64
	for _, pt := range parts {
		np := int64(pt[1] - pt[0])
		for i := 0; i < l; i++ {
			b += 24 + 16*64*((np+63)/64) + 8 + (np*int64(l-i)+7)/8
		}
	}
	return 2 * b
}

// mulPayloadBytesOneBatch is the same for the one-batch mode: per direction, part and chunk of nc
// elements one batch of nc·l random OTs (header, extension matrix, acknowledgement), nc·l flip
// bits, and corrections of l(l+1)/2 bits per element in frames of frameElems elements, each whole
// bytes.
func mulPayloadBytesOneBatch(parts [][2]int, l, budget int) int64 {
	ce := chunkElemsOneBatch(1, l, budget)
	G := frameElems(1, l)
	per := int64(l * (l + 1) / 2)
	var b int64
	for _, pt := range parts {
		for c0 := pt[0]; c0 < pt[1]; c0 += ce {
			nc := min(ce, pt[1]-c0)
			nI := int64(nc * l)
			b += 24 + 16*64*((nI+63)/64) + 8 + (nI+7)/8
			for f0 := 0; f0 < nc; f0 += G {
				nf := int64(min(G, nc-f0))
				b += (nf*per + 7) / 8
			}
		}
	}
	return 2 * b
}

func TestMulCommunication(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, tc := range []struct {
		n, l, streams, budget int
		one                   bool
	}{
		{4096, 32, 1, 0, false}, // exactly MulBits plus the batch constants
		{4096, 32, 1, 0, true},
		{1000, 37, 1, 0, false}, // padding: 1000 is not a multiple of 64
		{1000, 37, 1, 4096, true},
		{5000, 64, 2, 0, false}, // split across two streams
		{5000, 8, 2, 0, true},
		{130, 2, 1, 0, false},
	} {
		t.Run(fmt.Sprintf("n%d_l%d_s%d_one%v", tc.n, tc.l, tc.streams, tc.one), func(t *testing.T) {
			p := newPair(t, tc.l, Options{OneBatch: tc.one, Budget: tc.budget}, tc.streams)
			x, y := mulOperands(p.r, rng, tc.n)
			before := p.stats()
			got := runMul(t, p, rng, x, y)
			d := p.stats().Sub(before)
			for i := range got {
				if got[i] != p.r.Mul(x[i], y[i]) {
					t.Fatalf("element %d wrong", i)
				}
			}
			parts := p.s0.parts(tc.n)
			budget := tc.budget
			if budget == 0 {
				budget = DefaultBudget
			}
			var want, batches int64
			if tc.one {
				want = mulPayloadBytesOneBatch(parts, tc.l, budget)
				for _, pt := range parts {
					ce := chunkElemsOneBatch(1, tc.l, budget)
					batches += int64((pt[1] - pt[0] + ce - 1) / ce)
				}
			} else {
				want = mulPayloadBytes(parts, tc.l)
				batches = int64(len(parts) * tc.l)
			}
			batches *= 2 // two directions
			if got := d.PayloadSent(); got != want {
				t.Errorf("payload %d bytes, want %d", got, want)
			}
			// Without padding the payload is the formula plus 32 bytes per batch.
			formula := MulBits(tc.n, tc.l)
			if tc.one {
				formula += int64(2 * tc.n * tc.l)
			}
			aligned := true
			for _, pt := range parts {
				aligned = aligned && (pt[1]-pt[0])%64 == 0
			}
			if aligned {
				if got := 8 * (d.PayloadSent() - 32*batches); got != formula {
					t.Errorf("payload without batch constants %d bits, MulBits gives %d", got, formula)
				}
			}
			// Flights: two per OT batch (plus two per stream and direction in the one-batch mode),
			// less one per stream: party 0's last flight of the first direction (the sender's
			// reply) and its first of the second (now the receiver's OT matrix) are one run of
			// sends.
			flights := 2*batches - int64(len(parts))
			if tc.one {
				flights += 2 * 2 * int64(len(parts))
			}
			if d.Rounds != flights {
				t.Errorf("%d flights, want %d", d.Rounds, flights)
			}
			t.Logf("n=%d l=%d: %d payload bytes (%.0f bits per element), %d flights", tc.n, tc.l, d.PayloadSent(),
				float64(8*d.PayloadSent())/float64(tc.n), d.Rounds)
		})
	}
	if MulBits(1, 32) != 2*(32*128+32*33/2) {
		t.Fatalf("MulBits(1, 32) = %d", MulBits(1, 32))
	}
}

func TestMulArgumentErrors(t *testing.T) {
	p := newPair(t, 16, Options{}, 1)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"operands", p.s0.Mul(ctx, make([]uint64, 3), make([]uint64, 3), make([]uint64, 2)), "operands"},
		{"result", p.s1.Mul(ctx, make([]uint64, 2), make([]uint64, 3), make([]uint64, 3)), "result"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, c.err, c.want)
		}
	}
	// Argument errors leave the session usable; an empty product sends nothing.
	before := p.stats()
	testenv.MustBoth(t, func() error { return p.s0.Mul(ctx, nil, nil, nil) },
		func() error { return p.s1.Mul(ctx, nil, nil, nil) })
	if d := p.stats().Sub(before); d.BytesSent != 0 {
		t.Fatalf("empty product sent %d bytes", d.BytesSent)
	}
	rng := rand.New(rand.NewPCG(27, 28))
	x, y := mulOperands(p.r, rng, 64)
	got := runMul(t, p, rng, x, y)
	for i := range got {
		if got[i] != p.r.Mul(x[i], y[i]) {
			t.Fatal("wrong product after argument errors")
		}
	}
}

// BenchmarkMul is the product of two shared vectors of 4096 elements over Z_2^32 (one stream per
// party over loopback TCP, or two).
func BenchmarkMul(b *testing.B) {
	for _, tc := range []struct {
		streams int
		one     bool
	}{{1, false}, {2, false}, {1, true}} {
		b.Run(fmt.Sprintf("tcp_streams%d_onebatch%v", tc.streams, tc.one), func(b *testing.B) {
			c0, c1 := tcpConns(b, tc.streams)
			o0, o1 := ottest.Sessions(b, c0, c1)
			r := ring.Must(32)
			ctx := context.Background()
			var s0, s1 *Session
			opt := Options{OneBatch: tc.one}
			testenv.MustBoth(b, func() (err error) { s0, err = New(ctx, r, opt, o0...); return },
				func() (err error) { s1, err = New(ctx, r, opt, o1...); return })
			const n = 4096
			rng := rand.New(rand.NewPCG(1, 2))
			x0, x1 := ringtest.Values(r, rng, n), ringtest.Values(r, rng, n)
			y0, y1 := ringtest.Values(r, rng, n), ringtest.Values(r, rng, n)
			d0, d1 := make([]uint64, n), make([]uint64, n)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				testenv.MustBoth(b, func() error { return s0.Mul(ctx, d0, x0, y0) },
					func() error { return s1.Mul(ctx, d1, x1, y1) })
			}
			b.ReportMetric(float64(MulBits(n, 32))/n, "formula-bits/elem")
		})
	}
}
