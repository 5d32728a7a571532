package linear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/linear/lincost"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/ring"
)

// Lambda is the computational security parameter of the OT layer (bits per OT instance sent by
// the receiver).
const Lambda = lincost.Lambda

// MatMulBits is the communication of MatMul for W m×k and X k×n over Z_{2^l}, in bits, both
// directions together, without the per-batch constants of the OT layer and the one-time base OTs
// (lincost.MatMulBits).
func MatMulBits(m, k, n, l int) int64 { return lincost.MatMulBits(m, k, n, l) }

// MulElemBits is the communication of MulElem on n elements: n·l·λ + n·l(l+1)/2 bits
// (lincost.MulElemBits).
func MulElemBits(n, l int) int64 { return lincost.MulElemBits(n, l) }

// MatMul sets dst (m×n, row-major) to this party's share of W·X, where W (m×k, row-major) is party
// 0's private matrix and X (k×n, row-major) is shared: x is this party's share. Party 0 passes w;
// party 1 passes nil. dst must not alias x. Communication: MatMulBits.
func (s *Session) MatMul(ctx context.Context, dst, w []uint64, m, k, n int, x []uint64) error {
	const op = "MatMul"
	if err := s.usable(op); err != nil {
		return err
	}
	if m < 0 || k < 0 || n < 0 {
		return fmt.Errorf("linear: %s: negative dimension in %d×%d times %d×%d", op, m, k, k, n)
	}
	if err := s.checkOperands(op, dst, w, x, m*k, k*n, m*n); err != nil {
		return err
	}
	if m*n == 0 {
		return nil
	}
	if k == 0 {
		clear(dst)
		return nil
	}
	if s.party == 0 {
		s.r.MatMul(dst, w, m, k, n, x)
	} else {
		clear(dst)
	}
	if err := s.crossMatMul(ctx, op, dst, w, 1, m, k, n, x, 0); err != nil {
		return err
	}
	s.r.ReduceVec(dst)
	return nil
}

// crossMatMul adds to dst (batch m×n matrices, not reduced) this party's share of the batch
// products W[b]·X[b], where W (batch m×k matrices) is the private input of party sender (the OT
// sender) and X (batch k×n) the private input of the other party: each party passes its own
// matrices as w or x, and the other slice is not read. Party sender's role is party 0's in the
// products (reversed streams when sender is 1). All the batch runs as one product, so its OT
// batches and flights are those of one call: the receiver's elements are the entries of X in the
// order (column c, batch b, row r), e = (c·batch + b)·k + r, so that element e multiplies vector
// e mod batch·k (column r of W[b]) and adds to accumulator row e / k = c·batch + b.
// Communication: batch·MatMulBits (the λ term once per row block and element, padding to whole
// words once per chunk).
func (s *Session) crossMatMul(ctx context.Context, op string, dst, w []uint64, batch, m, k, n int, x []uint64, sender int) error {
	isSender := s.party == sender
	mk, kn, mn := m*k, k*n, m*n
	var xT []uint64
	if !isSender {
		xT = make([]uint64, batch*kn)
		for b := 0; b < batch; b++ {
			xb := x[b*kn : (b+1)*kn]
			for r := 0; r < k; r++ {
				for c, v := range xb[r*n : r*n+n] {
					xT[(c*batch+b)*k+r] = v
				}
			}
		}
	}
	// Row blocks of W of at most ot.MaxWidth rows (one OT instance carries a whole block column).
	for r0 := 0; r0 < m; r0 += ot.MaxWidth {
		mb := min(ot.MaxWidth, m-r0)
		p := &product{E: batch * kn, M: mb, kv: batch * k, kt: k, x: xT}
		if isSender {
			// V[b·k + r][j] = W[b][r0+j][r]: column r of the block of W[b], contiguous.
			p.V = make([]uint64, batch*k*mb)
			for b := 0; b < batch; b++ {
				for j := 0; j < mb; j++ {
					row := w[b*mk+(r0+j)*k : b*mk+(r0+j)*k+k]
					for r, v := range row {
						p.V[(b*k+r)*mb+j] = v
					}
				}
			}
		}
		f := func(ctx context.Context, st *stream, lo, hi int, acc []uint64) error {
			return st.cross(ctx, p, lo, hi, acc)
		}
		if sender == 1 {
			f = func(ctx context.Context, st *stream, lo, hi int, acc []uint64) error {
				return st.reversed(func(sw *stream) error { return sw.cross(ctx, p, lo, hi, acc) })
			}
		}
		acc, err := s.crossWith(ctx, op, s.parts(p.E), p.rows()*p.M, f)
		if err != nil {
			return err
		}
		// acc is [n][batch][mb]: add its transpose into rows r0.. of each dst[b].
		for b := 0; b < batch; b++ {
			for j := 0; j < mb; j++ {
				out := dst[b*mn+(r0+j)*n : b*mn+(r0+j)*n+n]
				for c := range out {
					out[c] += acc[(c*batch+b)*mb+j]
				}
			}
		}
	}
	return nil
}

// MulElem sets dst to this party's share of w ⊙ x (elementwise), where w is party 0's private
// vector (nil at party 1) and x is shared. dst may alias x. Communication: MulElemBits.
func (s *Session) MulElem(ctx context.Context, dst, w, x []uint64) error {
	const op = "MulElem"
	if err := s.usable(op); err != nil {
		return err
	}
	n := len(x)
	if err := s.checkOperands(op, dst, w, x, n, n, n); err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	p := &product{E: n, M: 1, kv: n, kt: 1}
	if s.party == 0 {
		p.V = w
	} else {
		p.x = x
	}
	acc, err := s.cross(ctx, op, p)
	if err != nil {
		return err
	}
	if s.party == 0 {
		for i := range dst {
			dst[i] = w[i]*x[i] + acc[i]
		}
	} else {
		copy(dst, acc)
	}
	s.r.ReduceVec(dst)
	return nil
}

// checkOperands validates the slice lengths: party 0 must pass nw weights, party 1 none.
func (s *Session) checkOperands(op string, dst, w, x []uint64, nw, nx, nd int) error {
	if err := ring.CheckProduct(s.party, dst, w, x, nw, nx, nd); err != nil {
		return fmt.Errorf("linear: %s: %w", op, err)
	}
	return nil
}

// cross runs product p over the streams and returns this party's share of its accumulator
// (p.rows()·M words, not reduced).
func (s *Session) cross(ctx context.Context, op string, p *product) ([]uint64, error) {
	return s.crossWith(ctx, op, s.parts(p.E), p.rows()*p.M, func(ctx context.Context, st *stream, lo, hi int, acc []uint64) error {
		return st.cross(ctx, p, lo, hi, acc)
	})
}

// crossWith runs f on each part (one per stream) with an accumulator of accLen words of its own,
// and returns the sum of the accumulators (not reduced).
func (s *Session) crossWith(ctx context.Context, op string, parts [][2]int, accLen int,
	f func(ctx context.Context, st *stream, lo, hi int, acc []uint64) error) ([]uint64, error) {
	accs := make([][]uint64, len(parts))
	for i := range accs {
		accs[i] = make([]uint64, accLen)
	}
	err := s.run(ctx, op, parts, func(ctx context.Context, i int, st *stream, lo, hi int) error {
		return f(ctx, st, lo, hi, accs[i])
	})
	if err != nil {
		return nil, err
	}
	acc := accs[0]
	for _, a := range accs[1:] {
		for j, v := range a {
			acc[j] += v
		}
	}
	return acc, nil
}
