package nonlinear

import (
	"context"
	"fmt"
)

// Row-wise maximum and argmax (MaxPool and ArgMax, §5.2.2) by a tree of
// comparisons: at each level the values of a row are compared in adjacent
// pairs (an odd last value passes through), so a row of d values takes
// ⌈log2 d⌉ levels and d−1 comparisons, and every level of every row of the
// layer runs as one batch. A comparison of left and right is
// b = DReLU(left − right), then max = right + MUX(b, left − right); for
// argmax the MUX also selects right + b·(idx_left − idx_right) (one COT
// carrying both words). Ties keep the left value, so argmax returns the
// lowest index of the maximum. The triples of all levels are produced in the
// first level's OT batches.
//
// As in CrypTFlow2 the comparison is the sign of the difference in Z_2^l, so
// the result is the maximum of the signed values when the values of a row
// differ by less than 2^(l−1) — in particular whenever they all lie in
// [−2^(l−2), 2^(l−2)). Values further apart make the difference wrap.

// poolWords is the OT message words per row of a pooling chunk (the widest
// level compares ⌊d/2⌋ pairs).
func poolWords(l, d, m int) int { return max(1, d/2) * (millWords(l-1, m) + 1) }

// treeTriples returns the triples needed by all levels of a tree over rows
// of d values.
func (st *stream) treeTriples(rows, d int) (reg, corr int) {
	for c := d; c > 1; c = (c + 1) / 2 {
		g := newMillGroup(make([]uint64, 0), st.r.Bits-1, st.m, true)
		g.n = rows * (c / 2)
		r, k := g.triples()
		reg, corr = reg+r, corr+k
	}
	return
}

// maxTree computes the row maxima (and, when idx is non-nil, the argmax
// indices as ring elements) of x (rows·d shares) into val and idx.
func (st *stream) maxTree(ctx context.Context, val, idx, x []uint64, rows, d int) error {
	mask := st.r.Mask()
	cur := make([]uint64, len(x))
	for i, v := range x {
		cur[i] = v & mask
	}
	var ci []uint64
	if idx != nil {
		// Index shares: party 0 holds j, party 1 holds 0.
		ci = make([]uint64, len(x))
		if st.party == 0 {
			for i := range ci {
				ci[i] = uint64(i%d) & mask
			}
		}
	}
	pool := &triplePool{}
	reg, corr := st.treeTriples(rows, d)
	poolReqs := pool.reserve(st, reg, corr)
	for c := d; c > 1; {
		p := c / 2
		nc := (c + 1) / 2
		k := rows * p
		diff := make([]uint64, k)
		for r := 0; r < rows; r++ {
			for j := 0; j < p; j++ {
				diff[r*p+j] = (cur[r*c+2*j] - cur[r*c+2*j+1]) & mask
			}
		}
		g := st.dreluGroup(diff)
		if err := st.mill(ctx, []*millGroup{g}, pool, poolReqs); err != nil {
			return err
		}
		poolReqs = nil
		b := st.msbShares(g, diff)
		st.flipParty0(b, k)
		next := make([]uint64, rows*nc)
		var nidx []uint64
		if idx == nil {
			t := make([]uint64, k)
			if err := st.mux(ctx, t, diff, b); err != nil {
				return err
			}
			for r := 0; r < rows; r++ {
				for j := 0; j < p; j++ {
					next[r*nc+j] = (cur[r*c+2*j+1] + t[r*p+j]) & mask
				}
			}
		} else {
			pairs := make([]uint64, 2*k)
			for r := 0; r < rows; r++ {
				for j := 0; j < p; j++ {
					e := r*p + j
					pairs[2*e] = diff[e]
					pairs[2*e+1] = (ci[r*c+2*j] - ci[r*c+2*j+1]) & mask
				}
			}
			t := make([]uint64, 2*k)
			if err := st.muxWide(ctx, t, pairs, b, 2); err != nil {
				return err
			}
			nidx = make([]uint64, rows*nc)
			for r := 0; r < rows; r++ {
				for j := 0; j < p; j++ {
					e := r*p + j
					next[r*nc+j] = (cur[r*c+2*j+1] + t[2*e]) & mask
					nidx[r*nc+j] = (ci[r*c+2*j+1] + t[2*e+1]) & mask
				}
			}
		}
		if c%2 == 1 {
			for r := 0; r < rows; r++ {
				next[r*nc+p] = cur[r*c+c-1]
				if nidx != nil {
					nidx[r*nc+p] = ci[r*c+c-1]
				}
			}
		}
		cur, ci, c = next, nidx, nc
	}
	copy(val, cur)
	if idx != nil {
		copy(idx, ci)
	}
	return nil
}

// checkRows checks that the session is usable and the arguments of a row-wise operation: rows
// rows of d ≥ 1 elements in x, one result per row in dst.
func (s *Session) checkRows(op string, dst, x []uint64, rows, d int) error {
	if err := s.usable(op); err != nil {
		return err
	}
	if rows < 0 || d < 1 {
		return fmt.Errorf("nonlinear: %s: %d rows of %d elements", op, rows, d)
	}
	if err := checkLen(op, "x", x, rows*d); err != nil {
		return err
	}
	return checkLen(op, "dst", dst, rows)
}

func (s *Session) rowsOp(ctx context.Context, op string, dst, x []uint64, rows, d int, arg bool) error {
	if err := s.checkRows(op, dst, x, rows, d); err != nil {
		return err
	}
	if d == 1 {
		if arg {
			clear(dst)
		} else {
			copy(dst, x)
		}
		return nil
	}
	parts := [][2]int{{0, rows}}
	if rows*d >= s.minSplit {
		parts = splitEven(rows, len(s.streams))
	}
	return s.run(ctx, op, parts, func(ctx context.Context, st *stream, lo, hi int) error {
		per := max(1, st.budget/poolWords(st.r.Bits, d, st.m))
		return st.chunks(ctx, hi-lo, per, func(ctx context.Context, st *stream, a, b int) error {
			xs := x[(lo+a)*d : (lo+b)*d]
			if arg {
				val := make([]uint64, b-a)
				return st.maxTree(ctx, val, dst[lo+a:lo+b], xs, b-a, d)
			}
			return st.maxTree(ctx, dst[lo+a:lo+b], nil, xs, b-a, d)
		})
	})
}

// splitEven splits n items into k nearly equal ranges (fewer if n < k).
func splitEven(n, k int) [][2]int {
	k = max(1, min(k, n))
	out := make([][2]int, 0, k)
	for i := 0; i < k; i++ {
		out = append(out, [2]int{n * i / k, n * (i + 1) / k})
	}
	return out
}

// MaxRows sets dst[i] = max_j signed(x[i·d+j]) for i < rows (MaxPool over
// windows gathered into rows of d), by a tree of ⌈log2 d⌉ levels of
// comparisons. As in CrypTFlow2 a comparison is the sign of a difference in
// Z_2^l, so the result is exact when the values of each row differ by less
// than 2^(l−1), e.g. when all lie in [−2^(l−2), 2^(l−2)). dst may not alias
// x. Communication per row: d−1 comparisons of ReLUBits each.
func (s *Session) MaxRows(ctx context.Context, dst, x []uint64, rows, d int) error {
	return s.rowsOp(ctx, "MaxRows", dst, x, rows, d, false)
}

// ArgMaxRows sets dst[i] to the index j of the largest signed x[i·d+j]
// (the lowest such j on ties), as a ring element; exact under the same
// condition as MaxRows. Communication per row: d−1 comparisons of
// ReLUBits + 2l each.
func (s *Session) ArgMaxRows(ctx context.Context, dst, x []uint64, rows, d int) error {
	return s.rowsOp(ctx, "ArgMaxRows", dst, x, rows, d, true)
}
