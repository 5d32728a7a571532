package linear

import (
	"context"
	"fmt"
)

// MulBits is the communication of Mul on n elements over Z_{2^l}, in bits, both directions
// together, without the OT layer's per-batch constants and the one-time base OTs: two products
// of one private vector with a shared one (MulElemBits each), one in each direction,
//
//	2·n·l·λ + n·l(l+1)
//
// In the one-batch mode (Options.OneBatch) add 2·n·l flip bits.
func MulBits(n, l int) int64 { return 2 * MulElemBits(n, l) }

// Mul sets dst to this party's share of x ⊙ y (elementwise, exact in Z_{2^l}), where both x and y
// are shared: x and y are this party's shares, of equal length. With x = x0 + x1 and y = y0 + y1,
//
//	x·y = x0·y0 + x1·y1 + x0·y1 + x1·y0
//
// (SCI's secret-shared vector multiplication): each party computes its own square term locally,
// and each cross term is the product of one party's private vector with the other party's share,
// computed like MulElem by correlated OT on the bits of that share: x0·y1 with party 0 as the OT
// sender (correlation x0 per bit of y1), then x1·y0 with party 1 as the sender (correlation x1 per
// bit of y0). Both run over all the session's streams, one after the other. dst may alias x or y.
// Communication: MulBits.
func (s *Session) Mul(ctx context.Context, dst, x, y []uint64) error {
	const op = "Mul"
	if err := s.usable(op); err != nil {
		return err
	}
	n := len(x)
	switch {
	case len(y) != n:
		return fmt.Errorf("linear: %s: operands have %d and %d elements", op, n, len(y))
	case len(dst) != n:
		return fmt.Errorf("linear: %s: result has %d elements, want %d", op, len(dst), n)
	}
	if n == 0 {
		return nil
	}
	// The product's vector and choice shares for this party: as the sender of its own
	// direction it contributes x (the correlation), as the receiver of the other it contributes
	// y (the choice bits). The struct is shared by both directions: V is read only by the
	// sender, x only by the receiver.
	p := &product{E: n, M: 1, kv: n, kt: 1, V: x, x: y}
	fwd, err := s.cross(ctx, op, p) // x0·y1: party 0 sends
	if err != nil {
		return err
	}
	rev, err := s.crossWith(ctx, op, s.parts(n), n, func(ctx context.Context, st *stream, lo, hi int, acc []uint64) error {
		return st.reversed(func(sw *stream) error { return sw.cross(ctx, p, lo, hi, acc) })
	}) // x1·y0: party 1 sends
	if err != nil {
		return err
	}
	for i := range dst {
		dst[i] = x[i]*y[i] + fwd[i] + rev[i]
	}
	s.r.ReduceVec(dst)
	return nil
}

// reversed runs f on a view of this stream with the roles of the parties exchanged: the view's
// party 0 code runs at party 1 and vice versa, so that the product flows (cross, and the
// one-batch flow) run with party 1 as the OT sender. The OT session allows either party to send
// at any time. The view's scratch buffers are kept for the stream's next use.
func (st *stream) reversed(f func(sw *stream) error) error {
	sw := *st
	sw.party = 1 - st.party
	err := f(&sw)
	st.m0, st.choice, st.corr, st.ob, st.exp = sw.m0, sw.choice, sw.corr, sw.ob, sw.exp
	return err
}
