package heplan

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ring"
)

// Cost describes one call of MatMul or Conv2D: its exact traffic and the ciphertext work.
type Cost struct {
	Bytes    int64 // both directions, 4-byte frame headers included
	Uploads  int   // ciphertexts party 1 encrypts and sends
	Replies  int   // ciphertexts party 0 finishes (re-randomise, flood, switch) and party 1 decrypts
	Products int   // ciphertext × plaintext products at party 0
	Weights  int   // weight polynomials party 0 transforms (once per call unless cached)
}

// ConvCost is the cost of Conv2D for geometry g over Z_{2^l}: that of ConvPlan without building
// the plan's index arrays.
func ConvCost(g ring.ConvGeom, l int) (Cost, error) {
	p, err := paramsFor(l)
	if err != nil {
		return Cost{}, err
	}
	if err := g.Validate(); err != nil {
		return Cost{}, fmt.Errorf("heplan: %w", err)
	}
	L := newLayout(g)
	d, bytes, err := chooseConv(p, L)
	if err != nil {
		return Cost{}, err
	}
	c := Cost{Bytes: bytes, Uploads: g.N * d.nCB * d.nBH * d.nBW, Weights: L.weightPolys(d)}
	c.Replies = g.N * d.nBH * d.nBW * ((g.M + d.k - 1) / d.k)
	c.Products = g.N * d.nBH * d.nBW * c.Weights
	return c, nil
}

// MatMulCost is the cost of MatMul for W m×k and X k×n over Z_{2^l}.
func MatMulCost(m, k, n, l int) (Cost, error) {
	if m < 1 || k < 1 || n < 1 {
		return Cost{}, fmt.Errorf("heplan: MatMulCost: dimensions %d, %d, %d must be positive", m, k, n)
	}
	return ConvCost(MatMulGeom(m, k, n), l)
}

// SharedMatMulGeoms returns the two products he.Session.MatMulShared runs for batch products of
// shared X (m×k) and Y (k×n): grouped 1×1 convolutions with one group per product, the first with
// party 0's X blocks as the weights of party 1's Y blocks (k channels, n positions, m outputs per
// group), the second with party 0's transposed Y blocks as the weights of party 1's transposed X
// blocks (k channels, m positions, n outputs per group).
func SharedMatMulGeoms(batch, m, k, n int) (ring.ConvGeom, ring.ConvGeom) {
	g := func(out, pos int) ring.ConvGeom {
		return ring.ConvGeom{N: 1, C: batch * k, H: 1, W: pos, M: batch * out, OH: 1, OW: pos, KH: 1, KW: 1,
			SH: 1, SW: 1, DH: 1, DW: 1, Groups: batch}
	}
	return g(m, n), g(n, m)
}

// SharedMatMulCost is the cost of he.Session.MatMulShared: the sum of its two products' costs.
func SharedMatMulCost(batch, m, k, n, l int) (Cost, error) {
	if batch < 1 || m < 1 || k < 1 || n < 1 {
		return Cost{}, fmt.Errorf("heplan: SharedMatMulCost: dimensions %d, %d, %d, %d must be positive", batch, m, k, n)
	}
	g1, g2 := SharedMatMulGeoms(batch, m, k, n)
	c1, err := ConvCost(g1, l)
	if err != nil {
		return Cost{}, err
	}
	c2, err := ConvCost(g2, l)
	if err != nil {
		return Cost{}, err
	}
	return Cost{Bytes: c1.Bytes + c2.Bytes, Uploads: c1.Uploads + c2.Uploads, Replies: c1.Replies + c2.Replies,
		Products: c1.Products + c2.Products, Weights: c1.Weights + c2.Weights}, nil
}

// MatMulBytes is the exact traffic of MatMul for W m×k and X k×n over Z_{2^l}, both directions,
// 4-byte frame headers included: one upload per input ciphertext and one reply per output
// ciphertext (see docs/he.md).
func MatMulBytes(m, k, n, l int) (int64, error) {
	c, err := MatMulCost(m, k, n, l)
	return c.Bytes, err
}

// ConvBytes is the exact traffic of Conv2D for geometry g over Z_{2^l}, both directions, frame
// headers included.
func ConvBytes(g ring.ConvGeom, l int) (int64, error) {
	c, err := ConvCost(g, l)
	return c.Bytes, err
}
