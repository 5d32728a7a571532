package nonlinear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// Faithful truncation Π_Trunc^{int,l,s}: Trunc(a, s) = floor(signed(a)/2^s),
// exactly.
//
// General inputs. Party 0 adds 2^(l−1) to its share, so u = a + 2^(l−1) is
// the unsigned value ordered like signed(a), and floor(signed(a)/2^s) =
// floor(u/2^s) − 2^(l−1−s). With u_b = h_b·2^s + low_b,
//
//	floor(u/2^s) = h0 + h1 + c − w·2^(l−s)    c = 1{low0 + low1 ≥ 2^s}, w = 1{u0 + u1 ≥ 2^l}
//
// and both bits come from one millionaires' comparison of l bits,
// 1{2^l−1−u0 < u1} = w, whose tree reduces the digits of the low s bits
// first: its inner node for those digits is 1{2^s−1−low0 < low1} = c. Two
// B2A (w only matters mod 2^s) finish. This is Corollary 4.2 with the wrap
// and the carry read off one comparison tree (the decomposition SCI's
// library also uses); it costs one l-bit millionaires' instead of Alg. 5's
// DReLU plus an s-bit millionaires' plus a (4 choose 1)-OT_l.
//
// Inputs known to be non-negative (after ReLU, §6.2): Corollary 4.2 as in
// Alg. 5 with MSB(a) = 0, so the DReLU call disappears and
// corr = MSB(a0) ∧ MSB(a1) is one COT_s:
//
//	a >> s = (a0 >> s) + (a1 >> s) + corr·2^(l−s) + 1{a0' + a1' ≥ 2^s}   (mod 2^l)
//
// with >> the arithmetic shift of the shares read as signed l-bit integers
// and a_b' a share's low s bits; the carry is a millionaires' of s bits.

// wrapReq is the (4 choose 1)-OT_w giving additive shares (mod 2^w) of
// corr, from shares m of MSB(a) and the parties' share MSBs x. The sender
// draws its share z_S and offers, for the receiver's (m_R, x_R) = j,
// −z_S + corr(j).
type wrapReq struct {
	st   *stream
	n, w int
	m, x []uint64 // this party's packed MSB(a) shares and share MSBs
	out  []uint64 // this party's corr shares (mod 2^w)
}

func (q *wrapReq) kind() (int, int) { return 4, q.w }
func (q *wrapReq) size() int        { return q.n }

func (q *wrapReq) send(msgs []uint64) {
	q.out = q.st.randWords(q.n, q.w)
	mask := bitvec.Mask(q.w)
	for i := 0; i < q.n; i++ {
		ms, xs := bitvec.Bit(q.m, i), bitvec.Bit(q.x, i)
		z := -q.out[i]
		for j := uint64(0); j < 4; j++ {
			j0, j1 := j&1, j>>1
			t := (ms ^ j0 ^ xs) & (ms ^ j0 ^ j1)
			v := z
			if t == 1 {
				v += 2*xs - 1 // −1 when x_S = 0, +1 when x_S = 1
			}
			msgs[i*4+int(j)] = v & mask
		}
	}
}

func (q *wrapReq) choose(c []uint8) {
	for i := range c {
		c[i] = uint8(bitvec.Bit(q.m, i) | bitvec.Bit(q.x, i)<<1)
	}
}

func (q *wrapReq) receive(out []uint64) { q.out = append([]uint64(nil), out...) }

// shareMSBs returns the packed MSBs (bit l−1) of the shares x.
func (st *stream) shareMSBs(x []uint64) []uint64 {
	out := make([]uint64, bitvec.Words(len(x)))
	bitvec.PackBit(out, x, uint(st.r.Bits-1))
	return out
}

// truncWords is the OT message words per element of a truncation chunk.
func truncWords(l, s, m int, nonNeg bool) int {
	if nonNeg {
		return millWords(s, m)
	}
	return millWords(l, m) + millWords(s, m) + 4
}

// trunc sets dst = floor(signed(a)/2^s) for 0 < s < l.
func (st *stream) trunc(ctx context.Context, dst, a []uint64, s int, nonNeg bool) error {
	switch {
	case nonNeg:
		return st.truncNonNeg(ctx, dst, a, s)
	case st.alg5:
		return st.truncAlg5(ctx, dst, a, s)
	}
	l := st.r.Bits
	n := len(a)
	mask := st.r.Mask()
	half := uint64(1) << (l - 1)
	u := make([]uint64, n)
	v := make([]uint64, n)
	for i, x := range a {
		if st.party == 0 {
			u[i] = (x + half) & mask
			v[i] = mask - u[i] // 2^l − 1 − u0
		} else {
			u[i] = x & mask
			v[i] = u[i]
		}
	}
	g := newSplitGroup(v, l, s, st.m, st.party == 0)
	if err := st.mill(ctx, []*millGroup{g}, nil, nil); err != nil {
		return err
	}
	c := make([]uint64, n)
	if err := st.b2a(ctx, c, g.low, l); err != nil {
		return err
	}
	w := make([]uint64, n)
	if err := st.b2a(ctx, w, g.res, s); err != nil {
		return err
	}
	var off uint64
	if st.party == 0 {
		off = half >> uint(s) // 2^(l−1−s)
	}
	for i := range dst {
		dst[i] = (u[i]>>uint(s) + c[i] - w[i]<<uint(l-s) - off) & mask
	}
	return nil
}

// carryGroup is the millionaires' group whose result is the carry of the low s bits of the shares
// a, 1{a0' + a1' ≥ 2^s}: party 0 holds 2^s−1−a0', party 1 holds a1'.
func (st *stream) carryGroup(a []uint64, s int) *millGroup {
	lowS := bitvec.Mask(s)
	cv := make([]uint64, len(a))
	for i, v := range a {
		if st.party == 0 {
			cv[i] = lowS - v&lowS
		} else {
			cv[i] = v & lowS
		}
	}
	return newMillGroup(cv, s, st.m, st.party == 0)
}

// truncNonNeg is trunc for inputs known to be non-negative.
func (st *stream) truncNonNeg(ctx context.Context, dst, a []uint64, s int) error {
	l := st.r.Bits
	n := len(a)
	mask := st.r.Mask()
	gc := st.carryGroup(a, s)
	x := st.shareMSBs(a)
	if err := st.mill(ctx, []*millGroup{gc}, nil, nil); err != nil {
		return err
	}
	carry := make([]uint64, n) // dst may alias a: keep a intact until the end
	if err := st.b2a(ctx, carry, gc.res, l); err != nil {
		return err
	}
	// corr = x0 ∧ x1 by one COT_s: the sender's correlation is x_S; its
	// share is −r, the receiver's r + x_R·x_S.
	corr := make([]uint64, n)
	err := st.cot(ctx, n, 1, s,
		func(c []uint64) {
			for i := range c {
				c[i] = bitvec.Bit(x, i)
			}
		},
		func(r []uint64) {
			for i := range corr {
				corr[i] = -r[i]
			}
		},
		func() []uint64 { return x },
		func(y []uint64) { copy(corr, y) })
	if err != nil {
		return err
	}
	for i, v := range a {
		dst[i] = (carry[i] + st.r.Trunc(v, s) + corr[i]<<uint(l-s)) & mask
	}
	return nil
}

// truncAlg5 is Alg. 5 as published: DReLU (MSB(a)), corr from a
// (4 choose 1)-OT_l, the carry of the low s bits from a millionaires' of s
// bits (run together with the DReLU's) and B2A, with
//
//	a >> s = (a0 >> s) + (a1 >> s) + corr·2^(l−s) + 1{a0' + a1' ≥ 2^s}   (mod 2^l)
//
// (arithmetic shifts of the shares).
func (st *stream) truncAlg5(ctx context.Context, dst, a []uint64, s int) error {
	l := st.r.Bits
	n := len(a)
	mask := st.r.Mask()
	gc := st.carryGroup(a, s)
	gd := st.dreluGroup(a)
	if err := st.mill(ctx, []*millGroup{gd, gc}, nil, nil); err != nil {
		return err
	}
	wr := &wrapReq{st: st, n: n, w: l, m: st.msbShares(gd, a), x: st.shareMSBs(a)}
	if err := st.runOTN(ctx, wr); err != nil {
		return err
	}
	carry := make([]uint64, n)
	if err := st.b2a(ctx, carry, gc.res, l); err != nil {
		return err
	}
	for i, v := range a {
		dst[i] = (carry[i] + st.r.Trunc(v, s) + wr.out[i]<<uint(l-s)) & mask
	}
	return nil
}

// sign sets dst = floor(signed(a)/2^l) = −MSB(a): DReLU, B2A, and party 0
// subtracts 1.
func (st *stream) sign(ctx context.Context, dst, a []uint64) error {
	d, err := st.drelu(ctx, a)
	if err != nil {
		return err
	}
	if err := st.b2a(ctx, dst, d, st.r.Bits); err != nil {
		return err
	}
	if st.party == 0 {
		for i := range dst {
			dst[i] = st.r.Sub(dst[i], 1)
		}
	}
	return nil
}

// Trunc sets dst = floor(signed(x) / 2^s) (an arithmetic shift, reduced into
// the ring) exactly, for 0 ≤ s ≤ 63 (faithful truncation, Corollary 4.2):
// for 0 < s < l by one l-bit millionaires' whose tree also yields the carry
// of the low s bits, plus two B2A (or Alg. 5 as published with
// Options.PaperTrunc); for s ≥ l by DReLU and B2A. With knownNonNeg the
// caller promises signed(x) ≥ 0 for every element (e.g. after ReLU), and
// the cheaper variant without DReLU runs (§6.2); if the promise is broken
// the result is wrong. dst and x have the same length and may be the same
// slice. Communication per element: TruncBits (PaperTruncBits).
func (s *Session) Trunc(ctx context.Context, dst, x []uint64, sh int, knownNonNeg bool) error {
	const op = "Trunc"
	if err := s.usable(op); err != nil {
		return err
	}
	if err := checkLen(op, "dst", dst, len(x)); err != nil {
		return err
	}
	if sh < 0 || sh > 63 {
		return fmt.Errorf("nonlinear: %s: shift %d outside 0..63", op, sh)
	}
	l := s.r.Bits
	switch {
	case sh == 0:
		copy(dst, x)
		return nil
	case sh >= l && knownNonNeg:
		clear(dst)
		return nil
	}
	return s.run(ctx, op, s.parts(len(x), 64), func(ctx context.Context, st *stream, lo, hi int) error {
		if sh >= l {
			return st.chunks(ctx, hi-lo, st.chunkSize(millWords(l-1, st.m)), func(ctx context.Context, st *stream, a, b int) error {
				return st.sign(ctx, dst[lo+a:lo+b], x[lo+a:lo+b])
			})
		}
		return st.chunks(ctx, hi-lo, st.chunkSize(truncWords(l, sh, st.m, knownNonNeg)), func(ctx context.Context, st *stream, a, b int) error {
			return st.trunc(ctx, dst[lo+a:lo+b], x[lo+a:lo+b], sh, knownNonNeg)
		})
	})
}
