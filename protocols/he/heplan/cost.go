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
