package nonlinear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// ReLU followed by truncation of its non-negative output, fused.
//
// y = ReLU(x) >> s = b·(x >> s) with b = DReLU(x). For signed(x) ≥ 0 the
// truncation of a non-negative value (trunc.go, truncNonNeg) is
//
//	x >> s = T0 + T1 + C + 2^(l−s)·m0·m1   (mod 2^l)
//
// with T_i the arithmetic shift by s of share x_i read as a signed l-bit
// value, m_i its bit l−1 and C = 1{x0' + x1' ≥ 2^s} the carry of the shares'
// low s bits. The DReLU's comparison is the carry of the low w−1 bits (w = l,
// or the operand width of ReLULow); party 0's value there is the complement
// of its low bits, so the comparison of the low s bits of the two values is C.
// Split at s (newSplitGroup, as the general truncation does), the DReLU's
// tree yields C as an inner node: one comparison gives both b and C.
//
// Then two (4 choose 1)-OT_l in opposite directions, run like the MUX's two
// COTs (the second's receiver matrix leaves with the first's reply, so they
// cost the MUX's flights). In each, the sender S draws z_S, keeps it, and
// offers −z_S + f(j) to the receiver R for its choice j = (j_b, j_2):
//
//	first:  f(j) = (b_S ⊕ j_b)·(T_S + (c_S ⊕ j_2)),      R chooses (b_R, c_R)
//	second: f(j) = (b_S ⊕ j_b)·(T_S + 2^(l−s)·m_S·j_2),  R chooses (b_R, m_R)
//
// (b_i, c_i are party i's boolean shares of b and C). The first gives
// b·(T_S + C), the second, whose sender is the first's receiver, b·(T_R +
// 2^(l−s)·m_R·m_S); their sum is b·(x >> s) = y. Per element this replaces
// the truncation's s-bit millionaires', B2A and COT_s and the MUX's two COT_l
// by two (4 choose 1)-OT_l, and costs no flight beyond the ReLU's.

// reluTruncReq is one of the two (4 choose 1)-OT_l of the fused ReLU and truncation (see above):
// wrap selects the second (the 2^(l−s)·m0·m1 term) instead of the first (the carry).
type reluTruncReq struct {
	st   *stream
	n, l int
	wrap bool
	hi   uint64   // 2^(l−s) mod 2^l
	b    []uint64 // this party's packed DReLU shares
	c    []uint64 // packed: the carry shares (first), the share MSBs (second)
	t    []uint64 // this party's shares shifted, T_i
	out  []uint64 // this party's share of the OT's product
}

func (q *reluTruncReq) kind() (int, int) { return 4, q.l }
func (q *reluTruncReq) size() int        { return q.n }

func (q *reluTruncReq) send(msgs []uint64) {
	q.out = q.st.randWords(q.n, q.l)
	mask := bitvec.Mask(q.l)
	for i := 0; i < q.n; i++ {
		bs, cs := bitvec.Bit(q.b, i), bitvec.Bit(q.c, i)
		z := -q.out[i]
		t := q.t[i]
		// a[j2] is what b = 1 contributes for the receiver's second choice bit j2.
		var a [2]uint64
		if q.wrap {
			a[0], a[1] = t, t+cs*q.hi
		} else {
			a[0], a[1] = t+cs, t+(cs^1)
		}
		m := msgs[i*4 : i*4+4]
		for j := uint64(0); j < 4; j++ {
			v := z
			if bs^j&1 == 1 {
				v += a[j>>1]
			}
			m[j] = v & mask
		}
	}
}

func (q *reluTruncReq) choose(c []uint8) {
	for i := range c {
		c[i] = uint8(bitvec.Bit(q.b, i) | bitvec.Bit(q.c, i)<<1)
	}
}

func (q *reluTruncReq) receive(out []uint64) { q.out = append([]uint64(nil), out...) }

// reluTruncGroup is the DReLU comparison of the low w bits of x (dreluGroupBits) split at s: its
// low node is the carry of the shares' low s bits.
func (st *stream) reluTruncGroup(x []uint64, w, s int) *millGroup {
	return newShallowSplitGroup(st.dreluValues(x, w), w-1, s, st.m, st.party == 0)
}

// newShallowSplitGroup is a comparison of b-bit values split at s (see newSplitGroup) that takes
// no more flights than the unsplit comparison (newMillGroup) when digits up to two bits wider than
// m make that possible. A comparison's flights are one per kind (N, l) of its OT batches (runOTN
// runs one batch per kind, alternating the receiver) plus one per AND level, and a split adds to
// both: the low node of a tree must root a subtree of its own (l = 32, s = 12, m = 4: 3 + 5 digits
// take 4 levels where 8 take 3), and each segment's narrower top digit may be a kind of its own.
// Among the widths w0 (the low s bits' digits) and w1 (the others) in m..min(m+2, MaxM) it takes
// the fewest flights (counting the OT-made triples' kinds, (16 choose 1)-OT_2 and (8 choose
// 1)-OT_2), then the fewest digit-OT messages (Σ 2^w: the leaves' computation and message bits),
// then the narrower widths. Both parties compute it from public data.
func newShallowSplitGroup(v []uint64, b, s, m int, isX bool) *millGroup {
	target := newMillGroup(nil, b, m, isX).flights()
	var best *millGroup
	bestFlights, bestMsgs := 0, 0
	for w0 := m; w0 <= min(m+2, MaxM); w0++ {
		for w1 := m; w1 <= min(m+2, MaxM); w1++ {
			g := &millGroup{n: len(v), v: v, isX: isX}
			lo, lw := digitsOf(0, s, w0)
			hi, hw := digitsOf(s, b-s, w1)
			g.offs, g.widths = append(lo, hi...), append(lw, hw...)
			g.levels, g.capLevel = planTree([]int{len(lo), len(hi)})
			f, msgs := max(g.flights(), target), 0
			for _, w := range g.widths {
				msgs += 1 << w
			}
			if best == nil || f < bestFlights || f == bestFlights && msgs < bestMsgs {
				best, bestFlights, bestMsgs = g, f, msgs
			}
		}
	}
	return best
}

// flights is the flights of the group's comparison alone with OT-made triples: one per kind of
// its OT batches and one per AND level.
func (g *millGroup) flights() int {
	kinds := map[[2]int]bool{}
	for j, w := range g.widths {
		kinds[[2]int{w, min(j, 1)}] = true
	}
	for _, ops := range g.levels {
		for _, op := range ops {
			switch {
			case op.hi < 0:
			case op.lo == 0:
				kinds[[2]int{4, 1}] = true // regular triples: (16 choose 1)-OT_2
			default:
				kinds[[2]int{3, 1}] = true // correlated pairs: (8 choose 1)-OT_2
			}
		}
	}
	return len(kinds) + g.depth()
}

// words bounds the OT message words the sender builds per comparison of the group (digit OTs
// plus triples; compare millWords).
func (g *millGroup) words() int {
	t := 1
	for _, w := range g.widths {
		t += 1 << w
	}
	for _, ops := range g.levels {
		t += 8 * len(ops)
	}
	return t
}

// reluTrunc sets dst = ReLU(x) >> s for x whose signed values are w-bit values (w = l: all).
// dst may be x.
func (st *stream) reluTrunc(ctx context.Context, dst, x []uint64, w, s int) error {
	l := st.r.Bits
	n := len(x)
	g := st.reluTruncGroup(x, w, s)
	if err := st.mill(ctx, []*millGroup{g}, nil, nil); err != nil {
		return err
	}
	b := st.msbSharesBits(g, x, w)
	st.flipParty0(b, n)
	t := make([]uint64, n)
	for i, v := range x {
		t[i] = st.r.Trunc(v, s)
	}
	hi := uint64(1) << uint(l-s) & st.r.Mask()
	first := &reluTruncReq{st: st, n: n, l: l, hi: hi, b: b, c: g.low, t: t}
	if err := st.runOTN(ctx, first); err != nil {
		return err
	}
	second := &reluTruncReq{st: st, n: n, l: l, wrap: true, hi: hi, b: b, c: st.shareMSBs(x), t: t}
	if err := st.runOTN(ctx, second); err != nil {
		return err
	}
	mask := st.r.Mask()
	for i := range dst {
		dst[i] = (first.out[i] + second.out[i]) & mask
	}
	return nil
}

// ReLUTruncFuses reports whether ReLUTrunc runs for operands of b bits and a shift by s: the DReLU's
// comparison of b−1 bits must be wider than s (1 ≤ s < b−1, 2 ≤ b ≤ l). Otherwise run ReLU (or
// ReLULow) and Trunc(…, true).
func (s *Session) ReLUTruncFuses(b, sh int) bool {
	return b >= 2 && b <= s.r.Bits && sh >= 1 && sh < b-1
}

// ReLUTrunc sets dst = ReLU(x) >> sh = floor(max(signed(x), 0) / 2^sh), exactly: what ReLU (or
// ReLULow with b < l) followed by Trunc(…, sh, true) computes, in the ReLU's flights. The
// operands' signed values must be b-bit values, −2^(b−1) ≤ x < 2^(b−1) (b = l: any); the DReLU
// runs on their low b bits as in ReLULow, its comparison split at sh so that it also yields the
// carry of the truncation, and two (4 choose 1)-OT_l in opposite directions finish (see the
// comment at the top of relutrunc.go). It needs 1 ≤ sh < b−1 (ReLUTruncFuses). dst and x have
// the same length and may be the same slice. Communication per element: ReLUTruncBits.
func (s *Session) ReLUTrunc(ctx context.Context, dst, x []uint64, b, sh int) error {
	const op = "ReLUTrunc"
	if err := s.usable(op); err != nil {
		return err
	}
	if !s.ReLUTruncFuses(b, sh) {
		return fmt.Errorf("nonlinear: %s: operand width %d and shift %d: need 2 ≤ width ≤ %d (the ring's) and 1 ≤ shift < width−1", op, b, sh, s.r.Bits)
	}
	if err := checkLen(op, "dst", dst, len(x)); err != nil {
		return err
	}
	return s.run(ctx, op, s.parts(len(x), 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.chunks(ctx, hi-lo, st.chunkSize(newShallowSplitGroup(nil, b-1, sh, st.m, true).words()+4), func(ctx context.Context, st *stream, a, c int) error {
			return st.reluTrunc(ctx, dst[lo+a:lo+c], x[lo+a:lo+c], b, sh)
		})
	})
}
