package nonlinear

import "context"

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
