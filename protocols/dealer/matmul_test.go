package dealer

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// edgeValues fills the first entries of v with 0, ±1, ±2 and the extreme signed values.
func edgeValues(r ring.Ring, v []uint64) {
	half := uint64(1) << (r.Bits - 1)
	edges := []uint64{0, 1, r.Mask(), half, half - 1, r.Reduce(2), r.Reduce(^uint64(1))}
	copy(v, edges)
}

// TestSharedMatMul: dealt matrix triples give exact products of two shared matrices on edge and
// random values, and the traffic of each pair of parties is SharedMatMulBytes.
func TestSharedMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, l := range []int{1, 8, 37, 64} {
		r := ring.Must(l)
		tr, c0, c1 := trio(t)
		s0, err := NewSharedMatMul(tr.Links[0], c0, r)
		if err != nil {
			t.Fatal(err)
		}
		s1, _ := NewSharedMatMul(tr.Links[1], c1, r)
		ctx := context.Background()
		for _, d := range []matDims{{1, 1, 1, 1}, {2, 17, 16, 17}, {2, 17, 17, 16}, {3, 5, 9, 2}, {1, 1, 40, 1}, {0, 3, 3, 3}, {2, 3, 0, 3}} {
			nx, ny, nz := d.sizes()
			x, y := ringtest.Values(r, rng, int(nx)), ringtest.Values(r, rng, int(ny))
			edgeValues(r, x)
			edgeValues(r, y[min(len(y), 3):]) // edge values meet other edge values in the products
			want := make([]uint64, nz)
			batchMatMul(r, want, x, y, d)
			x0, x1 := ringtest.Share(r, rng, x)
			y1, y0 := ringtest.Share(r, rng, y)
			z0, z1 := make([]uint64, nz), make([]uint64, nz)
			for i := range z0 {
				z0[i], z1[i] = 3, 4 // overwritten
			}
			st := [4]transport.Stats{c0.Stats(), c1.Stats(), tr.Links[1].Conn().Stats(), tr.Links[0].Conn().Stats()}
			ottest.MustBoth(t, func() error { return s0.Apply(ctx, z0, x0, y0, d.batch, d.m, d.k, d.n) },
				func() error { return s1.Apply(ctx, z1, x1, y1, d.batch, d.m, d.k, d.n) })
			if got := ringtest.Reconstruct(r, z0, z1); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("l=%d %+v: wrong product", l, d)
			}
			p01, p10, p21, p12 := SharedMatMulBytes(d.batch, d.m, d.k, d.n, l)
			g01, g10 := c0.Stats().Sub(st[0]).BytesSent, c1.Stats().Sub(st[1]).BytesSent
			g21, g02 := tr.Links[1].Conn().Stats().Sub(st[2]), tr.Links[0].Conn().Stats().Sub(st[3])
			if g01 != p01 || g10 != p10 || g21.BytesRecv != p21 || g21.BytesSent != p12 || g02.BytesSent+g02.BytesRecv != 0 {
				t.Fatalf("l=%d %+v: bytes 0→1 %d (%d), 1→0 %d (%d), 2→1 %d (%d), 1→2 %d (%d), 0↔2 %d",
					l, d, g01, p01, g10, p10, g21.BytesRecv, p21, g21.BytesSent, p12, g02.BytesSent+g02.BytesRecv)
			}
		}
	}
	// The formula: E and F of l bits each way, C1 from the helper.
	if p01, _, p21, _ := SharedMatMulBytes(2, 17, 16, 17, 40); p01 != int64(transport.PackedBytes(2*(17*16+16*17), 40))+transport.HeaderSize ||
		p21 != int64(transport.PackedBytes(2*17*17, 40))+transport.HeaderSize {
		t.Errorf("SharedMatMulBytes(2, 17, 16, 17, 40) = %d, %d", p01, p21)
	}
}

// TestSharedMatMulMismatch: parties that disagree on the dimensions fail (no wrong result), and
// bad arguments are refused without traffic.
func TestSharedMatMulMismatch(t *testing.T) {
	r := ring.Must(32)
	tr, c0, c1 := trio(t)
	s0, _ := NewSharedMatMul(tr.Links[0], c0, r)
	s1, _ := NewSharedMatMul(tr.Links[1], c1, r)
	ctx := context.Background()
	if err := s0.Apply(ctx, make([]uint64, 4), make([]uint64, 5), make([]uint64, 6), 1, 2, 3, 2); err == nil || !strings.Contains(err.Error(), "operands") {
		t.Errorf("wrong operand length: %v", err)
	}
	if err := s0.Apply(ctx, nil, nil, nil, -1, 2, 3, 2); err == nil {
		t.Error("negative batch accepted")
	}
	e0, e1 := ottest.Both(func() error {
		return s0.Apply(ctx, make([]uint64, 4), make([]uint64, 6), make([]uint64, 6), 1, 2, 3, 2)
	},
		func() error {
			return s1.Apply(ctx, make([]uint64, 4), make([]uint64, 8), make([]uint64, 8), 1, 2, 4, 2)
		})
	if e0 == nil && e1 == nil {
		t.Fatal("both parties succeeded with different dimensions")
	}
	if _, err := NewSharedMatMul(nil, c0, r); err == nil {
		t.Error("nil link accepted")
	}
}
