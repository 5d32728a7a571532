package nonlinear

import (
	"context"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// DReLU (Alg. 2): the sign bit of a shared value from one millionaires' of
// l−1 bits. Besides ReLU, MaxPool (pool.go), Trunc and Div batch its
// comparison with their own (dreluGroup, msbShares, flipParty0).

// dreluGroup returns the comparison whose result is the carry of the low
// l−1 bits of x0 + x1 (Alg. 2): party 0 holds 2^(l−1)−1−x0', party 1 holds
// x1', where x' is a share's low l−1 bits.
func (st *stream) dreluGroup(x []uint64) *millGroup { return st.dreluGroupBits(x, st.r.Bits) }

// dreluGroupBits is dreluGroup for the sign bit of the low w bits of x
// (bit w−1 of x0 + x1): the carry of their low w−1 bits.
func (st *stream) dreluGroupBits(x []uint64, w int) *millGroup {
	return newMillGroup(st.dreluValues(x, w), w-1, st.m, st.party == 0)
}

// dreluValues is this party's side of dreluGroupBits's comparison of w−1 bits.
func (st *stream) dreluValues(x []uint64, w int) []uint64 {
	mask := bitvec.Mask(w - 1)
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
	return v
}

// msbShares turns the carry shares of a DReLU group into shares of MSB(x):
// MSB(x) = msb(x0) ⊕ msb(x1) ⊕ carry.
func (st *stream) msbShares(g *millGroup, x []uint64) []uint64 {
	return st.msbSharesBits(g, x, st.r.Bits)
}

// msbSharesBits is msbShares for bit w−1 (a group of dreluGroupBits(x, w)).
func (st *stream) msbSharesBits(g *millGroup, x []uint64, w int) []uint64 {
	top := uint(w - 1)
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
	return st.dreluBits(ctx, x, st.r.Bits)
}

// dreluBits returns shares of DReLU of the low w bits of x read as a signed
// w-bit value: 1 ⊕ bit w−1 of x mod 2^w, from a millionaires' of w−1 bits.
// For values known to lie in [−2^(w−1), 2^(w−1)) it is DReLU(x): x mod 2^w
// is then x's own w-bit two's complement, and each party reduces its share
// mod 2^w locally (the shares' sum mod 2^w is x mod 2^w, whatever the wrap
// in Z_2^l).
func (st *stream) dreluBits(ctx context.Context, x []uint64, w int) ([]uint64, error) {
	g := st.dreluGroupBits(x, w)
	if err := st.mill(ctx, []*millGroup{g}, nil, nil); err != nil {
		return nil, err
	}
	out := st.msbSharesBits(g, x, w)
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
