package fixed

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ring"
)

// ConvGeom returns the geometry of the convolution instruction in (1-D convolutions as
// H = OH = KH = SH = DH = 1), checked: the VM hands it to a backend, and the compiler plans
// engines on it with the backends' exact cost formulas.
func (p *Program) ConvGeom(in *Instr) (ring.ConvGeom, error) {
	if in.Op != OpConv {
		return ring.ConvGeom{}, fmt.Errorf("%s is not a convolution", in.Op)
	}
	x := p.Tensors[in.In[0]].Shape
	out := p.Tensors[in.Out].Shape
	wt := p.Weights[in.Weight].Shape
	if len(x) != len(out) || len(x) < 3 {
		return ring.ConvGeom{}, fmt.Errorf("convolution of %v into %v", x, out)
	}
	g := ring.ConvGeom{N: x[0], C: x[1], M: out[1], H: 1, OH: 1, KH: 1, SH: 1, DH: 1, Groups: in.Group}
	w := in.Win
	switch sp := len(x) - 2; {
	case sp == 1 && len(w.Kernel) == 1:
		g.W, g.OW = x[2], out[2]
		g.KW, g.SW, g.PW, g.DW = w.Kernel[0], w.Strides[0], w.Pads[0], w.Dilations[0]
	case sp == 2 && len(w.Kernel) == 2:
		g.H, g.W, g.OH, g.OW = x[2], x[3], out[2], out[3]
		g.KH, g.KW = w.Kernel[0], w.Kernel[1]
		g.SH, g.SW = w.Strides[0], w.Strides[1]
		g.PH, g.PW = w.Pads[0], w.Pads[1]
		g.DH, g.DW = w.Dilations[0], w.Dilations[1]
	default:
		return ring.ConvGeom{}, fmt.Errorf("%d spatial dimensions with a %d-D window (want 1 or 2)", sp, len(w.Kernel))
	}
	if err := g.Validate(); err != nil {
		return ring.ConvGeom{}, err
	}
	if len(wt) < 2 || wt[0] != out[1] || wt[1]*in.Group != x[1] {
		return ring.ConvGeom{}, fmt.Errorf("weights %v do not fit input %v, output %v and %d groups", wt, x, out, in.Group)
	}
	return g, nil
}
