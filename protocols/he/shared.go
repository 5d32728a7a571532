package he

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/ring"
)

// MatMulShared sets dst to this party's share of the batch products X[b]·Y[b] (exact in Z_{2^l})
// of two shared factors: x holds this party's shares of batch m×k matrices, y of batch k×n
// matrices, dst receives batch m×n, all row-major and stacked. With X = X0 + X1 and Y = Y0 + Y1,
// each party computes its own Xi·Yi locally and the two cross terms run as this session's
// products with party 0's share as the plaintext matrix and party 1's encrypted, in one direction
// (party 1's keys only):
//
//	X0·Y1                  party 0's X0 times party 1's Y1;
//	X1·Y0 = (Y0ᵀ·X1ᵀ)ᵀ     party 0's Y0ᵀ times party 1's X1ᵀ, transposed back locally.
//
// Each cross term is one grouped 1×1 convolution whose groups are the batch's products
// (heplan.SharedMatMulGeoms), so the whole batch costs two of this session's products: traffic
// heplan.SharedMatMulCost, two flights each way.
func (s *Session) MatMulShared(ctx context.Context, dst, x, y []uint64, batch, m, k, n int) error {
	const op = "MatMulShared"
	if s.err != nil {
		return fmt.Errorf("he: %s: session unusable: %w", op, s.err)
	}
	if batch < 0 || m < 0 || k < 0 || n < 0 {
		return fmt.Errorf("he: %s: negative dimension in %d products of %d×%d times %d×%d", op, batch, m, k, k, n)
	}
	mk, kn, mn := m*k, k*n, m*n
	if len(x) != batch*mk || len(y) != batch*kn || len(dst) != batch*mn {
		return fmt.Errorf("he: %s: operands of %d, %d and %d elements for %d products of %d×%d times %d×%d",
			op, len(x), len(y), len(dst), batch, m, k, k, n)
	}
	if batch*mn == 0 {
		return nil
	}
	for b := 0; b < batch; b++ {
		s.r.MatMul(dst[b*mn:(b+1)*mn], x[b*mk:(b+1)*mk], m, k, n, y[b*kn:(b+1)*kn])
	}
	if k == 0 {
		return nil
	}
	g1, g2 := heplan.SharedMatMulGeoms(batch, m, k, n)
	// X0·Y1: party 0's X0 is the plaintext, the encrypted operand is Y1 (party 0's share of it
	// is zero).
	t := make([]uint64, batch*mn)
	if s.party == 0 {
		err := s.conv(ctx, op, g1, t, x, make([]uint64, batch*kn))
		if err != nil {
			return err
		}
	} else if err := s.conv(ctx, op, g1, t, nil, y); err != nil {
		return err
	}
	// Y0ᵀ·X1ᵀ: party 0's transposed Y0 blocks (n×k) are the plaintext, party 1's transposed X1
	// blocks (k×m) the encrypted operand.
	u := make([]uint64, batch*mn)
	if s.party == 0 {
		yT := make([]uint64, batch*kn)
		for b := 0; b < batch; b++ {
			ring.Transpose(yT[b*kn:(b+1)*kn], y[b*kn:(b+1)*kn], k, n)
		}
		if err := s.conv(ctx, op, g2, u, yT, make([]uint64, batch*mk)); err != nil {
			return err
		}
	} else {
		xT := make([]uint64, batch*mk)
		for b := 0; b < batch; b++ {
			ring.Transpose(xT[b*mk:(b+1)*mk], x[b*mk:(b+1)*mk], m, k)
		}
		if err := s.conv(ctx, op, g2, u, nil, xT); err != nil {
			return err
		}
	}
	for b := 0; b < batch; b++ {
		d, tb, ub := dst[b*mn:(b+1)*mn], t[b*mn:(b+1)*mn], u[b*mn:(b+1)*mn]
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				d[i*n+j] = s.r.Reduce(d[i*n+j] + tb[i*n+j] + ub[j*m+i])
			}
		}
	}
	return nil
}
