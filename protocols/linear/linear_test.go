package linear

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// runMatMul shares x, runs MatMul at both parties and returns the reconstructed result.
func runMatMul(t *testing.T, p *pair, rng *rand.Rand, w []uint64, m, k, n int, x []uint64) []uint64 {
	t.Helper()
	x0, x1 := ringtest.Share(p.r, rng, x)
	d0, d1 := make([]uint64, m*n), make([]uint64, m*n)
	ctx := context.Background()
	testenv.MustBoth(t, func() error { return p.s0.MatMul(ctx, d0, w, m, k, n, x0) },
		func() error { return p.s1.MatMul(ctx, d1, nil, m, k, n, x1) })
	for i := range d0 {
		if d0[i] > p.r.Mask() || d1[i] > p.r.Mask() {
			t.Fatalf("share %d not reduced: %#x / %#x", i, d0[i], d1[i])
		}
	}
	return ringtest.Reconstruct(p.r, d0, d1)
}

func TestMatMulCorrect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := [][3]int{{1, 1, 1}, {3, 5, 2}, {7, 1, 9}, {1, 40, 1}, {10, 64, 1}, {16, 33, 70}, {2, 3, 130}}
	for _, l := range []int{1, 2, 8, 17, 32, 41, 63, 64} {
		for _, streams := range []int{1, 2} {
			// A small budget and split threshold force several chunks, frames and streams.
			p := newPair(t, l, Options{Budget: 4096, MinSplit: 64, OneBatch: streams == 2 || l%2 == 1}, streams)
			for _, sh := range shapes {
				m, k, n := sh[0], sh[1], sh[2]
				w := ringtest.Values(p.r, rng, m*k)
				rng.Shuffle(len(w), func(i, j int) { w[i], w[j] = w[j], w[i] })
				x := ringtest.Values(p.r, rng, k*n)
				got := runMatMul(t, p, rng, w, m, k, n, x)
				if want := refMatMul(p.r, w, m, k, n, x); !slices.Equal(got, want) {
					t.Fatalf("l=%d streams=%d %dx%dx%d: wrong product", l, streams, m, k, n)
				}
			}
		}
	}
}

func TestMatMulSessionReuse(t *testing.T) {
	// Many products in a row on one session, with the default options (large chunks).
	rng := rand.New(rand.NewPCG(5, 6))
	for _, one := range []bool{false, true} {
		p := newPair(t, 32, Options{OneBatch: one}, 2)
		for it := 0; it < 6; it++ {
			m, k, n := 1+rng.IntN(20), 1+rng.IntN(80), 1+rng.IntN(300)
			w := ringtest.Values(p.r, rng, m*k)
			x := ringtest.Values(p.r, rng, k*n)
			if got := runMatMul(t, p, rng, w, m, k, n, x); !slices.Equal(got, refMatMul(p.r, w, m, k, n, x)) {
				t.Fatalf("product %d (%dx%dx%d) wrong", it, m, k, n)
			}
		}
	}
}

func TestMatMulDegenerate(t *testing.T) {
	p := newPair(t, 16, Options{}, 1)
	ctx := context.Background()
	// k = 0: the product is zero and nothing is sent.
	before := p.stats()
	d0, d1 := []uint64{5, 5}, []uint64{7, 7}
	testenv.MustBoth(t, func() error { return p.s0.MatMul(ctx, d0, []uint64{}, 2, 0, 1, nil) },
		func() error { return p.s1.MatMul(ctx, d1, nil, 2, 0, 1, nil) })
	if d0[0]|d0[1]|d1[0]|d1[1] != 0 {
		t.Fatalf("k=0 gave shares %v %v", d0, d1)
	}
	// Empty result.
	testenv.MustBoth(t, func() error { return p.s0.MatMul(ctx, nil, []uint64{}, 0, 2, 3, make([]uint64, 6)) },
		func() error { return p.s1.MatMul(ctx, nil, nil, 0, 2, 3, make([]uint64, 6)) })
	if d := p.stats().Sub(before); d.BytesSent != 0 {
		t.Fatalf("degenerate products sent %d bytes", d.BytesSent)
	}
}

func TestMulElem(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, l := range []int{1, 8, 32, 64} {
		p := newPair(t, l, Options{Budget: 4096, MinSplit: 64, OneBatch: l == 8}, 2)
		n := 1000
		w := ringtest.Values(p.r, rng, n)
		x := ringtest.Values(p.r, rng, n)
		x0, x1 := ringtest.Share(p.r, rng, x)
		ctx := context.Background()
		d1 := make([]uint64, n)
		// Party 0 computes in place (dst aliases x).
		testenv.MustBoth(t, func() error { return p.s0.MulElem(ctx, x0, w, x0) },
			func() error { return p.s1.MulElem(ctx, d1, nil, x1) })
		got := ringtest.Reconstruct(p.r, x0, d1)
		for i := range got {
			if want := p.r.Mul(w[i], x[i]); got[i] != want {
				t.Fatalf("l=%d element %d: %#x, want %#x", l, i, got[i], want)
			}
		}
	}
}

// TestMatMulCommunication asserts the traffic of one OT linear layer against the formula
// k·n·l·λ + k·n·m·l(l+1)/2 bits plus the per-batch constants of the OT layer: a 24-byte batch
// header and an 8-byte acknowledgement per chunk, and the 4-byte frame headers.
func TestMatMulCommunication(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, tc := range []struct {
		m, k, n, l, streams int
		one                 bool
	}{
		{64, 64, 64, 32, 1, false}, // the SCI benchmark shape: 37,888 bits per output element
		{64, 64, 64, 32, 1, true},
		{10, 400, 1, 37, 1, false}, // a fully connected layer with an odd bitwidth
		{10, 400, 1, 37, 1, true},
		{16, 200, 100, 24, 2, false},
		{16, 200, 100, 24, 2, true},
	} {
		t.Run(fmt.Sprintf("%dx%dx%d_l%d_s%d_one%v", tc.m, tc.k, tc.n, tc.l, tc.streams, tc.one), func(t *testing.T) {
			p := newPair(t, tc.l, Options{OneBatch: tc.one}, tc.streams)
			w := ringtest.Values(p.r, rng, tc.m*tc.k)
			x := ringtest.Values(p.r, rng, tc.k*tc.n)
			before := p.stats()
			runMatMul(t, p, rng, w, tc.m, tc.k, tc.n, x)
			d := p.stats().Sub(before)
			formula := MatMulBits(tc.m, tc.k, tc.n, tc.l)
			// Per-batch constants: a 24-byte header and an 8-byte acknowledgement per OT batch: l
			// batches per chunk, or one.
			ce, perChunk := chunkElems(tc.m, DefaultBudget), tc.l
			if tc.one {
				ce, perChunk = chunkElemsOneBatch(tc.m, tc.l, DefaultBudget), 1
				formula += int64(tc.k * tc.n * tc.l) // the flip bits
			}
			batches, parts := 0, 0
			for _, pt := range p.s0.parts(tc.k * tc.n) {
				batches += perChunk * ((pt[1] - pt[0] + ce - 1) / ce)
				parts++
			}
			payload := 8 * (d.PayloadSent() - int64(batches)*(24+8))
			t.Logf("measured %d payload bits (%d frames, %d batches), formula %d; %.1f bits per output element",
				8*d.PayloadSent(), d.FramesSent, batches, formula, float64(8*d.BytesSent)/float64(tc.m*tc.n))
			// Padding: a batch's extension matrix is whole 64-bit words per column (128·63 bits at
			// most) and its corrections whole bytes; none when the element count of every batch is
			// a multiple of 64.
			if payload < formula || payload > formula+int64((128*63+7)*batches) {
				t.Errorf("payload %d bits (without batch constants), formula %d", payload, formula)
			}
			// Flights: two per OT batch; in the one-batch mode the flips and corrections of a chunk
			// travel with the next chunk's OT flights, so a stream adds only two.
			flights := int64(2 * batches)
			if tc.one {
				flights += int64(2 * parts)
			}
			if d.Rounds != flights {
				t.Errorf("%d flights, want %d", d.Rounds, flights)
			}
			if tc.m == 64 && tc.k == 64 && tc.n == 64 && tc.l == 32 && !tc.one {
				if perElt := formula / int64(tc.m*tc.n); perElt != 37888 {
					t.Errorf("formula gives %d bits per output element, SCI measures 37,888", perElt)
				}
				if payload != formula {
					t.Errorf("64^3 payload %d bits, want exactly %d", payload, formula)
				}
			}
		})
	}
}

func TestArgumentErrors(t *testing.T) {
	p := newPair(t, 16, Options{}, 1)
	ctx := context.Background()
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"p0 short weights", p.s0.MatMul(ctx, make([]uint64, 4), make([]uint64, 3), 2, 2, 2, make([]uint64, 4)), "weights"},
		{"p1 weights", p.s1.MatMul(ctx, make([]uint64, 4), make([]uint64, 4), 2, 2, 2, make([]uint64, 4)), "only party 0"},
		{"operand", p.s0.MatMul(ctx, make([]uint64, 4), make([]uint64, 4), 2, 2, 2, make([]uint64, 5)), "operand"},
		{"result", p.s1.MatMul(ctx, make([]uint64, 3), nil, 2, 2, 2, make([]uint64, 4)), "result"},
		{"negative", p.s1.MatMul(ctx, nil, nil, -1, 2, 2, nil), "negative"},
		{"mulelem", p.s0.MulElem(ctx, make([]uint64, 2), make([]uint64, 3), make([]uint64, 2)), "weights"},
	}
	for _, c := range cases {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, c.err, c.want)
		}
	}
	// Argument errors leave the session usable.
	rng := rand.New(rand.NewPCG(1, 1))
	w, x := ringtest.Values(p.r, rng, 6), ringtest.Values(p.r, rng, 9)
	if got := runMatMul(t, p, rng, w, 2, 3, 3, x); !slices.Equal(got, refMatMul(p.r, w, 2, 3, 3, x)) {
		t.Fatal("wrong product after argument errors")
	}
}

func TestNewMismatch(t *testing.T) {
	ctx := context.Background()
	c0, c1 := ottest.Pipes(t, 1, testOpt)
	o0, o1 := ottest.Sessions(t, c0, c1)
	e0, e1 := testenv.Both(func() error { _, err := New(ctx, ring.Must(32), Options{}, o0...); return err },
		func() error { _, err := New(ctx, ring.Must(31), Options{}, o1...); return err })
	if e0 == nil || e1 == nil || !strings.Contains(e0.Error(), "Z_2^31") {
		t.Fatalf("ring mismatch: %v / %v", e0, e1)
	}
	c0, c1 = ottest.Pipes(t, 1, testOpt)
	o0, o1 = ottest.Sessions(t, c0, c1)
	e0, e1 = testenv.Both(func() error { _, err := New(ctx, ring.Must(32), Options{Budget: 8192}, o0...); return err },
		func() error { _, err := New(ctx, ring.Must(32), Options{}, o1...); return err })
	if e0 == nil || e1 == nil || !strings.Contains(e1.Error(), "Options.Budget") {
		t.Fatalf("budget mismatch: %v / %v", e0, e1)
	}
	if _, err := New(ctx, ring.Must(32), Options{Budget: 10}, o0...); err == nil {
		t.Fatal("tiny budget accepted")
	}
	if _, err := New(ctx, ring.Must(32), Options{}); err == nil {
		t.Fatal("no streams accepted")
	}
}

func TestShapeMismatchFailsBoth(t *testing.T) {
	// The parties disagree on the shape: both must fail (the OT layer's header check aborts the
	// connection) and neither may hang.
	p := newPair(t, 32, Options{}, 1)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(2, 2))
	e0, e1 := testenv.Both(func() error {
		return p.s0.MatMul(ctx, make([]uint64, 4*5), ringtest.Values(p.r, rng, 4*3), 4, 3, 5, make([]uint64, 15))
	}, func() error {
		return p.s1.MatMul(ctx, make([]uint64, 5*4), nil, 5, 3, 4, make([]uint64, 12))
	})
	if e0 == nil || e1 == nil {
		t.Fatalf("mismatched shapes: party 0 %v, party 1 %v", e0, e1)
	}
	if p.s0.Err() == nil {
		t.Fatal("session 0 still usable after a failed protocol")
	}
	if err := p.s0.MatMul(ctx, make([]uint64, 1), []uint64{1}, 1, 1, 1, []uint64{1}); err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Fatalf("failed session accepted work: %v", err)
	}
}

func TestPeerClosed(t *testing.T) {
	p := newPair(t, 32, Options{}, 1)
	ctx := context.Background()
	p.c1[0].Close()
	err := p.s0.MatMul(ctx, make([]uint64, 64), make([]uint64, 64), 8, 8, 8, make([]uint64, 64))
	if err == nil {
		t.Fatal("MatMul succeeded with the peer gone")
	}
	if !errors.Is(err, transport.ErrPeerClosed) && !strings.Contains(err.Error(), "closed") {
		t.Logf("error: %v", err)
	}
}
