package nonlinear

import (
	"context"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// MUX and B2A: a shared bit times an arithmetic share (Alg. 6, two COTs),
// and a shared bit lifted to Z_2^l (Alg. 7, one COT).

// mux sets dst = c·a on shares with two correlated OTs in opposite
// directions (Alg. 6). In the OT where party S is the sender, S's
// correlation is (1−2c_S)·a_S: the receiver R gets r + c_R(1−2c_S)a_S and S
// keeps c_S·a_S − r, which add up to (c_S ⊕ c_R)·a_S. Alg. 6 sends both
// messages of a chosen OT; they differ by ±a_S, so a COT (λ + l bits instead
// of λ + 2l) suffices.
func (st *stream) mux(ctx context.Context, dst, a, c []uint64) error {
	return st.muxWide(ctx, dst, a, c, 1)
}

// muxWide is mux for w words per element sharing one choice bit: a and dst
// hold n·w words, element i owning [i·w, (i+1)·w).
func (st *stream) muxWide(ctx context.Context, dst, a, c []uint64, w int) error {
	l := st.r.Bits
	mask := st.r.Mask()
	nw := len(a)
	n := nw / w
	acc := make([]uint64, nw)
	for k := 0; k < 2; k++ {
		err := st.cot(ctx, n, w, l,
			func(x []uint64) {
				for i := 0; i < n; i++ {
					neg := -bitvec.Bit(c, i) // all ones when c_S = 1
					for j := i * w; j < i*w+w; j++ {
						x[j] = ((a[j] ^ neg) - neg) & mask // a_S or −a_S
					}
				}
			},
			func(r []uint64) {
				for i := 0; i < n; i++ {
					ci := -bitvec.Bit(c, i)
					for j := i * w; j < i*w+w; j++ {
						acc[j] += a[j]&ci - r[j]
					}
				}
			},
			func() []uint64 { return c },
			func(y []uint64) {
				for j := range acc {
					acc[j] += y[j]
				}
			})
		if err != nil {
			return err
		}
	}
	for j := range acc {
		dst[j] = acc[j] & mask
	}
	return nil
}

// MUX sets dst = c·a on shares: a is an arithmetic share vector, c packed
// boolean shares (bitvec.Words(len(a)) words). dst and a may be the same slice.
// Communication per element: 2λ + 2l bits (two COT_l).
func (s *Session) MUX(ctx context.Context, dst, a, c []uint64) error {
	const op = "MUX"
	if err := s.usable(op); err != nil {
		return err
	}
	if err := checkLen(op, "dst", dst, len(a)); err != nil {
		return err
	}
	if err := s.checkBits(op, "c", c, len(a)); err != nil {
		return err
	}
	return s.run(ctx, op, s.parts(len(a), 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.mux(ctx, dst[lo:hi], a[lo:hi], c[lo/64:])
	})
}

// b2a sets dst to arithmetic shares (mod 2^l) of the shared bits c (Alg. 7,
// one COT_l): the sender S offers correlation c_S and keeps c_S + 2r, the
// receiver gets y = r + c_R·c_S and keeps c_R − 2y; the sum is
// c_S + c_R − 2c_S·c_R = c_S ⊕ c_R.
func (st *stream) b2a(ctx context.Context, dst, c []uint64, l int) error {
	n := len(dst)
	mask := bitvec.Mask(l)
	return st.cot(ctx, n, 1, l,
		func(x []uint64) {
			for i := range x {
				x[i] = bitvec.Bit(c, i)
			}
		},
		func(r []uint64) {
			for i := range dst {
				dst[i] = (bitvec.Bit(c, i) + 2*r[i]) & mask
			}
		},
		func() []uint64 { return c },
		func(y []uint64) {
			for i := range dst {
				dst[i] = (bitvec.Bit(c, i) - 2*y[i]) & mask
			}
		})
}

// B2A sets dst (n = len(dst) elements) to arithmetic shares in Z_2^l of the
// bits shared by c (packed). Communication: λ + l bits per element.
func (s *Session) B2A(ctx context.Context, dst, c []uint64) error {
	const op = "B2A"
	if err := s.usable(op); err != nil {
		return err
	}
	if err := s.checkBits(op, "c", c, len(dst)); err != nil {
		return err
	}
	return s.run(ctx, op, s.parts(len(dst), 64), func(ctx context.Context, st *stream, lo, hi int) error {
		return st.b2a(ctx, dst[lo:hi], c[lo/64:], st.r.Bits)
	})
}
