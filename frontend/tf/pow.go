package tf

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
)

// square imports Pow(x, e) for a runtime x and a constant exponent whose elements are all 2 (and
// which does not broadcast x to a larger shape) as Mul(x, x): the square activation of CryptoNets,
// LoLa and Falcon, the same node TF's Square imports to. Any other runtime Pow is unsupported.
func (im *importer) square(n *NodeDef, a, b *value) (*value, error) {
	if b.c == nil {
		return nil, fmt.Errorf("%w: Pow with an exponent computed at run time", ErrUnsupported)
	}
	if u, ok := b.c.uniform(); !ok || u != 2 {
		return nil, fmt.Errorf("%w: Pow with an exponent other than the constant 2 (only the square x·x is a supported polynomial activation)", ErrUnsupported)
	}
	if a.c != nil {
		return nil, fmt.Errorf("%w: Pow of a constant base with a runtime exponent", ErrUnsupported)
	}
	if err := floatRuntime(a); err != nil {
		return nil, err
	}
	if s, err := ir.Broadcast(a.tfShape(), b.c.shape); err != nil || !s.Equal(a.tfShape()) {
		return nil, fmt.Errorf("%w: Pow whose exponent of shape %v broadcasts the base of shape %v", ErrUnsupported, b.c.shape, a.tfShape())
	}
	return im.emit(n, ir.Mul, []string{a.name, a.name}, ir.Attrs{}, a.shape, a.perm)
}
