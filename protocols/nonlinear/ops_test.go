package nonlinear

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

func floorDivRef(r ring.Ring, v uint64, d uint64) uint64 {
	return r.FromSigned(floorDiv(r.Signed(v), d))
}

func TestTrunc(t *testing.T) { testTrunc(t, iknpSrc) }

func testTrunc(t *testing.T, src otSource) {
	rng := rand.New(rand.NewPCG(21, 22))
	for k, l := range src.ints(testRings, []int{16, 32, 37, 64}) {
		// Alternate the published Alg. 5 and the default protocol.
		p := newPairOn(t, src, l, Options{PaperTrunc: k%2 == 1}, 2)
		r := p.r
		n := 300
		v := testValues(r, rng, n)
		for _, s := range []int{0, 1, 2, 7, 12, l / 2, l - 1, l, 63} {
			if s > 63 {
				continue
			}
			for _, nonNeg := range []bool{false, true} {
				vals := v
				if nonNeg {
					vals = make([]uint64, n)
					for i, a := range v {
						if r.Signed(a) < 0 {
							a = r.Neg(a)
						}
						if r.Signed(a) < 0 { // the minimum has no negation
							a = r.FromSigned(r.MaxSigned())
						}
						vals[i] = a
					}
				}
				x0, x1 := shareWrapping(r, rng, vals)
				z0, z1 := make([]uint64, n), make([]uint64, n)
				p.run(t, func(ss *Session, party int) error {
					x, z := x0, z0
					if party == 1 {
						x, z = x1, z1
					}
					return ss.Trunc(context.Background(), z, x, s, nonNeg)
				})
				z := ringtest.Reconstruct(r, z0, z1)
				for i, a := range vals {
					if want := r.Trunc(a, s); z[i] != want {
						t.Fatalf("l=%d s=%d nonNeg=%v alg5=%v: Trunc(%d) = %d, want %d", l, s, nonNeg, k%2 == 1, r.Signed(a), r.Signed(z[i]), r.Signed(want))
					}
				}
			}
		}
	}
}

func TestTruncInPlace(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, alg5 := range []bool{false, true} {
		p := newPair(t, 32, Options{PaperTrunc: alg5}, 1)
		r := p.r
		for _, nonNeg := range []bool{false, true} {
			v := testValues(r, rng, 100)
			if nonNeg {
				for i := range v {
					v[i] &= r.Mask() >> 1
				}
			}
			x0, x1 := share(r, rng, v)
			p.run(t, func(ss *Session, party int) error {
				x := x0
				if party == 1 {
					x = x1
				}
				return ss.Trunc(context.Background(), x, x, 5, nonNeg)
			})
			z := ringtest.Reconstruct(r, x0, x1)
			for i, a := range v {
				if z[i] != r.Trunc(a, 5) {
					t.Fatalf("alg5=%v nonNeg=%v: in-place Trunc(%d) = %d", alg5, nonNeg, r.Signed(a), r.Signed(z[i]))
				}
			}
		}
	}
}

func TestDiv(t *testing.T) { testDiv(t, iknpSrc) }

func testDiv(t *testing.T, src otSource) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, l := range src.ints(testRings, []int{32, 41}) {
		p := newPairOn(t, src, l, Options{}, 2)
		r := p.r
		n := 200
		v := testValues(r, rng, n)
		for _, d := range []uint64{1, 2, 3, 5, 7, 9, 16, 25, 49, 100, 1000, 12345, 1 << 20, 1<<40 + 7, 1<<60 - 1} {
			x0, x1 := shareWrapping(r, rng, v)
			z0, z1 := make([]uint64, n), make([]uint64, n)
			p.run(t, func(ss *Session, party int) error {
				x, z := x0, z0
				if party == 1 {
					x, z = x1, z1
				}
				return ss.Div(context.Background(), z, x, d)
			})
			z := ringtest.Reconstruct(r, z0, z1)
			for i, a := range v {
				if want := floorDivRef(r, a, d); z[i] != want {
					t.Fatalf("l=%d d=%d: %d / d = %d, want %d", l, d, r.Signed(a), r.Signed(z[i]), r.Signed(want))
				}
			}
		}
	}
}

func TestAvgRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 28))
	for _, l := range []int{16, 32, 64} {
		p := newPair(t, l, Options{}, 1)
		r := p.r
		for _, d := range []int{4, 9, 49} {
			rows := 20
			v := make([]uint64, rows*d)
			for i := range v {
				v[i] = r.FromSigned(rng.Int64N(1<<12) - 1<<11)
			}
			x0, x1 := share(r, rng, v)
			z0, z1 := make([]uint64, rows), make([]uint64, rows)
			p.run(t, func(ss *Session, party int) error {
				x, z := x0, z0
				if party == 1 {
					x, z = x1, z1
				}
				return ss.AvgRows(context.Background(), z, x, rows, d)
			})
			z := ringtest.Reconstruct(r, z0, z1)
			for i := 0; i < rows; i++ {
				var sum int64
				for _, a := range v[i*d : i*d+d] {
					sum += r.Signed(a)
				}
				if want := r.FromSigned(floorDiv(sum, uint64(d))); z[i] != want {
					t.Fatalf("l=%d d=%d row %d: avg %d, want %d", l, d, i, r.Signed(z[i]), r.Signed(want))
				}
			}
		}
	}
}

func TestMaxAndArgMax(t *testing.T) { testMaxAndArgMax(t, iknpSrc) }

func testMaxAndArgMax(t *testing.T, src otSource) {
	rng := rand.New(rand.NewPCG(29, 30))
	for _, l := range src.ints(testRings, []int{8, 32, 64}) {
		p := newPairOn(t, src, l, Options{}, 2)
		r := p.r
		quarter := int64(1) << (l - 2)
		for _, d := range []int{1, 2, 3, 4, 5, 9, 10, 16} {
			rows := 60
			v := make([]uint64, rows*d)
			for i := range v {
				switch rng.IntN(4) {
				case 0:
					v[i] = r.FromSigned(rng.Int64N(quarter) - rng.Int64N(quarter) - rng.Int64N(2)) // full allowed range
				case 1:
					v[i] = r.FromSigned(rng.Int64N(7) - 3) // many ties
				case 2:
					v[i] = r.FromSigned([]int64{quarter - 1, -quarter, 0, -1, 1}[rng.IntN(5)])
				default:
					v[i] = r.FromSigned(rng.Int64N(min(1001, quarter)) - rng.Int64N(min(1001, quarter)))
				}
			}
			x0, x1 := shareWrapping(r, rng, v)
			m0, m1 := make([]uint64, rows), make([]uint64, rows)
			a0, a1 := make([]uint64, rows), make([]uint64, rows)
			p.run(t, func(ss *Session, party int) error {
				x, m, a := x0, m0, a0
				if party == 1 {
					x, m, a = x1, m1, a1
				}
				if err := ss.MaxRows(context.Background(), m, x, rows, d); err != nil {
					return err
				}
				return ss.ArgMaxRows(context.Background(), a, x, rows, d)
			})
			mx, am := ringtest.Reconstruct(r, m0, m1), ringtest.Reconstruct(r, a0, a1)
			for i := 0; i < rows; i++ {
				row := v[i*d : i*d+d]
				best := 0
				for j := range row {
					if r.Signed(row[j]) > r.Signed(row[best]) {
						best = j
					}
				}
				if mx[i] != row[best] {
					t.Fatalf("l=%d d=%d row %d: max %d, want %d", l, d, i, r.Signed(mx[i]), r.Signed(row[best]))
				}
				if am[i] != uint64(best) {
					t.Fatalf("l=%d d=%d row %d: argmax %d, want %d (row %v)", l, d, i, am[i], best, row)
				}
			}
		}
	}
}
