package nonlinear

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

func TestBitTriples(t *testing.T) { testBitTriples(t, iknpSrc) }

func testBitTriples(t *testing.T, src otSource) {
	p := newPairOn(t, src, 32, Options{}, 1)
	ctx := context.Background()
	for _, n := range []int{1, 2, 3, 64, 65, 1000} {
		var t0, t1 BitTriples
		testenv.MustBoth(t, func() (err error) { t0, err = p.s0.BitTriples(ctx, n); return },
			func() (err error) { t1, err = p.s1.BitTriples(ctx, n); return })
		d := reconstructBits(t0.D, t1.D, n)
		e := reconstructBits(t0.E, t1.E, n)
		f := reconstructBits(t0.F, t1.F, n)
		var ones int
		for i := 0; i < n; i++ {
			if d[i]&e[i] != f[i] {
				t.Fatalf("n=%d: triple %d: d=%d e=%d f=%d", n, i, d[i], e[i], f[i])
			}
			ones += int(d[i] + e[i])
		}
		if n == 1000 && (ones < 800 || ones > 1200) {
			t.Errorf("triple inputs look biased: %d ones in 2000 bits", ones)
		}
		var c0, c1 CorrelatedBitTriples
		testenv.MustBoth(t, func() (err error) { c0, err = p.s0.CorrelatedBitTriples(ctx, n); return },
			func() (err error) { c1, err = p.s1.CorrelatedBitTriples(ctx, n); return })
		d, d2 := reconstructBits(c0.D, c1.D, n), reconstructBits(c0.D2, c1.D2, n)
		e = reconstructBits(c0.E, c1.E, n)
		f, f2 := reconstructBits(c0.F, c1.F, n), reconstructBits(c0.F2, c1.F2, n)
		for i := 0; i < n; i++ {
			if d[i]&e[i] != f[i] || d2[i]&e[i] != f2[i] {
				t.Fatalf("n=%d: correlated pair %d wrong", n, i)
			}
		}
	}
}

func TestAND(t *testing.T) { testAND(t, iknpSrc) }

func testAND(t *testing.T, src otSource) {
	p := newPairOn(t, src, 16, Options{}, 2)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 63, 64, 130, 5000} {
		x0, x1, y0, y1 := make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n))
		for _, v := range [][]uint64{x0, x1, y0, y1} {
			for i := range v {
				v[i] = rng.Uint64()
			}
			bitvec.ClearTail(v, n)
		}
		z0, z1 := make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n))
		p.run(t, func(s *Session, party int) error {
			if party == 0 {
				return s.AND(context.Background(), z0, x0, y0, n)
			}
			return s.AND(context.Background(), z1, x1, y1, n)
		})
		x, y, z := reconstructBits(x0, x1, n), reconstructBits(y0, y1, n), reconstructBits(z0, z1, n)
		for i := 0; i < n; i++ {
			if x[i]&y[i] != z[i] {
				t.Fatalf("n=%d: AND %d: %d∧%d gave %d", n, i, x[i], y[i], z[i])
			}
		}
	}
}

func TestMillionaires(t *testing.T) { testMillionaires(t, iknpSrc) }

func testMillionaires(t *testing.T, src otSource) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, m := range src.ints([]int{1, 2, 3, 4, 5, 7, 8}, []int{1, 3, 4}) {
		p := newPairOn(t, src, 32, Options{M: m}, 1)
		for _, b := range []int{1, 2, 3, 5, 8, 9, 12, 17, 31, 32, 33, 63, 64} {
			n := 300
			x, y := make([]uint64, n), make([]uint64, n)
			mask := bitvec.Mask(b)
			for i := range x {
				x[i], y[i] = rng.Uint64()&mask, rng.Uint64()&mask
				switch i % 5 {
				case 0:
					y[i] = x[i]
				case 1:
					y[i] = (x[i] + 1) & mask
				case 2:
					x[i], y[i] = mask, 0
				case 3:
					x[i] ^= 1
				}
			}
			r0, r1 := make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n))
			p.run(t, func(s *Session, party int) error {
				if party == 0 {
					return s.Millionaires(context.Background(), r0, x, b)
				}
				return s.Millionaires(context.Background(), r1, y, b)
			})
			got := reconstructBits(r0, r1, n)
			for i := range got {
				var want uint64
				if x[i] < y[i] {
					want = 1
				}
				if got[i] != want {
					t.Fatalf("m=%d b=%d: %d < %d gave %d", m, b, x[i], y[i], got[i])
				}
			}
		}
	}
}

func TestDReLUAndReLU(t *testing.T) { testDReLUAndReLU(t, iknpSrc) }

func testDReLUAndReLU(t *testing.T, src otSource) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, l := range src.ints(append([]int{2, 3}, testRings...), []int{2, 32, 37, 64}) {
		p := newPairOn(t, src, l, Options{}, 2)
		r := p.r
		n := 500
		v := testValues(r, rng, n)
		for _, wrap := range []bool{false, true} {
			var x0, x1 []uint64
			if wrap {
				x0, x1 = shareWrapping(r, rng, v)
			} else {
				x0, x1 = share(r, rng, v)
			}
			d0, d1 := make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n))
			z0, z1 := make([]uint64, n), make([]uint64, n)
			p.run(t, func(s *Session, party int) error {
				x, d, z := x0, d0, z0
				if party == 1 {
					x, d, z = x1, d1, z1
				}
				if err := s.DReLU(context.Background(), d, x); err != nil {
					return err
				}
				return s.ReLU(context.Background(), z, x)
			})
			dr := reconstructBits(d0, d1, n)
			z := ringtest.Reconstruct(r, z0, z1)
			for i, a := range v {
				pos := r.Signed(a) >= 0
				if (dr[i] == 1) != pos {
					t.Fatalf("l=%d: DReLU(%d) = %d", l, r.Signed(a), dr[i])
				}
				want := a
				if !pos {
					want = 0
				}
				if z[i] != want {
					t.Fatalf("l=%d: ReLU(%d) = %d", l, r.Signed(a), r.Signed(z[i]))
				}
			}
		}
	}
}

func TestMUXAndB2A(t *testing.T) { testMUXAndB2A(t, iknpSrc) }

func testMUXAndB2A(t *testing.T, src otSource) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, l := range src.ints(testRings, []int{8, 32, 64}) {
		p := newPairOn(t, src, l, Options{}, 1)
		r := p.r
		n := 200
		v := testValues(r, rng, n)
		a0, a1 := share(r, rng, v)
		c0, c1 := make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n))
		for i := range c0 {
			c0[i], c1[i] = rng.Uint64(), rng.Uint64()
		}
		bitvec.ClearTail(c0, n)
		bitvec.ClearTail(c1, n)
		z0, z1 := make([]uint64, n), make([]uint64, n)
		b0, b1 := make([]uint64, n), make([]uint64, n)
		p.run(t, func(s *Session, party int) error {
			a, c, z, b := a0, c0, z0, b0
			if party == 1 {
				a, c, z, b = a1, c1, z1, b1
			}
			if err := s.MUX(context.Background(), z, a, c); err != nil {
				return err
			}
			return s.B2A(context.Background(), b, c)
		})
		c := reconstructBits(c0, c1, n)
		z, b := ringtest.Reconstruct(r, z0, z1), ringtest.Reconstruct(r, b0, b1)
		for i := range v {
			if z[i] != r.Mul(c[i], v[i]) {
				t.Fatalf("l=%d: MUX(%d, %d) = %d", l, c[i], v[i], z[i])
			}
			if b[i] != c[i] {
				t.Fatalf("l=%d: B2A(%d) = %d", l, c[i], b[i])
			}
		}
	}
}
