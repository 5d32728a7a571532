package onnx

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
)

// pow imports Pow(x, e) for a runtime x and a constant exponent whose elements are all 2 (and
// which does not broadcast x to a larger shape): the square x·x, the polynomial activation of
// CryptoNets, LoLa and Falcon, imported as Mul(x, x). Pow of two constants folds; any other
// exponent is unsupported, since only integer powers are polynomials and the fixed-point programs
// compute only the square so far.
func (im *importer) pow(n *Node) error {
	out, err := arityOutput(n, 2, 2)
	if err != nil {
		return err
	}
	base, exp := n.Inputs[0], n.Inputs[1]
	cb, ce := im.constOf(base), im.constOf(exp)
	if ce == nil {
		return fmt.Errorf("%w: Pow with an exponent computed at run time", ErrUnsupported)
	}
	if cb != nil {
		return fmt.Errorf("%w: Pow of two constants (fold it before export)", ErrUnsupported)
	}
	if ce.size() == 0 || !allEqual(ce, 2) {
		return fmt.Errorf("%w: Pow with an exponent other than the constant 2 (only the square x·x is a supported polynomial activation)", ErrUnsupported)
	}
	xs, err := im.shape(base)
	if err != nil {
		return err
	}
	if s, err := ir.Broadcast(xs, ce.shape); err != nil || !s.Equal(xs) {
		return fmt.Errorf("%w: Pow whose exponent of shape %v broadcasts the base of shape %v", ErrUnsupported, ce.shape, xs)
	}
	x, err := im.data(base)
	if err != nil {
		return err
	}
	return im.emit(n, ir.Mul, []string{x, x}, out, ir.Attrs{})
}

// allEqual reports whether every element of c equals v.
func allEqual(c *constant, v float64) bool {
	if c.isInt() {
		for _, x := range c.i {
			if float64(x) != v {
				return false
			}
		}
		return true
	}
	for _, x := range c.f {
		if float64(x) != v {
			return false
		}
	}
	return true
}
