package nonlinear

import (
	"context"
	"fmt"
)

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

// ReLULow sets dst = ReLU(x) for x whose signed values are known to be b-bit
// values, −2^(b−1) ≤ x < 2^(b−1) (2 ≤ b ≤ l): the DReLU runs on the low b
// bits of the shares (a millionaires' of b−1 bits instead of l−1), the MUX
// in Z_2^l as in ReLU. The result is ReLU(x) exactly for such x; for values
// outside that range it is x·DReLU(x mod 2^w) — wrong, so the caller must
// know the bound (the compiler derives it: docs/fixed-point.md). b = l is
// ReLU. Communication per element: ReLULowBits(b, l, m).
func (s *Session) ReLULow(ctx context.Context, dst, x []uint64, b int) error {
	const op = "ReLULow"
	if err := s.usable(op); err != nil {
		return err
	}
	if b < 2 || b > s.r.Bits {
		return fmt.Errorf("nonlinear: %s: operand width %d bits outside 2..%d (the ring's)", op, b, s.r.Bits)
	}
	if err := checkLen(op, "dst", dst, len(x)); err != nil {
		return err
	}
	return s.run(ctx, op, s.parts(len(x), 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.chunks(ctx, hi-lo, st.chunkSize(millWords(b-1, st.m)), func(ctx context.Context, st *stream, a, c int) error {
			xs := x[lo+a : lo+c]
			d, err := st.dreluBits(ctx, xs, b)
			if err != nil {
				return err
			}
			return st.mux(ctx, dst[lo+a:lo+c], xs, d)
		})
	})
}
