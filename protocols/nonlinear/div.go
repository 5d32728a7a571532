package nonlinear

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// Division by a public positive integer d over Z_2^l (Alg. 9 / App. D, the
// l-bit case of Theorem 4.1): with n = 2^l = n1·d + n0, a_b the unsigned
// shares, x_b = MSB(a_b), a_b' = a_b mod d and corr as in truncation,
//
//	A = a0' + a1' − (x0 + x1 − corr)·n0            (|A| ≤ 2d − 2)
//	B = idiv(a0' − x0·n0, d) + idiv(a1' − x1·n0, d)  (local)
//	C = 1{A < d} + 1{A < 0} + 1{A < −d}
//	rdiv(a, d) = rdiv(a0, d) + rdiv(a1, d) + corr·n1 + 1 − C − B   (mod 2^l)
//
// corr is shared mod 2^max(l, δ) by one (4 choose 1)-OT (Alg. 9 sends
// l + δ bits, but shares mod 2^max(l,δ) reduce to shares mod 2^l and mod
// 2^δ, both powers of two). A is then shared mod Δ = 2^δ, δ = ⌈log2 6d⌉,
// and each term of C is MSB(A_j) over δ bits for A_j ∈ {A−d, A, A+d}, i.e.
// one comparison of δ−1 bits each; three B2A give C. The triples of both
// comparison rounds are produced in the first round's OT batches.

// divParams returns n1 = ⌊2^l/d⌋ and n0 = 2^l mod d (d ≥ 2).
func divParams(l int, d uint64) (n1, n0 uint64) {
	if l == 64 {
		return bits.Div64(1, 0, d)
	}
	return (uint64(1) << l) / d, (uint64(1) << l) % d
}

// floorDiv is ⌊a/d⌋ for d > 0.
func floorDiv(a int64, d uint64) int64 {
	if d > 1<<63-1 {
		if a < 0 {
			return -1
		}
		return 0
	}
	q := a / int64(d)
	if a%int64(d) != 0 && a < 0 {
		q--
	}
	return q
}

// divWords is the OT message words per element of a division chunk.
func divWords(l int, d uint64, m int) int {
	delta := divDelta(d)
	return millWords(l-1, m) + 4 + 3*millWords(delta-1, m)
}

// div sets dst = rdiv(a, d) for 2 ≤ d < 2^(l−1), d not a power of two.
func (st *stream) div(ctx context.Context, dst, a []uint64, d uint64) error {
	l := st.r.Bits
	n := len(a)
	mask := st.r.Mask()
	delta := divDelta(d)
	w := max(l, delta)
	n1, n0 := divParams(l, d)
	p0 := st.party == 0

	// Round 1: DReLU over l bits (with the triples of both rounds).
	gd := st.dreluGroup(a)
	g2 := newMillGroup(make([]uint64, 3*n), delta-1, st.m, p0)
	reg1, corr1 := gd.triples()
	reg2, corr2 := g2.triples()
	pool := &triplePool{}
	poolReqs := pool.reserve(st, reg1+reg2, corr1+corr2)
	if err := st.mill(ctx, []*millGroup{gd}, pool, poolReqs); err != nil {
		return err
	}
	x := st.shareMSBs(a)
	wr := &wrapReq{st: st, n: n, w: w, m: st.msbShares(gd, a), x: x}
	if err := st.runOTN(ctx, wr); err != nil {
		return err
	}
	corr := wr.out

	// Round 2: the signs of A−d, A, A+d over δ bits. Party 1 shifts its
	// share by ∓d, so party 0's share is the same in all three.
	dmask := bitvec.Mask(delta)
	low := bitvec.Mask(delta - 1)
	top := uint(delta - 1)
	aShare := make([]uint64, 3*n) // shares of A_j, j-major
	for i, v := range a {
		ab := ((v&mask)%d - (bitvec.Bit(x, i)-corr[i])*n0) & dmask
		for j := 0; j < 3; j++ {
			s := ab
			if !p0 {
				s = (ab + uint64(j-1)*d) & dmask
			}
			aShare[j*n+i] = s
		}
	}
	for i, s := range aShare {
		if p0 {
			g2.v[i] = low - s&low
		} else {
			g2.v[i] = s & low
		}
	}
	if err := st.mill(ctx, []*millGroup{g2}, pool, nil); err != nil {
		return err
	}
	c := g2.res // shares of the carries; MSB(A_j) = msb0 ⊕ msb1 ⊕ carry
	for i, s := range aShare {
		c[i>>6] ^= (s >> top & 1) << (i & 63)
	}
	cs := make([]uint64, 3*n)
	if err := st.b2a(ctx, cs, c, l); err != nil {
		return err
	}

	for i, v := range a {
		v &= mask
		ab0 := v % d
		var bb uint64 // B_b = idiv(a_b' − x_b·n0, d) ∈ {−1, 0}
		if ab0 < bitvec.Bit(x, i)*n0 {
			bb = mask
		}
		z := uint64(floorDiv(st.r.Signed(v), d)) + corr[i]*n1 - cs[i] - cs[n+i] - cs[2*n+i] - bb
		if !p0 {
			z++
		}
		dst[i] = z & mask
	}
	return nil
}

// Div sets dst = floor(signed(x) / d) (rdiv of Theorem 4.1, reduced into the
// ring) exactly, for a public divisor d ≥ 1. Powers of two use Trunc; other
// d use Alg. 9 (App. D). For l ≥ 63 a divisor above 2^64/6 that is not
// above 2^(l−1) is not supported (δ = ⌈log2 6d⌉ would exceed 64). dst and x
// have the same length and may be the same slice. Communication per element
// (d not a power of two): DivBits.
func (s *Session) Div(ctx context.Context, dst, x []uint64, d uint64) error {
	const op = "Div"
	if err := s.usable(op); err != nil {
		return err
	}
	if err := checkLen(op, "dst", dst, len(x)); err != nil {
		return err
	}
	return s.div(ctx, op, dst, x, d)
}

func (s *Session) div(ctx context.Context, op string, dst, x []uint64, d uint64) error {
	l := s.r.Bits
	switch {
	case d == 0:
		return fmt.Errorf("nonlinear: %s: division by zero", op)
	case d == 1:
		copy(dst, x)
		return nil
	case d&(d-1) == 0:
		return s.Trunc(ctx, dst, x, bits.TrailingZeros64(d), false)
	case l < 64 && d > uint64(1)<<(l-1), l == 64 && d > 1<<63:
		// |signed(x)| ≤ 2^(l−1) < d: the quotient is −1 for negative x, else 0.
		return s.Trunc(ctx, dst, x, 63, false)
	case divDelta(d) > 64:
		return fmt.Errorf("nonlinear: %s: divisor %d too large for Z_2^%d (⌈log2 6d⌉ > 64)", op, d, l)
	}
	return s.run(ctx, op, s.parts(len(x), 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.chunks(ctx, hi-lo, st.chunkSize(divWords(l, d, st.m)), func(ctx context.Context, st *stream, a, b int) error {
			return st.div(ctx, dst[lo+a:lo+b], x[lo+a:lo+b], d)
		})
	})
}

// AvgRows sets dst[i] = floor(signed(Σ_j x[i·d+j]) / d) for i < rows: the
// window sums of an average pool (or a global average pool, one row per
// channel) are formed locally on the shares and divided with Div. len(x)
// must be rows·d and len(dst) rows.
func (s *Session) AvgRows(ctx context.Context, dst, x []uint64, rows, d int) error {
	const op = "AvgRows"
	if err := s.checkRows(op, dst, x, rows, d); err != nil {
		return err
	}
	sum := make([]uint64, rows)
	mask := s.r.Mask()
	for i := range sum {
		var acc uint64
		for _, v := range x[i*d : i*d+d] {
			acc += v
		}
		sum[i] = acc & mask
	}
	if err := s.div(ctx, op, sum, sum, uint64(d)); err != nil {
		return err
	}
	copy(dst, sum)
	return nil
}
