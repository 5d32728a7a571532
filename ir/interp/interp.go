// Package interp is the float32 reference interpreter for HLIL graphs.
//
// It gives every operator of ir.AllOps() its ONNX meaning and is the project's reference for
// "did we read the model right": the front end's conformance tests compare it with ONNX's node
// tests and with onnxruntime outputs. Sums accumulate in float32, as an ordinary float
// implementation does; matrix products and convolutions (via im2col) go through gonum's blas32
// Sgemm.
//
// New prepares a graph once (shapes, kernels and buffers); (*Interpreter).Run then evaluates it
// many times without allocating intermediate tensors. Run is the one-shot form.
package interp

import (
	"fmt"
	"math"

	"github.com/cryptflow-go/cryptflow/ir"
	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// Run evaluates g on inputs keyed by graph input name and returns the graph outputs keyed by
// name. ArgMax results are float32 tensors holding the indices. It is New followed by one
// (*Interpreter).Run; prepare the graph with New when evaluating it more than once.
func Run(g *ir.Graph, inputs map[string]*ir.Tensor) (map[string]*ir.Tensor, error) {
	it, err := New(g)
	if err != nil {
		return nil, err
	}
	return it.Run(inputs)
}

// slot is the storage of one value: its static shape and, while a run is under way, its data.
// Node outputs get a buffer from New (values whose lifetimes do not overlap share one); graph
// inputs and constants point at the caller's data; views (Reshape, Flatten, Squeeze, Unsqueeze,
// Identity) share their input's data.
type slot struct {
	name  string
	shape ir.Shape
	data  []float32
}

type step struct {
	node *ir.Node
	out  *slot
	run  func()
}

type inputSlot struct {
	name  string
	shape ir.Shape
	s     *slot
}

// Interpreter is a graph prepared for repeated evaluation. It reuses its buffers across runs,
// so one Interpreter must not run on several goroutines at once; prepare one per goroutine.
// It reads the graph's constants in place (preparing several from one graph is cheap), so
// changing a constant's data after New changes the results of later runs.
type Interpreter struct {
	inputs  []inputSlot
	outputs []*slot
	steps   []step
	views   []*slot // outputs of view nodes, which point at other slots' data during a run
	gemm    blas.Float32Level3
	scratch []float32 // im2col buffer shared by the convolutions, sized by New
}

// New prepares g for evaluation. It infers shapes on a private copy of the graph's value table
// (g is not modified), checks every node, and allocates the buffers that runs reuse.
func New(g *ir.Graph) (*Interpreter, error) {
	if g == nil {
		return nil, fmt.Errorf("interp: nil graph")
	}
	gc := *g
	gc.Values = make(map[string]*ir.Value, len(g.Nodes)+len(g.Inputs))
	if err := gc.InferShapes(); err != nil {
		return nil, fmt.Errorf("interp: shape inference: %w", err)
	}
	it := &Interpreter{gemm: blas32.Implementation()}
	c := &compiler{it: it, g: &gc, slots: map[string]*slot{}, viewOf: map[*slot]*slot{}}
	for name, t := range g.Consts {
		if t == nil {
			return nil, fmt.Errorf("interp: constant %q is nil", name)
		}
		if len(t.Data) != t.Shape.Size() {
			return nil, fmt.Errorf("interp: constant %q has %d elements for shape %v", name, len(t.Data), t.Shape)
		}
		c.slots[name] = &slot{name: name, shape: t.Shape, data: t.Data}
	}
	for _, in := range gc.Inputs {
		if _, dup := c.slots[in.Name]; dup {
			return nil, fmt.Errorf("interp: graph input %q is defined twice", in.Name)
		}
		if in.DType != ir.Float32 {
			return nil, fmt.Errorf("interp: graph input %q has type %s, want f32", in.Name, in.DType)
		}
		s := &slot{name: in.Name, shape: in.Shape.Clone()}
		c.slots[in.Name] = s
		it.inputs = append(it.inputs, inputSlot{name: in.Name, shape: s.shape, s: s})
	}
	for _, n := range gc.Nodes {
		if err := c.compile(n); err != nil {
			return nil, fmt.Errorf("interp: %s: %w", n, err)
		}
	}
	for _, name := range gc.Outputs {
		s, ok := c.slots[name]
		if !ok {
			return nil, fmt.Errorf("interp: graph output %q is never produced", name)
		}
		it.outputs = append(it.outputs, s)
	}
	c.allocate(&gc)
	it.scratch = make([]float32, c.scratch)
	return it, nil
}

// allocate gives every node output a buffer. Buffers are shared between values whose
// lifetimes do not overlap: a value's buffer returns to the pool after the last step that reads
// it (or reads a view of it), so deep networks need memory for a few layers, not all of them.
// Graph outputs keep theirs.
func (c *compiler) allocate(g *ir.Graph) {
	root := func(s *slot) *slot {
		for {
			src, ok := c.viewOf[s]
			if !ok {
				return s
			}
			s = src
		}
	}
	const forever = int(^uint(0) >> 1)
	last := map[*slot]int{} // buffer owner -> index of the last step that reads it
	for _, o := range c.owned {
		last[o.s] = o.node // a value nobody reads is released right after it is made
	}
	for i, n := range g.Nodes {
		for _, name := range n.Inputs {
			if r := root(c.slots[name]); last[r] < i {
				if _, ok := last[r]; ok {
					last[r] = i
				}
			}
		}
	}
	for _, name := range g.Outputs {
		if r := root(c.slots[name]); r != nil {
			if _, ok := last[r]; ok {
				last[r] = forever
			}
		}
	}
	release := map[int][]*slot{}
	for _, o := range c.owned {
		if i := last[o.s]; i != forever {
			release[i] = append(release[i], o.s)
		}
	}
	var free [][]float32
	k := 0
	for i := range c.it.steps {
		for ; k < len(c.owned) && c.owned[k].node == i; k++ {
			s := c.owned[k].s
			size := s.shape.Size()
			best := -1
			for j, b := range free {
				if cap(b) >= size && (best < 0 || cap(b) < cap(free[best])) {
					best = j
				}
			}
			if best < 0 {
				s.data = make([]float32, size)
			} else {
				s.data = free[best][:size]
				free = append(free[:best], free[best+1:]...)
			}
		}
		for _, s := range release[i] {
			free = append(free, s.data[:cap(s.data)])
		}
	}
}

// Inputs returns the graph inputs the interpreter expects, in graph order.
func (it *Interpreter) Inputs() []ir.Value {
	out := make([]ir.Value, len(it.inputs))
	for i, in := range it.inputs {
		out[i] = ir.Value{Name: in.name, DType: ir.Float32, Shape: in.shape.Clone()}
	}
	return out
}

// Run evaluates the prepared graph on inputs keyed by graph input name. The returned tensors
// are fresh copies that the caller owns; the inputs are only read.
func (it *Interpreter) Run(inputs map[string]*ir.Tensor) (out map[string]*ir.Tensor, err error) {
	defer it.unbind()
	if err := it.bind(inputs); err != nil {
		return nil, err
	}
	if err := it.exec(); err != nil {
		return nil, err
	}
	out = make(map[string]*ir.Tensor, len(it.outputs))
	for _, s := range it.outputs {
		out[s.name] = &ir.Tensor{Shape: s.shape.Clone(), Data: append([]float32(nil), s.data...)}
	}
	return out, nil
}

func (it *Interpreter) bind(inputs map[string]*ir.Tensor) error {
	for _, in := range it.inputs {
		t, ok := inputs[in.name]
		if !ok || t == nil {
			return fmt.Errorf("interp: missing input %q (shape %v)", in.name, in.shape)
		}
		if !t.Shape.Equal(in.shape) {
			return fmt.Errorf("interp: input %q has shape %v, want %v", in.name, t.Shape, in.shape)
		}
		if len(t.Data) != in.shape.Size() {
			return fmt.Errorf("interp: input %q has %d elements for shape %v", in.name, len(t.Data), in.shape)
		}
		in.s.data = t.Data
	}
	if len(inputs) > len(it.inputs) {
		for name := range inputs {
			if !it.isInput(name) {
				return fmt.Errorf("interp: %q is not an input of the graph", name)
			}
		}
	}
	return nil
}

// unbind drops the references to the caller's inputs (and views of them) after a run.
func (it *Interpreter) unbind() {
	for _, in := range it.inputs {
		in.s.data = nil
	}
	for _, v := range it.views {
		v.data = nil
	}
}

func (it *Interpreter) isInput(name string) bool {
	for _, in := range it.inputs {
		if in.name == name {
			return true
		}
	}
	return false
}

// exec runs the steps. The kernels only see shapes checked by New, so a panic here is a bug in
// this package; it is reported as an error naming the node rather than crashing the caller.
func (it *Interpreter) exec() (err error) {
	cur := -1
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("interp: internal error in %s: %v", it.steps[cur].node, r)
		}
	}()
	for i := range it.steps {
		cur = i
		it.steps[i].run()
	}
	return nil
}

// compiler turns nodes into steps.
type compiler struct {
	it      *Interpreter
	g       *ir.Graph
	slots   map[string]*slot
	scratch int // largest scratch buffer any step needs

	owned  []ownedSlot     // node outputs that need a buffer, in step order
	viewOf map[*slot]*slot // view output -> the slot it shares data with
}

type ownedSlot struct {
	s    *slot
	node int // index of the producing step
}

func (c *compiler) compile(n *ir.Node) error {
	in := make([]*slot, len(n.Inputs))
	for i, name := range n.Inputs {
		s, ok := c.slots[name]
		if !ok {
			return fmt.Errorf("input %q is not defined before use", name)
		}
		in[i] = s
	}
	name := n.Outputs[0] // InferShapes checked there is exactly one
	if _, dup := c.slots[name]; dup {
		return fmt.Errorf("output %q is already defined", name)
	}
	v := c.g.Values[name]
	out := &slot{name: name, shape: v.Shape}
	c.slots[name] = out
	if isView(n.Op) {
		// The output shares its input's data; it is resolved at run time because graph inputs
		// are bound per run.
		src := in[0]
		c.it.views = append(c.it.views, out)
		c.viewOf[out] = src
		c.add(n, out, func() { out.data = src.data })
		return nil
	}
	c.owned = append(c.owned, ownedSlot{s: out, node: len(c.it.steps)})
	run, err := c.kernel(n, in, out)
	if err != nil {
		return err
	}
	c.add(n, out, run)
	return nil
}

func (c *compiler) add(n *ir.Node, out *slot, run func()) {
	c.it.steps = append(c.it.steps, step{node: n, out: out, run: run})
}

func isView(op ir.Op) bool {
	switch op {
	case ir.Identity, ir.Reshape, ir.Flatten, ir.Squeeze, ir.Unsqueeze:
		return true
	}
	return false
}

func (c *compiler) kernel(n *ir.Node, in []*slot, out *slot) (func(), error) {
	a := n.Attrs
	switch n.Op {
	case ir.Conv:
		return c.conv(a, in, out)
	case ir.Gemm:
		return c.gemmNode(a, in, out)
	case ir.MatMul:
		return c.matmul(in, out)
	case ir.Add, ir.Sub, ir.Mul, ir.Div:
		return binary(binOps[n.Op], in[0], in[1], out), nil
	case ir.Sum:
		return sum(in, out), nil
	case ir.Relu:
		return func() {
			dst := out.data
			for i, x := range in[0].data[:len(dst)] {
				dst[i] = max(x, 0)
			}
		}, nil
	case ir.LeakyRelu:
		alpha, err := a.Float("alpha")
		if err != nil {
			return nil, err
		}
		return unary(in[0], out, func(x float32) float32 {
			if x >= 0 {
				return x
			}
			return alpha * x
		}), nil
	case ir.Clip:
		lo, err := a.Float("min")
		if err != nil {
			return nil, err
		}
		hi, err := a.Float("max")
		if err != nil {
			return nil, err
		}
		// onnxruntime's order: min(max(x, lo), hi), so hi wins when lo > hi.
		return unary(in[0], out, func(x float32) float32 { return min(max(x, lo), hi) }), nil
	case ir.Sigmoid:
		return unary(in[0], out, sigmoid), nil
	case ir.Tanh:
		return unary(in[0], out, func(x float32) float32 { return float32(math.Tanh(float64(x))) }), nil
	case ir.Exp:
		return unary(in[0], out, func(x float32) float32 { return float32(math.Exp(float64(x))) }), nil
	case ir.MaxPool, ir.AveragePool:
		return pool(n.Op, a, in[0], out)
	case ir.GlobalAveragePool, ir.GlobalMaxPool:
		return globalPool(n.Op, in[0], out), nil
	case ir.BatchNormalization:
		return batchNorm(a, in, out)
	case ir.LRN:
		return lrn(a, in[0], out)
	case ir.Transpose:
		return transpose(a, in[0], out)
	case ir.Concat:
		return concat(a, in, out)
	case ir.Pad:
		return pad(a, in[0], out)
	case ir.Softmax:
		return softmax(a, in[0], out, false)
	case ir.LogSoftmax:
		return softmax(a, in[0], out, true)
	case ir.Slice, ir.Gather:
		return selection(n.Op, a, in[0], out)
	case ir.ReduceSum, ir.ReduceMean, ir.ReduceMax:
		return reduce(n.Op, a, in[0], out)
	case ir.LayerNormalization:
		return layerNorm(a, in, out)
	case ir.Erf:
		return unary(in[0], out, func(x float32) float32 { return float32(math.Erf(float64(x))) }), nil
	case ir.ArgMax:
		return argMax(a, in[0], out)
	case ir.Requant:
		return requant(a, in, out)
	}
	return nil, fmt.Errorf("operator %q is not supported by the interpreter", n.Op)
}

func unary(in, out *slot, f func(float32) float32) func() {
	return func() {
		dst := out.data
		for i, x := range in.data[:len(dst)] {
			dst[i] = f(x)
		}
	}
}

func sigmoid(x float32) float32 {
	if x >= 0 {
		return float32(1 / (1 + math.Exp(-float64(x))))
	}
	e := math.Exp(float64(x))
	return float32(e / (1 + e))
}
