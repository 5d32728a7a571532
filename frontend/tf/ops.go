package tf

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/cryptflow-go/cryptflow/ir"
)

// handler imports one TF node given its data inputs and returns the value of its output 0 (nil
// for nodes without outputs).
type handler func(im *importer, n *NodeDef, in []*value) (*value, error)

var handlers map[string]handler

func init() {
	alias := (*importer).alias
	handlers = map[string]handler{
		"Placeholder": (*importer).placeholder, "PlaceholderWithDefault": (*importer).placeholder,
		"Const":    (*importer).constNode,
		"Identity": alias, "StopGradient": alias, "Snapshot": alias, "PreventGradient": alias,
		"CheckNumerics": alias, "IdentityN": alias,
		"NoOp":   func(*importer, *NodeDef, []*value) (*value, error) { return nil, nil },
		"MatMul": (*importer).matmul, "BiasAdd": (*importer).biasAdd, "BiasAddV1": (*importer).biasAdd,
		"Add": (*importer).binaryNode, "AddV2": (*importer).binaryNode, "Sub": (*importer).binaryNode,
		"Mul": (*importer).binaryNode, "RealDiv": (*importer).binaryNode, "Div": (*importer).binaryNode,
		"Maximum": (*importer).binaryNode, "Minimum": (*importer).binaryNode,
		"SquaredDifference": (*importer).binaryNode, "FloorDiv": (*importer).binaryNode,
		"FloorMod": (*importer).binaryNode, "TruncateDiv": (*importer).binaryNode, "Pow": (*importer).binaryNode,
		"AddN": (*importer).addN,
		"Neg":  (*importer).unaryNode, "Relu": (*importer).unaryNode, "Relu6": (*importer).unaryNode,
		"Sigmoid": (*importer).unaryNode, "Tanh": (*importer).unaryNode, "Square": (*importer).unaryNode,
		"LeakyRelu": (*importer).unaryNode, "Rsqrt": (*importer).unaryNode, "Sqrt": (*importer).unaryNode,
		"Reciprocal": (*importer).unaryNode, "Exp": (*importer).unaryNode, "Log": (*importer).unaryNode,
		"Abs": (*importer).unaryNode, "Floor": (*importer).unaryNode, "Ceil": (*importer).unaryNode,
		"Softmax": (*importer).softmax, "LogSoftmax": (*importer).logSoftmax,
		"Conv2D": (*importer).conv2D, "DepthwiseConv2dNative": (*importer).conv2D,
		"MaxPool": (*importer).pool, "AvgPool": (*importer).pool,
		"FusedBatchNorm": (*importer).fusedBatchNorm, "FusedBatchNormV2": (*importer).fusedBatchNorm,
		"FusedBatchNormV3": (*importer).fusedBatchNorm,
		"Reshape":          (*importer).reshape, "Squeeze": (*importer).squeeze, "ExpandDims": (*importer).expandDims,
		"ConcatV2": (*importer).concat, "Concat": (*importer).concat, "Pack": (*importer).pack,
		"Pad": (*importer).pad, "PadV2": (*importer).pad, "MirrorPad": (*importer).pad,
		"Mean": (*importer).reduce, "Sum": (*importer).reduce, "Max": (*importer).reduce,
		"Prod": (*importer).reduce, "Min": (*importer).reduce,
		"ArgMax": (*importer).argMax, "Transpose": (*importer).transpose, "Cast": (*importer).cast,
		"Shape": (*importer).shapeOp, "Size": (*importer).shapeOp, "Rank": (*importer).shapeOp,
		"StridedSlice": (*importer).stridedSlice, "Slice": (*importer).slice, "GatherV2": (*importer).gatherV2, "Fill": (*importer).fill,
		"Range": (*importer).rangeOp, "Switch": (*importer).switchOp, "Merge": (*importer).merge,
		"MaxPoolV2": (*importer).poolV2,
	}
}

// arity checks the number of data inputs.
func arity(in []*value, lo, hi int) error {
	if len(in) < lo || len(in) > hi {
		if lo == hi {
			return fmt.Errorf("has %d data inputs, want %d", len(in), lo)
		}
		return fmt.Errorf("has %d data inputs, want %d to %d", len(in), lo, hi)
	}
	return nil
}

// constInput returns input i, which must be a constant (after folding).
func constInput(n *NodeDef, in []*value, i int, what string) (*tconst, error) {
	if in[i].c == nil {
		return nil, fmt.Errorf("%w: %s (input %d) is computed at run time; only constant %s is supported", ErrUnsupported, what, i, what)
	}
	return in[i].c, nil
}

// floatRuntime checks that a runtime input is a float tensor.
func floatRuntime(v *value) error {
	if v.c == nil && v.dtype != ir.Float32 {
		return fmt.Errorf("%w: input %q has type %s at run time (only float tensors are computed)", ErrUnsupported, v.key, v.dtype)
	}
	return nil
}

// normAxes normalises possibly negative axes for rank r, sorted and distinct.
func normAxes(axes []int, r int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for _, a := range axes {
		if a < -r || a >= r {
			return nil, fmt.Errorf("axis %d out of range for rank %d", a, r)
		}
		if a < 0 {
			a += r
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	sort.Ints(out)
	if out == nil {
		out = []int{}
	}
	return out, nil
}

func (im *importer) placeholder(n *NodeDef, in []*value) (*value, error) {
	if n.Op == "PlaceholderWithDefault" {
		if err := arity(in, 1, 1); err != nil {
			return nil, err
		}
		return in[0], nil // not fed: the default flows through
	}
	if err := im.graphInput(n, n.Name, nil); err != nil {
		return nil, err
	}
	return im.vals[n.Name], nil
}

func (im *importer) constNode(n *NodeDef, in []*value) (*value, error) {
	a, err := n.attr("value", AttrTensor)
	if err != nil {
		return nil, err
	}
	if a == nil || a.Tensor == nil {
		return nil, errors.New("missing attribute \"value\"")
	}
	c, err := constFromTensor(a.Tensor)
	if err != nil {
		return nil, err
	}
	return &value{c: c, key: n.Name}, nil
}

func (im *importer) alias(n *NodeDef, in []*value) (*value, error) {
	if len(in) < 1 {
		return nil, errors.New("has no data input")
	}
	return in[0], nil
}

// binary emits HLIL op on a and b with numpy broadcasting, choosing the layout of a runtime
// operand so that no transpose is needed where possible.
func (im *importer) binary(n *NodeDef, op ir.Op, a, b *value) (*value, error) {
	for _, v := range []*value{a, b} {
		if err := floatRuntime(v); err != nil {
			return nil, err
		}
	}
	shape, err := ir.Broadcast(a.tfShape(), b.tfShape())
	if err != nil {
		return nil, err
	}
	r := len(shape)
	var perm []int
	switch {
	case a.c == nil && b.c == nil && a.rank() == b.rank():
		perm = a.perm
	case a.c == nil && b.c != nil && a.rank() == r:
		perm = a.perm
	case b.c == nil && a.c != nil && b.rank() == r:
		perm = b.perm
	default:
		perm = identity(r)
	}
	ins := make([]string, 2)
	for i, v := range []*value{a, b} {
		if v.c != nil {
			c := v.c
			if !isIdentity(perm) {
				if len(c.shape) < r {
					c = expandRank(c, r)
				}
				ins[i] = im.constName(c, v.key, perm)
				if c != v.c {
					delete(im.consts, c) // a throwaway expansion: do not keep it as a cache key
				}
			} else {
				ins[i] = im.constName(c, v.key, nil)
			}
			continue
		}
		p := perm
		if v.rank() < r {
			p = identity(v.rank())
		}
		if ins[i], err = im.hl(v, p); err != nil {
			return nil, err
		}
	}
	return im.emit(n, op, ins, ir.Attrs{}, shape, perm)
}

// expandRank prepends unit dimensions to c up to rank r (same data).
func expandRank(c *tconst, r int) *tconst {
	shape := make(ir.Shape, r-len(c.shape))
	for i := range shape {
		shape[i] = 1
	}
	return &tconst{dtype: c.dtype, shape: append(shape, c.shape...), v: c.v}
}

// emitTemp emits a helper HLIL node of TF node n (not its final output) under a fresh name.
func (im *importer) emitTemp(n *NodeDef, op ir.Op, ins []string, attrs ir.Attrs) (string, error) {
	name := im.fresh(n.Name + "/" + string(op))
	return name, im.add(n.Name, op, ins, name, attrs)
}

func (im *importer) binaryNode(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 2); err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	if a.c != nil && b.c != nil {
		c, err := foldBinary(n.Op, a.c, b.c, im.limit)
		if err != nil {
			return nil, err
		}
		return &value{c: c, key: n.Name}, nil
	}
	switch n.Op {
	case "Pow":
		return im.square(n, a, b)
	case "Add", "AddV2":
		return im.binary(n, ir.Add, a, b)
	case "Sub":
		return im.binary(n, ir.Sub, a, b)
	case "Mul":
		return im.binary(n, ir.Mul, a, b)
	case "RealDiv", "Div":
		return im.binary(n, ir.Div, a, b)
	case "Maximum", "Minimum":
		return im.minMax(n, a, b)
	case "SquaredDifference":
		d, err := im.binary(&NodeDef{Name: n.Name + "/diff", Op: n.Op}, ir.Sub, a, b)
		if err != nil {
			return nil, err
		}
		return im.binary(n, ir.Mul, d, d)
	}
	return nil, fmt.Errorf("%w: %s of a tensor computed at run time (only constants fold)", ErrUnsupported, n.Op)
}

// minMax lowers Maximum/Minimum: against a uniform constant that does not broadcast the other
// operand, a Clip; otherwise max(a,b) = Relu(a-b)+b and min(a,b) = a-Relu(a-b).
func (im *importer) minMax(n *NodeDef, a, b *value) (*value, error) {
	x, c := a, b
	if x.c != nil {
		x, c = b, a
	}
	if c.c != nil {
		if u, ok := c.c.uniform(); ok && !math.IsNaN(u) {
			if s, err := ir.Broadcast(x.tfShape(), c.c.shape); err == nil && s.Equal(x.tfShape()) {
				if err := floatRuntime(x); err != nil {
					return nil, err
				}
				lo, hi := float32(math.Inf(-1)), float32(u)
				if n.Op == "Maximum" {
					lo, hi = float32(u), float32(math.Inf(1))
				}
				return im.emit(n, ir.Clip, []string{x.name}, ir.Attrs{"min": ir.FloatAttr(lo), "max": ir.FloatAttr(hi)}, x.shape, x.perm)
			}
		}
	}
	d, err := im.binary(&NodeDef{Name: n.Name + "/diff", Op: n.Op}, ir.Sub, a, b)
	if err != nil {
		return nil, err
	}
	r, err := im.emit(&NodeDef{Name: im.fresh(n.Name + "/relu"), Op: n.Op}, ir.Relu, []string{d.name}, ir.Attrs{}, d.shape, d.perm)
	if err != nil {
		return nil, err
	}
	if n.Op == "Maximum" {
		return im.binary(n, ir.Add, r, b)
	}
	return im.binary(n, ir.Sub, a, r)
}

func (im *importer) addN(n *NodeDef, in []*value) (*value, error) {
	if len(in) == 0 {
		return nil, errors.New("AddN without inputs")
	}
	acc := in[0]
	for i, v := range in[1:] {
		step := n
		if i < len(in)-2 {
			step = &NodeDef{Name: im.fresh(fmt.Sprintf("%s/sum%d", n.Name, i)), Op: "AddV2"}
		}
		r, err := im.binaryNode(&NodeDef{Name: step.Name, Op: "AddV2"}, []*value{acc, v})
		if err != nil {
			return nil, err
		}
		acc = r
	}
	return acc, nil
}

func (im *importer) unaryNode(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 1, 1); err != nil {
		return nil, err
	}
	x := in[0]
	alpha, err := n.float("alpha", 0.2)
	if err != nil {
		return nil, err
	}
	if x.c != nil {
		f := unaryFold[n.Op]
		if n.Op == "LeakyRelu" {
			f = func(v float64) float64 { return math.Max(v, v*float64(alpha)) }
			if alpha > 1 {
				f = func(v float64) float64 { return math.Min(v, v*float64(alpha)) }
			}
		}
		if f == nil {
			return nil, fmt.Errorf("cannot fold %s", n.Op)
		}
		return &value{c: foldUnary(x.c, f), key: n.Name}, nil
	}
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	one := func(op ir.Op, attrs ir.Attrs) (*value, error) {
		return im.emit(n, op, []string{x.name}, attrs, x.shape, x.perm)
	}
	switch n.Op {
	case "Relu":
		return one(ir.Relu, ir.Attrs{})
	case "Relu6":
		return one(ir.Clip, ir.Attrs{"min": ir.FloatAttr(0), "max": ir.FloatAttr(6)})
	case "Sigmoid":
		return one(ir.Sigmoid, ir.Attrs{})
	case "LeakyRelu":
		return one(ir.LeakyRelu, ir.Attrs{"alpha": ir.FloatAttr(alpha)})
	case "Neg":
		return im.emit(n, ir.Mul, []string{x.name, im.scalarConst(-1)}, ir.Attrs{}, x.shape, x.perm)
	case "Square":
		return im.emit(n, ir.Mul, []string{x.name, x.name}, ir.Attrs{}, x.shape, x.perm)
	case "Tanh":
		// HLIL's Tanh, lowered to the fixed-point tanh like ONNX's (no longer 2·sigmoid(2x) − 1).
		return one(ir.Tanh, ir.Attrs{})
	}
	return nil, fmt.Errorf("%w: %s of a tensor computed at run time (HLIL has no such operator; only constants fold)", ErrUnsupported, n.Op)
}

func (im *importer) softmax(n *NodeDef, in []*value) (*value, error) {
	return im.softmaxOp(n, in, ir.Softmax)
}

func (im *importer) logSoftmax(n *NodeDef, in []*value) (*value, error) {
	return im.softmaxOp(n, in, ir.LogSoftmax)
}

// softmaxOp imports Softmax or LogSoftmax (op): along the last axis.
func (im *importer) softmaxOp(n *NodeDef, in []*value, op ir.Op) (*value, error) {
	if err := arity(in, 1, 1); err != nil {
		return nil, err
	}
	x := in[0]
	if x.c != nil {
		x = &value{key: x.key, shape: x.c.shape, dtype: ir.Float32, perm: identity(len(x.c.shape)), name: im.constName(x.c, x.key, nil)}
	}
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	if x.rank() < 1 {
		return nil, fmt.Errorf("%s of a scalar", op)
	}
	axis := axisIn(x.perm, x.rank()-1)
	return im.emit(n, op, []string{x.name}, ir.Attrs{"axis": ir.IntAttr(axis)}, x.shape, x.perm)
}

func (im *importer) biasAdd(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 2); err != nil {
		return nil, err
	}
	format, err := n.str("data_format", "NHWC")
	if err != nil {
		return nil, err
	}
	x, b := in[0], in[1]
	if b.rank() != 1 {
		return nil, fmt.Errorf("bias has shape %v, want one dimension", b.tfShape())
	}
	r := x.rank()
	if r < 2 {
		return nil, fmt.Errorf("input of rank %d < 2", r)
	}
	ch := r - 1
	if format == "NCHW" || format == "NCDHW" {
		ch = 1
	} else if format != "NHWC" && format != "NDHWC" {
		return nil, fmt.Errorf("unknown data_format %q", format)
	}
	if x.tfShape()[ch] != b.tfShape()[0] {
		return nil, fmt.Errorf("bias of %d values for %d channels", b.tfShape()[0], x.tfShape()[ch])
	}
	if ch != r-1 {
		if b.c == nil {
			return nil, fmt.Errorf("%w: NCHW BiasAdd with a bias computed at run time", ErrUnsupported)
		}
		shape := make(ir.Shape, r-1)
		for i := range shape {
			shape[i] = 1
		}
		shape[0] = b.c.shape[0]
		b = &value{c: &tconst{dtype: b.c.dtype, shape: shape, v: b.c.v}, key: b.key}
	}
	if x.c != nil && b.c != nil {
		c, err := foldBinary("Add", x.c, b.c, im.limit)
		if err != nil {
			return nil, err
		}
		return &value{c: c, key: n.Name}, nil
	}
	return im.binary(n, ir.Add, x, b)
}

func (im *importer) matmul(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 2); err != nil {
		return nil, err
	}
	ta, err := n.bool("transpose_a", false)
	if err != nil {
		return nil, err
	}
	tb, err := n.bool("transpose_b", false)
	if err != nil {
		return nil, err
	}
	a, b := in[0], in[1]
	if a.rank() != 2 || b.rank() != 2 {
		return nil, fmt.Errorf("MatMul operands %v and %v must be matrices", a.tfShape(), b.tfShape())
	}
	for _, v := range in {
		if err := floatRuntime(v); err != nil {
			return nil, err
		}
	}
	// Fold transposes of constant operands.
	if ta && a.c != nil {
		a, ta = &value{c: transposeConst(a.c, []int{1, 0}), key: a.key + "/T"}, false
	}
	if tb && b.c != nil {
		b, tb = &value{c: transposeConst(b.c, []int{1, 0}), key: b.key + "/T"}, false
	}
	ins := make([]string, 2)
	for i, v := range []*value{a, b} {
		if v.c != nil {
			ins[i] = im.constName(v.c, v.key, nil)
		} else if ins[i], err = im.hl(v, identity(2)); err != nil {
			return nil, err
		}
	}
	as, bs := a.tfShape(), b.tfShape()
	m, k := as[0], as[1]
	if ta {
		m, k = k, m
	}
	k2, nn := bs[0], bs[1]
	if tb {
		k2, nn = nn, k2
	}
	if k != k2 {
		return nil, fmt.Errorf("MatMul inner dimensions differ: %v x %v (transpose_a=%v, transpose_b=%v)", as, bs, ta, tb)
	}
	out := ir.Shape{m, nn}
	if ta || tb {
		return im.emit(n, ir.Gemm, ins, ir.Attrs{"alpha": ir.FloatAttr(1), "beta": ir.FloatAttr(1),
			"transA": ir.IntAttr(boolInt(ta)), "transB": ir.IntAttr(boolInt(tb))}, out, identity(2))
	}
	return im.emit(n, ir.MatMul, ins, ir.Attrs{}, out, identity(2))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// format2D reads data_format for a 2-D spatial op: the TF positions of channels and of H, W,
// and the layout that holds the tensor as NCHW.
func format2D(n *NodeDef) (ch int, spatial [2]int, perm []int, err error) {
	f, err := n.str("data_format", "NHWC")
	if err != nil {
		return 0, spatial, nil, err
	}
	switch f {
	case "NHWC":
		return 3, [2]int{1, 2}, nhwcToNCHW, nil
	case "NCHW":
		return 1, [2]int{2, 3}, identity(4), nil
	}
	return 0, spatial, nil, fmt.Errorf("%w data_format %q", ErrUnsupported, f)
}

// samePads resolves TF SAME padding for one spatial dimension (the odd element goes at the end).
func samePads(in, k, s, d int) (before, after, out int) {
	out = (in + s - 1) / s
	eff := (k-1)*d + 1
	total := max(0, (out-1)*s+eff-in)
	return total / 2, total - total/2, out
}

// window2D reads strides, dilations and padding of a Conv2D or pool node and returns HLIL
// strides, dilations and pads for input TF shape xs with kernel extents k.
func window2D(n *NodeDef, xs ir.Shape, ch int, sp [2]int, k [2]int, dilated bool) (strides, dils, pads []int, err error) {
	st, err := n.ints("strides", []int{1, 1, 1, 1})
	if err != nil {
		return nil, nil, nil, err
	}
	dl := []int{1, 1, 1, 1}
	if dilated {
		if dl, err = n.ints("dilations", dl); err != nil {
			return nil, nil, nil, err
		}
	}
	if len(st) != 4 || len(dl) != 4 {
		return nil, nil, nil, fmt.Errorf("strides %v and dilations %v must have 4 entries", st, dl)
	}
	if st[0] != 1 || st[ch] != 1 || dl[0] != 1 || dl[ch] != 1 {
		return nil, nil, nil, fmt.Errorf("%w strides %v or dilations %v over batch or channels", ErrUnsupported, st, dl)
	}
	strides = []int{st[sp[0]], st[sp[1]]}
	dils = []int{dl[sp[0]], dl[sp[1]]}
	for i := 0; i < 2; i++ {
		if strides[i] < 1 || dils[i] < 1 || k[i] < 1 {
			return nil, nil, nil, fmt.Errorf("strides %v, dilations %v and kernel %v must be positive", strides, dils, k)
		}
	}
	padding, err := n.str("padding", "")
	if err != nil {
		return nil, nil, nil, err
	}
	pads = make([]int, 4)
	switch padding {
	case "VALID":
	case "SAME":
		for i := 0; i < 2; i++ {
			pads[i], pads[2+i], _ = samePads(xs[sp[i]], k[i], strides[i], dils[i])
		}
	case "EXPLICIT":
		ep, err := n.ints("explicit_paddings", nil)
		if err != nil {
			return nil, nil, nil, err
		}
		if len(ep) != 8 {
			return nil, nil, nil, fmt.Errorf("explicit_paddings %v must have 8 entries", ep)
		}
		if ep[0] != 0 || ep[1] != 0 || ep[2*ch] != 0 || ep[2*ch+1] != 0 {
			return nil, nil, nil, fmt.Errorf("%w explicit padding %v of batch or channels", ErrUnsupported, ep)
		}
		for i := 0; i < 2; i++ {
			pads[i], pads[2+i] = ep[2*sp[i]], ep[2*sp[i]+1]
			if pads[i] < 0 || pads[2+i] < 0 {
				return nil, nil, nil, fmt.Errorf("negative explicit_paddings %v", ep)
			}
		}
	default:
		return nil, nil, nil, fmt.Errorf("unknown padding %q", padding)
	}
	return strides, dils, pads, nil
}

func (im *importer) conv2D(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 2); err != nil {
		return nil, err
	}
	x := in[0]
	if x.c != nil {
		return nil, fmt.Errorf("%w: convolution of a constant input", ErrUnsupported)
	}
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	f, err := constInput(n, in, 1, "filter")
	if err != nil {
		return nil, err
	}
	if x.rank() != 4 || len(f.shape) != 4 {
		return nil, fmt.Errorf("input %v and filter %v must have rank 4", x.shape, f.shape)
	}
	ch, sp, perm, err := format2D(n)
	if err != nil {
		return nil, err
	}
	kh, kw, fin, fout := f.shape[0], f.shape[1], f.shape[2], f.shape[3]
	c := x.shape[ch]
	var w *tconst
	group := 1
	outC := fout
	if n.Op == "DepthwiseConv2dNative" {
		if fin != c {
			return nil, fmt.Errorf("depthwise filter %v for %d input channels", f.shape, c)
		}
		// [kh,kw,C,mult] -> [C,mult,kh,kw] = [C*mult,1,kh,kw]: output channel c*mult+m.
		w = transposeConst(f, []int{2, 3, 0, 1})
		w.shape = ir.Shape{c * fout, 1, kh, kw}
		group, outC = c, c*fout
	} else {
		if fin < 1 || c%fin != 0 || fout%(c/fin) != 0 {
			return nil, fmt.Errorf("filter %v does not fit %d input channels", f.shape, c)
		}
		group = c / fin
		w = transposeConst(f, []int{3, 2, 0, 1}) // HWIO -> OIHW
	}
	strides, dils, pads, err := window2D(n, x.shape, ch, sp, [2]int{kh, kw}, true)
	if err != nil {
		return nil, err
	}
	xin, err := im.hl(x, perm)
	if err != nil {
		return nil, err
	}
	wname := im.constName(w, in[1].key+"/oihw", nil)
	delete(im.consts, w)
	attrs := ir.Attrs{
		"group": ir.IntAttr(group), "kernel_shape": ir.IntsAttr([]int{kh, kw}), "strides": ir.IntsAttr(strides),
		"pads": ir.IntsAttr(pads), "dilations": ir.IntsAttr(dils),
	}
	outShape, err := convOutShape(x.shape, ch, sp, outC, [2]int{kh, kw}, strides, dils, pads)
	if err != nil {
		return nil, err
	}
	return im.emit(n, ir.Conv, []string{xin, wname}, attrs, outShape, perm)
}

// convOutShape returns the TF output shape of a 2-D window op.
func convOutShape(xs ir.Shape, ch int, sp [2]int, outC int, k [2]int, strides, dils, pads []int) (ir.Shape, error) {
	out := xs.Clone()
	out[ch] = outC
	for i := 0; i < 2; i++ {
		span := (k[i]-1)*dils[i] + 1
		total := xs[sp[i]] + pads[i] + pads[2+i]
		if total < span {
			return nil, fmt.Errorf("window of extent %d is larger than the padded input %d", span, total)
		}
		out[sp[i]] = (total-span)/strides[i] + 1
	}
	return out, nil
}

func (im *importer) pool(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 1, 1); err != nil {
		return nil, err
	}
	x := in[0]
	if x.c != nil {
		return nil, fmt.Errorf("%w: pooling of a constant input", ErrUnsupported)
	}
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	if x.rank() != 4 {
		return nil, fmt.Errorf("input %v must have rank 4", x.shape)
	}
	ch, sp, perm, err := format2D(n)
	if err != nil {
		return nil, err
	}
	ks, err := n.ints("ksize", nil)
	if err != nil {
		return nil, err
	}
	if len(ks) != 4 || ks[0] != 1 || ks[ch] != 1 {
		return nil, fmt.Errorf("%w ksize %v (pooling over batch or channels, or not 4 entries)", ErrUnsupported, ks)
	}
	k := [2]int{ks[sp[0]], ks[sp[1]]}
	strides, dils, pads, err := window2D(n, x.shape, ch, sp, k, false)
	if err != nil {
		return nil, err
	}
	xin, err := im.hl(x, perm)
	if err != nil {
		return nil, err
	}
	attrs := ir.Attrs{
		"kernel_shape": ir.IntsAttr(k[:]), "strides": ir.IntsAttr(strides), "pads": ir.IntsAttr(pads),
		"dilations": ir.IntsAttr(dils), "ceil_mode": ir.IntAttr(0),
	}
	op := ir.MaxPool
	if n.Op == "AvgPool" {
		// TF's SAME average divides by the number of real (non-padding) elements.
		op = ir.AveragePool
		attrs["count_include_pad"] = ir.IntAttr(0)
	}
	outShape, err := convOutShape(x.shape, ch, sp, x.shape[ch], k, strides, dils, pads)
	if err != nil {
		return nil, err
	}
	return im.emit(n, op, []string{xin}, attrs, outShape, perm)
}

func (im *importer) fusedBatchNorm(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 5, 5); err != nil {
		return nil, err
	}
	training, err := n.bool("is_training", true)
	if err != nil {
		return nil, err
	}
	if training {
		return nil, fmt.Errorf("%w: is_training=true (batch statistics); export the graph for inference", ErrUnsupported)
	}
	eps, err := n.float("epsilon", 0.0001)
	if err != nil {
		return nil, err
	}
	x := in[0]
	if x.c != nil {
		return nil, fmt.Errorf("%w: batch norm of a constant input", ErrUnsupported)
	}
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	if x.rank() != 4 {
		return nil, fmt.Errorf("input %v must have rank 4", x.shape)
	}
	ch, _, perm, err := format2D(n)
	if err != nil {
		return nil, err
	}
	c := x.shape[ch]
	ins := make([]string, 5)
	if ins[0], err = im.hl(x, perm); err != nil {
		return nil, err
	}
	for i, what := range []string{"scale", "offset", "mean", "variance"} {
		p, err := constInput(n, in, i+1, what)
		if err != nil {
			return nil, err
		}
		if len(p.shape) != 1 || p.shape[0] != c {
			return nil, fmt.Errorf("%s has shape %v, want [%d]", what, p.shape, c)
		}
		ins[i+1] = im.constName(p, in[i+1].key, nil)
	}
	return im.emit(n, ir.BatchNormalization, ins, ir.Attrs{"epsilon": ir.FloatAttr(eps)}, x.shape, perm)
}

func (im *importer) reshape(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 2); err != nil {
		return nil, err
	}
	sc, err := constInput(n, in, 1, "shape")
	if err != nil {
		return nil, err
	}
	dims, err := sc.ints()
	if err != nil {
		return nil, err
	}
	x := in[0]
	shape, err := resolveShape(x.tfShape(), dims)
	if err != nil {
		return nil, err
	}
	if x.c != nil {
		return &value{c: &tconst{dtype: x.c.dtype, shape: shape, v: x.c.v}, key: n.Name}, nil
	}
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	xin, err := im.hl(x, identity(x.rank()))
	if err != nil {
		return nil, err
	}
	return im.emit(n, ir.Reshape, []string{xin}, ir.Attrs{"shape": ir.IntsAttr(shape)}, shape, identity(len(shape)))
}

// resolveShape resolves a TF Reshape target (one -1 inferred) for an input shape.
func resolveShape(in ir.Shape, dims []int) (ir.Shape, error) {
	out := make(ir.Shape, len(dims))
	unknown := -1
	known := 1
	for i, d := range dims {
		switch {
		case d == -1 && unknown < 0:
			unknown = i
		case d < 0:
			return nil, fmt.Errorf("bad target shape %v", dims)
		default:
			out[i] = d
			if d > MaxElements || known*d > MaxElements {
				return nil, fmt.Errorf("target shape %v is too large", dims)
			}
			known *= d
		}
	}
	if unknown >= 0 {
		if known == 0 || in.Size()%known != 0 {
			return nil, fmt.Errorf("cannot reshape %v to %v", in, dims)
		}
		out[unknown] = in.Size() / known
	}
	if out.Size() != in.Size() {
		return nil, fmt.Errorf("cannot reshape %v (%d elements) to %v", in, in.Size(), dims)
	}
	return out, nil
}

func (im *importer) squeeze(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 1, 1); err != nil {
		return nil, err
	}
	x := in[0]
	s := x.tfShape()
	dims, err := n.ints("squeeze_dims", nil)
	if err != nil {
		return nil, err
	}
	if dims == nil {
		if dims, err = n.ints("axis", nil); err != nil {
			return nil, err
		}
	}
	axes, err := normAxes(dims, len(s))
	if err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		for i, d := range s {
			if d == 1 {
				axes = append(axes, i)
			}
		}
	}
	var out ir.Shape
	drop := map[int]bool{}
	for _, a := range axes {
		if s[a] != 1 {
			return nil, fmt.Errorf("cannot squeeze axis %d of size %d", a, s[a])
		}
		drop[a] = true
	}
	for i, d := range s {
		if !drop[i] {
			out = append(out, d)
		}
	}
	if out == nil {
		out = ir.Shape{}
	}
	if x.c != nil {
		return &value{c: &tconst{dtype: x.c.dtype, shape: out, v: x.c.v}, key: n.Name}, nil
	}
	if len(axes) == 0 {
		return x, nil
	}
	hlAxes := make([]int, len(axes))
	for i, a := range axes {
		hlAxes[i] = axisIn(x.perm, a)
	}
	sort.Ints(hlAxes)
	return im.emit(n, ir.Squeeze, []string{x.name}, ir.Attrs{"axes": ir.IntsAttr(hlAxes)}, out, dropAxes(x.perm, axes))
}

func (im *importer) expandDims(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 2); err != nil {
		return nil, err
	}
	dc, err := constInput(n, in, 1, "dim")
	if err != nil {
		return nil, err
	}
	ds, err := dc.ints()
	if err != nil || len(ds) != 1 {
		return nil, fmt.Errorf("dim must be one integer, got %v", dc.v)
	}
	x := in[0]
	r := x.rank()
	d := ds[0]
	if d < -r-1 || d > r {
		return nil, fmt.Errorf("dim %d out of range for rank %d", d, r)
	}
	if d < 0 {
		d += r + 1
	}
	out := append(append(x.tfShape()[:d:d], 1), x.tfShape()[d:]...)
	if x.c != nil {
		return &value{c: &tconst{dtype: x.c.dtype, shape: out, v: x.c.v}, key: n.Name}, nil
	}
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	xin, err := im.hl(x, identity(r))
	if err != nil {
		return nil, err
	}
	return im.emit(n, ir.Unsqueeze, []string{xin}, ir.Attrs{"axes": ir.IntsAttr([]int{d})}, out, identity(r+1))
}

func (im *importer) concat(n *NodeDef, in []*value) (*value, error) {
	if len(in) < 2 {
		return nil, fmt.Errorf("has %d data inputs, want at least 2", len(in))
	}
	var ac *tconst
	var err error
	data := in[:len(in)-1]
	if n.Op == "Concat" { // the axis comes first
		ac, err = constInput(n, in, 0, "axis")
		data = in[1:]
	} else {
		ac, err = constInput(n, in, len(in)-1, "axis")
	}
	if err != nil {
		return nil, err
	}
	av, err := ac.ints()
	if err != nil || len(av) != 1 {
		return nil, fmt.Errorf("axis must be one integer, got %v", ac.v)
	}
	r := data[0].rank()
	axes, err := normAxes(av, r)
	if err != nil {
		return nil, err
	}
	axis := axes[0]
	shape := data[0].tfShape().Clone()
	allConst := true
	var first *value
	for _, v := range data {
		s := v.tfShape()
		if len(s) != r {
			return nil, fmt.Errorf("inputs have ranks %d and %d", r, len(s))
		}
		for i := range s {
			if i != axis && s[i] != shape[i] {
				return nil, fmt.Errorf("input shapes %v and %v differ off axis %d", data[0].tfShape(), s, axis)
			}
		}
		if v != data[0] {
			shape[axis] += s[axis]
		}
		if v.c == nil {
			allConst = false
			if first == nil {
				first = v
			}
		}
	}
	if allConst {
		cs := make([]*tconst, len(data))
		for i, v := range data {
			cs[i] = v.c
		}
		c, err := concatConst(cs, axis)
		if err != nil {
			return nil, err
		}
		return &value{c: c, key: n.Name}, nil
	}
	perm := first.perm
	ins := make([]string, len(data))
	for i, v := range data {
		if err := floatRuntime(v); err != nil {
			return nil, err
		}
		if ins[i], err = im.hl(v, perm); err != nil {
			return nil, err
		}
	}
	return im.emit(n, ir.Concat, ins, ir.Attrs{"axis": ir.IntAttr(axisIn(perm, axis))}, shape, perm)
}

func (im *importer) pack(n *NodeDef, in []*value) (*value, error) {
	if len(in) < 1 {
		return nil, errors.New("a Pack without inputs")
	}
	ax, err := n.int("axis", 0)
	if err != nil {
		return nil, err
	}
	s := in[0].tfShape()
	r := len(s) + 1
	axes, err := normAxes([]int{int(ax)}, r)
	if err != nil {
		return nil, err
	}
	a := axes[0]
	unit := append(append(s[:a:a], 1), s[a:]...)
	allConst := true
	for _, v := range in {
		if !v.tfShape().Equal(s) {
			return nil, fmt.Errorf("inputs have shapes %v and %v", s, v.tfShape())
		}
		allConst = allConst && v.c != nil
	}
	if allConst {
		cs := make([]*tconst, len(in))
		for i, v := range in {
			cs[i] = &tconst{dtype: v.c.dtype, shape: unit, v: v.c.v}
		}
		c, err := concatConst(cs, a)
		if err != nil {
			return nil, err
		}
		return &value{c: c, key: n.Name}, nil
	}
	ins := make([]string, len(in))
	for i, v := range in {
		if err := floatRuntime(v); err != nil {
			return nil, err
		}
		if v.c != nil {
			ins[i] = im.constName(&tconst{dtype: v.c.dtype, shape: unit, v: v.c.v}, v.key, nil)
			continue
		}
		xin, err := im.hl(v, identity(len(s)))
		if err != nil {
			return nil, err
		}
		ins[i] = im.fresh(fmt.Sprintf("%s/unsqueeze%d", n.Name, i))
		if err := im.add(n.Name, ir.Unsqueeze, []string{xin}, ins[i], ir.Attrs{"axes": ir.IntsAttr([]int{a})}); err != nil {
			return nil, err
		}
	}
	out := unit.Clone()
	out[a] = len(in)
	return im.emit(n, ir.Concat, ins, ir.Attrs{"axis": ir.IntAttr(a)}, out, identity(r))
}

func (im *importer) pad(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 3); err != nil {
		return nil, err
	}
	x := in[0]
	if x.c != nil {
		return nil, fmt.Errorf("%w: padding of a constant", ErrUnsupported)
	}
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	pc, err := constInput(n, in, 1, "paddings")
	if err != nil {
		return nil, err
	}
	p, err := pc.ints()
	if err != nil {
		return nil, err
	}
	r := x.rank()
	if len(p) != 2*r {
		return nil, fmt.Errorf("paddings of shape %v for rank %d", pc.shape, r)
	}
	mode, val := "constant", float32(0)
	switch n.Op {
	case "PadV2":
		if len(in) == 3 {
			vc, err := constInput(n, in, 2, "constant_values")
			if err != nil {
				return nil, err
			}
			v, ok := vc.scalar()
			if !ok {
				return nil, errors.New("constant_values must be a scalar")
			}
			val = float32(v)
		}
	case "MirrorPad":
		m, err := n.str("mode", "")
		if err != nil {
			return nil, err
		}
		if m != "REFLECT" {
			return nil, fmt.Errorf("%w MirrorPad mode %q (only REFLECT)", ErrUnsupported, m)
		}
		mode = "reflect"
	}
	pads := make([]int, 2*r)
	out := x.shape.Clone()
	for j := 0; j < r; j++ {
		a := x.perm[j]
		pads[j], pads[r+j] = p[2*a], p[2*a+1]
		if pads[j] < 0 || pads[r+j] < 0 {
			return nil, fmt.Errorf("negative paddings %v", p)
		}
		out[a] += p[2*a] + p[2*a+1]
	}
	return im.emit(n, ir.Pad, []string{x.name}, ir.Attrs{"mode": ir.StringAttr(mode), "pads": ir.IntsAttr(pads), "value": ir.FloatAttr(val)}, out, x.perm)
}

func (im *importer) reduce(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 2); err != nil {
		return nil, err
	}
	keep, err := n.bool("keep_dims", false)
	if err != nil {
		return nil, err
	}
	ac, err := constInput(n, in, 1, "reduction_indices")
	if err != nil {
		return nil, err
	}
	av, err := ac.ints()
	if err != nil {
		return nil, err
	}
	x := in[0]
	r := x.rank()
	axes, err := normAxes(av, r)
	if err != nil {
		return nil, err
	}
	if x.c != nil {
		c, err := reduceConst(n.Op, x.c, axes, keep)
		if err != nil {
			return nil, err
		}
		return &value{c: c, key: n.Name}, nil
	}
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	if len(axes) == 0 {
		return x, nil
	}
	var outTF ir.Shape
	red := map[int]bool{}
	for _, a := range axes {
		red[a] = true
	}
	for i, d := range x.shape {
		if !red[i] {
			outTF = append(outTF, d)
		} else if keep {
			outTF = append(outTF, 1)
		}
	}
	if outTF == nil {
		outTF = ir.Shape{}
	}
	if (n.Op == "Mean" || n.Op == "Max") && r >= 3 && len(axes) == r-2 {
		// A global pool: hold x with the two kept axes first (in their current order), then
		// the reduced ones.
		var kept, reduced []int
		for _, p := range x.perm {
			if red := contains(axes, p); red {
				reduced = append(reduced, p)
			} else {
				kept = append(kept, p)
			}
		}
		perm := append(kept, reduced...)
		xin, err := im.hl(x, perm)
		if err != nil {
			return nil, err
		}
		op := ir.GlobalAveragePool
		if n.Op == "Max" {
			op = ir.GlobalMaxPool
		}
		if keep {
			return im.emit(n, op, []string{xin}, ir.Attrs{}, outTF, perm)
		}
		t, err := im.emitTemp(n, op, []string{xin}, ir.Attrs{})
		if err != nil {
			return nil, err
		}
		return im.emit(n, ir.Squeeze, []string{t}, ir.Attrs{"axes": ir.IntsAttr(identity(r)[2:])}, outTF, dropAxes(perm, axes))
	}
	outPerm := x.perm
	if !keep {
		outPerm = dropAxes(x.perm, axes)
	}
	// HLIL positions of the reduced axes.
	hs := im.g.Values[x.name].Shape
	var rpos, kpos []int
	for j := range hs {
		if red[x.perm[j]] {
			rpos = append(rpos, j)
		} else {
			kpos = append(kpos, j)
		}
	}
	if n.Op != "Mean" && n.Op != "Sum" {
		return nil, fmt.Errorf("%w: %s over axes %v of a rank-%d runtime tensor (only over all but two axes, as a global pool)", ErrUnsupported, n.Op, axes, r)
	}
	// General Mean/Sum: move the reduced axes last, flatten, and multiply by a column of ones
	// (or 1/count).
	src := x.name
	q := append(append([]int{}, kpos...), rpos...)
	if !isIdentity(q) {
		if src, err = im.emitTemp(n, ir.Transpose, []string{src}, ir.Attrs{"perm": ir.IntsAttr(q)}); err != nil {
			return nil, err
		}
	}
	kn, rn := 1, 1
	for _, j := range kpos {
		kn *= hs[j]
	}
	for _, j := range rpos {
		rn *= hs[j]
	}
	if src, err = im.emitTemp(n, ir.Reshape, []string{src}, ir.Attrs{"shape": ir.IntsAttr([]int{kn, rn})}); err != nil {
		return nil, err
	}
	w := float64(1)
	if n.Op == "Mean" {
		w = 1 / float64(rn)
	}
	col := newConst(DTFloat, ir.Shape{rn, 1})
	for i := range col.v {
		col.v[i] = w
	}
	cname := im.constName(col, n.Name+"/weights", nil)
	if src, err = im.emitTemp(n, ir.MatMul, []string{src, cname}, ir.Attrs{}); err != nil {
		return nil, err
	}
	hOut := make([]int, 0, len(hs))
	for j, d := range hs {
		if !red[x.perm[j]] {
			hOut = append(hOut, d)
		} else if keep {
			hOut = append(hOut, 1)
		}
	}
	return im.emit(n, ir.Reshape, []string{src}, ir.Attrs{"shape": ir.IntsAttr(hOut)}, outTF, outPerm)
}

func (im *importer) argMax(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 2); err != nil {
		return nil, err
	}
	dc, err := constInput(n, in, 1, "dimension")
	if err != nil {
		return nil, err
	}
	ds, err := dc.ints()
	if err != nil || len(ds) != 1 {
		return nil, fmt.Errorf("dimension must be one integer, got %v", dc.v)
	}
	x := in[0]
	if x.c != nil {
		return nil, fmt.Errorf("%w: ArgMax of a constant", ErrUnsupported)
	}
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	axes, err := normAxes(ds, x.rank())
	if err != nil {
		return nil, err
	}
	a := axes[0]
	out := append(x.shape[:a:a], x.shape[a+1:]...)
	return im.emit(n, ir.ArgMax, []string{x.name}, ir.Attrs{"axis": ir.IntAttr(axisIn(x.perm, a)), "keepdims": ir.IntAttr(0),
		"select_last_index": ir.IntAttr(0)}, out, dropAxes(x.perm, []int{a}))
}

func (im *importer) transpose(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 2); err != nil {
		return nil, err
	}
	pc, err := constInput(n, in, 1, "perm")
	if err != nil {
		return nil, err
	}
	q, err := pc.ints()
	if err != nil {
		return nil, err
	}
	x := in[0]
	r := x.rank()
	if len(q) != r {
		return nil, fmt.Errorf("perm %v for rank %d", q, r)
	}
	seen := make([]bool, r)
	for _, p := range q {
		if p < 0 || p >= r || seen[p] {
			return nil, fmt.Errorf("perm %v is not a permutation", q)
		}
		seen[p] = true
	}
	if x.c != nil {
		return &value{c: transposeConst(x.c, q), key: n.Name}, nil
	}
	// No HLIL node: the same HLIL tensor is the output in another layout.
	out := make(ir.Shape, r)
	for i, p := range q {
		out[i] = x.shape[p]
	}
	qinv := invert(q)
	perm := make([]int, r)
	for j, p := range x.perm {
		perm[j] = qinv[p]
	}
	return &value{key: n.Name, shape: out, dtype: x.dtype, perm: perm, name: x.name}, nil
}

func (im *importer) cast(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 1, 1); err != nil {
		return nil, err
	}
	dst, err := n.dtype("DstT", DTFloat)
	if err != nil {
		return nil, err
	}
	x := in[0]
	if x.c != nil {
		c := foldUnary(x.c, func(v float64) float64 { return castTo(dst, v) })
		c.dtype = dst
		return &value{c: c, key: n.Name}, nil
	}
	if x.dtype == ir.Float32 && dst.IsFloat() {
		return x, nil
	}
	return nil, fmt.Errorf("%w: Cast of a runtime %s tensor to %s", ErrUnsupported, x.dtype, dst)
}

func (im *importer) shapeOp(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 1, 1); err != nil {
		return nil, err
	}
	dt, err := n.dtype("out_type", DTInt32)
	if err != nil {
		return nil, err
	}
	s := in[0].tfShape()
	switch n.Op {
	case "Shape":
		c := newConst(dt, ir.Shape{len(s)})
		for i, d := range s {
			c.v[i] = float64(d)
		}
		return &value{c: c, key: n.Name}, nil
	case "Size":
		c := newConst(dt, ir.Shape{})
		c.v[0] = float64(s.Size())
		return &value{c: c, key: n.Name}, nil
	}
	c := newConst(DTInt32, ir.Shape{})
	c.v[0] = float64(len(s))
	return &value{c: c, key: n.Name}, nil
}

func (im *importer) stridedSlice(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 4, 4); err != nil {
		return nil, err
	}
	var idx [3][]int
	for i, what := range []string{"begin", "end", "strides"} {
		c, err := constInput(n, in, i+1, what)
		if err != nil {
			return nil, err
		}
		if idx[i], err = c.ints(); err != nil {
			return nil, err
		}
	}
	var masks [5]int64
	for i, name := range []string{"begin_mask", "end_mask", "ellipsis_mask", "new_axis_mask", "shrink_axis_mask"} {
		var err error
		if masks[i], err = n.int(name, 0); err != nil {
			return nil, err
		}
	}
	if in[0].c == nil {
		pl, err := planStridedSlice(in[0].tfShape(), idx[0], idx[1], idx[2], masks[0], masks[1], masks[2], masks[3], masks[4])
		if err != nil {
			return nil, err
		}
		return im.sliceRuntime(n, in[0], pl)
	}
	c, err := stridedSlice(in[0].c, idx[0], idx[1], idx[2], masks[0], masks[1], masks[2], masks[3], masks[4])
	if err != nil {
		return nil, err
	}
	return &value{c: c, key: n.Name}, nil
}

// sliceRuntime imports a slice of a runtime tensor as HLIL's Slice (in the TF layout), followed
// by a Reshape when the slice shrinks or adds axes.
func (im *importer) sliceRuntime(n *NodeDef, x *value, pl *slicePlan) (*value, error) {
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	name, err := im.hl(x, identity(x.rank()))
	if err != nil {
		return nil, err
	}
	attrs := ir.Attrs{"starts": ir.IntsAttr(pl.starts), "steps": ir.IntsAttr(pl.steps), "sizes": ir.IntsAttr(pl.counts)}
	if ir.Shape(pl.counts).Equal(pl.out) {
		return im.emit(n, ir.Slice, []string{name}, attrs, pl.out, identity(len(pl.out)))
	}
	tmp := im.fresh(n.Name + "/slice")
	if err := im.add(n.Name, ir.Slice, []string{name}, tmp, attrs); err != nil {
		return nil, err
	}
	return im.emit(n, ir.Reshape, []string{tmp}, ir.Attrs{"shape": ir.IntsAttr(pl.out)}, pl.out, identity(len(pl.out)))
}

func (im *importer) slice(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 3, 3); err != nil {
		return nil, err
	}
	bc, err := constInput(n, in, 1, "begin")
	if err != nil {
		return nil, err
	}
	sc, err := constInput(n, in, 2, "size")
	if err != nil {
		return nil, err
	}
	b, err := bc.ints()
	if err != nil {
		return nil, err
	}
	s, err := sc.ints()
	if err != nil {
		return nil, err
	}
	shape := in[0].tfShape()
	if len(b) != len(shape) || len(s) != len(shape) {
		return nil, fmt.Errorf("begin %v and size %v for rank %d", b, s, len(shape))
	}
	end := make([]int, len(b))
	var endMask int64
	for i := range b {
		if b[i] < 0 || b[i] > shape[i] {
			return nil, fmt.Errorf("begin %v out of range for %v", b, shape)
		}
		if s[i] == -1 {
			endMask |= 1 << i
		} else if s[i] < 0 || b[i]+s[i] > shape[i] {
			return nil, fmt.Errorf("size %v out of range for %v at %v", s, shape, b)
		}
		end[i] = b[i] + s[i]
	}
	if in[0].c == nil {
		pl, err := planStridedSlice(shape, b, end, ones(len(b)), 0, endMask, 0, 0, 0)
		if err != nil {
			return nil, err
		}
		return im.sliceRuntime(n, in[0], pl)
	}
	c, err := stridedSlice(in[0].c, b, end, ones(len(b)), 0, endMask, 0, 0, 0)
	if err != nil {
		return nil, err
	}
	return &value{c: c, key: n.Name}, nil
}

func ones(k int) []int {
	s := make([]int, k)
	for i := range s {
		s[i] = 1
	}
	return s
}

func (im *importer) fill(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 2); err != nil {
		return nil, err
	}
	dc, err := constInput(n, in, 0, "dims")
	if err != nil {
		return nil, err
	}
	vc, err := constInput(n, in, 1, "value")
	if err != nil {
		return nil, err
	}
	dims, err := dc.ints()
	if err != nil {
		return nil, err
	}
	v, ok := vc.scalar()
	if !ok {
		return nil, errors.New("value must be a scalar")
	}
	shape := ir.Shape(dims)
	for _, d := range shape {
		if d < 0 {
			return nil, fmt.Errorf("negative dims %v", dims)
		}
	}
	if _, err := numElements(toInt64s(dims)); err != nil {
		return nil, err
	}
	if err := checkLimit(shape, im.limit); err != nil {
		return nil, err
	}
	c := newConst(vc.dtype, shape)
	for i := range c.v {
		c.v[i] = v
	}
	return &value{c: c, key: n.Name}, nil
}

func toInt64s(s []int) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

func (im *importer) rangeOp(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 3, 3); err != nil {
		return nil, err
	}
	var v [3]float64
	for i, what := range []string{"start", "limit", "delta"} {
		c, err := constInput(n, in, i, what)
		if err != nil {
			return nil, err
		}
		x, ok := c.scalar()
		if !ok {
			return nil, fmt.Errorf("%s must be a scalar", what)
		}
		v[i] = x
	}
	if v[2] == 0 || math.IsNaN(v[0]+v[1]+v[2]) {
		return nil, errors.New("range delta is zero or NaN")
	}
	cnt := math.Ceil((v[1] - v[0]) / v[2])
	if cnt < 0 {
		cnt = 0
	}
	if cnt > float64(im.limit) {
		return nil, fmt.Errorf("range of %v elements", cnt)
	}
	c := newConst(in[0].c.dtype, ir.Shape{int(cnt)})
	for i := range c.v {
		c.v[i] = v[0] + float64(i)*v[2]
	}
	return &value{c: c, key: n.Name}, nil
}

func contains(s []int, x int) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// switchOp resolves a Switch whose predicate is known at import time (Keras' learning-phase
// conds, dropout in tf.cond): output pred routes the data, the other output is dead, and so is
// every node that reads it (except Merge).
func (im *importer) switchOp(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 2, 2); err != nil {
		return nil, err
	}
	pc, err := constInput(n, in, 1, "predicate")
	if err != nil {
		return nil, err
	}
	p, ok := pc.scalar()
	if !ok {
		return nil, errors.New("predicate must be a scalar")
	}
	live, dead := 0, 1 // output 0 is the false branch
	if p != 0 {
		live, dead = 1, 0
	}
	im.vals[tensorKey(n.Name, live)] = in[0]
	im.vals[tensorKey(n.Name, dead)] = deadValue
	return nil, nil
}

// merge forwards its first live input (output 0) and its index (output 1).
func (im *importer) merge(n *NodeDef, in []*value) (*value, error) {
	for i, v := range in {
		if v.dead {
			continue
		}
		idx := newConst(DTInt32, ir.Shape{})
		idx.v[0] = float64(i)
		im.vals[tensorKey(n.Name, 1)] = &value{c: idx, key: tensorKey(n.Name, 1)}
		return v, nil
	}
	im.dead[n.Name] = true
	return nil, nil
}

// poolV2 imports MaxPoolV2, whose ksize and strides are (constant) inputs rather than attributes.
func (im *importer) poolV2(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 3, 3); err != nil {
		return nil, err
	}
	m := &NodeDef{Name: n.Name, Op: "MaxPool", Inputs: n.Inputs[:1], Attr: map[string]*AttrValue{}}
	for k, v := range n.Attr {
		m.Attr[k] = v
	}
	for i, what := range []string{"ksize", "strides"} {
		c, err := constInput(n, in, i+1, what)
		if err != nil {
			return nil, err
		}
		v, err := c.ints()
		if err != nil {
			return nil, err
		}
		l := &ListValue{I: make([]int64, len(v))}
		for j, x := range v {
			l.I[j] = int64(x)
		}
		m.Attr[what] = &AttrValue{Kind: AttrList, List: l}
	}
	return im.pool(m, in[:1])
}

// gatherV2 imports GatherV2 of a runtime tensor (params) by constant indices along a constant
// axis (batch_dims 0) as HLIL's Gather, in the TF layout: out = params[..., indices, ...].
func (im *importer) gatherV2(n *NodeDef, in []*value) (*value, error) {
	if err := arity(in, 3, 3); err != nil {
		return nil, err
	}
	x := in[0]
	if x.c != nil {
		return nil, fmt.Errorf("%w: GatherV2 of a constant (only runtime params are imported; constant gathers are not folded)", ErrUnsupported)
	}
	if err := floatRuntime(x); err != nil {
		return nil, err
	}
	ic, err := constInput(n, in, 1, "indices")
	if err != nil {
		return nil, err
	}
	ac, err := constInput(n, in, 2, "axis")
	if err != nil {
		return nil, err
	}
	bd, err := n.int("batch_dims", 0)
	if err != nil {
		return nil, err
	}
	if bd != 0 {
		return nil, fmt.Errorf("%w: GatherV2 with batch_dims %d (only 0)", ErrUnsupported, bd)
	}
	idx, err := ic.ints()
	if err != nil {
		return nil, err
	}
	av, err := ac.ints()
	if err != nil || len(av) != 1 {
		return nil, fmt.Errorf("axis: want one integer (%v)", err)
	}
	shape := x.tfShape()
	axis := av[0]
	if axis < 0 {
		axis += len(shape)
	}
	if axis < 0 || axis >= len(shape) {
		return nil, fmt.Errorf("axis %d out of range for rank %d", av[0], len(shape))
	}
	for k, v := range idx {
		if v < -shape[axis] || v >= shape[axis] {
			return nil, fmt.Errorf("index %d out of range for axis %d of size %d", v, axis, shape[axis])
		}
		if v < 0 {
			idx[k] = v + shape[axis]
		}
	}
	name, err := im.hl(x, identity(x.rank()))
	if err != nil {
		return nil, err
	}
	out := append(append(shape[:axis].Clone(), ic.shape...), shape[axis+1:]...)
	return im.emit(n, ir.Gather, []string{name}, ir.Attrs{"axis": ir.IntAttr(axis), "indices": ir.IntsAttr(idx),
		"indices_shape": ir.IntsAttr(ic.shape)}, out, identity(len(out)))
}
