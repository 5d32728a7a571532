package linear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// product is a batch of scalar-times-vector products, the core of every linear layer: element e
// (0 ≤ e < E) of party 1's share x multiplies party 0's vector V[(e mod kv)·M : +M], and the
// product is added to row e/kt (M words) of an accumulator. Each party ends up with an additive
// share of Σ_e V_(e mod kv)·x[e] per row. For W·X with W m×k and X k×n, the elements are the
// entries of X in column-major order (e = c·k + r), kv = kt = k and M = m: row c of the
// accumulator is column c of W·X1.
type product struct {
	E, M, kv, kt int
	V            []uint64 // party 0: kv·M words
	x            []uint64 // party 1: E words (its share)
}

// rows is the number of accumulator rows.
func (p *product) rows() int { return (p.E + p.kt - 1) / p.kt }

// chunkElems is the number of elements per chunk: as many as fit the budget of M correlation
// words per element, rounded down to a multiple of 64 (keeping the OT batches word-aligned), at
// least 1.
func chunkElems(M, budget int) int {
	ce := budget / M
	if ce >= 64 {
		return ce &^ 63
	}
	return max(ce, 1)
}

func grow(b *[]uint64, n int) []uint64 {
	if cap(*b) < n {
		*b = make([]uint64, n)
	}
	return (*b)[:n]
}

// cross runs the elements [lo, hi) of p on this stream, adding this party's share of the products
// to acc (p.rows()·M words, not reduced).
func (st *stream) cross(ctx context.Context, p *product, lo, hi int, acc []uint64) error {
	if st.oneBatch {
		return st.crossOneBatch(ctx, p, lo, hi, acc)
	}
	ce := chunkElems(p.M, st.budget)
	for c0 := lo; c0 < hi; c0 += ce {
		c1 := min(c0+ce, hi)
		var err error
		if st.party == 0 {
			err = st.sendChunk(ctx, p, c0, c1, acc)
		} else {
			err = st.recvChunk(ctx, p, c0, c1, acc)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sendChunk is party 0's side of the elements [c0, c1): for every bit i, one batch of correlated
// OTs with m words of l−i bits per instance (one instance per element) whose correlation is the
// element's vector; its share is −Σ_i 2^i·r_i.
func (st *stream) sendChunk(ctx context.Context, p *product, c0, c1 int, acc []uint64) error {
	l, M := st.l, p.M
	n := c1 - c0
	corr := grow(&st.corr, n*M)
	for e := 0; e < n; e++ {
		copy(corr[e*M:(e+1)*M], p.V[((c0+e)%p.kv)*M:])
	}
	r := grow(&st.m0, n*M)
	for i := 0; i < l; i++ {
		if err := st.ot.SendCOTWide(ctx, M, l-i, corr, r); err != nil {
			return fmt.Errorf("bit %d: %w", i, err)
		}
		for e := 0; e < n; e++ {
			t := acc[((c0+e)/p.kt)*M:][:M]
			for j, v := range r[e*M : (e+1)*M] {
				t[j] -= v << uint(i)
			}
		}
	}
	return nil
}

// recvChunk is party 1's side: in the batch for bit i its choice bits are bit i of its shares
// x[e]; it gets y = r + x_i·a mod 2^(l−i) and its share is Σ_i 2^i·y_i.
func (st *stream) recvChunk(ctx context.Context, p *product, c0, c1 int, acc []uint64) error {
	l, M := st.l, p.M
	n := c1 - c0
	xs := p.x[c0:c1]
	nw := bitvec.Words(n)
	planes := grow(&st.choice, l*nw)
	bitPlanes(planes, xs, l)
	y := grow(&st.m0, n*M)
	for i := 0; i < l; i++ {
		if err := st.ot.RecvCOTWide(ctx, M, l-i, planes[i*nw:(i+1)*nw], y); err != nil {
			return fmt.Errorf("bit %d: %w", i, err)
		}
		for e := 0; e < n; e++ {
			t := acc[((c0+e)/p.kt)*M:][:M]
			for j, v := range y[e*M : (e+1)*M] {
				t[j] += v << uint(i)
			}
		}
	}
	return nil
}

// bitPlanes sets planes[i·nw : (i+1)·nw] to bit i of every x (packed, LSB first), i < l, with
// nw = bitvec.Words(len(x)).
func bitPlanes(planes, x []uint64, l int) {
	nw := bitvec.Words(len(x))
	clear(planes[:l*nw])
	for e, v := range x {
		w, sh := e/64, uint(e%64)
		for i := 0; i < l; i++ {
			planes[i*nw+w] |= (v >> uint(i) & 1) << sh
		}
	}
}
