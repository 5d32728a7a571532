// Package ir holds HLIL, the high-level intermediate language of cryptflow-go: a typed, statically
// shaped dataflow graph of float32 tensors whose operators are the layers of CNN classifiers.
//
// HLIL is canonical. Every operator has one meaning whatever ONNX opset the model came from; the
// front end resolves opset differences (Clip bounds given as inputs or attributes, Squeeze axes as
// inputs, Softmax's pre-13 coercion to 2-D, auto_pad, ...) and fills in every attribute, so that
// later passes never look at defaults or opsets. The attribute schema of each operator is
// documented on its Op constant.
//
// A Graph is in topological order: a node's inputs are graph inputs, constants, or outputs of
// earlier nodes. Every value has a static shape once InferShapes has run.
package ir

import (
	"fmt"
	"sort"
	"strings"
)

// DType is the element type of a value. HLIL computes in float32; Int64 appears only as the
// output of ArgMax.
type DType uint8

const (
	Float32 DType = iota
	Int64
)

func (d DType) String() string {
	switch d {
	case Float32:
		return "f32"
	case Int64:
		return "i64"
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Shape is a static tensor shape. A scalar has an empty shape.
type Shape []int

// Size is the number of elements of a tensor of this shape.
func (s Shape) Size() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Equal reports whether two shapes are identical.
func (s Shape) Equal(t Shape) bool {
	if len(s) != len(t) {
		return false
	}
	for i := range s {
		if s[i] != t[i] {
			return false
		}
	}
	return true
}

// Clone returns a copy of s that shares no memory with it. A scalar (empty, non-nil) shape stays
// non-nil: a nil Shape means "unknown".
func (s Shape) Clone() Shape {
	if s == nil {
		return nil
	}
	return append(Shape{}, s...)
}

func (s Shape) String() string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Tensor is a constant float32 tensor: row-major (C order) data and its shape.
type Tensor struct {
	Shape Shape
	Data  []float32
}

// NewTensor returns a zero tensor of the given shape.
func NewTensor(shape Shape) *Tensor {
	return &Tensor{Shape: shape.Clone(), Data: make([]float32, shape.Size())}
}

// Value is a named edge of the graph with its type and static shape.
type Value struct {
	Name  string
	DType DType
	Shape Shape
}

// Node is one operator application.
type Node struct {
	Name    string   // the source node's name (for error messages); may be empty
	Op      Op       // operator
	Inputs  []string // names of values or constants; "" never appears (optional inputs are dropped or made explicit)
	Outputs []string // names of produced values
	Attrs   Attrs
}

// String returns a short description of the node for error messages.
func (n *Node) String() string {
	if n.Name != "" {
		return fmt.Sprintf("%s node %q", n.Op, n.Name)
	}
	if len(n.Outputs) > 0 {
		return fmt.Sprintf("%s node producing %q", n.Op, n.Outputs[0])
	}
	return fmt.Sprintf("%s node", n.Op)
}

// Graph is an HLIL program.
type Graph struct {
	Name    string
	Inputs  []Value            // runtime inputs, in order
	Outputs []string           // names of the graph's results, in order
	Consts  map[string]*Tensor // constants (weights, biases, folded values) by name
	Nodes   []*Node            // in topological order
	Values  map[string]*Value  // type and shape of every input and node output (filled by InferShapes)
	// InputTypes records, for graph inputs the model declares with another floating-point element
	// type (ONNX float16, bfloat16, double), that declared type ("float16", ...). HLIL computes in
	// float32: the client converts its data to float32 before encoding it. Nil when every input
	// is float32.
	InputTypes map[string]string
	// InputQuant records, for graph inputs that a quantized model quantizes at once (ONNX
	// QuantizeLinear of a graph input, imported as Identity), how: the client quantizes its float
	// data the same way before encoding it, so the program's input is the integer tensor.
	// OutputQuant records, for graph outputs that the model dequantizes (DequantizeLinear), the
	// parameters the receiver dequantizes the revealed integers with. Nil in float models.
	InputQuant, OutputQuant map[string]Quant
}

// Quant is one tensor's linear quantization (ONNX QuantizeLinear/DequantizeLinear with a scalar
// scale and zero point): q = clamp(round(x/Scale) + ZeroPoint) into Type's range, and back
// x = (q − ZeroPoint)·Scale.
type Quant struct {
	Scale     float32
	ZeroPoint int64
	Type      string // "uint8" or "int8"
}

// NewGraph returns an empty graph.
func NewGraph(name string) *Graph {
	return &Graph{Name: name, Consts: map[string]*Tensor{}, Values: map[string]*Value{}}
}

// ConstNames returns the names of the constants in sorted order.
func (g *Graph) ConstNames() []string {
	names := make([]string, 0, len(g.Consts))
	for n := range g.Consts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// ShapeOf returns the static shape of a value or constant, and whether it is known.
func (g *Graph) ShapeOf(name string) (Shape, bool) {
	if c, ok := g.Consts[name]; ok {
		return c.Shape, true
	}
	if v, ok := g.Values[name]; ok && v.Shape != nil {
		return v.Shape, true
	}
	return nil, false
}

// Producers maps each node output to the node that produces it.
func (g *Graph) Producers() map[string]*Node {
	m := make(map[string]*Node, len(g.Nodes))
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			m[o] = n
		}
	}
	return m
}

// Consumers maps each value or constant name to the nodes that read it, in graph order.
func (g *Graph) Consumers() map[string][]*Node {
	m := map[string][]*Node{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			m[in] = append(m[in], n)
		}
	}
	return m
}
