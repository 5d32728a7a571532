package nonlinear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// Multiplier multiplies two shared vectors elementwise, exactly in the ring (for example
// linear.Session.Mul over the same streams). The math functions use it for their secret×secret
// products.
type Multiplier interface {
	Mul(ctx context.Context, dst, x, y []uint64) error
}

// secureOps runs fxmath's steps with this session's protocols and mul's products.
type secureOps struct {
	s   *Session
	mul Multiplier
}

func (o secureOps) Ring() ring.Ring { return o.s.r }
func (o secureOps) Party() int      { return o.s.party }
func (o secureOps) ReLU(ctx context.Context, dst, x []uint64) error {
	return o.s.ReLU(ctx, dst, x)
}
func (o secureOps) DReLU(ctx context.Context, dst, x []uint64) error {
	return o.s.DReLU(ctx, dst, x)
}
func (o secureOps) MUX(ctx context.Context, dst, a, c []uint64) error {
	return o.s.MUX(ctx, dst, a, c)
}
func (o secureOps) B2A(ctx context.Context, dst, c []uint64) error { return o.s.B2A(ctx, dst, c) }
func (o secureOps) Trunc(ctx context.Context, dst, x []uint64, k int, nonNeg bool) error {
	return o.s.Trunc(ctx, dst, x, k, nonNeg)
}
func (o secureOps) Mul(ctx context.Context, dst, x, y []uint64) error {
	if err := o.mul.Mul(ctx, dst, x, y); err != nil {
		return fmt.Errorf("secret×secret product: %w", err)
	}
	return nil
}
func (o secureOps) LUT(ctx context.Context, dst, idx []uint64, bits int, tables [][]uint64) error {
	return o.s.LUT(ctx, dst, idx, bits, tables)
}

// Math sets dst to shares of f(x) for the shared vector x at scale s (fxmath: exp, sigmoid, tanh,
// recip, rsqrt), running fxmath's algorithm step by step on whole vectors: ReLU, DReLU, MUX, B2A
// and truncation of this session, table lookups by LUT, and the products by mul. Every step is
// exact, so the result equals fxmath's cleartext definition bit for bit. Communication per
// element: MathCost. Both parties call it with the same f, scale and length.
func (s *Session) Math(ctx context.Context, mul Multiplier, f fxmath.Func, dst, x []uint64, scale int) error {
	op := "Math(" + f.String() + ")"
	if err := s.usable(op); err != nil {
		return err
	}
	if mul == nil {
		return fmt.Errorf("nonlinear: %s: no multiplier for the secret×secret products", op)
	}
	if !f.Valid() {
		return fmt.Errorf("nonlinear: %s: unknown function", op)
	}
	if err := checkLen(op, "dst", dst, len(x)); err != nil {
		return err
	}
	// The parameters (a few tables of at most 256 entries) are cheap to build per call.
	p, err := fxmath.NewParams(s.r.Bits, scale)
	if err != nil {
		return fmt.Errorf("nonlinear: %s: %w", op, err)
	}
	if err := p.Eval(ctx, secureOps{s: s, mul: mul}, f, dst, x); err != nil {
		return fmt.Errorf("nonlinear: %w", err)
	}
	return nil
}

// costOps counts the cost of every step (per element) and the secret×secret products, computing
// the values in the clear so the algorithm runs its usual course.
type costOps struct {
	fxmath.Clear
	p    Plan
	c    Cost
	muls int
}

func (o *costOps) add(c Cost, n int) { o.c = o.c.Add(c.Scale(n)) }

func (o *costOps) ReLU(ctx context.Context, dst, x []uint64) error {
	o.add(o.p.ReLU(o.R.Bits), len(x))
	return o.Clear.ReLU(ctx, dst, x)
}
func (o *costOps) DReLU(ctx context.Context, dst, x []uint64) error {
	o.add(o.p.Millionaires(o.R.Bits-1), len(x))
	return o.Clear.DReLU(ctx, dst, x)
}
func (o *costOps) MUX(ctx context.Context, dst, a, c []uint64) error {
	o.add(o.p.MUX(o.R.Bits), len(a))
	return o.Clear.MUX(ctx, dst, a, c)
}
func (o *costOps) B2A(ctx context.Context, dst, c []uint64) error {
	o.add(o.p.B2A(o.R.Bits), len(dst))
	return o.Clear.B2A(ctx, dst, c)
}
func (o *costOps) Trunc(ctx context.Context, dst, x []uint64, k int, nonNeg bool) error {
	if k > 0 {
		o.add(o.p.Trunc(o.R.Bits, k, nonNeg), len(x))
	}
	return o.Clear.Trunc(ctx, dst, x, k, nonNeg)
}
func (o *costOps) Mul(ctx context.Context, dst, x, y []uint64) error {
	o.muls += len(x)
	return o.Clear.Mul(ctx, dst, x, y)
}
func (o *costOps) LUT(ctx context.Context, dst, idx []uint64, bits int, tables [][]uint64) error {
	o.add(o.p.LUT(bits, o.R.Bits), len(idx))
	return o.Clear.LUT(ctx, dst, idx, bits, tables)
}

// MathCost is the cost per element of Session.Math(f) at ring l and scale s under plan p: the
// session's own traffic and COTs (every step's formula, summed over the algorithm's steps), and
// the number of secret×secret products per element the Multiplier computes (with
// linear.Session.Mul: linear.MulBits each, on IKNP).
func (p Plan) MathCost(f fxmath.Func, l, s int) (Cost, int, error) {
	fp, err := fxmath.NewParams(l, s)
	if err != nil {
		return Cost{}, 0, err
	}
	r, err := ring.New(l)
	if err != nil {
		return Cost{}, 0, err
	}
	o := &costOps{Clear: fxmath.Clear{R: r}, p: p}
	x := []uint64{0}
	if err := fp.Eval(context.Background(), o, f, make([]uint64, 1), x); err != nil {
		return Cost{}, 0, err
	}
	return o.c, o.muls, nil
}
