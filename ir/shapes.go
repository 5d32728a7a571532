package ir

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// InferShapes checks every node of g in order and records the type and static shape of each node
// output in g.Values (graph inputs must carry their shapes already). The first error names the
// offending node.
func (g *Graph) InferShapes() error {
	if g.Values == nil {
		g.Values = map[string]*Value{}
	}
	for i := range g.Inputs {
		in := g.Inputs[i]
		if _, dup := g.Consts[in.Name]; dup {
			return fmt.Errorf("graph input %q is also a constant", in.Name)
		}
		for _, d := range in.Shape {
			if d <= 0 {
				return fmt.Errorf("graph input %q has non-static shape %v", in.Name, in.Shape)
			}
		}
		v := in
		v.Shape = in.Shape.Clone()
		g.Values[in.Name] = &v
	}
	for _, n := range g.Nodes {
		if err := InferNode(g, n); err != nil {
			return err
		}
	}
	for _, o := range g.Outputs {
		if _, ok := g.ShapeOf(o); !ok {
			return fmt.Errorf("graph output %q is never produced", o)
		}
	}
	return nil
}

// InferNode infers the outputs of one node from the shapes of its inputs (in g.Values or
// g.Consts), checks its attributes, and records the outputs in g.Values.
func InferNode(g *Graph, n *Node) error {
	in := make([]Shape, len(n.Inputs))
	for i, name := range n.Inputs {
		s, ok := g.ShapeOf(name)
		if !ok {
			return fmt.Errorf("%s: input %q is not defined before use", n, name)
		}
		if v, ok := g.Values[name]; ok && v.DType != Float32 {
			return fmt.Errorf("%s: input %q has type %s, want f32", n, name, v.DType)
		}
		in[i] = s
	}
	out, dt, err := inferOp(n, in)
	if err != nil {
		return fmt.Errorf("%s: %w", n, err)
	}
	if len(n.Outputs) != 1 {
		return fmt.Errorf("%s: has %d outputs, want 1", n, len(n.Outputs))
	}
	name := n.Outputs[0]
	if _, ok := g.Consts[name]; ok {
		return fmt.Errorf("%s: output %q redefines a constant", n, name)
	}
	for _, d := range out {
		if d < 0 {
			return fmt.Errorf("%s: negative output dimension in %v", n, out)
		}
	}
	g.Values[name] = &Value{Name: name, DType: dt, Shape: out}
	return nil
}

func arity(in []Shape, lo, hi int) error {
	if len(in) < lo || len(in) > hi {
		if lo == hi {
			return fmt.Errorf("has %d inputs, want %d", len(in), lo)
		}
		return fmt.Errorf("has %d inputs, want %d to %d", len(in), lo, hi)
	}
	return nil
}

// opArity returns how many inputs an operator takes; ok is false for an unknown operator.
func opArity(op Op) (lo, hi int, ok bool) {
	switch op {
	case Relu, Sigmoid, Tanh, Exp, Identity, LeakyRelu, Clip, LRN, GlobalAveragePool, GlobalMaxPool, MaxPool, AveragePool,
		Flatten, Reshape, Transpose, Pad, Squeeze, Unsqueeze, Softmax, LogSoftmax, ArgMax, ReduceSum, ReduceMean, ReduceMax, Erf, Slice, Gather:
		return 1, 1, true
	case Add, Sub, Mul, Div, MatMul:
		return 2, 2, true
	case Gemm, Conv:
		return 2, 3, true
	case BatchNormalization:
		return 5, 5, true
	case LayerNormalization:
		return 2, 3, true
	case Requant:
		return 1, 2, true
	case Sum, Concat:
		return 1, math.MaxInt, true
	}
	return 0, 0, false
}

// checkAttrs checks that the named attributes are present with the type that get (an Attrs
// method such as Attrs.Float) reads.
func checkAttrs[T any](a Attrs, get func(Attrs, string) (T, error), names ...string) error {
	for _, k := range names {
		if _, err := get(a, k); err != nil {
			return err
		}
	}
	return nil
}

// axisAttr reads the int attribute "axis" and checks it against rank.
func axisAttr(a Attrs, rank int) (int, error) {
	axis, err := a.Int("axis")
	if err != nil {
		return 0, err
	}
	if axis < 0 || axis >= rank {
		return 0, fmt.Errorf("axis %d out of range for rank %d", axis, rank)
	}
	return axis, nil
}

// inferOp checks the input count of n, then its operator-specific attributes and input shapes.
func inferOp(n *Node, in []Shape) (Shape, DType, error) {
	fewest, most, ok := opArity(n.Op)
	if !ok {
		return nil, 0, fmt.Errorf("unknown operator %q", n.Op)
	}
	if err := arity(in, fewest, most); err != nil {
		return nil, 0, err
	}
	a := n.Attrs
	switch n.Op {
	case Relu, Sigmoid, Tanh, Exp, Erf, Identity:
	case Requant:
		return inferRequant(a, in)
	case ReduceSum, ReduceMean, ReduceMax:
		return inferReduce(a, in[0])
	case LayerNormalization:
		axis, err := axisAttr(a, len(in[0]))
		if err != nil {
			return nil, 0, err
		}
		if err := checkAttrs(a, Attrs.Float, "epsilon"); err != nil {
			return nil, 0, err
		}
		norm := in[0][axis:]
		for i, p := range in[1:] {
			if b, err := Broadcast(norm, p); err != nil || !b.Equal(norm) {
				return nil, 0, fmt.Errorf("parameter %d of shape %v does not broadcast to the normalised shape %v", i+1, p, norm)
			}
		}
	case LeakyRelu:
		if err := checkAttrs(a, Attrs.Float, "alpha"); err != nil {
			return nil, 0, err
		}
	case Clip:
		lo, err := a.Float("min")
		if err != nil {
			return nil, 0, err
		}
		hi, err := a.Float("max")
		if err != nil {
			return nil, 0, err
		}
		if math.IsNaN(float64(lo)) || math.IsNaN(float64(hi)) {
			return nil, 0, fmt.Errorf("clip bounds are NaN")
		}
	case LRN:
		size, err := a.Int("size")
		if err != nil {
			return nil, 0, err
		}
		if size < 1 {
			return nil, 0, fmt.Errorf("size %d < 1", size)
		}
		if err := checkAttrs(a, Attrs.Float, "alpha", "beta", "bias"); err != nil {
			return nil, 0, err
		}
		if len(in[0]) < 3 {
			return nil, 0, fmt.Errorf("input rank %d < 3", len(in[0]))
		}
	case Add, Sub, Mul, Div, Sum:
		s, err := Broadcast(in...)
		return s, Float32, err
	case MatMul:
		s, err := MatMulShape(in[0], in[1])
		return s, Float32, err
	case Gemm:
		return inferGemm(a, in)
	case Conv:
		return inferConv(a, in)
	case MaxPool, AveragePool:
		return inferPool(n.Op, a, in)
	case GlobalAveragePool, GlobalMaxPool:
		if len(in[0]) < 3 {
			return nil, 0, fmt.Errorf("input rank %d < 3", len(in[0]))
		}
		out := in[0].Clone()
		for i := 2; i < len(out); i++ {
			out[i] = 1
		}
		return out, Float32, nil
	case BatchNormalization:
		if len(in[0]) < 2 {
			return nil, 0, fmt.Errorf("input rank %d < 2", len(in[0]))
		}
		c := in[0][1]
		for i := 1; i < 5; i++ {
			if in[i].Size() != c || len(in[i]) != 1 {
				return nil, 0, fmt.Errorf("parameter %d has shape %v, want [%d]", i, in[i], c)
			}
		}
		if err := checkAttrs(a, Attrs.Float, "epsilon"); err != nil {
			return nil, 0, err
		}
	case Flatten:
		axis, err := a.Int("axis")
		if err != nil {
			return nil, 0, err
		}
		if axis < 0 || axis > len(in[0]) {
			return nil, 0, fmt.Errorf("axis %d out of range for rank %d", axis, len(in[0]))
		}
		return Shape{in[0][:axis].Size(), in[0][axis:].Size()}, Float32, nil
	case Reshape:
		shape, err := a.Ints("shape")
		if err != nil {
			return nil, 0, err
		}
		out := Shape(shape)
		for _, d := range out {
			if d < 0 {
				return nil, 0, fmt.Errorf("shape %v has a negative dimension", out)
			}
		}
		if out.Size() != in[0].Size() {
			return nil, 0, fmt.Errorf("cannot reshape %v (%d elements) to %v (%d elements)", in[0], in[0].Size(), out, out.Size())
		}
		return out.Clone(), Float32, nil
	case Transpose:
		perm, err := a.Ints("perm")
		if err != nil {
			return nil, 0, err
		}
		if err := CheckPerm(perm, len(in[0])); err != nil {
			return nil, 0, err
		}
		out := make(Shape, len(perm))
		for i, p := range perm {
			out[i] = in[0][p]
		}
		return out, Float32, nil
	case Concat:
		return inferConcat(a, in)
	case Pad:
		return inferPad(a, in)
	case Squeeze:
		axes, err := a.Ints("axes")
		if err != nil {
			return nil, 0, err
		}
		if err := checkAxes(axes, len(in[0])); err != nil {
			return nil, 0, err
		}
		drop := map[int]bool{}
		for _, ax := range axes {
			if in[0][ax] != 1 {
				return nil, 0, fmt.Errorf("cannot squeeze axis %d of size %d", ax, in[0][ax])
			}
			drop[ax] = true
		}
		out := Shape{}
		for i, d := range in[0] {
			if !drop[i] {
				out = append(out, d)
			}
		}
		return out, Float32, nil
	case Unsqueeze:
		axes, err := a.Ints("axes")
		if err != nil {
			return nil, 0, err
		}
		rank := len(in[0]) + len(axes)
		if err := checkAxes(axes, rank); err != nil {
			return nil, 0, err
		}
		ins := map[int]bool{}
		for _, ax := range axes {
			ins[ax] = true
		}
		out := make(Shape, 0, rank)
		j := 0
		for i := 0; i < rank; i++ {
			if ins[i] {
				out = append(out, 1)
			} else {
				out = append(out, in[0][j])
				j++
			}
		}
		return out, Float32, nil
	case Softmax, LogSoftmax:
		if _, err := axisAttr(a, len(in[0])); err != nil {
			return nil, 0, err
		}
	case ArgMax:
		return inferArgMax(a, in[0])
	case Slice, Gather:
		_, out, err := Selection(n.Op, a, in[0])
		return out, Float32, err
	}
	// The remaining operators are elementwise: the output has the shape of the input.
	return in[0].Clone(), Float32, nil
}

// inferReduce is the shape of a ReduceSum/ReduceMean/ReduceMax.
func inferReduce(a Attrs, x Shape) (Shape, DType, error) {
	axes, err := a.Ints("axes")
	if err != nil {
		return nil, 0, err
	}
	keep, err := a.Int("keepdims")
	if err != nil {
		return nil, 0, err
	}
	if len(axes) == 0 {
		return nil, 0, fmt.Errorf("no axes to reduce")
	}
	if err := checkAxes(axes, len(x)); err != nil {
		return nil, 0, err
	}
	return ReducedShape(x, axes, keep != 0), Float32, nil
}

// ReducedShape is the shape of a reduction of x over axes (valid, sorted): the reduced axes
// become 1 (keep) or are removed.
func ReducedShape(x Shape, axes []int, keep bool) Shape {
	out := Shape{}
	for i, d := range x {
		switch {
		case !slices.Contains(axes, i):
			out = append(out, d)
		case keep:
			out = append(out, 1)
		}
	}
	return out
}

func inferArgMax(a Attrs, x Shape) (Shape, DType, error) {
	axis, err := a.Int("axis")
	if err != nil {
		return nil, 0, err
	}
	keep, err := a.Int("keepdims")
	if err != nil {
		return nil, 0, err
	}
	if err := checkAttrs(a, Attrs.Int, "select_last_index"); err != nil {
		return nil, 0, err
	}
	if axis < 0 || axis >= len(x) {
		return nil, 0, fmt.Errorf("axis %d out of range for rank %d", axis, len(x))
	}
	if x[axis] == 0 {
		return nil, 0, fmt.Errorf("argmax over an empty axis")
	}
	out := x.Clone()
	if keep != 0 {
		out[axis] = 1
	} else {
		out = append(out[:axis], out[axis+1:]...)
	}
	return out, Int64, nil
}

// CheckPerm reports whether perm is a permutation of 0..rank-1.
func CheckPerm(perm []int, rank int) error {
	if len(perm) != rank {
		return fmt.Errorf("perm %v has %d entries for rank %d", perm, len(perm), rank)
	}
	seen := make([]bool, rank)
	for _, p := range perm {
		if p < 0 || p >= rank || seen[p] {
			return fmt.Errorf("perm %v is not a permutation of 0..%d", perm, rank-1)
		}
		seen[p] = true
	}
	return nil
}

func checkAxes(axes []int, rank int) error {
	for i, ax := range axes {
		if ax < 0 || ax >= rank {
			return fmt.Errorf("axis %d out of range for rank %d", ax, rank)
		}
		if i > 0 && axes[i-1] >= ax {
			return fmt.Errorf("axes %v are not sorted and distinct", axes)
		}
	}
	return nil
}

// Broadcast returns the multidirectional (numpy) broadcast of the given shapes.
func Broadcast(shapes ...Shape) (Shape, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make(Shape, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			switch o := out[off+i]; {
			case o == d || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("shapes %v are not broadcast-compatible", shapes)
			}
		}
	}
	return out, nil
}

// MatMulShape returns the result shape of numpy matmul(a, b).
func MatMulShape(a, b Shape) (Shape, error) {
	if len(a) == 0 || len(b) == 0 {
		return nil, fmt.Errorf("matmul of a scalar")
	}
	a2, b2 := a, b
	if len(a) == 1 {
		a2 = Shape{1, a[0]}
	}
	if len(b) == 1 {
		b2 = Shape{b[0], 1}
	}
	m, k := a2[len(a2)-2], a2[len(a2)-1]
	k2, n := b2[len(b2)-2], b2[len(b2)-1]
	if k != k2 {
		return nil, fmt.Errorf("matmul inner dimensions differ: %v x %v", a, b)
	}
	batch, err := Broadcast(a2[:len(a2)-2], b2[:len(b2)-2])
	if err != nil {
		return nil, fmt.Errorf("matmul batch dimensions: %w", err)
	}
	out := append(batch, m, n)
	if len(a) == 1 {
		out = append(out[:len(out)-2], out[len(out)-1])
	}
	if len(b) == 1 {
		out = out[:len(out)-1]
	}
	return out, nil
}

func inferGemm(a Attrs, in []Shape) (Shape, DType, error) {
	if err := checkAttrs(a, Attrs.Float, "alpha", "beta"); err != nil {
		return nil, 0, err
	}
	ta, err := a.Int("transA")
	if err != nil {
		return nil, 0, err
	}
	tb, err := a.Int("transB")
	if err != nil {
		return nil, 0, err
	}
	if len(in[0]) != 2 || len(in[1]) != 2 {
		return nil, 0, fmt.Errorf("gemm operands must be 2-D, got %v and %v", in[0], in[1])
	}
	m, k := in[0][0], in[0][1]
	if ta != 0 {
		m, k = k, m
	}
	k2, n := in[1][0], in[1][1]
	if tb != 0 {
		k2, n = n, k2
	}
	if k != k2 {
		return nil, 0, fmt.Errorf("gemm inner dimensions differ: %d vs %d", k, k2)
	}
	out := Shape{m, n}
	if len(in) == 3 {
		if b, err := Broadcast(in[2], out); err != nil || !b.Equal(out) {
			return nil, 0, fmt.Errorf("gemm C of shape %v does not broadcast to %v", in[2], out)
		}
	}
	return out, Float32, nil
}

// Window holds the spatial attributes shared by Conv and the pools.
type Window struct {
	Kernel    []int
	Strides   []int
	Pads      []int // begins then ends
	Dilations []int
	CeilMode  bool
}

// WindowAttrs reads and checks the window attributes of a Conv or pool node for k spatial
// dimensions.
func WindowAttrs(a Attrs, k int) (Window, error) {
	var w Window
	var err error
	if w.Kernel, err = a.Ints("kernel_shape"); err != nil {
		return w, err
	}
	if w.Strides, err = a.Ints("strides"); err != nil {
		return w, err
	}
	if w.Pads, err = a.Ints("pads"); err != nil {
		return w, err
	}
	if w.Dilations, err = a.Ints("dilations"); err != nil {
		return w, err
	}
	if len(w.Kernel) != k || len(w.Strides) != k || len(w.Dilations) != k || len(w.Pads) != 2*k {
		return w, fmt.Errorf("window attributes kernel_shape=%v strides=%v dilations=%v pads=%v do not fit %d spatial dimensions",
			w.Kernel, w.Strides, w.Dilations, w.Pads, k)
	}
	for i := 0; i < k; i++ {
		if w.Kernel[i] < 1 || w.Strides[i] < 1 || w.Dilations[i] < 1 {
			return w, fmt.Errorf("kernel_shape %v, strides %v and dilations %v must be positive", w.Kernel, w.Strides, w.Dilations)
		}
		if w.Pads[i] < 0 || w.Pads[k+i] < 0 {
			return w, fmt.Errorf("pads %v must be non-negative", w.Pads)
		}
	}
	if _, ok := a["ceil_mode"]; ok {
		c, err := a.Int("ceil_mode")
		if err != nil {
			return w, err
		}
		w.CeilMode = c != 0
	}
	return w, nil
}

// OutSize returns the output extent along spatial dimension i for an input extent of in.
func (w Window) OutSize(i, in int) (int, error) {
	k := len(w.Kernel)
	span := w.Dilations[i]*(w.Kernel[i]-1) + 1
	total := in + w.Pads[i] + w.Pads[k+i]
	if total < span {
		return 0, fmt.Errorf("window of extent %d is larger than the padded input %d", span, total)
	}
	out := (total-span)/w.Strides[i] + 1
	if w.CeilMode && (total-span)%w.Strides[i] != 0 {
		out++
		// The last window must start inside the input or the leading padding.
		if (out-1)*w.Strides[i] >= in+w.Pads[i] {
			out--
		}
	}
	return out, nil
}

// outShape returns the output shape of a window over input x: the batch of x, then channels,
// then the OutSize of each spatial dimension.
func (w Window) outShape(x Shape, channels int) (Shape, error) {
	out := Shape{x[0], channels}
	for i := range len(w.Kernel) {
		o, err := w.OutSize(i, x[2+i])
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func inferConv(a Attrs, in []Shape) (Shape, DType, error) {
	x, wt := in[0], in[1]
	if len(x) < 3 || len(wt) != len(x) {
		return nil, 0, fmt.Errorf("conv input %v and weight %v must have equal rank >= 3", x, wt)
	}
	k := len(x) - 2
	w, err := WindowAttrs(a, k)
	if err != nil {
		return nil, 0, err
	}
	group, err := a.Int("group")
	if err != nil {
		return nil, 0, err
	}
	if group < 1 || x[1]%group != 0 || wt[0]%group != 0 {
		return nil, 0, fmt.Errorf("group %d does not divide input channels %d and output channels %d", group, x[1], wt[0])
	}
	if wt[1] != x[1]/group {
		return nil, 0, fmt.Errorf("weight %v has %d input channels per group, want %d", wt, wt[1], x[1]/group)
	}
	for i := 0; i < k; i++ {
		if wt[2+i] != w.Kernel[i] {
			return nil, 0, fmt.Errorf("kernel_shape %v does not match weight shape %v", w.Kernel, wt)
		}
	}
	if len(in) == 3 && (len(in[2]) != 1 || in[2][0] != wt[0]) {
		return nil, 0, fmt.Errorf("bias shape %v, want [%d]", in[2], wt[0])
	}
	out, err := w.outShape(x, wt[0])
	return out, Float32, err
}

func inferPool(op Op, a Attrs, in []Shape) (Shape, DType, error) {
	x := in[0]
	if len(x) < 3 {
		return nil, 0, fmt.Errorf("pool input rank %d < 3", len(x))
	}
	k := len(x) - 2
	w, err := WindowAttrs(a, k)
	if err != nil {
		return nil, 0, err
	}
	flags := []string{"ceil_mode"}
	if op == AveragePool {
		flags = append(flags, "count_include_pad")
	}
	if err := checkAttrs(a, Attrs.Int, flags...); err != nil {
		return nil, 0, err
	}
	for i := 0; i < k; i++ {
		if w.Pads[i] >= w.Kernel[i]*w.Dilations[i] || w.Pads[k+i] >= w.Kernel[i]*w.Dilations[i] {
			// A window made only of padding has no defined maximum or average.
			return nil, 0, fmt.Errorf("pads %v must be smaller than the kernel %v", w.Pads, w.Kernel)
		}
	}
	out, err := w.outShape(x, x[1])
	return out, Float32, err
}

func inferConcat(a Attrs, in []Shape) (Shape, DType, error) {
	r := len(in[0])
	axis, err := axisAttr(a, r)
	if err != nil {
		return nil, 0, err
	}
	out := in[0].Clone()
	for _, s := range in[1:] {
		if len(s) != r {
			return nil, 0, fmt.Errorf("inputs have ranks %d and %d", r, len(s))
		}
		for i := range s {
			if i != axis && s[i] != out[i] {
				return nil, 0, fmt.Errorf("input shapes %v and %v differ off axis %d", in[0], s, axis)
			}
		}
		out[axis] += s[axis]
	}
	return out, Float32, nil
}

func inferPad(a Attrs, in []Shape) (Shape, DType, error) {
	mode, err := a.Str("mode")
	if err != nil {
		return nil, 0, err
	}
	switch mode {
	case "constant", "reflect", "edge", "wrap":
	default:
		return nil, 0, fmt.Errorf("unknown pad mode %q", mode)
	}
	if err := checkAttrs(a, Attrs.Float, "value"); err != nil {
		return nil, 0, err
	}
	pads, err := a.Ints("pads")
	if err != nil {
		return nil, 0, err
	}
	r := len(in[0])
	if len(pads) != 2*r {
		return nil, 0, fmt.Errorf("pads %v has %d entries for rank %d", pads, len(pads), r)
	}
	out := make(Shape, r)
	for i := range out {
		out[i] = in[0][i] + pads[i] + pads[r+i]
		if out[i] < 0 {
			return nil, 0, fmt.Errorf("pads %v remove more than the %d elements of axis %d", pads, in[0][i], i)
		}
		if mode == "reflect" && (pads[i] >= in[0][i] || pads[r+i] >= in[0][i]) && (pads[i] > 0 || pads[r+i] > 0) {
			return nil, 0, fmt.Errorf("reflect pads %v must be smaller than axis %d of size %d", pads, i, in[0][i])
		}
		if (mode == "edge" || mode == "wrap") && in[0][i] == 0 && (pads[i] > 0 || pads[r+i] > 0) {
			return nil, 0, fmt.Errorf("%s padding of an empty axis %d", mode, i)
		}
	}
	return out, Float32, nil
}

// Selection returns the per-axis index lists of a Slice or Gather of a tensor of shape x (numpy
// outer indexing: output element i reads x at sel[a][i_a] along every axis a; a nil list is the
// whole axis) and the output shape, after checking the attributes. For a Gather the output shape
// is x.shape[:axis] + indices_shape + x.shape[axis+1:], the selection's own shape (sel along axis)
// reshaped.
func Selection(op Op, a Attrs, x Shape) (sel [][]int, out Shape, err error) {
	sel = make([][]int, len(x))
	switch op {
	case Slice:
		starts, err1 := a.Ints("starts")
		steps, err2 := a.Ints("steps")
		sizes, err3 := a.Ints("sizes")
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, nil, err
		}
		if len(starts) != len(x) || len(steps) != len(x) || len(sizes) != len(x) {
			return nil, nil, fmt.Errorf("slice of rank %d: starts %v, steps %v, sizes %v need one entry per axis", len(x), starts, steps, sizes)
		}
		out = make(Shape, len(x))
		for ax := range x {
			st, step, n := starts[ax], steps[ax], sizes[ax]
			if n < 0 || step == 0 {
				return nil, nil, fmt.Errorf("slice axis %d: size %d, step %d", ax, n, step)
			}
			if n > 0 && (st < 0 || st >= x[ax] || st+(n-1)*step < 0 || st+(n-1)*step >= x[ax]) {
				return nil, nil, fmt.Errorf("slice axis %d of size %d: %d elements from %d by %d leave it", ax, x[ax], n, st, step)
			}
			out[ax] = n
		}
		sel = StridedSelection(starts, steps, sizes)
		for ax := range x {
			if starts[ax] == 0 && steps[ax] == 1 && sizes[ax] == x[ax] {
				sel[ax] = nil // the whole axis
			}
		}
		return sel, out, nil
	case Gather:
		axis, err := axisAttr(a, len(x))
		if err != nil {
			return nil, nil, err
		}
		idx, err1 := a.Ints("indices")
		ishape, err2 := a.Ints("indices_shape")
		if err := errors.Join(err1, err2); err != nil {
			return nil, nil, err
		}
		if Shape(ishape).Size() != len(idx) {
			return nil, nil, fmt.Errorf("gather: %d indices for indices_shape %v", len(idx), ishape)
		}
		for _, v := range idx {
			if v < 0 || v >= x[axis] {
				return nil, nil, fmt.Errorf("gather: index %d out of range for axis %d of size %d", v, axis, x[axis])
			}
		}
		sel[axis] = append([]int{}, idx...)
		out = append(append(x[:axis].Clone(), ishape...), x[axis+1:]...)
		return sel, out, nil
	}
	return nil, nil, fmt.Errorf("%s is not a selection", op)
}

// StridedSelection returns the per-axis index lists of a strided slice: counts[a] elements from
// starts[a] by steps[a] along every axis a.
func StridedSelection(starts, steps, counts []int) [][]int {
	sel := make([][]int, len(counts))
	for a, n := range counts {
		sel[a] = make([]int, n)
		for i := range sel[a] {
			sel[a][i] = starts[a] + i*steps[a]
		}
	}
	return sel
}

// SelectionIndex returns, for every element of x[sel] (numpy outer indexing, nil = the whole
// axis) in row-major order, the position of the element of x (shape x) it reads.
func SelectionIndex(x Shape, sel [][]int) []int {
	dims := make([]int, len(x))
	for a := range x {
		dims[a] = x[a]
		if sel[a] != nil {
			dims[a] = len(sel[a])
		}
	}
	n := Shape(dims).Size()
	out := make([]int, n)
	if n == 0 {
		return out
	}
	strides := make([]int, len(x))
	st := 1
	for a := len(x) - 1; a >= 0; a-- {
		strides[a] = st
		st *= x[a]
	}
	pos := make([]int, len(x))
	for i := range out {
		off := 0
		for a, p := range pos {
			if sel[a] != nil {
				p = sel[a][p]
			}
			off += p * strides[a]
		}
		out[i] = off
		for a := len(pos) - 1; a >= 0; a-- {
			pos[a]++
			if pos[a] < dims[a] {
				break
			}
			pos[a] = 0
		}
	}
	return out
}
