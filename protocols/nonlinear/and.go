package nonlinear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// AND of shared bits with Beaver bit triples (triples.go): open x ⊕ d and
// y ⊕ e, then combine (beaver). The millionaires' AND tree (andPhase)
// evaluates its gates with the same beaver.

// AND sets dst to shares of x ∧ y for n shared bits (all packed), using
// regular Beaver triples made in bulk from (16 choose 1)-OT_2 (App. A.1).
// dst may alias x or y. Communication per AND: λ + 16 bits for the triple
// plus 4 bits.
func (s *Session) AND(ctx context.Context, dst, x, y []uint64, n int) error {
	const op = "AND"
	if err := s.usable(op); err != nil {
		return err
	}
	for _, a := range []struct {
		name string
		v    []uint64
	}{{"dst", dst}, {"x", x}, {"y", y}} {
		if err := s.checkBits(op, a.name, a.v, n); err != nil {
			return err
		}
	}
	if n < 0 {
		return fmt.Errorf("nonlinear: %s: negative count %d", op, n)
	}
	return s.run(ctx, op, s.parts(n, 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.chunks(ctx, hi-lo, st.chunkSize(8), func(ctx context.Context, st *stream, a, b int) error {
			m := b - a
			xs := make([]uint64, bitvec.Words(m))
			ys := make([]uint64, bitvec.Words(m))
			bitvec.Extract(xs, x, lo+a, m)
			bitvec.Extract(ys, y, lo+a, m)
			z, err := st.and(ctx, xs, ys, m)
			if err != nil {
				return err
			}
			copy(dst[(lo+a)/64:], z)
			return nil
		})
	})
}

// and computes shares of x ∧ y: triple production, then one exchange
// (sent by st.last first, as in the AND tree schedule).
func (st *stream) and(ctx context.Context, x, y []uint64, n int) ([]uint64, error) {
	pool := &triplePool{}
	if err := st.runOTN(ctx, pool.reserve(st, n, 0)...); err != nil {
		return nil, err
	}
	d, e, f := pool.takeReg(n)
	mx, my := xorNew(x, d), xorNew(y, e)
	var w bitvec.Appender
	w.Reset(st.sc.frame)
	w.Append(mx, n)
	w.Append(my, n)
	st.sc.frame = w.Words()
	// The party that sent last sends first; the other answers.
	var buf []uint64
	var err error
	if st.last == st.party {
		if err = st.sendFlight(ctx, w.Words(), w.Len()); err == nil {
			buf, err = st.recvFlight(ctx, 2*n)
		}
	} else {
		if buf, err = st.recvFlight(ctx, 2*n); err == nil {
			err = st.sendFlight(ctx, w.Words(), w.Len())
		}
	}
	if err != nil {
		return nil, err
	}
	ox, oy := make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n))
	bitvec.Extract(ox, buf, 0, n)
	bitvec.Extract(oy, buf, n, n)
	return beaver(mx, ox, my, oy, d, e, f, st.party == 0), nil
}

// xorNew returns a ⊕ b in a new vector of len(a) words.
func xorNew(a, b []uint64) []uint64 {
	v := make([]uint64, len(a))
	for i := range v {
		v[i] = a[i] ^ b[i]
	}
	return v
}

// beaver returns this party's share of x ∧ y from its masked inputs (mine,
// theirs) and triple shares: with δx = x⊕d and δy = y⊕e opened,
// z = f ⊕ δx∧e ⊕ δy∧d ⊕ [party 0]·δx∧δy.
func beaver(mx, ox, my, oy, d, e, f []uint64, p0 bool) []uint64 {
	z := make([]uint64, len(f))
	var k uint64
	if p0 {
		k = ^uint64(0)
	}
	for i := range z {
		dx, dy := mx[i]^ox[i], my[i]^oy[i]
		z[i] = f[i] ^ dx&e[i] ^ dy&d[i] ^ dx&dy&k
	}
	return z
}

// beaverD is beaver with the opened values δx, δy given.
func beaverD(dx, dy, d, e, f []uint64, p0 bool) []uint64 {
	z := make([]uint64, len(f))
	var k uint64
	if p0 {
		k = ^uint64(0)
	}
	for i := range z {
		z[i] = f[i] ^ dx[i]&e[i] ^ dy[i]&d[i] ^ dx[i]&dy[i]&k
	}
	return z
}
