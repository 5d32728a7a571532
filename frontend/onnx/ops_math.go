package onnx

import (
	"errors"
	"fmt"
	"math"

	"github.com/cryptflow-go/cryptflow/ir"
)

// reduce imports ReduceSum, ReduceMean and ReduceMax (every opset): axes from the attribute
// (before ReduceSum-13 / ReduceMean-18 / ReduceMax-18) or the optional constant input; no axes
// means all of them, unless noop_with_empty_axes is set (then the node is an Identity). keepdims
// defaults to 1. HLIL gets the axes normalised, sorted and distinct.
func (im *importer) reduce(n *Node) error {
	if err := arity(n, 1, 2); err != nil {
		return err
	}
	out, xs, err := im.outputShape(n)
	if err != nil {
		return err
	}
	axes, ok, err := n.intsAttr("axes")
	if err != nil {
		return err
	}
	if !ok && input(n, 1) != "" {
		if axes, err = im.intsInput(n, 1, "axes"); err != nil {
			return err
		}
	}
	r := attrReader{n: n}
	keep := r.flag("keepdims", 1)
	noop := r.flag("noop_with_empty_axes", 0)
	if r.err != nil {
		return r.err
	}
	if len(axes) == 0 {
		if noop.Int != 0 {
			return im.emit(n, ir.Identity, n.Inputs[:1], out, ir.Attrs{})
		}
		for a := range xs {
			axes = append(axes, a)
		}
	}
	if axes, err = sortAxes(axes, len(xs)); err != nil {
		return err
	}
	if len(xs) == 0 {
		return im.emit(n, ir.Identity, n.Inputs[:1], out, ir.Attrs{})
	}
	return im.emit(n, ir.Op(n.OpType), n.Inputs[:1], out, ir.Attrs{"axes": ir.IntsAttr(axes), "keepdims": keep})
}

// maxPowExponent is the largest integer exponent Pow is imported for.
const maxPowExponent = 8

// pow imports Pow(X, Y) with a constant Y holding one small non-negative integer p (a scalar, or
// every element equal): p = 0 is a constant 1 when X's shape is static, p = 1 an Identity,
// p ≥ 2 products of X by itself by square-and-multiply (x² = x·x, x³ = x²·x, x⁴ = (x²)², ...),
// which lower to secret products. A constant X is folded with math.Pow.
func (im *importer) pow(n *Node) error {
	out, err := arityOutput(n, 2, 2)
	if err != nil {
		return err
	}
	yc := im.constOf(n.Inputs[1])
	if yc == nil {
		return fmt.Errorf("%w: Pow with a runtime exponent", ErrUnsupported)
	}
	if yc.size() == 0 {
		return errors.New("empty exponent")
	}
	yv := func(i int) float64 {
		if yc.isInt() {
			return float64(yc.i[i])
		}
		return float64(yc.f[i])
	}
	if xc := im.constOf(n.Inputs[0]); xc != nil && !xc.isInt() && yc.size() == 1 {
		r := xc.reshaped(xc.shape)
		for i, v := range r.f {
			r.f[i] = float32(math.Pow(float64(v), yv(0)))
		}
		return im.setConst(out, r)
	}
	p := yv(0)
	for i := 1; i < yc.size(); i++ {
		if yv(i) != p {
			return fmt.Errorf("%w: Pow with an exponent tensor of different values", ErrUnsupported)
		}
	}
	if p != math.Trunc(p) || p < 1 || p > maxPowExponent {
		return fmt.Errorf("%w: Pow with exponent %g (only integers 1..%d, as products)", ErrUnsupported, p, maxPowExponent)
	}
	if xs, err := im.shape(n.Inputs[0]); err != nil {
		return err
	} else if ys := yc.shape; ys.Size() > 1 {
		b, err := ir.Broadcast(xs, ys)
		if err != nil || !b.Equal(xs) {
			return fmt.Errorf("%w: Pow with an exponent of shape %v broadcasting the base %v", ErrUnsupported, ys, xs)
		}
	}
	x, err := im.data(n.Inputs[0])
	if err != nil {
		return err
	}
	e := int(p)
	if e == 1 {
		return im.addNode(&ir.Node{Name: n.Name, Op: ir.Identity, Inputs: []string{x}, Outputs: []string{out}, Attrs: ir.Attrs{}})
	}
	// Square-and-multiply from the most significant bit: acc = x; for each lower bit, acc = acc²
	// and, when the bit is set, acc = acc·x. The last product is named out.
	top := 0
	for e>>(top+1) != 0 {
		top++
	}
	var square []bool // per product: a squaring (true) or a product by x
	for bit := top - 1; bit >= 0; bit-- {
		square = append(square, true)
		if e>>bit&1 == 1 {
			square = append(square, false)
		}
	}
	acc := x
	for i, sq := range square {
		b := x
		if sq {
			b = acc
		}
		o := out
		if i < len(square)-1 {
			o = im.fresh(out + "/pow")
		}
		if err := im.addNode(&ir.Node{Name: n.Name, Op: ir.Mul, Inputs: []string{acc, b}, Outputs: []string{o}, Attrs: ir.Attrs{}}); err != nil {
			return err
		}
		acc = o
	}
	return nil
}

// scalarConst adds an HLIL scalar constant and returns its name.
func (im *importer) scalarConst(base string, v float32) string {
	name := im.fresh(base)
	im.g.Consts[name] = &ir.Tensor{Shape: ir.Shape{}, Data: []float32{v}}
	return name
}

// gelu imports Gelu (opset 20) as its defining formula: approximate="tanh" gives
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) — products, constants and Tanh, all lowered to
// fixed point; approximate="none" gives 0.5·x·(1 + erf(x/√2)), with the fixed-point erf.
func (im *importer) gelu(n *Node) error {
	out, err := arityOutput(n, 1, 1)
	if err != nil {
		return err
	}
	approx, err := n.stringAttr("approximate", "none")
	if err != nil {
		return err
	}
	if approx != "none" && approx != "tanh" {
		return fmt.Errorf("approximate %q (want none or tanh)", approx)
	}
	x, err := im.data(n.Inputs[0])
	if err != nil {
		return err
	}
	add := func(op ir.Op, a, b string) (string, error) {
		o := im.fresh(out + "/gelu")
		return o, im.addNode(&ir.Node{Name: n.Name, Op: op, Inputs: []string{a, b}, Outputs: []string{o}, Attrs: ir.Attrs{}})
	}
	var inner string // the argument of tanh or erf
	if approx == "tanh" {
		x2, err := add(ir.Mul, x, x)
		if err != nil {
			return err
		}
		x3, err := add(ir.Mul, x2, x)
		if err != nil {
			return err
		}
		c3, err := add(ir.Mul, x3, im.scalarConst(out+"/gelu_c", 0.044715))
		if err != nil {
			return err
		}
		s, err := add(ir.Add, x, c3)
		if err != nil {
			return err
		}
		if inner, err = add(ir.Mul, s, im.scalarConst(out+"/gelu_k", float32(math.Sqrt(2/math.Pi)))); err != nil {
			return err
		}
	} else if inner, err = add(ir.Mul, x, im.scalarConst(out+"/gelu_k", float32(1/math.Sqrt2))); err != nil {
		return err
	}
	op := ir.Tanh
	if approx == "none" {
		op = ir.Erf
	}
	f := im.fresh(out + "/gelu")
	if err := im.addNode(&ir.Node{Name: n.Name, Op: op, Inputs: []string{inner}, Outputs: []string{f}, Attrs: ir.Attrs{}}); err != nil {
		return err
	}
	one, err := add(ir.Add, f, im.scalarConst(out+"/gelu_one", 1))
	if err != nil {
		return err
	}
	half, err := add(ir.Mul, x, im.scalarConst(out+"/gelu_half", 0.5))
	if err != nil {
		return err
	}
	return im.addNode(&ir.Node{Name: n.Name, Op: ir.Mul, Inputs: []string{half, one}, Outputs: []string{out}, Attrs: ir.Attrs{}})
}

// layerNorm imports LayerNormalization (opset 17): X, Scale, optional B; axis (default −1) and
// epsilon (default 1e-5); the Mean and InvStdDev outputs must be unused.
func (im *importer) layerNorm(n *Node) error {
	out, xs, err := im.arityOutputShape(n, 2, 3)
	if err != nil {
		return err
	}
	if err := im.extraOutputsUnused(n, "LayerNormalization statistics"); err != nil {
		return err
	}
	a, err := n.intAttr("axis", -1)
	if err != nil {
		return err
	}
	axis, err := normAxis64(a, len(xs))
	if err != nil {
		return err
	}
	eps, err := n.floatAttr("epsilon", 1e-5)
	if err != nil {
		return err
	}
	ins := []string{n.Inputs[0], n.Inputs[1]}
	if input(n, 2) != "" {
		ins = append(ins, n.Inputs[2])
	}
	return im.emit(n, ir.LayerNormalization, ins, out, ir.Attrs{"axis": ir.IntAttr(axis), "epsilon": ir.FloatAttr(eps)})
}
