package onnx

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/cryptflow-go/cryptflow/ir"
)

// This file holds one importer per ONNX operator. Each one reads the attributes of the opset the
// model imports, fills in every canonical HLIL attribute, and either folds the node (when its
// value is known at import time) or emits HLIL nodes.

func ones(k int) []int {
	s := make([]int, k)
	for i := range s {
		s[i] = 1
	}
	return s
}

// window resolves the strides, pads and dilations of a Conv or pool node over the given spatial
// extents, turning auto_pad into explicit pads.
func (n *Node) window(spatial ir.Shape, kernel []int) (strides, pads, dilations []int, err error) {
	k := len(spatial)
	if len(kernel) != k {
		return nil, nil, nil, fmt.Errorf("kernel_shape %v does not fit %d spatial dimensions", kernel, k)
	}
	r := attrReader{n: n}
	strides = r.ints("strides", ones(k))
	dilations = r.ints("dilations", ones(k))
	pads = r.ints("pads", make([]int, 2*k))
	if r.err != nil {
		return nil, nil, nil, r.err
	}
	if len(strides) != k || len(dilations) != k || len(pads) != 2*k {
		return nil, nil, nil, fmt.Errorf("strides %v, dilations %v or pads %v do not fit %d spatial dimensions", strides, dilations, pads, k)
	}
	for i := 0; i < k; i++ {
		if strides[i] < 1 || dilations[i] < 1 || kernel[i] < 1 {
			return nil, nil, nil, fmt.Errorf("kernel_shape %v, strides %v and dilations %v must be positive", kernel, strides, dilations)
		}
	}
	autoPad, err := n.stringAttr("auto_pad", "NOTSET")
	if err != nil {
		return nil, nil, nil, err
	}
	if autoPad == "NOTSET" || autoPad == "" {
		return strides, pads, dilations, nil
	}
	for _, p := range pads {
		if p != 0 {
			return nil, nil, nil, fmt.Errorf("auto_pad %s together with explicit pads %v", autoPad, pads)
		}
	}
	pads = make([]int, 2*k)
	switch autoPad {
	case "VALID":
	case "SAME_UPPER", "SAME_LOWER":
		for i := 0; i < k; i++ {
			in, s := spatial[i], strides[i]
			out := (in + s - 1) / s
			total := max(0, (out-1)*s+(kernel[i]-1)*dilations[i]+1-in)
			small, big := total/2, total-total/2
			if autoPad == "SAME_UPPER" {
				pads[i], pads[k+i] = small, big
			} else {
				pads[i], pads[k+i] = big, small
			}
		}
	default:
		return nil, nil, nil, fmt.Errorf("unknown auto_pad %q", autoPad)
	}
	return strides, pads, dilations, nil
}

// windowAttrs imports the window of a Conv or pool node with input shape xs: kernel_shape (from
// defKernel when the attribute is absent; nil makes it required), strides, pads and dilations.
func (n *Node) windowAttrs(xs ir.Shape, defKernel []int) (ir.Attrs, error) {
	kernel, ok, err := n.intsAttr("kernel_shape")
	if err != nil {
		return nil, err
	}
	if !ok {
		if defKernel == nil {
			return nil, errors.New("missing attribute kernel_shape")
		}
		kernel = defKernel
	}
	strides, pads, dilations, err := n.window(xs[2:], kernel)
	if err != nil {
		return nil, err
	}
	return ir.Attrs{
		"kernel_shape": ir.IntsAttr(kernel),
		"strides":      ir.IntsAttr(strides),
		"pads":         ir.IntsAttr(pads),
		"dilations":    ir.IntsAttr(dilations),
	}, nil
}

func (im *importer) conv(n *Node) error {
	out, xs, err := im.arityOutputShape(n, 2, 3)
	if err != nil {
		return err
	}
	ws, err := im.shape(n.Inputs[1])
	if err != nil {
		return err
	}
	if len(xs) < 3 || len(ws) != len(xs) {
		return fmt.Errorf("input %v and weight %v must have equal rank >= 3", xs, ws)
	}
	attrs, err := n.windowAttrs(xs, []int(ws[2:].Clone()))
	if err != nil {
		return err
	}
	group, err := n.intAttr("group", 1)
	if err != nil {
		return err
	}
	attrs["group"] = ir.IntAttr(int(group))
	return im.emit(n, ir.Conv, twoPlusOptional(n), out, attrs)
}

func (im *importer) pool(n *Node) error {
	if err := arity(n, 1, 1); err != nil {
		return err
	}
	if n.OpType == "MaxPool" {
		if err := im.extraOutputsUnused(n, "Indices"); err != nil {
			return err
		}
	}
	out, xs, err := im.outputShape(n)
	if err != nil {
		return err
	}
	if len(xs) < 3 {
		return fmt.Errorf("input rank %d < 3", len(xs))
	}
	attrs, err := n.windowAttrs(xs, nil)
	if err != nil {
		return err
	}
	r := attrReader{n: n}
	attrs["ceil_mode"] = r.flag("ceil_mode", 0)
	op := ir.MaxPool
	if n.OpType == "AveragePool" {
		op = ir.AveragePool
		attrs["count_include_pad"] = r.flag("count_include_pad", 0)
	}
	if r.err != nil {
		return r.err
	}
	return im.emit(n, op, n.Inputs[:1], out, attrs)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// twoPlusOptional returns the two required inputs of n and its optional third (Conv's bias,
// Gemm's C) when that is given.
func twoPlusOptional(n *Node) []string {
	if input(n, 2) != "" {
		return n.Inputs[:3]
	}
	return n.Inputs[:2]
}

func (im *importer) gemm(n *Node) error {
	out, err := arityOutput(n, 2, 3)
	if err != nil {
		return err
	}
	r := attrReader{n: n}
	attrs := ir.Attrs{}
	attrs["alpha"] = ir.FloatAttr(r.float("alpha", 1))
	attrs["beta"] = ir.FloatAttr(r.float("beta", 1))
	attrs["transA"] = r.flag("transA", 0)
	attrs["transB"] = r.flag("transB", 0)
	if r.err != nil {
		return r.err
	}
	return im.emit(n, ir.Gemm, twoPlusOptional(n), out, attrs)
}

func (im *importer) matmul(n *Node) error {
	out, err := arityOutput(n, 2, 2)
	if err != nil {
		return err
	}
	return im.emit(n, ir.MatMul, n.Inputs[:2], out, ir.Attrs{})
}

// binary imports Add, Sub, Mul and Div, including the opset < 7 form whose broadcast and axis
// attributes align B with A starting at axis.
func (im *importer) binary(n *Node) error {
	out, err := arityOutput(n, 2, 2)
	if err != nil {
		return err
	}
	a, b := n.Inputs[0], n.Inputs[1]
	if im.opset < 7 {
		if b, err = im.legacyBroadcast(n, a, b); err != nil {
			return err
		}
	}
	ca, cb := im.constOf(a), im.constOf(b)
	if ca != nil && cb != nil {
		c, err := foldBinary(n.OpType, ca, cb, im.limit)
		if err != nil {
			return err
		}
		return im.setConst(out, c)
	}
	return im.emit(n, ir.Op(n.OpType), []string{a, b}, out, ir.Attrs{})
}

// legacyBroadcast rewrites B of an opset < 7 binary op with broadcast=1 and an explicit axis so
// that numpy broadcasting gives the same result; it returns the name to use for B.
func (im *importer) legacyBroadcast(n *Node, a, b string) (string, error) {
	bc, err := n.intAttr("broadcast", 0)
	if err != nil || bc == 0 {
		return b, err
	}
	as, err := im.shape(a)
	if err != nil {
		return "", err
	}
	bs, err := im.shape(b)
	if err != nil {
		return "", err
	}
	axis, err := n.intAttr("axis", int64(len(as)-len(bs)))
	if err != nil {
		return "", err
	}
	if axis < 0 {
		axis += int64(len(as))
	}
	trail := len(as) - int(axis) - len(bs)
	if axis < 0 || trail < 0 {
		return "", fmt.Errorf("legacy broadcast of %v onto %v at axis %d", bs, as, axis)
	}
	if trail == 0 {
		return b, nil
	}
	shape := append(bs.Clone(), ones(trail)...)
	name := im.fresh(b + "/broadcast")
	if c := im.constOf(b); c != nil {
		return name, im.setConst(name, c.reshaped(shape))
	}
	bn, err := im.data(b)
	if err != nil {
		return "", err
	}
	return name, im.addNode(&ir.Node{Name: n.Name, Op: ir.Reshape, Inputs: []string{bn}, Outputs: []string{name},
		Attrs: ir.Attrs{"shape": ir.IntsAttr(shape)}})
}

// variadicOutput checks that a Sum or Concat node has at least one input and no omitted ones,
// and returns its output name.
func variadicOutput(n *Node) (string, error) {
	out, err := arityOutput(n, 1, len(n.Inputs))
	if err != nil {
		return "", err
	}
	for _, in := range n.Inputs {
		if in == "" {
			return "", errors.New("empty input")
		}
	}
	return out, nil
}

func (im *importer) sum(n *Node) error {
	out, err := variadicOutput(n)
	if err != nil {
		return err
	}
	if im.allConst(n) {
		acc := im.constOf(n.Inputs[0])
		for _, in := range n.Inputs[1:] {
			if acc, err = foldBinary("Add", acc, im.constOf(in), im.limit); err != nil {
				return err
			}
		}
		if len(n.Inputs) == 1 {
			acc = acc.reshaped(acc.shape)
		}
		return im.setConst(out, acc)
	}
	return im.emit(n, ir.Sum, n.Inputs, out, ir.Attrs{})
}

// activationFold returns the elementwise function of an activation that is folded when its input
// is a float constant, or nil for an op that is never folded.
func activationFold(op string) func(float32) float32 {
	switch op {
	case "Relu":
		return func(v float32) float32 { return max(v, 0) }
	case "Sigmoid":
		return func(v float32) float32 { return float32(1 / (1 + math.Exp(-float64(v)))) }
	case "Tanh":
		return func(v float32) float32 { return float32(math.Tanh(float64(v))) }
	case "Exp":
		return func(v float32) float32 { return float32(math.Exp(float64(v))) }
	case "Erf":
		return func(v float32) float32 { return float32(math.Erf(float64(v))) }
	}
	return nil
}

// unary imports Relu, Sigmoid, Tanh, Exp, Erf, GlobalAveragePool and GlobalMaxPool.
func (im *importer) unary(n *Node) error {
	out, err := arityOutput(n, 1, 1)
	if err != nil {
		return err
	}
	if f, c := activationFold(n.OpType), im.constOf(n.Inputs[0]); f != nil && c != nil && !c.isInt() {
		r := c.reshaped(c.shape)
		for i, v := range r.f {
			r.f[i] = f(v)
		}
		return im.setConst(out, r)
	}
	return im.emit(n, ir.Op(n.OpType), n.Inputs[:1], out, ir.Attrs{})
}

func (im *importer) leakyRelu(n *Node) error {
	out, err := arityOutput(n, 1, 1)
	if err != nil {
		return err
	}
	alpha, err := n.floatAttr("alpha", 0.01)
	if err != nil {
		return err
	}
	return im.emit(n, ir.LeakyRelu, n.Inputs[:1], out, ir.Attrs{"alpha": ir.FloatAttr(alpha)})
}

// scalarInput returns the value of an optional constant scalar input (a Clip bound, Pad's
// constant_value, Dropout's training_mode); ok is false when the input is omitted.
func (im *importer) scalarInput(n *Node, i int, what string) (v float32, ok bool, err error) {
	name := input(n, i)
	if name == "" {
		return 0, false, nil
	}
	c := im.constOf(name)
	if c == nil {
		return 0, false, fmt.Errorf("%w: %s %q is a runtime value, not a constant", ErrUnsupported, what, name)
	}
	if v, err = c.scalarFloat(); err != nil {
		return 0, false, fmt.Errorf("%s %q: %w", what, name, err)
	}
	return v, true, nil
}

func (im *importer) clip(n *Node) error {
	lo, hi := float32(math.Inf(-1)), float32(math.Inf(1))
	if im.opset < 11 {
		if err := arity(n, 1, 1); err != nil {
			return err
		}
		r := attrReader{n: n}
		lo, hi = r.float("min", lo), r.float("max", hi)
		if r.err != nil {
			return r.err
		}
	} else {
		if err := arity(n, 1, 3); err != nil {
			return err
		}
		for i, dst := range []*float32{&lo, &hi} {
			v, ok, err := im.scalarInput(n, i+1, "bound")
			if err != nil {
				return err
			}
			if ok {
				*dst = v
			}
		}
	}
	out, err := output(n)
	if err != nil {
		return err
	}
	return im.emit(n, ir.Clip, n.Inputs[:1], out, ir.Attrs{"min": ir.FloatAttr(lo), "max": ir.FloatAttr(hi)})
}

func (im *importer) batchNorm(n *Node) error {
	out, err := arityOutput(n, 5, 5)
	if err != nil {
		return err
	}
	r := attrReader{n: n}
	eps := r.float("epsilon", 1e-5)
	spatial, training := int64(1), int64(0)
	if im.opset < 9 {
		spatial = r.int("spatial", 1)
	}
	if im.opset >= 14 {
		training = r.int("training_mode", 0)
	}
	switch {
	case r.err != nil:
		return r.err
	case spatial == 0:
		return fmt.Errorf("%w: spatial=0 (per-activation) batch normalization", ErrUnsupported)
	case training != 0:
		return fmt.Errorf("%w: training_mode=1 (normalising with batch statistics)", ErrUnsupported)
	}
	if err := im.extraOutputsUnused(n, "training statistics"); err != nil {
		return err
	}
	return im.emit(n, ir.BatchNormalization, n.Inputs[:5], out, ir.Attrs{"epsilon": ir.FloatAttr(eps)})
}

func (im *importer) lrn(n *Node) error {
	out, err := arityOutput(n, 1, 1)
	if err != nil {
		return err
	}
	if n.Attr("size") == nil {
		return errors.New("missing attribute size")
	}
	r := attrReader{n: n}
	attrs := ir.Attrs{}
	attrs["size"] = ir.IntAttr(int(r.int("size", 0)))
	attrs["alpha"] = ir.FloatAttr(r.float("alpha", 1e-4))
	attrs["beta"] = ir.FloatAttr(r.float("beta", 0.75))
	attrs["bias"] = ir.FloatAttr(r.float("bias", 1))
	if r.err != nil {
		return r.err
	}
	return im.emit(n, ir.LRN, n.Inputs[:1], out, attrs)
}

func (im *importer) flatten(n *Node) error {
	out, xs, err := im.arityOutputShape(n, 1, 1)
	if err != nil {
		return err
	}
	axis, err := n.intAttr("axis", 1)
	if err != nil {
		return err
	}
	r := int64(len(xs))
	if axis < -r || axis > r {
		return fmt.Errorf("axis %d out of range for rank %d", axis, r)
	}
	if axis < 0 {
		axis += r
	}
	if c := im.constOf(n.Inputs[0]); c != nil {
		return im.setConst(out, c.reshaped(ir.Shape{xs[:axis].Size(), xs[axis:].Size()}))
	}
	return im.emit(n, ir.Flatten, n.Inputs[:1], out, ir.Attrs{"axis": ir.IntAttr(int(axis))})
}

// intsInput returns the value of a constant integer input (shapes, axes, pads).
func (im *importer) intsInput(n *Node, i int, what string) ([]int, error) {
	name := input(n, i)
	c := im.constOf(name)
	if c == nil {
		return nil, fmt.Errorf("%w: %s %q is a runtime value, not a constant (dynamic shapes are not supported)", ErrUnsupported, what, name)
	}
	v, err := c.ints()
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", what, name, err)
	}
	return v, nil
}

// reshapeTarget resolves the 0 and -1 entries of a Reshape shape against the input shape.
func reshapeTarget(xs ir.Shape, target []int, allowZero bool) (ir.Shape, error) {
	out := make(ir.Shape, len(target))
	infer := -1
	for i, d := range target {
		switch {
		case d == -1:
			if infer >= 0 {
				return nil, fmt.Errorf("shape %v has more than one -1", target)
			}
			infer = i
		case d == 0 && !allowZero:
			if i >= len(xs) {
				return nil, fmt.Errorf("shape %v copies dimension %d of the %d-D input", target, i, len(xs))
			}
			out[i] = xs[i]
		case d < 0:
			return nil, fmt.Errorf("shape %v has a negative dimension", target)
		default:
			out[i] = d
		}
	}
	if infer >= 0 {
		out[infer] = 1
		if err := checkSize(out, MaxElements); err != nil {
			return nil, err
		}
		rest := out.Size()
		if rest == 0 || xs.Size()%rest != 0 {
			return nil, fmt.Errorf("cannot infer the -1 in shape %v for input %v", target, xs)
		}
		out[infer] = xs.Size() / rest
	}
	if err := checkSize(out, MaxElements); err != nil {
		return nil, err
	}
	if out.Size() != xs.Size() {
		return nil, fmt.Errorf("cannot reshape %v (%d elements) to %v", xs, xs.Size(), out)
	}
	return out, nil
}

func (im *importer) reshape(n *Node) error {
	var target []int
	var err error
	if im.opset < 5 {
		if err := arity(n, 1, 1); err != nil {
			return err
		}
		if target, err = n.requiredInts("shape"); err != nil {
			return err
		}
	} else {
		if err := arity(n, 2, 2); err != nil {
			return err
		}
		if target, err = im.intsInput(n, 1, "shape"); err != nil {
			return err
		}
	}
	allowZero, err := n.intAttr("allowzero", 0)
	if err != nil {
		return err
	}
	out, xs, err := im.outputShape(n)
	if err != nil {
		return err
	}
	shape, err := reshapeTarget(xs, target, allowZero != 0)
	if err != nil {
		return err
	}
	if c := im.constOf(n.Inputs[0]); c != nil {
		return im.setConst(out, c.reshaped(shape))
	}
	return im.emit(n, ir.Reshape, n.Inputs[:1], out, ir.Attrs{"shape": ir.IntsAttr(shape)})
}

func (im *importer) transpose(n *Node) error {
	out, xs, err := im.arityOutputShape(n, 1, 1)
	if err != nil {
		return err
	}
	perm, ok, err := n.intsAttr("perm")
	if err != nil {
		return err
	}
	if !ok {
		perm = make([]int, len(xs))
		for i := range perm {
			perm[i] = len(xs) - 1 - i
		}
	}
	if len(perm) != len(xs) {
		return fmt.Errorf("perm %v for rank %d", perm, len(xs))
	}
	seen := make([]bool, len(xs))
	for _, p := range perm {
		if p < 0 || p >= len(xs) || seen[p] {
			return fmt.Errorf("perm %v is not a permutation", perm)
		}
		seen[p] = true
	}
	if c := im.constOf(n.Inputs[0]); c != nil {
		shape := make(ir.Shape, len(perm))
		for i, p := range perm {
			shape[i] = xs[p]
		}
		r := &constant{dtype: c.dtype, shape: shape}
		if c.isInt() {
			r.i = transposeData(c.i, xs, perm)
		} else {
			r.f = transposeData(c.f, xs, perm)
		}
		return im.setConst(out, r)
	}
	return im.emit(n, ir.Transpose, n.Inputs[:1], out, ir.Attrs{"perm": ir.IntsAttr(perm)})
}

func (im *importer) concat(n *Node) error {
	out, err := variadicOutput(n)
	if err != nil {
		return err
	}
	def := int64(math.MinInt64)
	if im.opset < 4 {
		def = 1
	}
	axis, err := n.intAttr("axis", def)
	if err != nil {
		return err
	}
	if axis == math.MinInt64 {
		return errors.New("missing attribute axis")
	}
	shapes := make([]ir.Shape, len(n.Inputs))
	for i, in := range n.Inputs {
		if shapes[i], err = im.shape(in); err != nil {
			return err
		}
	}
	ax, err := normAxis64(axis, len(shapes[0]))
	if err != nil {
		return err
	}
	if !im.allConst(n) {
		return im.emit(n, ir.Concat, n.Inputs, out, ir.Attrs{"axis": ir.IntAttr(ax)})
	}
	first := im.constOf(n.Inputs[0])
	res := shapes[0].Clone()
	for i, s := range shapes[1:] {
		c := im.constOf(n.Inputs[i+1])
		if c.isInt() != first.isInt() {
			return fmt.Errorf("inputs of types %s and %s", first.dtype, c.dtype)
		}
		if len(s) != len(res) {
			return fmt.Errorf("inputs of ranks %d and %d", len(res), len(s))
		}
		for d := range s {
			if d != ax && s[d] != res[d] {
				return fmt.Errorf("input shapes %v and %v differ off axis %d", shapes[0], s, ax)
			}
		}
		res[ax] += s[ax]
	}
	if err := checkSize(res, im.limit); err != nil {
		return err
	}
	r := &constant{dtype: first.dtype, shape: res}
	if first.isInt() {
		parts := make([][]int64, len(n.Inputs))
		for i, in := range n.Inputs {
			parts[i] = im.constOf(in).i
		}
		r.i = concatData(parts, shapes, ax, res)
	} else {
		parts := make([][]float32, len(n.Inputs))
		for i, in := range n.Inputs {
			parts[i] = im.constOf(in).f
		}
		r.f = concatData(parts, shapes, ax, res)
	}
	return im.setConst(out, r)
}

func (im *importer) pad(n *Node) error {
	mode, err := n.stringAttr("mode", "constant")
	if err != nil {
		return err
	}
	var pads []int
	var value float32
	switch {
	case im.opset < 11:
		if err := arity(n, 1, 1); err != nil {
			return err
		}
		name := "pads"
		if im.opset < 2 {
			name = "paddings"
		}
		if pads, err = n.requiredInts(name); err != nil {
			return err
		}
		if value, err = n.floatAttr("value", 0); err != nil {
			return err
		}
	default:
		if err := arity(n, 2, 4); err != nil {
			return err
		}
		if pads, err = im.intsInput(n, 1, "pads"); err != nil {
			return err
		}
		if value, _, err = im.scalarInput(n, 2, "constant_value"); err != nil {
			return err
		}
	}
	out, xs, err := im.outputShape(n)
	if err != nil {
		return err
	}
	r := len(xs)
	if input(n, 3) != "" {
		axes, err := im.intsInput(n, 3, "axes")
		if err != nil {
			return err
		}
		if len(pads) != 2*len(axes) {
			return fmt.Errorf("pads %v for axes %v", pads, axes)
		}
		full := make([]int, 2*r)
		for i, ax := range axes {
			a, err := normAxis(ax, r)
			if err != nil {
				return err
			}
			full[a], full[r+a] = pads[i], pads[len(axes)+i]
		}
		pads = full
	}
	if len(pads) != 2*r {
		return fmt.Errorf("pads %v has %d entries for rank %d", pads, len(pads), r)
	}
	return im.emit(n, ir.Pad, n.Inputs[:1], out, ir.Attrs{
		"mode": ir.StringAttr(mode), "pads": ir.IntsAttr(pads), "value": ir.FloatAttr(value),
	})
}

// axesArg returns the axes of Squeeze/Unsqueeze: an attribute before opset 13, an input after.
func (im *importer) axesArg(n *Node) ([]int, bool, error) {
	if im.opset < 13 {
		if err := arity(n, 1, 1); err != nil {
			return nil, false, err
		}
		return n.intsAttr("axes")
	}
	if err := arity(n, 1, 2); err != nil {
		return nil, false, err
	}
	if input(n, 1) == "" {
		return nil, false, nil
	}
	axes, err := im.intsInput(n, 1, "axes")
	return axes, err == nil, err
}

// sortAxes normalises axes against rank, sorts them and rejects duplicates.
func sortAxes(axes []int, rank int) ([]int, error) {
	out := make([]int, len(axes))
	for i, a := range axes {
		v, err := normAxis(a, rank)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	sort.Ints(out)
	for i := 1; i < len(out); i++ {
		if out[i] == out[i-1] {
			return nil, fmt.Errorf("axes %v repeat an axis", axes)
		}
	}
	return out, nil
}

func (im *importer) squeeze(n *Node) error {
	axes, ok, err := im.axesArg(n)
	if err != nil {
		return err
	}
	out, xs, err := im.outputShape(n)
	if err != nil {
		return err
	}
	if !ok {
		axes = []int{}
		for i, d := range xs {
			if d == 1 {
				axes = append(axes, i)
			}
		}
	}
	if axes, err = sortAxes(axes, len(xs)); err != nil {
		return err
	}
	if c := im.constOf(n.Inputs[0]); c != nil {
		shape := ir.Shape{}
		j := 0
		for i, d := range xs {
			if j < len(axes) && axes[j] == i {
				j++
				if d != 1 {
					return fmt.Errorf("cannot squeeze axis %d of size %d", i, d)
				}
				continue
			}
			shape = append(shape, d)
		}
		return im.setConst(out, c.reshaped(shape))
	}
	return im.emit(n, ir.Squeeze, n.Inputs[:1], out, ir.Attrs{"axes": ir.IntsAttr(axes)})
}

func (im *importer) unsqueeze(n *Node) error {
	axes, ok, err := im.axesArg(n)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("missing axes")
	}
	out, xs, err := im.outputShape(n)
	if err != nil {
		return err
	}
	rank := len(xs) + len(axes)
	if axes, err = sortAxes(axes, rank); err != nil {
		return err
	}
	if c := im.constOf(n.Inputs[0]); c != nil {
		shape := make(ir.Shape, 0, rank)
		j, k := 0, 0
		for i := 0; i < rank; i++ {
			if j < len(axes) && axes[j] == i {
				shape = append(shape, 1)
				j++
			} else {
				shape = append(shape, xs[k])
				k++
			}
		}
		return im.setConst(out, c.reshaped(shape))
	}
	return im.emit(n, ir.Unsqueeze, n.Inputs[:1], out, ir.Attrs{"axes": ir.IntsAttr(axes)})
}

func (im *importer) identity(n *Node) error {
	out, err := arityOutput(n, 1, 1)
	if err != nil {
		return err
	}
	if c := im.constOf(n.Inputs[0]); c != nil {
		return im.setConst(out, c.reshaped(c.shape))
	}
	return im.emit(n, ir.Identity, n.Inputs[:1], out, ir.Attrs{})
}

// dropout imports inference-mode Dropout as Identity. Its mask output and training mode are
// unsupported.
func (im *importer) dropout(n *Node) error {
	if err := arity(n, 1, 3); err != nil {
		return err
	}
	if v, _, err := im.scalarInput(n, 2, "training_mode"); err != nil {
		return err
	} else if v != 0 {
		return fmt.Errorf("%w: training_mode is true (random dropout)", ErrUnsupported)
	}
	if err := im.extraOutputsUnused(n, "dropout mask"); err != nil {
		return err
	}
	return im.identity(&Node{Name: n.Name, OpType: n.OpType, Inputs: n.Inputs[:1], Outputs: n.Outputs[:1]})
}

func (im *importer) softmax(n *Node) error { return im.softmaxOp(n, ir.Softmax) }

func (im *importer) logSoftmax(n *Node) error { return im.softmaxOp(n, ir.LogSoftmax) }

// softmaxOp imports Softmax or LogSoftmax (op), whose axis rules are the same.
func (im *importer) softmaxOp(n *Node, op ir.Op) error {
	out, xs, err := im.arityOutputShape(n, 1, 1)
	if err != nil {
		return err
	}
	r := len(xs)
	if r == 0 {
		return fmt.Errorf("%s of a scalar", op)
	}
	def := int64(-1)
	if im.opset < 13 {
		def = 1
	}
	a, err := n.intAttr("axis", def)
	if err != nil {
		return err
	}
	if im.opset < 13 && a == int64(r) && r > 0 {
		return fmt.Errorf("axis %d out of range for rank %d", a, r)
	}
	axis, err := normAxis64(a, r)
	if err != nil {
		return err
	}
	if im.opset >= 13 || xs[axis+1:].Size() == 1 {
		// Single-axis softmax (opset 13), or a coercion whose trailing block is one axis long.
		return im.emit(n, op, n.Inputs[:1], out, ir.Attrs{"axis": ir.IntAttr(axis)})
	}
	// Opset < 13: softmax over the flattened block xs[axis:], then back to the input shape.
	x, err := im.data(n.Inputs[0])
	if err != nil {
		return err
	}
	flat := im.fresh(out + "/flatten")
	soft := im.fresh(out + "/softmax2d")
	nodes := []*ir.Node{
		{Name: n.Name, Op: ir.Flatten, Inputs: []string{x}, Outputs: []string{flat}, Attrs: ir.Attrs{"axis": ir.IntAttr(axis)}},
		{Name: n.Name, Op: op, Inputs: []string{flat}, Outputs: []string{soft}, Attrs: ir.Attrs{"axis": ir.IntAttr(1)}},
		{Name: n.Name, Op: ir.Reshape, Inputs: []string{soft}, Outputs: []string{out}, Attrs: ir.Attrs{"shape": ir.IntsAttr(xs)}},
	}
	for _, nd := range nodes {
		if err := im.addNode(nd); err != nil {
			return err
		}
	}
	return nil
}

func (im *importer) argmax(n *Node) error {
	out, xs, err := im.arityOutputShape(n, 1, 1)
	if err != nil {
		return err
	}
	a, err := n.intAttr("axis", 0)
	if err != nil {
		return err
	}
	axis, err := normAxis64(a, len(xs))
	if err != nil {
		return err
	}
	r := attrReader{n: n}
	attrs := ir.Attrs{"axis": ir.IntAttr(axis)}
	attrs["keepdims"] = r.flag("keepdims", 1)
	attrs["select_last_index"] = r.flag("select_last_index", 0)
	if r.err != nil {
		return r.err
	}
	return im.emit(n, ir.ArgMax, n.Inputs[:1], out, attrs)
}

func (im *importer) constantNode(n *Node) error {
	out, err := arityOutput(n, 0, 0)
	if err != nil {
		return err
	}
	if len(n.Attrs) != 1 {
		return fmt.Errorf("has %d attributes, want exactly one value", len(n.Attrs))
	}
	a := n.Attrs[0]
	var c *constant
	switch {
	case a.Name == "value" && a.Type == AttrTensor:
		if c, err = constFromTensor(a.T); err != nil {
			return err
		}
	case a.Name == "value_float" && a.Type == AttrFloat:
		c = &constant{dtype: Float, shape: ir.Shape{}, f: []float32{a.F}}
	case a.Name == "value_floats" && a.Type == AttrFloats:
		c = &constant{dtype: Float, shape: ir.Shape{len(a.Floats)}, f: append([]float32{}, a.Floats...)}
	case a.Name == "value_int" && a.Type == AttrInt:
		c = &constant{dtype: Int64, shape: ir.Shape{}, i: []int64{a.I}}
	case a.Name == "value_ints" && a.Type == AttrInts:
		c = &constant{dtype: Int64, shape: ir.Shape{len(a.Ints)}, i: append([]int64{}, a.Ints...)}
	case a.Name == "sparse_value" || a.Name == "value_string" || a.Name == "value_strings":
		return fmt.Errorf("%w: Constant with %s", ErrUnsupported, a.Name)
	default:
		return fmt.Errorf("attribute %q of type %s is not a Constant value", a.Name, a.Type)
	}
	return im.setConst(out, c)
}

func (im *importer) constantOfShape(n *Node) error {
	out, err := arityOutput(n, 1, 1)
	if err != nil {
		return err
	}
	dims, err := im.intsInput(n, 0, "shape")
	if err != nil {
		return err
	}
	shape := ir.Shape(dims)
	if err := checkSize(shape, im.limit); err != nil {
		return err
	}
	val := &constant{dtype: Float, shape: ir.Shape{}, f: []float32{0}}
	if a, err := n.attrOfType("value", AttrTensor); err != nil {
		return err
	} else if a != nil {
		if val, err = constFromTensor(a.T); err != nil {
			return err
		}
		if val.size() != 1 {
			return fmt.Errorf("value has %d elements, want 1", val.size())
		}
	}
	c := &constant{dtype: val.dtype, shape: shape.Clone()}
	if val.isInt() {
		c.i = filled(shape.Size(), val.i[0])
	} else {
		c.f = filled(shape.Size(), val.f[0])
	}
	return im.setConst(out, c)
}

// filled returns n copies of v.
func filled[T any](n int, v T) []T {
	s := make([]T, n)
	for k := range s {
		s[k] = v
	}
	return s
}

func (im *importer) shapeNode(n *Node) error {
	out, xs, err := im.arityOutputShape(n, 1, 1)
	if err != nil {
		return err
	}
	r := int64(len(xs))
	start, err := n.intAttr("start", 0)
	if err != nil {
		return err
	}
	end, err := n.intAttr("end", r)
	if err != nil {
		return err
	}
	if start < 0 {
		start += r
	}
	if end < 0 {
		end += r
	}
	start, end = min(max(start, 0), r), min(max(end, 0), r)
	c := &constant{dtype: Int64, shape: ir.Shape{0}, i: []int64{}}
	for k := start; k < end; k++ {
		c.i = append(c.i, int64(xs[k]))
	}
	c.shape[0] = len(c.i)
	return im.setConst(out, c)
}

func (im *importer) gather(n *Node) error {
	out, err := arityOutput(n, 2, 2)
	if err != nil {
		return err
	}
	ic := im.constOf(n.Inputs[1])
	if ic == nil {
		return fmt.Errorf("%w: Gather with runtime indices %q (the indices must be constants)", ErrUnsupported, n.Inputs[1])
	}
	idx, err := ic.ints()
	if err != nil {
		return fmt.Errorf("indices: %w", err)
	}
	a, err := n.intAttr("axis", 0)
	if err != nil {
		return err
	}
	data, ds, err := im.constOrShape(n.Inputs[0])
	if err != nil {
		return err
	}
	axis, err := normAxis64(a, len(ds))
	if err != nil {
		return err
	}
	for k, v := range idx {
		if v < -ds[axis] || v >= ds[axis] {
			return fmt.Errorf("index %d out of range for axis %d of size %d", v, axis, ds[axis])
		}
		if v < 0 {
			idx[k] = v + ds[axis]
		}
	}
	shape := append(append(ds[:axis].Clone(), ic.shape...), ds[axis+1:]...)
	if err := checkSize(shape, im.limit); err != nil {
		return err
	}
	if data == nil {
		// A runtime tensor: HLIL's Gather (local data movement once lowered).
		return im.emit(n, ir.Gather, n.Inputs[:1], out, ir.Attrs{"axis": ir.IntAttr(axis),
			"indices": ir.IntsAttr(idx), "indices_shape": ir.IntsAttr(ic.shape)})
	}
	r := &constant{dtype: data.dtype, shape: shape}
	if data.isInt() {
		r.i = gatherData(data.i, ds, axis, idx, shape)
	} else {
		r.f = gatherData(data.f, ds, axis, idx, shape)
	}
	return im.setConst(out, r)
}

// castNames maps the opset-1 string form of Cast's "to" attribute.
var castNames = map[string]DataType{
	"FLOAT": Float, "UINT8": Uint8, "INT8": Int8, "UINT16": Uint16, "INT16": Int16, "INT32": Int32,
	"INT64": Int64, "BOOL": Bool, "FLOAT16": Float16, "DOUBLE": Double, "UINT32": Uint32, "UINT64": Uint64,
}

func (im *importer) cast(n *Node) error {
	out, err := arityOutput(n, 1, 1)
	if err != nil {
		return err
	}
	a := n.Attr("to")
	if a == nil {
		return errors.New("missing attribute to")
	}
	var to DataType
	switch a.Type {
	case AttrInt:
		to = DataType(a.I)
	case AttrString:
		var ok bool
		if to, ok = castNames[a.S]; !ok {
			return fmt.Errorf("%w: Cast to %q", ErrUnsupported, a.S)
		}
	default:
		return fmt.Errorf("attribute to has type %s", a.Type)
	}
	if c := im.constOf(n.Inputs[0]); c != nil {
		r, err := castConst(c, to)
		if err != nil {
			return err
		}
		return im.setConst(out, r)
	}
	if to != Float {
		return fmt.Errorf("%w: Cast of runtime value %q to %s", ErrUnsupported, n.Inputs[0], to)
	}
	return im.emit(n, ir.Identity, n.Inputs[:1], out, ir.Attrs{})
}

// slice folds Slice of a constant (a step of shape computations) and imports Slice of a runtime
// tensor as HLIL's Slice (starts, steps and sizes normalised per axis).
func (im *importer) slice(n *Node) error {
	out, err := output(n)
	if err != nil {
		return err
	}
	var starts, ends, axes, steps []int
	if im.opset < 10 {
		if err := arity(n, 1, 1); err != nil {
			return err
		}
		if starts, err = n.requiredInts("starts"); err != nil {
			return err
		}
		if ends, err = n.requiredInts("ends"); err != nil {
			return err
		}
		if axes, _, err = n.intsAttr("axes"); err != nil {
			return err
		}
	} else {
		if err := arity(n, 3, 5); err != nil {
			return err
		}
		// starts and ends are required (arity checked them); axes and steps may be omitted.
		for i, arg := range []struct {
			name string
			dst  *[]int
		}{{"starts", &starts}, {"ends", &ends}, {"axes", &axes}, {"steps", &steps}} {
			if input(n, i+1) == "" {
				continue
			}
			if *arg.dst, err = im.intsInput(n, i+1, arg.name); err != nil {
				return err
			}
		}
	}
	data, ds, err := im.constOrShape(n.Inputs[0])
	if err != nil {
		return err
	}
	if axes == nil {
		axes = make([]int, len(starts))
		for i := range axes {
			axes[i] = i
		}
	}
	if steps == nil {
		steps = ones(len(starts))
	}
	if len(ends) != len(starts) || len(axes) != len(starts) || len(steps) != len(starts) {
		return fmt.Errorf("starts %v, ends %v, axes %v and steps %v differ in length", starts, ends, axes, steps)
	}
	start := make([]int, len(ds))
	step := ones(len(ds))
	shape := ds.Clone()
	seen := make([]bool, len(ds))
	for i, a := range axes {
		ax, err := normAxis(a, len(ds))
		if err != nil {
			return err
		}
		if seen[ax] {
			return fmt.Errorf("axes %v repeat an axis", axes)
		}
		seen[ax] = true
		dim, s, e, st := ds[ax], starts[i], ends[i], steps[i]
		if st == 0 {
			return errors.New("slice step 0")
		}
		if s < 0 {
			s += dim
		}
		if e < 0 {
			e += dim
		}
		var cnt int
		if st > 0 {
			s, e = min(max(s, 0), dim), min(max(e, 0), dim)
			cnt = max(0, (e-s+st-1)/st)
		} else {
			s, e = min(max(s, 0), dim-1), min(max(e, -1), dim-1)
			cnt = max(0, (s-e-st-1)/(-st))
		}
		start[ax], step[ax], shape[ax] = s, st, cnt
	}
	if data == nil {
		return im.emit(n, ir.Slice, n.Inputs[:1], out, ir.Attrs{"starts": ir.IntsAttr(start), "steps": ir.IntsAttr(step),
			"sizes": ir.IntsAttr(shape)})
	}
	r := &constant{dtype: data.dtype, shape: shape}
	if data.isInt() {
		r.i = sliceData(data.i, ds, start, step, shape)
	} else {
		r.f = sliceData(data.f, ds, start, step, shape)
	}
	return im.setConst(out, r)
}

// constOrShape returns the constant named name (nil for a runtime value) and its shape.
func (im *importer) constOrShape(name string) (*constant, ir.Shape, error) {
	if c := im.constOf(name); c != nil {
		return c, c.shape, nil
	}
	s, err := im.shape(name)
	return nil, s, err
}
