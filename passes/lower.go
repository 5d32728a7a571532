package passes

import (
	"fmt"
	"math"
	"slices"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// lower converts a cleaned HLIL graph (the clean table) to a fixed-point program over Z_{2^Bits} at scale
// Scale. Inputs are encoded at scale s, weights at s, products of a linear layer are at 2s and
// get their bias (encoded at 2s) before an explicit Trunc back to s; the sum of two tensors at
// different scales scales the lower one up; so is a product of two runtime tensors (OpMul, at 2s).
// An operator without a fixed-point lowering (LRN, Div by a runtime tensor, ...) is an error
// naming it.
func lower(g *ir.Graph, opts lowerOptions) (*fixed.Program, error) {
	if opts.Bits < 1 || opts.Bits > 64 {
		return nil, fmt.Errorf("lower: bitwidth %d is not in 1..64", opts.Bits)
	}
	if opts.Scale < 0 || 2*opts.Scale > fixed.MaxScale {
		return nil, fmt.Errorf("lower: scale %d is not in 0..%d", opts.Scale, fixed.MaxScale/2)
	}
	if len(g.Values) == 0 {
		if err := g.InferShapes(); err != nil {
			return nil, fmt.Errorf("lower: %w", err)
		}
	}
	l := &lowerer{g: g, s: opts.Scale, noTrunc: opts.NoTrunc, lnVar: opts.LayerNormVar, p: &fixed.Program{Bits: opts.Bits, Scale: opts.Scale},
		vals: map[string]*fval{}, uses: map[string]int{}}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			l.uses[in]++
		}
	}
	for _, o := range g.Outputs {
		l.uses[o]++
	}
	inParty, outParty := opts.InputParty, opts.OutputParty
	if inParty == 0 && outParty == 0 {
		inParty, outParty = 1, 1
	}
	for i, in := range g.Inputs {
		if in.DType != ir.Float32 {
			return nil, fmt.Errorf("lower: input %q has type %s", in.Name, in.DType)
		}
		t := l.p.AddTensor(in.Name, in.Shape, l.s)
		io := fixed.IO{Name: in.Name, Tensor: t, Party: inParty}
		if q, ok := g.InputQuant[in.Name]; ok && l.s == 0 {
			// The client sends the quantized integers: uint8 or int8 values.
			switch q.Type {
			case "uint8":
				io.Bounded, io.Lo, io.Hi = true, 0, 255
			case "int8":
				io.Bounded, io.Lo, io.Hi = true, -128, 127
			}
		}
		l.p.Inputs = append(l.p.Inputs, io)
		l.emit(&fixed.Instr{Op: fixed.OpInput, Out: t, Index: i, Source: "input " + in.Name})
		l.vals[in.Name] = &fval{id: t}
	}
	for _, n := range g.Nodes {
		l.node = n
		if err := l.lowerNode(n); err != nil {
			return nil, fmt.Errorf("lower %s: %w", n, err)
		}
	}
	l.node = nil
	for i, o := range g.Outputs {
		v, err := l.get(o)
		if err != nil {
			return nil, fmt.Errorf("lower output %q: %w", o, err)
		}
		t, err := l.atScale(v, o)
		if err != nil {
			return nil, fmt.Errorf("lower output %q: %w", o, err)
		}
		l.p.Outputs = append(l.p.Outputs, fixed.IO{Name: o, Tensor: t, Party: outParty})
		l.emit(&fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{t}, Index: i, Source: "output " + o})
	}
	l.p.Compact()
	if err := l.p.Validate(); err != nil {
		return nil, fmt.Errorf("lower: internal error: %w", err)
	}
	return l.p, nil
}

func (l *lowerer) lowerNode(n *ir.Node) error {
	out := n.Outputs[0]
	switch n.Op {
	case ir.Identity:
		v, err := l.get(n.Inputs[0])
		if err != nil {
			return err
		}
		l.vals[out] = v
		return nil
	case ir.Conv:
		return l.conv(n)
	case ir.Gemm:
		return l.gemm(n)
	case ir.MatMul:
		return l.matmul(n)
	case ir.Add, ir.Sub, ir.Sum:
		return l.addSub(n)
	case ir.Mul:
		if !l.isConst(n.Inputs[0]) && !l.isConst(n.Inputs[1]) {
			return l.mulShared(n)
		}
		return l.mulConst(n, false)
	case ir.Div:
		if !l.isConst(n.Inputs[1]) && !l.isConst(n.Inputs[0]) && l.sumOfShiftedExps(n.Inputs[1]) {
			return l.divBySum(n) // lower_expsum.go
		}
		return l.mulConst(n, true)
	case ir.Relu:
		x, err := l.input(n, 0)
		if err != nil {
			return err
		}
		id, err := l.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}}, out)
		l.set(n, id)
		return err
	case ir.Sigmoid, ir.Tanh, ir.Exp:
		return l.math(n)
	case ir.Clip:
		return l.clip(n)
	case ir.LeakyRelu:
		return l.leakyRelu(n)
	case ir.MaxPool, ir.GlobalMaxPool, ir.AveragePool, ir.GlobalAveragePool:
		return l.pool(n)
	case ir.BatchNormalization:
		return l.batchNorm(n)
	case ir.Flatten, ir.Reshape, ir.Squeeze, ir.Unsqueeze:
		return l.reshape(n)
	case ir.Transpose:
		x, err := l.get(n.Inputs[0])
		if err != nil {
			return err
		}
		perm, err := n.Attrs.Ints("perm")
		if err != nil {
			return err
		}
		id, err := l.op(&fixed.Instr{Op: fixed.OpTranspose, In: []int{x.id}, Perm: perm}, out)
		l.vals[out] = &fval{id: id, index: x.index}
		return err
	case ir.Slice, ir.Gather:
		return l.selection(n)
	case ir.Concat:
		return l.concat(n)
	case ir.Pad:
		return l.pad(n)
	case ir.ArgMax:
		return l.argmax(n)
	case ir.Softmax, ir.LogSoftmax:
		return l.softmax(n)
	case ir.ReduceSum, ir.ReduceMean, ir.ReduceMax:
		return l.reduce(n)
	case ir.LayerNormalization:
		return l.layerNorm(n)
	case ir.Erf:
		return l.erf(n)
	case ir.Requant:
		return l.requant(n)
	}
	return noLowering("%s is supported by the float interpreter only", n.Op)
}

func (l *lowerer) conv(n *ir.Node) error {
	if !l.isConst(n.Inputs[1]) {
		return noLowering("Conv with a runtime weight tensor (the weights must be constants)")
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	xs := l.p.Tensors[x].Shape
	if len(xs) != 3 && len(xs) != 4 {
		return noLowering("Conv over %d spatial dimensions (1 or 2 are supported)", len(xs)-2)
	}
	win, err := ir.WindowAttrs(n.Attrs, len(xs)-2)
	if err != nil {
		return err
	}
	group, err := n.Attrs.Int("group")
	if err != nil {
		return err
	}
	w, err := l.weight(n.Inputs[1], l.constOf(n.Inputs[1]), l.s)
	if err != nil {
		return err
	}
	id, err := l.op(&fixed.Instr{Op: fixed.OpConv, In: []int{x}, Weight: w, Group: group, Win: win}, n.Outputs[0])
	if err != nil {
		return err
	}
	if len(n.Inputs) == 3 {
		if !l.isConst(n.Inputs[2]) {
			return noLowering("Conv with a runtime bias")
		}
		b := l.constOf(n.Inputs[2])
		shape := make(ir.Shape, len(xs)-1)
		shape[0] = b.Shape.Size()
		for i := 1; i < len(shape); i++ {
			shape[i] = 1
		}
		if id, err = l.addConst(id, &ir.Tensor{Shape: shape, Data: b.Data}, n.Inputs[2], n.Outputs[0]); err != nil {
			return err
		}
	}
	l.set(n, id)
	return nil
}

// transposed returns a constant's 2-D transpose.
func transposed2(t *ir.Tensor) *ir.Tensor {
	r, c := t.Shape[0], t.Shape[1]
	out := &ir.Tensor{Shape: ir.Shape{c, r}, Data: make([]float32, len(t.Data))}
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out.Data[j*r+i] = t.Data[i*c+j]
		}
	}
	return out
}

func scaled(t *ir.Tensor, a float32) *ir.Tensor {
	if a == 1 {
		return t
	}
	out := &ir.Tensor{Shape: t.Shape.Clone(), Data: slices.Clone(t.Data)}
	for i := range out.Data {
		out.Data[i] *= a
	}
	return out
}

// transposeRT emits a 2-D transpose of a runtime tensor (a reshape when one side is 1).
func (l *lowerer) transposeRT(id int, name string) (int, error) {
	s := l.p.Tensors[id].Shape
	if s[0] == 1 || s[1] == 1 {
		out := l.p.AddTensor(name, ir.Shape{s[1], s[0]}, l.p.Tensors[id].Scale)
		return l.emit(&fixed.Instr{Op: fixed.OpReshape, In: []int{id}, Out: out}), nil
	}
	return l.op(&fixed.Instr{Op: fixed.OpTranspose, In: []int{id}, Perm: []int{1, 0}}, name)
}

// linear emits Y[M,N] = op(A) op(B) with exactly one constant operand, then adds bias (a constant
// broadcast to [M,N]) at the product scale. The VM's matmul multiplies a private weight matrix on
// the left, so x·W is computed as (W^T x^T)^T with local transposes.
func (l *lowerer) linear(n *ir.Node, aName, bName string, transA, transB bool, alpha float32, bias *ir.Tensor, biasName string) error {
	out := n.Outputs[0]
	aConst, bConst := l.isConst(aName), l.isConst(bName)
	switch {
	case aConst && bConst:
		return fmt.Errorf("both operands are constants (constant folding should have removed this node)")
	case !aConst && !bConst:
		return noLowering("%s of two runtime tensors (one operand must be a constant weight)", n.Op)
	}
	var res int
	if bConst {
		// Y = op(A) W  =>  Y^T = W^T op(A)^T.
		w := l.constOf(bName)
		if !transB {
			w = transposed2(w) // W^T[N,K]
		}
		wi, err := l.weight(bName, scaled(w, alpha), l.s)
		if err != nil {
			return err
		}
		a, err := l.input(n, slices.Index(n.Inputs, aName))
		if err != nil {
			return err
		}
		if len(l.p.Tensors[a].Shape) != 2 {
			return noLowering("%s with a runtime operand of shape %v (must be 2-D)", n.Op, l.p.Tensors[a].Shape)
		}
		xt := a // op(A)^T = A^T unless transA
		if !transA {
			if xt, err = l.transposeRT(a, out+"_T"); err != nil {
				return err
			}
		}
		yt, err := l.op(&fixed.Instr{Op: fixed.OpMatMul, In: []int{xt}, Weight: wi}, out+"_T")
		if err != nil {
			return err
		}
		if res, err = l.transposeRT(yt, out); err != nil {
			return err
		}
	} else {
		w := l.constOf(aName)
		if transA {
			w = transposed2(w)
		}
		wi, err := l.weight(aName, scaled(w, alpha), l.s)
		if err != nil {
			return err
		}
		b, err := l.input(n, slices.Index(n.Inputs, bName))
		if err != nil {
			return err
		}
		if len(l.p.Tensors[b].Shape) != 2 {
			return noLowering("%s with a runtime operand of shape %v (must be 2-D)", n.Op, l.p.Tensors[b].Shape)
		}
		if transB {
			if b, err = l.transposeRT(b, out+"_T"); err != nil {
				return err
			}
		}
		if res, err = l.op(&fixed.Instr{Op: fixed.OpMatMul, In: []int{b}, Weight: wi}, out); err != nil {
			return err
		}
	}
	if bias != nil {
		var err error
		if res, err = l.addConst(res, bias, biasName, out); err != nil {
			return err
		}
	}
	l.set(n, res)
	return nil
}

func (l *lowerer) gemm(n *ir.Node) error {
	alpha, err := n.Attrs.Float("alpha")
	if err != nil {
		return err
	}
	beta, err := n.Attrs.Float("beta")
	if err != nil {
		return err
	}
	ta, err := n.Attrs.Int("transA")
	if err != nil {
		return err
	}
	tb, err := n.Attrs.Int("transB")
	if err != nil {
		return err
	}
	var bias *ir.Tensor
	var biasName string
	if len(n.Inputs) == 3 && beta != 0 {
		biasName = n.Inputs[2]
		if !l.isConst(biasName) {
			return noLowering("Gemm with a runtime C operand")
		}
		bias = scaled(l.constOf(biasName), beta)
	}
	return l.linear(n, n.Inputs[0], n.Inputs[1], ta != 0, tb != 0, alpha, bias, biasName)
}

func (l *lowerer) matmul(n *ir.Node) error {
	a, _ := l.g.ShapeOf(n.Inputs[0])
	b, _ := l.g.ShapeOf(n.Inputs[1])
	if !l.isConst(n.Inputs[0]) && !l.isConst(n.Inputs[1]) {
		return l.matmulShared(n, a, b)
	}
	if len(a) != 2 || len(b) != 2 {
		return noLowering("MatMul of shapes %v and %v (only 2-D operands are supported)", a, b)
	}
	return l.linear(n, n.Inputs[0], n.Inputs[1], false, false, 1, nil, "")
}

// align brings two runtime tensors to the same scale by scaling the lower one up.
func (l *lowerer) align(a, b *fval, an, bn string) (int, int, error) {
	sa, sb := l.p.Tensors[a.id].Scale, l.p.Tensors[b.id].Scale
	x, y := a.id, b.id
	var err error
	switch {
	case sa < sb:
		x, err = l.op(&fixed.Instr{Op: fixed.OpScaleUp, In: []int{a.id}, Shift: sb - sa}, an+"_up")
	case sb < sa:
		y, err = l.op(&fixed.Instr{Op: fixed.OpScaleUp, In: []int{b.id}, Shift: sa - sb}, bn+"_up")
	}
	return x, y, err
}

// operand returns a runtime value for an Add/Sub operand. A value at a product scale with no other
// reader is used as it is (the other operand is scaled up and one truncation serves both).
func (l *lowerer) operand(name string) (*fval, error) {
	v, err := l.get(name)
	if err != nil {
		return nil, err
	}
	if v.index {
		return nil, noLowering("arithmetic on the integer result of an ArgMax")
	}
	if l.p.Tensors[v.id].Scale > l.s && l.uses[name] > 1 {
		t, err := l.atScale(v, name)
		if err != nil {
			return nil, err
		}
		return &fval{id: t}, nil
	}
	return v, nil
}

func (l *lowerer) addSub(n *ir.Node) error {
	out := n.Outputs[0]
	if n.Op == ir.Sum && len(n.Inputs) == 1 {
		v, err := l.get(n.Inputs[0])
		l.vals[out] = v
		return err
	}
	var acc *fval
	accName := ""
	for i, name := range n.Inputs {
		sub := n.Op == ir.Sub && i == 1
		if l.isConst(name) {
			if acc == nil {
				if n.Op == ir.Sub {
					return noLowering("Sub of a runtime tensor from a constant")
				}
				continue // constant first operand of Add: handled when the runtime operand comes
			}
			c := l.constOf(name)
			if sub {
				c = scaled(c, -1)
			}
			if err := l.checkBroadcastTo(c.Shape, l.p.Tensors[acc.id].Shape); err != nil {
				return err
			}
			id, err := l.addConst(acc.id, c, name, out)
			if err != nil {
				return err
			}
			acc = &fval{id: id}
			continue
		}
		v, err := l.operand(name)
		if err != nil {
			return err
		}
		if acc == nil {
			acc, accName = v, name
			// A constant first operand of Add.
			if i == 1 && l.isConst(n.Inputs[0]) {
				c := l.constOf(n.Inputs[0])
				if err := l.checkBroadcastTo(c.Shape, l.p.Tensors[acc.id].Shape); err != nil {
					return err
				}
				id, err := l.addConst(acc.id, c, n.Inputs[0], out)
				if err != nil {
					return err
				}
				acc = &fval{id: id}
			}
			continue
		}
		x, y, err := l.align(acc, v, accName, name)
		if err != nil {
			return err
		}
		op := fixed.OpAdd
		if sub {
			op = fixed.OpSub
		}
		id, err := l.op(&fixed.Instr{Op: op, In: []int{x, y}}, out)
		if err != nil {
			return err
		}
		acc, accName = &fval{id: id}, out
	}
	if acc == nil {
		return fmt.Errorf("all operands are constants (constant folding should have removed this node)")
	}
	if s := l.p.Tensors[acc.id].Shape; !s.Equal(l.g.Values[out].Shape) {
		return noLowering("adding a constant that broadcasts the runtime operand from %v to %v", s, l.g.Values[out].Shape)
	}
	l.vals[out] = acc
	l.p.Tensors[acc.id].Name = out
	return nil
}

func (l *lowerer) checkBroadcastTo(c, x ir.Shape) error {
	b, err := ir.Broadcast(x, c)
	if err != nil || !b.Equal(x) {
		return noLowering("a constant of shape %v broadcasts the runtime operand %v", c, x)
	}
	return nil
}

// mulShared lowers Mul of two runtime tensors to OpMul: both operands at scale s (truncated first
// if they are at a product scale), the product at 2s with numpy broadcasting, left at that scale
// like a linear layer's product (a truncation follows when a consumer needs scale s). The squeeze-
// and-excitation gate x·σ(·) and HardSwish's x·HardSigmoid(x) lower this way.
func (l *lowerer) mulShared(n *ir.Node) error {
	return l.sharedProduct(n, fixed.OpMul, "Mul")
}

// matmulShared lowers MatMul of two runtime tensors (attention's Q·Kᵀ and softmax(…)·V) to
// OpBatchMatMul: both operands at scale s (truncated first if needed), the product at 2s, like
// OpMul. The operands must be at least 2-D with equal leading (batch) dimensions; numpy's 1-D
// promotion and batch broadcasting are not lowered.
func (l *lowerer) matmulShared(n *ir.Node, a, b ir.Shape) error {
	if _, err := fixed.BatchMatMulShape(a, b); err != nil {
		return noLowering("MatMul of two runtime tensors of shapes %v and %v (both must be at least 2-D with equal batch dimensions; 1-D operands and batch broadcasting are not supported)", a, b)
	}
	return l.sharedProduct(n, fixed.OpBatchMatMul, "MatMul")
}

// sharedProduct emits op (OpMul or OpBatchMatMul) of node n's two runtime inputs and checks the
// product's shape against the graph's.
func (l *lowerer) sharedProduct(n *ir.Node, op fixed.Opcode, name string) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	y, err := l.input(n, 1)
	if err != nil {
		return err
	}
	id, err := l.op(&fixed.Instr{Op: op, In: []int{x, y}}, n.Outputs[0])
	if err != nil {
		return err
	}
	if want, ok := l.g.Values[n.Outputs[0]]; ok && !l.p.Tensors[id].Shape.Equal(want.Shape) {
		return noLowering("%s of shapes %v and %v gives %v, the graph says %v",
			name, l.p.Tensors[x].Shape, l.p.Tensors[y].Shape, l.p.Tensors[id].Shape, want.Shape)
	}
	l.set(n, id)
	return nil
}

// mulConst lowers Mul / Div by a constant to MulConst at scale s_x + s, left at that product scale
// (a truncation follows when a consumer needs scale s).
func (l *lowerer) mulConst(n *ir.Node, div bool) error {
	ci, xi := 1, 0
	if !div && l.isConst(n.Inputs[0]) {
		ci, xi = 0, 1
	}
	if !l.isConst(n.Inputs[ci]) {
		if div {
			return noLowering("Div by a runtime tensor")
		}
		return noLowering("Mul of two runtime tensors")
	}
	if l.isConst(n.Inputs[xi]) {
		return fmt.Errorf("both operands are constants (constant folding should have removed this node)")
	}
	c := l.constOf(n.Inputs[ci])
	if div {
		inv := &ir.Tensor{Shape: c.Shape.Clone(), Data: make([]float32, len(c.Data))}
		for i, v := range c.Data {
			if v == 0 {
				return fmt.Errorf("division by a constant zero")
			}
			inv.Data[i] = 1 / v
		}
		c = inv
	}
	x, err := l.input(n, xi)
	if err != nil {
		return err
	}
	if err := l.checkBroadcastTo(c.Shape, l.p.Tensors[x].Shape); err != nil {
		return err
	}
	w, err := l.weight(n.Inputs[ci], c, l.s)
	if err != nil {
		return err
	}
	id, err := l.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{x}, Weight: w}, n.Outputs[0])
	if err != nil {
		return err
	}
	l.set(n, id)
	return nil
}

// batchNorm lowers a BatchNormalization that could not be folded: y = x*a + b per channel with
// a = gamma/sqrt(var+eps) at scale s and b = beta - mean*a added at the product scale.
func (l *lowerer) batchNorm(n *ir.Node) error {
	for i := 1; i < 5; i++ {
		if !l.isConst(n.Inputs[i]) {
			return noLowering("BatchNormalization with runtime parameters")
		}
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	xs := l.p.Tensors[x].Shape
	eps, err := n.Attrs.Float("epsilon")
	if err != nil {
		return err
	}
	gamma, beta := l.constOf(n.Inputs[1]).Data, l.constOf(n.Inputs[2]).Data
	mean, variance := l.constOf(n.Inputs[3]).Data, l.constOf(n.Inputs[4]).Data
	shape := make(ir.Shape, len(xs)-1)
	shape[0] = len(gamma)
	for i := 1; i < len(shape); i++ {
		shape[i] = 1
	}
	a := &ir.Tensor{Shape: shape, Data: make([]float32, len(gamma))}
	b := &ir.Tensor{Shape: shape.Clone(), Data: make([]float32, len(gamma))}
	for i := range gamma {
		a.Data[i] = float32(float64(gamma[i]) / math.Sqrt(float64(variance[i])+float64(eps)))
		b.Data[i] = beta[i] - mean[i]*a.Data[i]
	}
	w, err := l.weight(n.Outputs[0]+"_bn_scale", a, l.s)
	if err != nil {
		return err
	}
	id, err := l.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{x}, Weight: w}, n.Outputs[0])
	if err != nil {
		return err
	}
	if id, err = l.addConst(id, b, n.Outputs[0]+"_bn_shift", n.Outputs[0]); err != nil {
		return err
	}
	l.set(n, id)
	return nil
}

// clip lowers Clip(x, lo, hi) = lo + ReLU(x - lo) - ReLU(x - hi) (terms for infinite bounds
// dropped), exact on the encoded values.
func (l *lowerer) clip(n *ir.Node) error {
	lo, err := n.Attrs.Float("min")
	if err != nil {
		return err
	}
	hi, err := n.Attrs.Float("max")
	if err != nil {
		return err
	}
	if lo > hi {
		return noLowering("Clip with min %g > max %g", lo, hi)
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	out := n.Outputs[0]
	sc := l.p.Tensors[x].Scale
	loInf, hiInf := math.IsInf(float64(lo), -1), math.IsInf(float64(hi), 1)
	scalar := func(v float32) *ir.Tensor { return &ir.Tensor{Shape: ir.Shape{}, Data: []float32{v}} }
	// shifted returns ReLU(x - c).
	shifted := func(c float32, tag string) (int, error) {
		t := x
		if c != 0 {
			cv, err := encodeAll([]float32{-c}, sc, "clip bound")
			if err != nil {
				return 0, err
			}
			w := l.p.AddWeight(out+"_"+tag, ir.Shape{}, sc, cv)
			if t, err = l.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{x}, Weight: w}, out+"_"+tag); err != nil {
				return 0, err
			}
		}
		return l.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{t}}, out+"_relu_"+tag)
	}
	res := x
	switch {
	case loInf && hiInf:
	case hiInf: // max(x, lo) = lo + ReLU(x - lo)
		r, err := shifted(lo, "lo")
		if err != nil {
			return err
		}
		res = r
		if lo != 0 {
			if res, err = l.addConst(r, scalar(lo), out+"_min", out); err != nil {
				return err
			}
		}
	case loInf: // min(x, hi) = x - ReLU(x - hi)
		r, err := shifted(hi, "hi")
		if err != nil {
			return err
		}
		if res, err = l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{x, r}}, out); err != nil {
			return err
		}
	default:
		r1, err := shifted(lo, "lo")
		if err != nil {
			return err
		}
		r2, err := shifted(hi, "hi")
		if err != nil {
			return err
		}
		if res, err = l.op(&fixed.Instr{Op: fixed.OpSub, In: []int{r1, r2}}, out); err != nil {
			return err
		}
		if lo != 0 {
			if res, err = l.addConst(res, scalar(lo), out+"_min", out); err != nil {
				return err
			}
		}
	}
	l.set(n, res)
	return nil
}

// leakyRelu lowers LeakyRelu for 0 <= alpha <= 1 as alpha*x + (1-alpha)*ReLU(x), two products by
// public constants at scale s followed by one truncation.
func (l *lowerer) leakyRelu(n *ir.Node) error {
	alpha, err := n.Attrs.Float("alpha")
	if err != nil {
		return err
	}
	if alpha < 0 || alpha > 1 {
		return noLowering("LeakyRelu with alpha %g outside [0, 1]", alpha)
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	out := n.Outputs[0]
	r, err := l.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}}, out+"_relu")
	if err != nil {
		return err
	}
	scalar := func(v float32) *ir.Tensor { return &ir.Tensor{Shape: ir.Shape{}, Data: []float32{v}} }
	wa, err := l.weight(out+"_alpha", scalar(alpha), l.s)
	if err != nil {
		return err
	}
	wb, err := l.weight(out+"_1-alpha", scalar(1-alpha), l.s)
	if err != nil {
		return err
	}
	ax, err := l.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{x}, Weight: wa}, out+"_ax")
	if err != nil {
		return err
	}
	br, err := l.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{r}, Weight: wb}, out+"_br")
	if err != nil {
		return err
	}
	id, err := l.op(&fixed.Instr{Op: fixed.OpAdd, In: []int{ax, br}}, out)
	if err != nil {
		return err
	}
	l.set(n, id)
	return nil
}

func (l *lowerer) pool(n *ir.Node) error {
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	xs := l.p.Tensors[x].Shape
	k := len(xs) - 2
	if k != 1 && k != 2 {
		return noLowering("%s over %d spatial dimensions (1 or 2 are supported)", n.Op, k)
	}
	out := n.Outputs[0]
	var win ir.Window
	includePad := false
	switch n.Op {
	case ir.GlobalMaxPool, ir.GlobalAveragePool:
		win = ir.Window{Kernel: slices.Clone(xs[2:]), Strides: make([]int, k), Pads: make([]int, 2*k), Dilations: make([]int, k)}
		for i := 0; i < k; i++ {
			win.Strides[i], win.Dilations[i] = 1, 1
		}
	default:
		if win, err = ir.WindowAttrs(n.Attrs, k); err != nil {
			return err
		}
		if n.Op == ir.AveragePool {
			cip, err := n.Attrs.Int("count_include_pad")
			if err != nil {
				return err
			}
			includePad = cip != 0
		}
	}
	if n.Op == ir.MaxPool || n.Op == ir.GlobalMaxPool {
		id, err := l.op(&fixed.Instr{Op: fixed.OpMaxPool, In: []int{x}, Win: win}, out)
		l.set(n, id)
		return err
	}
	sum, err := l.op(&fixed.Instr{Op: fixed.OpSumPool, In: []int{x}, Win: win}, out+"_sum")
	if err != nil {
		return err
	}
	divs, err := poolDivisors(win, xs[2:], l.p.Tensors[sum].Shape[2:], includePad)
	if err != nil {
		return err
	}
	id, err := l.op(&fixed.Instr{Op: fixed.OpDiv, In: []int{sum}, Divisors: divs}, out)
	l.set(n, id)
	return err
}

// poolDivisors returns the average-pool divisor of every output position of one plane (or a
// single divisor when all are equal): the taps inside the input, or inside the input and its
// explicit padding with count_include_pad (taps a ceil-mode window puts past the end padding never
// count), as onnxruntime does.
func poolDivisors(w ir.Window, in, out ir.Shape, includePad bool) ([]int, error) {
	k := len(in)
	per := make([][]int, k)
	for d := 0; d < k; d++ {
		per[d] = make([]int, out[d])
		for o := 0; o < out[d]; o++ {
			start := o*w.Strides[d] - w.Pads[d]
			cnt := 0
			for t := 0; t < w.Kernel[d]; t++ {
				i := start + t*w.Dilations[d]
				if includePad && i < in[d]+w.Pads[k+d] || !includePad && i >= 0 && i < in[d] {
					cnt++
				}
			}
			per[d][o] = cnt
		}
	}
	n := out.Size()
	divs := make([]int, n)
	for q := 0; q < n; q++ {
		d := 1
		r := q
		for a := k - 1; a >= 0; a-- {
			d *= per[a][r%out[a]]
			r /= out[a]
		}
		if d == 0 {
			return nil, noLowering("an average-pool window with no input element")
		}
		divs[q] = d
	}
	for _, d := range divs {
		if d != divs[0] {
			return divs, nil
		}
	}
	return divs[:1], nil
}

func (l *lowerer) reshape(n *ir.Node) error {
	v, err := l.get(n.Inputs[0])
	if err != nil {
		return err
	}
	shape := l.g.Values[n.Outputs[0]].Shape
	id := l.p.AddTensor(n.Outputs[0], shape, l.p.Tensors[v.id].Scale)
	l.emit(&fixed.Instr{Op: fixed.OpReshape, In: []int{v.id}, Out: id})
	l.vals[n.Outputs[0]] = &fval{id: id, index: v.index}
	return nil
}

func (l *lowerer) concat(n *ir.Node) error {
	axis, err := n.Attrs.Int("axis")
	if err != nil {
		return err
	}
	ids := make([]int, len(n.Inputs))
	top, ref := 0, -1
	for i, in := range n.Inputs {
		if l.isConst(in) {
			continue
		}
		if ids[i], err = l.input(n, i); err != nil {
			return err
		}
		top = max(top, l.p.Tensors[ids[i]].Scale)
		ref = ids[i]
	}
	if ref < 0 {
		return fmt.Errorf("all operands are constants (constant folding should have removed this node)")
	}
	// Constant operands (a class token, a fixed feature block) become shared tensors made locally
	// (constTensor), at the runtime operands' scale.
	for i, in := range n.Inputs {
		if l.isConst(in) {
			if ids[i], err = l.constTensor(in, l.constOf(in), ref, top, n.Outputs[0]+"_"+in); err != nil {
				return err
			}
		}
	}
	for i, id := range ids {
		if sc := l.p.Tensors[id].Scale; sc < top {
			if ids[i], err = l.op(&fixed.Instr{Op: fixed.OpScaleUp, In: []int{id}, Shift: top - sc}, n.Inputs[i]+"_up"); err != nil {
				return err
			}
		}
	}
	id, err := l.op(&fixed.Instr{Op: fixed.OpConcat, In: ids, Axis: axis}, n.Outputs[0])
	l.set(n, id)
	return err
}

func (l *lowerer) pad(n *ir.Node) error {
	mode, err := n.Attrs.Str("mode")
	if err != nil {
		return err
	}
	pm, err := fixed.ParsePadMode(mode)
	if err != nil {
		return err
	}
	pads, err := n.Attrs.Ints("pads")
	if err != nil {
		return err
	}
	for _, p := range pads {
		if p < 0 {
			return noLowering("Pad with negative pads %v (cropping)", pads)
		}
	}
	value, err := n.Attrs.Float("value")
	if err != nil {
		return err
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	var pv int64
	if pm == fixed.PadConstant {
		enc, err := encodeAll([]float32{value}, l.p.Tensors[x].Scale, "pad value")
		if err != nil {
			return err
		}
		pv = enc[0]
	}
	id, err := l.op(&fixed.Instr{Op: fixed.OpPad, In: []int{x}, Pads: pads, PadMode: pm, PadValue: pv}, n.Outputs[0])
	l.set(n, id)
	return err
}

func (l *lowerer) argmax(n *ir.Node) error {
	axis, err := n.Attrs.Int("axis")
	if err != nil {
		return err
	}
	last, err := n.Attrs.Int("select_last_index")
	if err != nil {
		return err
	}
	if last != 0 {
		return noLowering("ArgMax with select_last_index=1 (ties go to the lowest index)")
	}
	x, err := l.input(n, 0)
	if err != nil {
		return err
	}
	shape := l.g.Values[n.Outputs[0]].Shape
	id := l.p.AddTensor(n.Outputs[0], shape, 0)
	l.emit(&fixed.Instr{Op: fixed.OpArgMax, In: []int{x}, Out: id, Axis: axis})
	l.vals[n.Outputs[0]] = &fval{id: id, index: true}
	return nil
}

// selection lowers Slice and Gather of a runtime tensor to one gather instruction (local data
// movement), followed for a Gather whose indices are not one-dimensional by a reshape to the
// graph's shape.
func (l *lowerer) selection(n *ir.Node) error {
	x, err := l.get(n.Inputs[0])
	if err != nil {
		return err
	}
	out := n.Outputs[0]
	sel, shape, err := ir.Selection(n.Op, n.Attrs, l.p.Tensors[x.id].Shape)
	if err != nil {
		return err
	}
	in := &fixed.Instr{Op: fixed.OpGather, In: []int{x.id}, Select: make([][]int, len(sel))}
	direct := l.p.Tensors[x.id].Shape.Clone() // the gather's own shape
	for a, s := range sel {
		in.Select[a] = s
		if s == nil {
			in.Select[a] = []int{}
		} else {
			direct[a] = len(s)
		}
	}
	name := out
	if !direct.Equal(shape) {
		name = out + "_gather"
	}
	id, err := l.op(in, name)
	if err != nil {
		return err
	}
	if name != out {
		r := l.p.AddTensor(out, shape, l.p.Tensors[id].Scale)
		id = l.emit(&fixed.Instr{Op: fixed.OpReshape, In: []int{id}, Out: r, Weight: -1})
	}
	l.vals[out] = &fval{id: id, index: x.index}
	return nil
}
