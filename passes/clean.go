package passes

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
)

// cleaner runs the clean-up passes' steps on an HLIL graph (the clean table, table.go): each
// step rewrites g in place and logs what it changed.
type cleaner struct {
	g   *ir.Graph
	log []string
}

func (c *cleaner) logf(format string, args ...any) {
	c.log = append(c.log, fmt.Sprintf(format, args...))
}

// cloneGraph copies the graph structure; constant tensors are shared (passes replace constants,
// they never modify one in place).
func cloneGraph(g *ir.Graph) *ir.Graph {
	out := ir.NewGraph(g.Name)
	out.Inputs = slices.Clone(g.Inputs)
	for i := range out.Inputs {
		out.Inputs[i].Shape = out.Inputs[i].Shape.Clone()
	}
	out.Outputs = slices.Clone(g.Outputs)
	// The inputs' declared types and quantization travel with the graph (lowering bounds a
	// quantized input by its integer type).
	out.InputTypes, out.InputQuant, out.OutputQuant = maps.Clone(g.InputTypes), maps.Clone(g.InputQuant), maps.Clone(g.OutputQuant)
	for k, v := range g.Consts {
		out.Consts[k] = v
	}
	for _, n := range g.Nodes {
		m := *n
		m.Inputs = slices.Clone(n.Inputs)
		m.Outputs = slices.Clone(n.Outputs)
		m.Attrs = ir.Attrs{}
		for k, a := range n.Attrs {
			m.Attrs[k] = a
		}
		out.Nodes = append(out.Nodes, &m)
	}
	return out
}

// rename replaces every use of value from by to (in node inputs and graph outputs).
func (c *cleaner) rename(from, to string) {
	for _, n := range c.g.Nodes {
		for i, in := range n.Inputs {
			if in == from {
				n.Inputs[i] = to
			}
		}
	}
	for i, o := range c.g.Outputs {
		if o == from {
			c.g.Outputs[i] = to
		}
	}
}

func (c *cleaner) isOutput(v string) bool { return slices.Contains(c.g.Outputs, v) }

func (c *cleaner) removeNodes(drop map[*ir.Node]bool) {
	c.g.Nodes = slices.DeleteFunc(c.g.Nodes, func(n *ir.Node) bool { return drop[n] })
}

// freshName returns a constant or value name not yet used in the graph.
func (c *cleaner) freshName(base string) string {
	for i := 0; ; i++ {
		name := base
		if i > 0 {
			name = fmt.Sprintf("%s_%d", base, i)
		}
		_, isConst := c.g.Consts[name]
		_, isVal := c.g.Values[name]
		if !isConst && !isVal {
			c.g.Values[name] = &ir.Value{Name: name} // reserve
			return name
		}
	}
}

func (c *cleaner) dropIdentity() error {
	drop := map[*ir.Node]bool{}
	for _, n := range c.g.Nodes {
		if n.Op != ir.Identity {
			continue
		}
		in, out := n.Inputs[0], n.Outputs[0]
		if c.isOutput(out) && (c.isInput(in) || c.isOutput(in)) {
			continue // keep: the output needs its own name
		}
		if c.isOutput(out) {
			// Keep the output's name: rename the producer's value instead.
			c.renameValue(in, out)
		} else {
			c.rename(out, in)
		}
		drop[n] = true
	}
	if len(drop) > 0 {
		c.removeNodes(drop)
		c.logf("dropped %d Identity/Dropout node(s)", len(drop))
	}
	return nil
}

func (c *cleaner) isInput(v string) bool {
	for _, in := range c.g.Inputs {
		if in.Name == v {
			return true
		}
	}
	return false
}

// renameValue renames value from (a node output or constant) to to, everywhere.
func (c *cleaner) renameValue(from, to string) {
	for _, n := range c.g.Nodes {
		for i, o := range n.Outputs {
			if o == from {
				n.Outputs[i] = to
			}
		}
	}
	if t, ok := c.g.Consts[from]; ok {
		delete(c.g.Consts, from)
		c.g.Consts[to] = t
	}
	c.rename(from, to)
}

// foldConstants evaluates every node whose inputs are all constants with the float interpreter
// and replaces it by a constant.
func (c *cleaner) foldConstants() error {
	drop := map[*ir.Node]bool{}
	for _, n := range c.g.Nodes {
		allConst := len(n.Inputs) > 0
		for _, in := range n.Inputs {
			if _, ok := c.g.Consts[in]; !ok {
				allConst = false
				break
			}
		}
		if !allConst || c.isOutput(n.Outputs[0]) {
			continue
		}
		sub := ir.NewGraph("fold")
		for _, in := range n.Inputs {
			sub.Consts[in] = c.g.Consts[in]
		}
		m := *n
		sub.Nodes = []*ir.Node{&m}
		sub.Outputs = []string{n.Outputs[0]}
		if err := sub.InferShapes(); err != nil {
			return fmt.Errorf("fold %s: %w", n, err)
		}
		if sub.Values[n.Outputs[0]].DType != ir.Float32 {
			continue
		}
		res, err := interp.Run(sub, nil)
		if err != nil {
			return fmt.Errorf("fold %s: %w", n, err)
		}
		c.g.Consts[n.Outputs[0]] = res[n.Outputs[0]]
		delete(c.g.Values, n.Outputs[0])
		drop[n] = true
	}
	if len(drop) > 0 {
		c.removeNodes(drop)
		c.logf("folded %d constant node(s)", len(drop))
	}
	return nil
}

// uses counts the readers of each value (graph outputs count as readers).
func (c *cleaner) uses() map[string]int {
	u := map[string]int{}
	for _, n := range c.g.Nodes {
		for _, in := range n.Inputs {
			u[in]++
		}
	}
	for _, o := range c.g.Outputs {
		u[o]++
	}
	return u
}

// matmulToGemm rewrites MatMul(x, W) with a 2-D runtime x and a 2-D constant W as a Gemm, so that
// bias fusion and BatchNorm folding treat both alike.
func (c *cleaner) matmulToGemm() error {
	n := 0
	for _, nd := range c.g.Nodes {
		if nd.Op != ir.MatMul {
			continue
		}
		a, aok := c.g.ShapeOf(nd.Inputs[0])
		b, bok := c.g.ShapeOf(nd.Inputs[1])
		_, aConst := c.g.Consts[nd.Inputs[0]]
		_, bConst := c.g.Consts[nd.Inputs[1]]
		if !aok || !bok || len(a) != 2 || len(b) != 2 || aConst == bConst {
			continue
		}
		nd.Op = ir.Gemm
		nd.Attrs = ir.Attrs{"alpha": ir.FloatAttr(1), "beta": ir.FloatAttr(1), "transA": ir.IntAttr(0), "transB": ir.IntAttr(0)}
		n++
	}
	if n > 0 {
		c.logf("rewrote %d 2-D MatMul node(s) with a constant operand as Gemm", n)
	}
	return nil
}

// producerOf returns the node producing v, if v has exactly one reader and is not a graph output.
func (c *cleaner) soleProducer(v string, uses map[string]int) *ir.Node {
	if uses[v] != 1 || c.isOutput(v) {
		return nil
	}
	for _, n := range c.g.Nodes {
		if n.Outputs[0] == v {
			return n
		}
	}
	return nil
}

// channelVector returns the per-channel values of constant t broadcast over a tensor of shape out
// along axis 1 (Conv: [N,M,...]; Gemm: [N,M]), or nil when t is not constant along other axes.
func channelVector(t *ir.Tensor, out ir.Shape) []float32 {
	if len(t.Shape) > len(out) {
		return nil
	}
	m := out[1]
	full := make(ir.Shape, len(out))
	off := len(out) - len(t.Shape)
	for i := range full {
		full[i] = 1
		if i >= off {
			full[i] = t.Shape[i-off]
		}
	}
	for i, d := range full {
		if i != 1 && d != 1 {
			return nil
		}
	}
	v := make([]float32, m)
	for i := range v {
		if full[1] == 1 {
			v[i] = t.Data[0]
		} else if full[1] == m {
			v[i] = t.Data[i]
		} else {
			return nil
		}
	}
	return v
}

// biasOf returns the bias vector of a Conv or Gemm node (zeros when absent) and whether the node
// can take a fused bias (Gemm's C must be a constant broadcast along rows).
func (c *cleaner) biasOf(n *ir.Node) ([]float32, bool) {
	out := c.g.Values[n.Outputs[0]].Shape
	m := out[1]
	if n.Op == ir.Conv {
		if len(n.Inputs) < 3 {
			return make([]float32, m), true
		}
		b, ok := c.g.Consts[n.Inputs[2]]
		if !ok {
			return nil, false
		}
		return slices.Clone(b.Data), true
	}
	beta, _ := n.Attrs.Float("beta")
	if len(n.Inputs) < 3 {
		return make([]float32, m), true
	}
	cc, ok := c.g.Consts[n.Inputs[2]]
	if !ok {
		return nil, false
	}
	v := channelVector(cc, out)
	if v == nil {
		return nil, false
	}
	for i := range v {
		v[i] *= beta
	}
	return v, true
}

// setBias stores a bias vector on a Conv or Gemm node (Gemm's beta becomes 1).
func (c *cleaner) setBias(n *ir.Node, b []float32) {
	name := c.freshName(n.Outputs[0] + "_bias")
	shape := ir.Shape{len(b)}
	c.g.Consts[name] = &ir.Tensor{Shape: shape, Data: b}
	if len(n.Inputs) < 3 {
		n.Inputs = append(n.Inputs, name)
	} else {
		n.Inputs[2] = name
	}
	if n.Op == ir.Gemm {
		n.Attrs["beta"] = ir.FloatAttr(1)
	}
}

// weightOperand returns the index of the constant weight of a Conv (1) or a Gemm with exactly one
// constant operand, or -1.
func (c *cleaner) weightOperand(n *ir.Node) int {
	switch n.Op {
	case ir.Conv:
		if _, ok := c.g.Consts[n.Inputs[1]]; ok {
			return 1
		}
	case ir.Gemm:
		_, a := c.g.Consts[n.Inputs[0]]
		_, b := c.g.Consts[n.Inputs[1]]
		if a != b {
			if b {
				return 1
			}
			return 0
		}
	}
	return -1
}

// fuseBias turns Add(linear(x), const) (or Add(const, linear(x))) into a bias of the linear node.
func (c *cleaner) fuseBias() error {
	uses := c.uses()
	drop := map[*ir.Node]bool{}
	for _, n := range c.g.Nodes {
		if n.Op != ir.Add {
			continue
		}
		for k := 0; k < 2; k++ {
			lin := c.soleProducer(n.Inputs[k], uses)
			cst, ok := c.g.Consts[n.Inputs[1-k]]
			if lin == nil || !ok || (lin.Op != ir.Conv && lin.Op != ir.Gemm) || c.weightOperand(lin) < 0 {
				continue
			}
			out := c.g.Values[lin.Outputs[0]].Shape
			if len(out) < 2 || !c.g.Values[n.Outputs[0]].Shape.Equal(out) {
				continue
			}
			add := channelVector(cst, out)
			b, ok := c.biasOf(lin)
			if add == nil || !ok {
				continue
			}
			for i := range b {
				b[i] += add[i]
			}
			c.setBias(lin, b)
			c.renameOutput(lin, n.Outputs[0])
			drop[n] = true
			break
		}
	}
	if len(drop) > 0 {
		c.removeNodes(drop)
		c.logf("fused %d constant Add node(s) into the preceding Conv/Gemm as bias", len(drop))
	}
	return nil
}

// renameOutput makes node n produce value v (the output of the node being removed after it).
func (c *cleaner) renameOutput(n *ir.Node, v string) {
	old := n.Outputs[0]
	n.Outputs[0] = v
	delete(c.g.Values, old)
	c.g.Values[v] = &ir.Value{Name: v, DType: ir.Float32, Shape: c.g.Values[v].Shape}
}

// foldBatchNorm folds BatchNormalization(linear(x)) into the linear node's weights and bias:
// W'[m,...] = W[m,...]*a[m], b'[m] = (b[m]-mean[m])*a[m] + beta[m], a = gamma/sqrt(var+eps).
func (c *cleaner) foldBatchNorm() error {
	uses := c.uses()
	drop := map[*ir.Node]bool{}
	for _, n := range c.g.Nodes {
		if n.Op != ir.BatchNormalization {
			continue
		}
		lin := c.soleProducer(n.Inputs[0], uses)
		if lin == nil || (lin.Op != ir.Conv && lin.Op != ir.Gemm) {
			continue
		}
		wi := c.weightOperand(lin)
		if wi < 0 {
			continue
		}
		params := make([]*ir.Tensor, 4)
		ok := true
		for i := range params {
			params[i], ok = c.g.Consts[n.Inputs[1+i]]
			if !ok {
				break
			}
		}
		if !ok {
			continue
		}
		bias, ok := c.biasOf(lin)
		if !ok {
			continue
		}
		eps, _ := n.Attrs.Float("epsilon")
		gamma, beta, mean, variance := params[0].Data, params[1].Data, params[2].Data, params[3].Data
		a := make([]float32, len(gamma))
		for i := range a {
			a[i] = float32(float64(gamma[i]) / math.Sqrt(float64(variance[i])+float64(eps)))
			bias[i] = (bias[i]-mean[i])*a[i] + beta[i]
		}
		w := c.g.Consts[lin.Inputs[wi]]
		nw := &ir.Tensor{Shape: w.Shape.Clone(), Data: slices.Clone(w.Data)}
		if err := scaleOutputChannels(lin, wi, nw, a); err != nil {
			continue
		}
		name := c.freshName(lin.Inputs[wi] + "_bn")
		c.g.Consts[name] = nw
		lin.Inputs[wi] = name
		c.setBias(lin, bias)
		c.renameOutput(lin, n.Outputs[0])
		drop[n] = true
	}
	if len(drop) > 0 {
		c.removeNodes(drop)
		c.logf("folded %d BatchNormalization node(s) into the preceding Conv/Gemm", len(drop))
	}
	return nil
}

// scaleOutputChannels multiplies the weights feeding output channel m by a[m] in place.
func scaleOutputChannels(lin *ir.Node, wi int, w *ir.Tensor, a []float32) error {
	if lin.Op == ir.Conv {
		m := w.Shape[0]
		if m != len(a) {
			return fmt.Errorf("channel mismatch")
		}
		per := len(w.Data) / m
		for i := 0; i < m; i++ {
			for j := range per {
				w.Data[i*per+j] *= a[i]
			}
		}
		return nil
	}
	// Gemm: output column n of Y = op(A) op(B). The weight's output dimension depends on which
	// operand it is and on the transposition flags.
	if wi == 0 {
		return fmt.Errorf("a constant A operand scales rows, not channels")
	}
	tb, _ := lin.Attrs.Int("transB")
	rows, cols := w.Shape[0], w.Shape[1]
	for r := 0; r < rows; r++ {
		for col := 0; col < cols; col++ {
			ch := col
			if tb != 0 {
				ch = r
			}
			if ch >= len(a) {
				return fmt.Errorf("channel mismatch")
			}
			w.Data[r*cols+col] *= a[ch]
		}
	}
	return nil
}

// dropSoftmax removes a Softmax or LogSoftmax that produces a graph output: for classification
// the argmax of its input is the same.
func (c *cleaner) dropSoftmax() error {
	uses := c.uses()
	drop := map[*ir.Node]bool{}
	for _, n := range c.g.Nodes {
		if (n.Op != ir.Softmax && n.Op != ir.LogSoftmax) || !c.isOutput(n.Outputs[0]) || uses[n.Outputs[0]] != 1 || c.isInput(n.Inputs[0]) {
			continue
		}
		if uses[n.Inputs[0]] != 1 || c.isOutput(n.Inputs[0]) {
			continue // its input is used elsewhere too: keep the names apart
		}
		c.renameValue(n.Inputs[0], n.Outputs[0])
		drop[n] = true
		c.logf("dropped the trailing %s producing %q: for classification the argmax of its input is the same (the output is now logits; athosc --keep-softmax keeps it)", n.Op, n.Outputs[0])
	}
	c.removeNodes(drop)
	return nil
}

// dead removes nodes whose outputs nothing reads and constants no node reads.
func (c *cleaner) dead() error {
	for {
		uses := c.uses()
		drop := map[*ir.Node]bool{}
		for _, n := range c.g.Nodes {
			if uses[n.Outputs[0]] == 0 {
				drop[n] = true
			}
		}
		if len(drop) == 0 {
			break
		}
		c.removeNodes(drop)
		c.logf("removed %d dead node(s)", len(drop))
	}
	uses := c.uses()
	for name := range c.g.Consts {
		if uses[name] == 0 {
			delete(c.g.Consts, name)
		}
	}
	return nil
}
