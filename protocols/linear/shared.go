package linear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/linear/lincost"
	"github.com/cryptflow-go/cryptflow/ring"
)

// SharedMatMulBits is the communication of MatMulShared (lincost.SharedMatMulBits).
func SharedMatMulBits(batch, m, k, n, l int) int64 {
	return lincost.SharedMatMulBits(batch, m, k, n, l)
}

// MatMulShared sets dst to this party's share of the batch products X[b]·Y[b] (exact in
// Z_{2^l}), where both factors are shared: x holds this party's shares of batch row-major m×k
// matrices one after the other, y of batch k×n, dst batch m×n. With X = X0 + X1 and
// Y = Y0 + Y1,
//
//	X·Y = X0·Y0 + X1·Y1 + X0·Y1 + X1·Y0
//
// each party computes its own square term locally, and each cross term is MatMul's product of one
// party's private matrix with the other party's private matrix, by correlated OT on the bits of
// the second (Gilboa-style, one batch of COTs per bit): X0·Y1 with party 0 as the OT sender, X1·Y0
// with party 1. When the transposed orientation moves fewer bits (lincost.SharedMatMulTransposed:
// the OTs run on the entries of the right-hand factor) the product is computed as (Yᵀ·Xᵀ)ᵀ with
// local transposes. Each direction runs the whole batch as one product over all the session's
// streams (its flights do not grow with the batch); the two directions run one after the other.
// dst must not alias x or y; x and y may be the same slice. Communication: SharedMatMulBits.
func (s *Session) MatMulShared(ctx context.Context, dst, x, y []uint64, batch, m, k, n int) error {
	const op = "MatMulShared"
	if err := s.usable(op); err != nil {
		return err
	}
	if batch < 0 || m < 0 || k < 0 || n < 0 {
		return fmt.Errorf("linear: %s: negative dimension in %d × (%d×%d times %d×%d)", op, batch, m, k, k, n)
	}
	switch {
	case len(x) != batch*m*k:
		return fmt.Errorf("linear: %s: first operand has %d elements, want %d×%d×%d", op, len(x), batch, m, k)
	case len(y) != batch*k*n:
		return fmt.Errorf("linear: %s: second operand has %d elements, want %d×%d×%d", op, len(y), batch, k, n)
	case len(dst) != batch*m*n:
		return fmt.Errorf("linear: %s: result has %d elements, want %d×%d×%d", op, len(dst), batch, m, n)
	}
	if batch*m*n == 0 {
		return nil
	}
	if k == 0 {
		clear(dst)
		return nil
	}
	tr := lincost.SharedMatMulTransposed(m, k, n, s.r.Bits)
	a, c, z, rows, cols := x, y, dst, m, n
	if tr {
		// Z = X·Y = (Yᵀ·Xᵀ)ᵀ: the left factors are Yᵀ (n×k), the right ones Xᵀ (k×m).
		a, c, z, rows, cols = make([]uint64, batch*k*n), make([]uint64, batch*m*k), make([]uint64, batch*m*n), n, m
		for b := 0; b < batch; b++ {
			ring.Transpose(a[b*k*n:][:k*n], y[b*k*n:][:k*n], k, n)
			ring.Transpose(c[b*m*k:][:m*k], x[b*m*k:][:m*k], m, k)
		}
	}
	for b := 0; b < batch; b++ { // this party's square terms
		s.r.MatMul(z[b*rows*cols:][:rows*cols], a[b*rows*k:][:rows*k], rows, k, cols, c[b*k*cols:][:k*cols])
	}
	if err := s.crossMatMul(ctx, op, z, a, batch, rows, k, cols, c, 0); err != nil {
		return fmt.Errorf("linear: %s: party 0's left factors: %w", op, err)
	}
	if err := s.crossMatMul(ctx, op, z, a, batch, rows, k, cols, c, 1); err != nil {
		return fmt.Errorf("linear: %s: party 1's left factors: %w", op, err)
	}
	if tr {
		for b := 0; b < batch; b++ {
			ring.Transpose(dst[b*m*n:][:m*n], z[b*m*n:][:m*n], n, m)
		}
	}
	s.r.ReduceVec(dst)
	return nil
}
