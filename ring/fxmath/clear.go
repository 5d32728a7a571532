package fxmath

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/ring"
)

// Clear is Ops on full values in one process: the cleartext definition of every step.
type Clear struct {
	R ring.Ring
	// Strict makes Trunc fail when a promised non-negative operand is negative: a secure
	// truncation for non-negative inputs would then not match. Tests run the algorithms
	// strictly over whole input ranges.
	Strict bool
}

// Ring returns the ring.
func (c Clear) Ring() ring.Ring { return c.R }

// Party is 0: Clear holds the values and adds the constants.
func (c Clear) Party() int { return 0 }

// ReLU keeps the non-negative values.
func (c Clear) ReLU(_ context.Context, dst, x []uint64) error {
	for i, v := range x {
		if c.R.IsNeg(v) {
			v = 0
		}
		dst[i] = v
	}
	return nil
}

// DReLU sets the bits 1{signed(x) ≥ 0}.
func (c Clear) DReLU(_ context.Context, dst, x []uint64) error {
	clear(dst)
	for i, v := range x {
		if !c.R.IsNeg(v) {
			dst[i/64] |= 1 << (i % 64)
		}
	}
	return nil
}

// MUX keeps a[i] where bit c[i] is set.
func (c Clear) MUX(_ context.Context, dst, a, b []uint64) error {
	for i, v := range a {
		dst[i] = v & -(b[i/64] >> (i % 64) & 1)
	}
	return nil
}

// B2A turns the bits into 0/1 ring elements.
func (c Clear) B2A(_ context.Context, dst, b []uint64) error {
	for i := range dst {
		dst[i] = b[i/64] >> (i % 64) & 1
	}
	return nil
}

// Trunc is the arithmetic shift.
func (c Clear) Trunc(_ context.Context, dst, x []uint64, k int, nonNeg bool) error {
	for i, v := range x {
		if c.Strict && nonNeg && c.R.IsNeg(v) {
			return fmt.Errorf("truncation promised a non-negative operand, got %d (element %d)", c.R.Signed(v), i)
		}
		dst[i] = c.R.Trunc(v, k)
	}
	return nil
}

// Mul is the ring product.
func (c Clear) Mul(_ context.Context, dst, x, y []uint64) error {
	for i := range x {
		dst[i] = c.R.Mul(x[i], y[i])
	}
	return nil
}

// LUT looks the low bits of each index up in its group's table.
func (c Clear) LUT(_ context.Context, dst, idx []uint64, bits int, tables [][]uint64) error {
	if len(tables) == 0 || len(idx)%len(tables) != 0 {
		return fmt.Errorf("%d indices for %d tables", len(idx), len(tables))
	}
	n := len(idx) / len(tables)
	mask := uint64(1)<<bits - 1
	for i, v := range idx {
		dst[i] = c.R.Reduce(tables[i/n][v&mask])
	}
	return nil
}

// EvalClear computes f on the values x (scale p.S) into dst with Clear.
func (p *Params) EvalClear(f Func, dst, x []uint64) error {
	r, err := ring.New(p.L)
	if err != nil {
		return err
	}
	return p.Eval(context.Background(), Clear{R: r}, f, dst, x)
}
