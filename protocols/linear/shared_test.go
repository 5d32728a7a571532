package linear

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/linear/lincost"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// runMatMulShared shares x (batch m×k matrices) and y (batch k×n), runs MatMulShared at both
// parties and returns the reconstructed products.
func runMatMulShared(t *testing.T, p *pair, rng *rand.Rand, x, y []uint64, batch, m, k, n int) []uint64 {
	t.Helper()
	x0, x1 := ringtest.Share(p.r, rng, x)
	y1, y0 := ringtest.Share(p.r, rng, y) // the edge share patterns at party 0 this time
	z0, z1 := make([]uint64, batch*m*n), make([]uint64, batch*m*n)
	ctx := context.Background()
	testenv.MustBoth(t, func() error { return p.s0.MatMulShared(ctx, z0, x0, y0, batch, m, k, n) },
		func() error { return p.s1.MatMulShared(ctx, z1, x1, y1, batch, m, k, n) })
	for i := range z0 {
		if z0[i] > p.r.Mask() || z1[i] > p.r.Mask() {
			t.Fatalf("share %d not reduced: %#x / %#x", i, z0[i], z1[i])
		}
	}
	return ringtest.Reconstruct(p.r, z0, z1)
}

// refBatchMatMul is the plain definition, product by product.
func refBatchMatMul(r ring.Ring, x, y []uint64, batch, m, k, n int) []uint64 {
	var out []uint64
	for b := 0; b < batch; b++ {
		out = append(out, refMatMul(r, x[b*m*k:(b+1)*m*k], m, k, n, y[b*k*n:(b+1)*k*n])...)
	}
	return out
}

// sharedOperands returns random factors whose first entries are the edge values of mulOperands
// (0, ±1, ±2, the extreme signed values), so that edge products meet in the inner products.
func sharedOperands(r ring.Ring, rng *rand.Rand, nx, ny int) (x, y []uint64) {
	x, _ = mulOperands(r, rng, max(nx, 49))
	_, y = mulOperands(r, rng, max(ny, 49))
	return x[:nx], y[:ny]
}

func TestMatMulSharedCorrect(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, l := range []int{1, 8, 32, 37, 64} {
		for _, mode := range []struct {
			streams int
			one     bool
		}{{1, false}, {2, false}, {1, true}} {
			p := newPair(t, l, Options{Budget: 4096, MinSplit: 64, OneBatch: mode.one}, mode.streams)
			for _, d := range [][4]int{{1, 1, 1, 1}, {2, 17, 16, 17}, {2, 17, 17, 16}, {3, 5, 9, 2}, {1, 2, 9, 5}, {1, 1, 30, 1}} {
				batch, m, k, n := d[0], d[1], d[2], d[3]
				x, y := sharedOperands(p.r, rng, batch*m*k, batch*k*n)
				got := runMatMulShared(t, p, rng, x, y, batch, m, k, n)
				want := refBatchMatMul(p.r, x, y, batch, m, k, n)
				for i := range want {
					if got[i] != want[i] {
						t.Fatalf("l=%d streams=%d one=%v %v: element %d is %#x, want %#x", l, mode.streams, mode.one, d, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// TestMatMulSharedEdges multiplies matrices of one edge value each (as values; their shares are
// random) and a matrix by itself (x and y the same slices).
func TestMatMulSharedEdges(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	p := newPair(t, 37, Options{}, 1)
	half := uint64(1) << 36
	const batch, m, k, n = 2, 4, 6, 5
	for _, c := range []uint64{0, 1, p.r.Mask(), half, half - 1} {
		x := make([]uint64, batch*m*k)
		for i := range x {
			x[i] = c
		}
		y := ringtest.Values(p.r, rng, batch*k*n)
		got := runMatMulShared(t, p, rng, x, y, batch, m, k, n)
		want := refBatchMatMul(p.r, x, y, batch, m, k, n)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("constant %#x: element %d is %#x, want %#x", c, i, got[i], want[i])
			}
		}
	}
	// X·X for square X, both operands the same slice at each party.
	x := ringtest.Values(p.r, rng, batch*m*m)
	x0, x1 := ringtest.Share(p.r, rng, x)
	z0, z1 := make([]uint64, batch*m*m), make([]uint64, batch*m*m)
	ctx := context.Background()
	testenv.MustBoth(t, func() error { return p.s0.MatMulShared(ctx, z0, x0, x0, batch, m, m, m) },
		func() error { return p.s1.MatMulShared(ctx, z1, x1, x1, batch, m, m, m) })
	got, want := ringtest.Reconstruct(p.r, z0, z1), refBatchMatMul(p.r, x, x, batch, m, m, m)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("X·X: element %d is %#x, want %#x", i, got[i], want[i])
		}
	}
}

// TestMatMulSharedDegenerate: empty products exchange nothing, k = 0 gives zeros.
func TestMatMulSharedDegenerate(t *testing.T) {
	p := newPair(t, 16, Options{}, 1)
	ctx := context.Background()
	for _, d := range [][4]int{{0, 3, 3, 3}, {2, 0, 3, 3}, {2, 3, 0, 3}, {2, 3, 3, 0}} {
		batch, m, k, n := d[0], d[1], d[2], d[3]
		before := p.stats()
		z0, z1 := make([]uint64, batch*m*n), make([]uint64, batch*m*n)
		for i := range z0 {
			z0[i], z1[i] = 5, 7
		}
		testenv.MustBoth(t, func() error {
			return p.s0.MatMulShared(ctx, z0, make([]uint64, batch*m*k), make([]uint64, batch*k*n), batch, m, k, n)
		},
			func() error {
				return p.s1.MatMulShared(ctx, z1, make([]uint64, batch*m*k), make([]uint64, batch*k*n), batch, m, k, n)
			})
		if s := p.stats().Sub(before); s.BytesSent != 0 {
			t.Errorf("%v: %d bytes sent", d, s.BytesSent)
		}
		for i := range z0 {
			if z0[i] != 0 || z1[i] != 0 {
				t.Fatalf("%v: result not zero", d)
			}
		}
	}
}

// sharedPayloadBytes is the exact payload (bytes, both parties, frame headers excluded) of
// MatMulShared in the per-bit mode on one stream with the default budget: per direction one
// MatMul-like product of the whole batch, its OT batches on the batch·k·n' entries of the
// right-hand factors (n' = n, or m when transposed), in chunks of chunkElems(M) elements, for
// each bit i one batch: a 24-byte header and 128 bits per instance (whole words per column) from
// the receiver, an 8-byte acknowledgement and M·(l−i) bits per instance (whole bytes) from the
// sender.
func sharedPayloadBytes(batch, m, k, n, l int) int64 {
	if lincost.SharedMatMulTransposed(m, k, n, l) {
		m, n = n, m
	}
	E, ce := batch*k*n, chunkElems(m, DefaultBudget)
	var b int64
	for c0 := 0; c0 < E; c0 += ce {
		nc := int64(min(ce, E-c0))
		for i := 0; i < l; i++ {
			b += 24 + 16*64*((nc+63)/64) + 8 + (nc*int64(m*(l-i))+7)/8
		}
	}
	return 2 * b
}

func TestMatMulSharedCommunication(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	for _, tc := range []struct{ batch, m, k, n, l int }{
		{2, 16, 8, 16, 32}, // 256 receiver entries: no padding, exactly the formula
		{2, 17, 16, 17, 40},
		{2, 17, 17, 16, 40}, // attention's softmax(…)·V: the right-hand factor has fewer entries
		{1, 16, 17, 17, 40}, // transposed: Xᵀ has fewer entries than Y
	} {
		t.Run(fmt.Sprintf("%dx%dx%dx%d_l%d", tc.batch, tc.m, tc.k, tc.n, tc.l), func(t *testing.T) {
			p := newPair(t, tc.l, Options{}, 1)
			x, y := sharedOperands(p.r, rng, tc.batch*tc.m*tc.k, tc.batch*tc.k*tc.n)
			before := p.stats()
			got := runMatMulShared(t, p, rng, x, y, tc.batch, tc.m, tc.k, tc.n)
			d := p.stats().Sub(before)
			want := refBatchMatMul(p.r, x, y, tc.batch, tc.m, tc.k, tc.n)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("element %d wrong", i)
				}
			}
			if w := sharedPayloadBytes(tc.batch, tc.m, tc.k, tc.n, tc.l); d.PayloadSent() != w {
				t.Errorf("payload %d bytes, want %d", d.PayloadSent(), w)
			}
			formula := SharedMatMulBits(tc.batch, tc.m, tc.k, tc.n, tc.l)
			batches := int64(2 * tc.l) // one OT batch per bit and direction, the whole batch in one
			if tc.m == 16 && tc.k == 8 {
				if got := 8 * (d.PayloadSent() - 32*batches); got != formula {
					t.Errorf("payload without batch constants %d bits, SharedMatMulBits gives %d", got, formula)
				}
			}
			// Flights: two per OT batch, less one where the two directions meet (the last flight
			// of one and the first of the next are one run of sends by the same party); none
			// more for a larger batch.
			if want := 2*batches - 1; d.Rounds != want {
				t.Errorf("%d flights, want %d", d.Rounds, want)
			}
			t.Logf("%d×(%d×%d·%d×%d) l=%d: %d payload bytes, formula %d bits (%.0f bits per multiply-add), %d flights",
				tc.batch, tc.m, tc.k, tc.k, tc.n, tc.l, d.PayloadSent(), formula,
				float64(formula)/float64(tc.batch*tc.m*tc.k*tc.n), d.Rounds)
		})
	}
	if !lincost.SharedMatMulTransposed(16, 17, 17, 40) || lincost.SharedMatMulTransposed(17, 17, 16, 40) {
		t.Error("orientation: want the factor with fewer entries on the right")
	}
	// Per product: 2·(k·n·l·λ + m·k·n·l(l+1)/2).
	if got, want := SharedMatMulBits(3, 6, 5, 4, 32), int64(3*2*(5*4*32*128+6*5*4*32*33/2)); got != want {
		t.Errorf("SharedMatMulBits(3, 6, 5, 4, 32) = %d, want %d", got, want)
	}
}

func TestMatMulSharedArgumentErrors(t *testing.T) {
	p := newPair(t, 16, Options{}, 1)
	ctx := context.Background()
	u := func(n int) []uint64 { return make([]uint64, n) }
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"first", p.s0.MatMulShared(ctx, u(4), u(5), u(6), 1, 2, 3, 2), "first operand"},
		{"second", p.s0.MatMulShared(ctx, u(4), u(6), u(5), 1, 2, 3, 2), "second operand"},
		{"result", p.s1.MatMulShared(ctx, u(3), u(6), u(6), 1, 2, 3, 2), "result"},
		{"negative", p.s1.MatMulShared(ctx, u(0), u(0), u(0), -1, 2, 3, 2), "negative"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, c.err, c.want)
		}
	}
}
