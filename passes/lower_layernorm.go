package passes

import (
	"fmt"
	"math"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// layerNormShift is k of the LayerNorm lowering at scale s: the centred values are doubled k
// times, which pre-scales the variance by 2^2k and so widens rsqrt's domain (x ≥ 1) to
// var + ε ≥ 2^−2k; the reciprocal square root of the pre-scaled variance is 2^−k·rsqrt(var + ε),
// and the product with the doubled centred value cancels both factors exactly.
func layerNormShift(s int) int { return s / 4 }

// layerNormShiftFor is k for a LayerNorm whose validated rows have variance at least minVar: the
// default layerNormShift(s), raised until 2^−2k is at most half of minVar + ε (a bit of margin
// below the smallest validated variance), at most s. A larger k costs rsqrt's result one
// significant bit per step on rows of large variance and needs 2 more ring bits for the square of
// the pre-scaled values; autotune's ring choice sees that like any other range.
func layerNormShiftFor(s int, minVar, eps float64) int {
	k := layerNormShift(s)
	v := minVar + eps
	if v <= 0 || math.IsNaN(v) {
		return k
	}
	need := int(math.Ceil((1 - math.Log2(v)) / 2))
	return min(max(k, need), s)
}

// layerNormVariances runs the float graph g on the samples and returns, for the input value of
// every LayerNormalization node, the smallest variance of one of its normalised rows (over the
// axes axis..rank−1) across the samples.
func layerNormVariances(g *ir.Graph, samples []dataset.Sample) (map[string]float64, error) {
	type ln struct {
		in   string
		axis int
	}
	var lns []ln
	for _, n := range g.Nodes {
		if n.Op != ir.LayerNormalization {
			continue
		}
		axis, err := n.Attrs.Int("axis")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln{n.Inputs[0], axis})
	}
	if len(lns) == 0 || len(g.Inputs) != 1 {
		return nil, nil
	}
	cp := *g
	cp.Outputs = nil
	for _, l := range lns {
		cp.Outputs = append(cp.Outputs, l.in)
	}
	it, err := interp.New(&cp)
	if err != nil {
		return nil, fmt.Errorf("layer norm statistics: %w", err)
	}
	in := g.Inputs[0]
	out := map[string]float64{}
	for _, smp := range samples {
		res, err := it.Run(map[string]*ir.Tensor{in.Name: {Shape: in.Shape, Data: smp.Input}})
		if err != nil {
			return nil, fmt.Errorf("layer norm statistics on %s: %w", smp.Name, err)
		}
		for _, l := range lns {
			x := res[l.in]
			if l.axis < 0 || l.axis > len(x.Shape) {
				continue
			}
			width := 1
			for _, d := range x.Shape[l.axis:] {
				width *= d
			}
			for r := 0; r+width <= len(x.Data) && width > 0; r += width {
				var sum, sq float64
				for _, v := range x.Data[r : r+width] {
					sum += float64(v)
				}
				mu := sum / float64(width)
				for _, v := range x.Data[r : r+width] {
					sq += (float64(v) - mu) * (float64(v) - mu)
				}
				if v, ok := out[l.in]; !ok || sq/float64(width) < v {
					out[l.in] = sq / float64(width)
				}
			}
		}
	}
	return out, nil
}

// layerNorm lowers LayerNormalization over axes axis..rank−1 (docs/fixed-point.md, "LayerNorm"):
//
//	μ = floor(Σx / D); d = x − μ; d' = 2^k·d (k local doublings); q = floor(d'·d' / 2^s);
//	v = floor(Σq / D) + round(ε·2^(2k+s)); r = rsqrt(v); y = d'·r (scale 2s, real d/sqrt(var + ε));
//	then y·Scale + B (constants) like a BatchNormalization, left at the product scale.
//
// Every step is exact, so the secure result equals the cleartext one bit for bit.
func (l *lowerer) layerNorm(n *ir.Node) error {
	s := l.p.Scale
	if s < 1 || l.p.Bits < fxmath.MinBits(s) {
		return noLowering("LayerNormalization needs scale ≥ 1 and l ≥ 2s+5 = %d for its rsqrt (have l = %d, s = %d)", fxmath.MinBits(s), l.p.Bits, s)
	}
	for _, p := range n.Inputs[1:] {
		if !l.isConst(p) {
			return noLowering("LayerNormalization with a runtime scale or bias %q", p)
		}
	}
	axis, err := n.Attrs.Int("axis")
	if err != nil {
		return err
	}
	eps, err := n.Attrs.Float("epsilon")
	if err != nil {
		return err
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	out := n.Outputs[0]
	xs := l.p.Tensors[x].Shape
	var axes []int
	width := 1
	for a := axis; a < len(xs); a++ {
		axes = append(axes, a)
		width *= xs[a]
	}
	mean := func(t int, tag string) (int, error) {
		sum, err := l.reduceKeep(t, axes, false, out+"_"+tag+"_sum")
		if err != nil || width == 1 {
			return sum, err
		}
		return l.op(&fixed.Instr{Op: fixed.OpDiv, In: []int{sum}, Divisors: []int{width}}, out+"_"+tag)
	}
	mu, err := mean(x, "mean")
	if err != nil {
		return err
	}
	d, err := l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{x, mu}}, out+"_centred")
	if err != nil {
		return err
	}
	k := layerNormShift(s)
	if v, ok := l.lnVar[n.Inputs[0]]; ok {
		k = layerNormShiftFor(s, v, float64(eps))
	}
	for i := 0; i < k; i++ {
		if d, err = l.op(&fixed.Instr{Op: fixed.OpAdd, In: []int{d, d}}, out+"_centred_x2"); err != nil {
			return err
		}
	}
	sq, err := l.op(&fixed.Instr{Op: fixed.OpMul, In: []int{d, d}}, out+"_sq")
	if err != nil {
		return err
	}
	if sq, err = l.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{sq}, Shift: s}, out+"_sq"); err != nil {
		return err
	}
	v, err := mean(sq, "var")
	if err != nil {
		return err
	}
	epsT := &ir.Tensor{Shape: ir.Shape{}, Data: []float32{float32(math.Ldexp(float64(eps), 2*k))}}
	if v, err = l.addConst(v, epsT, out+"_eps", out+"_var_eps"); err != nil {
		return err
	}
	r, err := l.op(&fixed.Instr{Op: fixed.OpRsqrt, In: []int{v}}, out+"_rsqrt")
	if err != nil {
		return err
	}
	y, err := l.op(&fixed.Instr{Op: fixed.OpMul, In: []int{d, r}}, out+"_normalised")
	if err != nil {
		return err
	}
	gamma := l.constOf(n.Inputs[1])
	var beta *ir.Tensor
	if len(n.Inputs) > 2 {
		beta = l.constOf(n.Inputs[2])
	}
	if !allEqual(gamma, 1) {
		yv := &fval{id: y}
		ys, err := l.atScale(yv, out+"_normalised")
		if err != nil {
			return err
		}
		w, err := l.weight(n.Inputs[1], gamma, s)
		if err != nil {
			return err
		}
		if y, err = l.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{ys}, Weight: w}, out); err != nil {
			return err
		}
	}
	if beta != nil && !allEqual(beta, 0) {
		if y, err = l.addConst(y, beta, n.Inputs[2], out); err != nil {
			return err
		}
	}
	l.set(n, y)
	return nil
}

func allEqual(t *ir.Tensor, v float32) bool {
	for _, x := range t.Data {
		if x != v {
			return false
		}
	}
	return true
}
