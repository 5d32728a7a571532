package nonlinear

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// millWords bounds the OT message words the sender builds per comparison of
// b-bit values with leaf width m (digit OTs plus triples).
func millWords(b, m int) int {
	if b == 0 {
		return 0
	}
	q := (b + m - 1) / m
	r := b - (q-1)*m
	if q == 1 {
		return 1 << r
	}
	L := bits.Len(uint(q - 1))
	return (q-1)<<m + 1<<r + (16*L+1)/2 + 8*(q-1-L)
}

// chunkSize is the number of elements per chunk for a protocol that builds
// words OT message words per element (a positive multiple of 64).
func (st *stream) chunkSize(words int) int {
	if words <= 0 {
		words = 1
	}
	return max(64, st.budget/words&^63)
}

func (s *Session) checkBits(op, name string, v []uint64, n int) error {
	if len(v) < bitvec.Words(n) {
		return fmt.Errorf("nonlinear: %s: %s has %d words, want %d for %d bits", op, name, len(v), bitvec.Words(n), n)
	}
	return nil
}

func checkLen(op, name string, v []uint64, n int) error {
	if len(v) != n {
		return fmt.Errorf("nonlinear: %s: len(%s)=%d, want %d", op, name, len(v), n)
	}
	return nil
}

// ---------------------------------------------------------------- millionaires'

// Millionaires computes boolean shares of 1{x < y} for n = len(v)
// comparisons of b-bit unsigned integers, where party 0 holds x = v and
// party 1 holds y = v (values are taken mod 2^b). dst receives this party's
// shares, packed (bitvec.Words(n) words; see the package documentation).
// 1 ≤ b ≤ 64. Communication per comparison, λ = 128, M = 2^m, q = ⌈b/m⌉,
// r = b−(q−1)m, L = ⌈log2 q⌉ (q ≥ 2):
// λ(4q−L−2) + M(2q−3) + 2·2^r + 22(q−1) − 2L bits (CrypTFlow2 §3.1.2).
func (s *Session) Millionaires(ctx context.Context, dst, v []uint64, b int) error {
	const op = "Millionaires"
	if err := s.usable(op); err != nil {
		return err
	}
	n := len(v)
	if b < 1 || b > 64 {
		return fmt.Errorf("nonlinear: %s: bit width %d outside 1..64", op, b)
	}
	if err := s.checkBits(op, "dst", dst, n); err != nil {
		return err
	}
	mask := bitvec.Mask(b)
	return s.run(ctx, op, s.parts(n, 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.chunks(ctx, hi-lo, st.chunkSize(millWords(b, st.m)), func(ctx context.Context, st *stream, a, c int) error {
			x := make([]uint64, c-a)
			for i := range x {
				x[i] = v[lo+a+i] & mask
			}
			g := newMillGroup(x, b, st.m, st.party == 0)
			if err := st.mill(ctx, []*millGroup{g}, nil, nil); err != nil {
				return err
			}
			copy(dst[(lo+a)/64:], g.res)
			return nil
		})
	})
}

// ---------------------------------------------------------------- DReLU, ReLU

// dreluGroup returns the comparison whose result is the carry of the low
// l−1 bits of x0 + x1 (Alg. 2): party 0 holds 2^(l−1)−1−x0', party 1 holds
// x1', where x' is a share's low l−1 bits.
func (st *stream) dreluGroup(x []uint64) *millGroup {
	b := st.r.Bits - 1
	mask := bitvec.Mask(b)
	v := make([]uint64, len(x))
	if st.party == 0 {
		for i, a := range x {
			v[i] = mask - a&mask
		}
	} else {
		for i, a := range x {
			v[i] = a & mask
		}
	}
	return newMillGroup(v, b, st.m, st.party == 0)
}

// msbShares turns the carry shares of a DReLU group into shares of MSB(x):
// MSB(x) = msb(x0) ⊕ msb(x1) ⊕ carry.
func (st *stream) msbShares(g *millGroup, x []uint64) []uint64 {
	top := uint(st.r.Bits - 1)
	out := make([]uint64, bitvec.Words(len(x)))
	copy(out, g.res)
	for i, a := range x {
		out[i>>6] ^= (a >> top & 1) << (i & 63)
	}
	return out
}

// flipParty0 complements party 0's shares (so the shared bit is
// complemented), leaving the tail past n zero.
func (st *stream) flipParty0(v []uint64, n int) {
	if st.party != 0 {
		return
	}
	for i := range v[:bitvec.Words(n)] {
		v[i] = ^v[i]
	}
	bitvec.ClearTail(v, n)
}

// drelu returns shares of DReLU(x) = 1 ⊕ MSB(x) (Alg. 2).
func (st *stream) drelu(ctx context.Context, x []uint64) ([]uint64, error) {
	g := st.dreluGroup(x)
	if err := st.mill(ctx, []*millGroup{g}, nil, nil); err != nil {
		return nil, err
	}
	out := st.msbShares(g, x)
	st.flipParty0(out, len(x))
	return out, nil
}

// DReLU computes boolean shares of DReLU(x) = 1{signed(x) ≥ 0} for the
// shared vector x (Alg. 2: one millionaires' of l−1 bits). dst gets this
// party's packed shares (bitvec.Words(len(x)) words).
func (s *Session) DReLU(ctx context.Context, dst, x []uint64) error {
	const op = "DReLU"
	if err := s.usable(op); err != nil {
		return err
	}
	n := len(x)
	if err := s.checkBits(op, "dst", dst, n); err != nil {
		return err
	}
	return s.run(ctx, op, s.parts(n, 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.chunks(ctx, hi-lo, st.chunkSize(millWords(st.r.Bits-1, st.m)), func(ctx context.Context, st *stream, a, b int) error {
			d, err := st.drelu(ctx, x[lo+a:lo+b])
			if err != nil {
				return err
			}
			copy(dst[(lo+a)/64:], d)
			return nil
		})
	})
}

// ReLU sets dst = ReLU(x) = x·DReLU(x) on shares (Alg. 8: DReLU then MUX).
// dst and x have the same length and may be the same slice. Communication
// per element: the millionaires' of l−1 bits plus 2λ + 2l.
func (s *Session) ReLU(ctx context.Context, dst, x []uint64) error {
	const op = "ReLU"
	if err := s.usable(op); err != nil {
		return err
	}
	if err := checkLen(op, "dst", dst, len(x)); err != nil {
		return err
	}
	return s.run(ctx, op, s.parts(len(x), 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.chunks(ctx, hi-lo, st.chunkSize(millWords(st.r.Bits-1, st.m)), func(ctx context.Context, st *stream, a, b int) error {
			xs := x[lo+a : lo+b]
			c, err := st.drelu(ctx, xs)
			if err != nil {
				return err
			}
			return st.mux(ctx, dst[lo+a:lo+b], xs, c)
		})
	})
}

// ---------------------------------------------------------------- MUX, B2A

// mux sets dst = c·a on shares with two correlated OTs in opposite
// directions (Alg. 6). In the OT where party S is the sender, S's
// correlation is (1−2c_S)·a_S: the receiver R gets r + c_R(1−2c_S)a_S and S
// keeps c_S·a_S − r, which add up to (c_S ⊕ c_R)·a_S. Alg. 6 sends both
// messages of a chosen OT; they differ by ±a_S, so a COT (λ + l bits instead
// of λ + 2l) suffices.
func (st *stream) mux(ctx context.Context, dst, a, c []uint64) error {
	return st.muxWide(ctx, dst, a, c, 1)
}

// muxWide is mux for w words per element sharing one choice bit: a and dst
// hold n·w words, element i owning [i·w, (i+1)·w).
func (st *stream) muxWide(ctx context.Context, dst, a, c []uint64, w int) error {
	l := st.r.Bits
	mask := st.r.Mask()
	nw := len(a)
	n := nw / w
	acc := make([]uint64, nw)
	for k := 0; k < 2; k++ {
		err := st.cot(ctx, n, w, l,
			func(x []uint64) {
				for i := 0; i < n; i++ {
					neg := -bitvec.Bit(c, i) // all ones when c_S = 1
					for j := i * w; j < i*w+w; j++ {
						x[j] = ((a[j] ^ neg) - neg) & mask // a_S or −a_S
					}
				}
			},
			func(r []uint64) {
				for i := 0; i < n; i++ {
					ci := -bitvec.Bit(c, i)
					for j := i * w; j < i*w+w; j++ {
						acc[j] += a[j]&ci - r[j]
					}
				}
			},
			func() []uint64 { return c },
			func(y []uint64) {
				for j := range acc {
					acc[j] += y[j]
				}
			})
		if err != nil {
			return err
		}
	}
	for j := range acc {
		dst[j] = acc[j] & mask
	}
	return nil
}

// MUX sets dst = c·a on shares: a is an arithmetic share vector, c packed
// boolean shares (bitvec.Words(len(a)) words). dst and a may be the same slice.
// Communication per element: 2λ + 2l bits (two COT_l).
func (s *Session) MUX(ctx context.Context, dst, a, c []uint64) error {
	const op = "MUX"
	if err := s.usable(op); err != nil {
		return err
	}
	if err := checkLen(op, "dst", dst, len(a)); err != nil {
		return err
	}
	if err := s.checkBits(op, "c", c, len(a)); err != nil {
		return err
	}
	return s.run(ctx, op, s.parts(len(a), 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.mux(ctx, dst[lo:hi], a[lo:hi], c[lo/64:])
	})
}

// b2a sets dst to arithmetic shares (mod 2^l) of the shared bits c (Alg. 7,
// one COT_l): the sender S offers correlation c_S and keeps c_S + 2r, the
// receiver gets y = r + c_R·c_S and keeps c_R − 2y; the sum is
// c_S + c_R − 2c_S·c_R = c_S ⊕ c_R.
func (st *stream) b2a(ctx context.Context, dst, c []uint64, l int) error {
	n := len(dst)
	mask := bitvec.Mask(l)
	return st.cot(ctx, n, 1, l,
		func(x []uint64) {
			for i := range x {
				x[i] = bitvec.Bit(c, i)
			}
		},
		func(r []uint64) {
			for i := range dst {
				dst[i] = (bitvec.Bit(c, i) + 2*r[i]) & mask
			}
		},
		func() []uint64 { return c },
		func(y []uint64) {
			for i := range dst {
				dst[i] = (bitvec.Bit(c, i) - 2*y[i]) & mask
			}
		})
}

// B2A sets dst (n = len(dst) elements) to arithmetic shares in Z_2^l of the
// bits shared by c (packed). Communication: λ + l bits per element.
func (s *Session) B2A(ctx context.Context, dst, c []uint64) error {
	const op = "B2A"
	if err := s.usable(op); err != nil {
		return err
	}
	if err := s.checkBits(op, "c", c, len(dst)); err != nil {
		return err
	}
	return s.run(ctx, op, s.parts(len(dst), 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.b2a(ctx, dst[lo:hi], c[lo/64:], st.r.Bits)
	})
}

// ---------------------------------------------------------------- AND, triples

// AND sets dst to shares of x ∧ y for n shared bits (all packed), using
// regular Beaver triples made in bulk from (16 choose 1)-OT_2 (App. A.1).
// dst may alias x or y. Communication per AND: λ + 16 bits for the triple
// plus 4 bits.
func (s *Session) AND(ctx context.Context, dst, x, y []uint64, n int) error {
	const op = "AND"
	if err := s.usable(op); err != nil {
		return err
	}
	for _, a := range []struct {
		name string
		v    []uint64
	}{{"dst", dst}, {"x", x}, {"y", y}} {
		if err := s.checkBits(op, a.name, a.v, n); err != nil {
			return err
		}
	}
	if n < 0 {
		return fmt.Errorf("nonlinear: %s: negative count %d", op, n)
	}
	return s.run(ctx, op, s.parts(n, 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.chunks(ctx, hi-lo, st.chunkSize(8), func(ctx context.Context, st *stream, a, b int) error {
			m := b - a
			xs := make([]uint64, bitvec.Words(m))
			ys := make([]uint64, bitvec.Words(m))
			bitvec.Extract(xs, x, lo+a, m)
			bitvec.Extract(ys, y, lo+a, m)
			z, err := st.and(ctx, xs, ys, m)
			if err != nil {
				return err
			}
			copy(dst[(lo+a)/64:], z)
			return nil
		})
	})
}

// and computes shares of x ∧ y: triple production, then one exchange
// (sent by st.last first, as in the AND tree schedule).
func (st *stream) and(ctx context.Context, x, y []uint64, n int) ([]uint64, error) {
	pool := &triplePool{}
	if err := st.runOTN(ctx, pool.reserve(st, n, 0)...); err != nil {
		return nil, err
	}
	d, e, f := pool.takeReg(n)
	mx, my := xorNew(x, d), xorNew(y, e)
	var w bitvec.Appender
	w.Reset(st.sc.frame)
	w.Append(mx, n)
	w.Append(my, n)
	st.sc.frame = w.Words()
	// The party that sent last sends first; the other answers.
	var buf []uint64
	var err error
	if st.last == st.party {
		if err = st.sendFlight(ctx, w.Words(), w.Len()); err == nil {
			buf, err = st.recvFlight(ctx, 2*n)
		}
	} else {
		if buf, err = st.recvFlight(ctx, 2*n); err == nil {
			err = st.sendFlight(ctx, w.Words(), w.Len())
		}
	}
	if err != nil {
		return nil, err
	}
	ox, oy := make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n))
	bitvec.Extract(ox, buf, 0, n)
	bitvec.Extract(oy, buf, n, n)
	return beaver(mx, ox, my, oy, d, e, f, st.party == 0), nil
}

// BitTriples are this party's shares of n Beaver bit triples d∧e = f, packed.
type BitTriples struct {
	N       int
	D, E, F []uint64
}

// CorrelatedBitTriples are this party's shares of n correlated triple pairs
// (d, e, f), (d2, e, f2) with d∧e = f and d2∧e = f2, packed.
type CorrelatedBitTriples struct {
	N               int
	D, D2, E, F, F2 []uint64
}

// BitTriples produces n regular Beaver bit triples (two per
// (16 choose 1)-OT_2, App. A.1): λ/2 + 16 bits each.
func (s *Session) BitTriples(ctx context.Context, n int) (BitTriples, error) {
	const op = "BitTriples"
	if err := s.usable(op); err != nil {
		return BitTriples{}, err
	}
	if n < 0 {
		return BitTriples{}, fmt.Errorf("nonlinear: %s: negative count %d", op, n)
	}
	t := BitTriples{N: n, D: make([]uint64, bitvec.Words(n)), E: make([]uint64, bitvec.Words(n)), F: make([]uint64, bitvec.Words(n))}
	st := s.streams[0]
	err := st.chunks(ctx, n, st.chunkSize(8), func(ctx context.Context, st *stream, a, b int) error {
		pool := &triplePool{}
		if err := st.runOTN(ctx, pool.reserve(st, b-a, 0)...); err != nil {
			return err
		}
		d, e, f := pool.takeReg(b - a)
		copy(t.D[a/64:], d)
		copy(t.E[a/64:], e)
		copy(t.F[a/64:], f)
		return nil
	})
	if err != nil {
		return BitTriples{}, s.fail(ctx, op, err)
	}
	return t, nil
}

// CorrelatedBitTriples produces n correlated pairs (one
// (8 choose 1)-OT_2 each, App. A.2): 2λ + 16 bits per pair.
func (s *Session) CorrelatedBitTriples(ctx context.Context, n int) (CorrelatedBitTriples, error) {
	const op = "CorrelatedBitTriples"
	if err := s.usable(op); err != nil {
		return CorrelatedBitTriples{}, err
	}
	if n < 0 {
		return CorrelatedBitTriples{}, fmt.Errorf("nonlinear: %s: negative count %d", op, n)
	}
	w := bitvec.Words(n)
	t := CorrelatedBitTriples{N: n, D: make([]uint64, w), D2: make([]uint64, w), E: make([]uint64, w),
		F: make([]uint64, w), F2: make([]uint64, w)}
	st := s.streams[0]
	err := st.chunks(ctx, n, st.chunkSize(8), func(ctx context.Context, st *stream, a, b int) error {
		pool := &triplePool{}
		if err := st.runOTN(ctx, pool.reserve(st, 0, b-a)...); err != nil {
			return err
		}
		d, d2, e, f, f2 := pool.takeCorr(b - a)
		for _, c := range []struct{ dst, src []uint64 }{{t.D, d}, {t.D2, d2}, {t.E, e}, {t.F, f}, {t.F2, f2}} {
			copy(c.dst[a/64:], c.src)
		}
		return nil
	})
	if err != nil {
		return CorrelatedBitTriples{}, s.fail(ctx, op, err)
	}
	return t, nil
}
