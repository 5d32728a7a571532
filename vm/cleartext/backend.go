// Package cleartext is the cleartext fixed-point backend of the VM: one process holding full
// values, computing every operation exactly as docs/fixed-point.md defines it. It is the reference
// the secure backends must match bit for bit.
package cleartext

import (
	"context"
	"fmt"
	"sync"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// Backend is the cleartext fixed-point backend: it computes every operation on full values in one
// process, exactly as the fixed-point semantics (docs/fixed-point.md) define it. It is safe for
// concurrent use by several Machines.
type Backend struct {
	r ring.Ring

	mu     sync.Mutex
	params map[int]*fxmath.Params // by scale
}

// New returns the cleartext backend over r.
func New(r ring.Ring) (*Backend, error) {
	if !r.Valid() {
		return nil, fmt.Errorf("clear backend: invalid ring %v", r)
	}
	return &Backend{r: r}, nil
}

// Party is 0: the cleartext backend holds the weights and full values.
func (c *Backend) Party() int { return 0 }

// Ring returns the backend's ring.
func (c *Backend) Ring() ring.Ring { return c.r }

// Input leaves x unchanged: the value is its own share.
func (c *Backend) Input(_ context.Context, owner int, x ring.Tensor) error {
	if owner != 0 && owner != 1 {
		return fmt.Errorf("input owned by party %d", owner)
	}
	return nil
}

// Reveal leaves x unchanged and reports that it holds the value.
func (c *Backend) Reveal(_ context.Context, to int, x ring.Tensor) (bool, error) {
	if to != 0 && to != 1 {
		return false, fmt.Errorf("reveal to party %d", to)
	}
	return true, nil
}

// pow2 refuses the comparison-based operations on Z_n: the fhe mode computes only polynomials
// (the compiler refuses such programs, so only a hand-made program reaches this).
func (c *Backend) pow2(op string) error {
	if c.r.Kind != ring.Pow2 {
		return fmt.Errorf("clear %s: not defined over %v (the fhe mode computes only polynomials)", op, c.r)
	}
	return nil
}

func checkLen(what string, t ring.Tensor, n int) error {
	if len(t.Data) != n {
		return fmt.Errorf("%s has %d elements, want %d", what, len(t.Data), n)
	}
	return nil
}

// MatMul computes dst = W x X exactly in the ring (products and sums wrap). The cleartext backend
// has one engine: it ignores the layer's.
func (c *Backend) MatMul(_ context.Context, _ fixed.Engine, dst ring.Tensor, w *ring.Tensor, m, k, n int, x ring.Tensor) error {
	if w == nil {
		return fmt.Errorf("clear matmul: no weights")
	}
	if err := firstError(checkLen("matmul weight", *w, m*k), checkLen("matmul operand", x, k*n),
		checkLen("matmul result", dst, m*n)); err != nil {
		return err
	}
	c.r.MatMul(dst.Data, w.Data, m, k, n, x.Data)
	return nil
}

// MulConst computes dst = w * x elementwise.
func (c *Backend) MulConst(_ context.Context, dst ring.Tensor, w *ring.Tensor, x ring.Tensor) error {
	if w == nil {
		return fmt.Errorf("clear mulconst: no weights")
	}
	if err := firstError(checkLen("mulconst weight", *w, len(x.Data)), checkLen("mulconst result", dst, len(x.Data))); err != nil {
		return err
	}
	c.r.MulVec(dst.Data, x.Data, w.Data)
	return nil
}

// Mul computes dst = x * y elementwise (products wrap).
func (c *Backend) Mul(_ context.Context, dst, x, y ring.Tensor) error {
	if err := firstError(checkLen("mul operand", y, len(x.Data)), checkLen("mul result", dst, len(x.Data))); err != nil {
		return err
	}
	c.r.MulVec(dst.Data, x.Data, y.Data)
	return nil
}

// MatMulShared computes dst[b] = X[b]·Y[b] for b < batch, exactly in the ring (products and sums
// wrap).
func (c *Backend) MatMulShared(_ context.Context, _ fixed.Engine, dst, x, y ring.Tensor, batch, m, k, n int) error {
	if batch < 0 || m < 0 || k < 0 || n < 0 {
		return fmt.Errorf("clear bmatmul: negative dimension in %d × (%d×%d times %d×%d)", batch, m, k, k, n)
	}
	if err := firstError(checkLen("bmatmul first operand", x, batch*m*k), checkLen("bmatmul second operand", y, batch*k*n),
		checkLen("bmatmul result", dst, batch*m*n)); err != nil {
		return err
	}
	for b := 0; b < batch; b++ {
		c.r.MatMul(dst.Data[b*m*n:(b+1)*m*n], x.Data[b*m*k:(b+1)*m*k], m, k, n, y.Data[b*k*n:(b+1)*k*n])
	}
	return nil
}

// ReLULow is ReLU for operands the program records as signed bits-bit values; it checks that
// bound on every element (an error names the first one outside), so a clear run tests the
// compiler's bounds on real data.
func (c *Backend) ReLULow(ctx context.Context, dst, x ring.Tensor, bits int) error {
	if err := c.pow2("relu"); err != nil {
		return err
	}
	if bits < 2 || bits > c.r.Bits {
		return fmt.Errorf("cleartext: relu on the low %d bits: want 2..%d", bits, c.r.Bits)
	}
	if bits == 64 {
		return c.ReLU(ctx, dst, x)
	}
	half := int64(1) << (bits - 1)
	for i, v := range x.Data {
		if sv := c.r.Signed(v); sv < -half || sv >= half {
			return fmt.Errorf("cleartext: relu on the low %d bits: element %d is %d, outside [%d, %d) (the program's bound is wrong)", bits, i, sv, -half, half)
		}
	}
	return c.ReLU(ctx, dst, x)
}

// ReLU computes dst = max(signed(x), 0).
func (c *Backend) ReLU(_ context.Context, dst, x ring.Tensor) error {
	if err := c.pow2("relu"); err != nil {
		return err
	}
	if err := checkLen("relu result", dst, len(x.Data)); err != nil {
		return err
	}
	top := uint(c.r.Bits - 1)
	d := dst.Data[:len(x.Data)]
	for i, v := range x.Data {
		// Branch-free: keep v when its sign bit is clear.
		d[i] = v &^ -(v >> top & 1)
	}
	return nil
}

// Trunc computes dst = floor(signed(x) / 2^k).
func (c *Backend) Trunc(_ context.Context, dst, x ring.Tensor, k int, _ bool) error {
	if err := c.pow2("trunc"); err != nil {
		return err
	}
	if err := checkLen("trunc result", dst, len(x.Data)); err != nil {
		return err
	}
	if k < 0 || k > 63 {
		return fmt.Errorf("trunc by %d bits", k)
	}
	sh := uint(64 - c.r.Bits)
	mask := c.r.Mask()
	d := dst.Data[:len(x.Data)]
	for i, v := range x.Data {
		d[i] = uint64(int64(v<<sh)>>sh>>uint(k)) & mask
	}
	return nil
}

// Div computes dst = floor(signed(x) / d).
func (c *Backend) Div(_ context.Context, dst, x ring.Tensor, d int) error {
	if err := c.pow2("div"); err != nil {
		return err
	}
	if err := checkLen("div result", dst, len(x.Data)); err != nil {
		return err
	}
	if d < 1 {
		return fmt.Errorf("division by %d", d)
	}
	dd := int64(d)
	for i, v := range x.Data {
		dst.Data[i] = c.r.FromSigned(FloorDiv(c.r.Signed(v), dd))
	}
	return nil
}

// FloorDiv returns floor(a / d) for d > 0.
func FloorDiv(a, d int64) int64 {
	q := a / d
	if a%d != 0 && a < 0 {
		q--
	}
	return q
}

// MaxRows computes the signed maximum of each row.
func (c *Backend) MaxRows(_ context.Context, dst, x ring.Tensor, rows, d int) error {
	if err := c.pow2("maxrows"); err != nil {
		return err
	}
	if err := firstError(checkLen("maxpool operand", x, rows*d), checkLen("maxpool result", dst, rows)); err != nil {
		return err
	}
	if d < 1 {
		return fmt.Errorf("maximum over %d elements", d)
	}
	sh := uint(64 - c.r.Bits)
	for i := 0; i < rows; i++ {
		row := x.Data[i*d : i*d+d]
		best := int64(row[0]<<sh) >> sh
		for _, v := range row[1:] {
			if s := int64(v<<sh) >> sh; s > best {
				best = s
			}
		}
		dst.Data[i] = c.r.FromSigned(best)
	}
	return nil
}

// ArgMaxRows computes the index of the first signed maximum of each row.
func (c *Backend) ArgMaxRows(_ context.Context, dst, x ring.Tensor, rows, d int) error {
	if err := c.pow2("argmaxrows"); err != nil {
		return err
	}
	if err := firstError(checkLen("argmax operand", x, rows*d), checkLen("argmax result", dst, rows)); err != nil {
		return err
	}
	if d < 1 {
		return fmt.Errorf("argmax over %d elements", d)
	}
	for i := 0; i < rows; i++ {
		dst.Data[i] = c.r.Reduce(uint64(c.r.ArgMax(x.Data[i*d : i*d+d])))
	}
	return nil
}

func firstError(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// MathParams returns the fxmath parameters for this ring at scale s (built once per scale).
func (c *Backend) MathParams(s int) (*fxmath.Params, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.params[s]; ok {
		return p, nil
	}
	p, err := fxmath.NewParams(c.r.Bits, s)
	if err != nil {
		return nil, err
	}
	if c.params == nil {
		c.params = map[int]*fxmath.Params{}
	}
	c.params[s] = p
	return p, nil
}

// Math computes dst = f(x) by fxmath's algorithm on the values (fxmath.Clear).
func (c *Backend) Math(ctx context.Context, f fxmath.Func, dst, x ring.Tensor, scale int) error {
	if err := checkLen(f.String()+" result", dst, len(x.Data)); err != nil {
		return err
	}
	p, err := c.MathParams(scale)
	if err != nil {
		return err
	}
	return p.Eval(ctx, fxmath.Clear{R: c.r}, f, dst.Data, x.Data)
}
