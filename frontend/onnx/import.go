package onnx

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cryptflow-go/cryptflow/ir"
)

// Options control the import.
type Options struct {
	// Batch fixes a symbolic batch dimension: the first dimension of a graph input given by a
	// dim_param, by 0 or left unknown. Zero means 1.
	Batch int
	// Inputs and Outputs cut the graph before the import (see Cut): the outputs (every declared
	// output when empty) are computed from the chosen input tensors, which become graph inputs.
	// Both empty: the whole graph as declared.
	Inputs  []Input
	Outputs []string
	// ExactInt8 imports quantized operators with the ONNX specification's exact integer
	// accumulators instead of ONNX Runtime's x86-64 AVX2 U8S8 kernels, which saturate pairs of
	// products to int16 (frontend/onnx/qsat.go).
	ExactInt8 bool
}

// Load reads an ONNX model file and imports it into HLIL.
func Load(path string, opts Options) (*ir.Graph, error) {
	m, err := ReadModel(path)
	if err != nil {
		return nil, err
	}
	g, err := Import(m, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if g.Name == "" {
		g.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	return g, nil
}

// Import converts a decoded model into a shape-checked HLIL graph. Operator semantics follow the
// opset version the model imports for the default domain. Unsupported operators, domains, data
// types and training-only features are errors wrapping ErrUnsupported.
func Import(m *Model, opts Options) (*ir.Graph, error) {
	return importLimited(m, opts, MaxElements)
}

// importLimited is Import with a bound on folded constants (the fuzz test uses a small one).
func importLimited(m *Model, opts Options, limit int) (*ir.Graph, error) {
	if m == nil || m.Graph == nil {
		return nil, errors.New("import: model has no graph")
	}
	if opts.Batch < 0 {
		return nil, fmt.Errorf("import: batch %d is negative", opts.Batch)
	}
	if opts.Batch == 0 {
		opts.Batch = 1
	}
	src := m.Graph
	if len(opts.Inputs) > 0 || len(opts.Outputs) > 0 {
		var err error
		if src, err = Cut(src, opts.Inputs, opts.Outputs); err != nil {
			return nil, fmt.Errorf("import: %w", err)
		}
	}
	im := &importer{
		opset:  m.Opset(),
		opts:   opts,
		g:      ir.NewGraph(m.Graph.Name),
		consts: map[string]*constant{},
		taken:  map[string]bool{},
		uses:   map[string]int{},
		limit:  limit,
	}
	if err := im.run(src); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	return im.g, nil
}

// importer holds the state of one import.
type importer struct {
	opset  int64
	opts   Options
	g      *ir.Graph
	consts map[string]*constant // known values by ONNX name (not yet necessarily in g.Consts)
	taken  map[string]bool      // every name in use, for generating fresh ones
	uses   map[string]int       // how often each value is read (node inputs and graph outputs)
	limit  int                  // largest constant (in elements) that folding may create
	// dequantized names the outputs of DequantizeLinear (with their parameters), imported as the
	// integers they read: only Shape and the graph outputs may read them (checkDequantized).
	dequantized map[string]ir.Quant
}

// opHandler imports one ONNX node.
type opHandler func(im *importer, n *Node) error

// handlers maps each supported ONNX op_type (default domain) to its importer.
var handlers map[string]opHandler

func init() {
	handlers = map[string]opHandler{
		"Conv": (*importer).conv, "MaxPool": (*importer).pool, "AveragePool": (*importer).pool,
		"GlobalAveragePool": (*importer).unary, "GlobalMaxPool": (*importer).unary,
		"Gemm": (*importer).gemm, "MatMul": (*importer).matmul,
		"Add": (*importer).binary, "Sub": (*importer).binary, "Mul": (*importer).binary, "Div": (*importer).binary,
		"Sum": (*importer).sum, "Relu": (*importer).unary, "Sigmoid": (*importer).unary, "Tanh": (*importer).unary, "Exp": (*importer).unary,
		"LeakyRelu": (*importer).leakyRelu, "Clip": (*importer).clip,
		"BatchNormalization": (*importer).batchNorm, "LRN": (*importer).lrn,
		"Flatten": (*importer).flatten, "Reshape": (*importer).reshape, "Transpose": (*importer).transpose,
		"Concat": (*importer).concat, "Pad": (*importer).pad, "Squeeze": (*importer).squeeze,
		"Unsqueeze": (*importer).unsqueeze, "Identity": (*importer).identity, "Dropout": (*importer).dropout,
		"Softmax": (*importer).softmax, "LogSoftmax": (*importer).logSoftmax, "ArgMax": (*importer).argmax,
		"Constant": (*importer).constantNode, "ConstantOfShape": (*importer).constantOfShape, "Expand": (*importer).expand,
		"Shape": (*importer).shapeNode, "Gather": (*importer).gather, "Cast": (*importer).cast,
		"Slice": (*importer).slice, "HardSigmoid": (*importer).hardSigmoid, "HardSwish": (*importer).hardSwish,
		"ReduceSum": (*importer).reduce, "ReduceMean": (*importer).reduce, "ReduceMax": (*importer).reduce,
		"Erf": (*importer).unary, "Pow": (*importer).pow, "Gelu": (*importer).gelu,
		"LayerNormalization": (*importer).layerNorm,
		"RNN":                (*importer).recurrent, "GRU": (*importer).recurrent, "LSTM": (*importer).recurrent,
		"If":             (*importer).ifNode,
		"QuantizeLinear": (*importer).quantizeLinear, "DequantizeLinear": (*importer).dequantizeLinear, "QLinearConv": (*importer).qlinearConv, "QLinearMatMul": (*importer).qlinearMatMul, "ConvInteger": (*importer).convInteger, "MatMulInteger": (*importer).matMulInteger,
		msDomain + "QLinearAdd": (*importer).qlinearAdd, msDomain + "QLinearGlobalAveragePool": (*importer).qlinearGlobalAveragePool,
	}
}

// SupportedOps returns the ONNX operators (default domain) the importer accepts, sorted.
func SupportedOps() []string {
	ops := make([]string, 0, len(handlers))
	for op := range handlers {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
}

func isDefaultDomain(d string) bool { return d == "" || d == "ai.onnx" }

// msDomain prefixes the handler keys of com.microsoft operators.
const msDomain = "com.microsoft::"

// handlerKey is the handlers key of a node: its op_type, prefixed by its domain when that is
// not the default one.
func handlerKey(n *Node) string {
	if isDefaultDomain(n.Domain) {
		return n.OpType
	}
	return n.Domain + "::" + n.OpType
}

// checkOps reports every unsupported operator of the graph in one error.
func checkOps(g *Graph) error {
	type bad struct {
		first *Node
		count int
	}
	found := map[string]*bad{}
	var order []string
	for _, n := range g.Nodes {
		key := handlerKey(n)
		if _, ok := handlers[key]; ok {
			continue
		}
		if b, ok := found[key]; ok {
			b.count++
			continue
		}
		found[key] = &bad{first: n, count: 1}
		order = append(order, key)
	}
	if len(order) == 0 {
		return nil
	}
	// Short: at most maxListed groups, then a count of the rest.
	const maxListed = 8
	var parts []string
	quantized, control := false, false
	for i, k := range order {
		b := found[k]
		if i < maxListed {
			parts = append(parts, fmt.Sprintf("%s (%d node(s), first %s)", k, b.count, b.first))
		}
		op := b.first.OpType
		quantized = quantized || strings.HasPrefix(op, "QLinear") || strings.HasPrefix(op, "QGemm") ||
			strings.HasSuffix(op, "QuantizeLinear") || strings.HasSuffix(op, "Integer")
		control = control || op == "Loop" || op == "Scan"
	}
	if len(order) > maxListed {
		parts = append(parts, fmt.Sprintf("and %d more operator(s)", len(order)-maxListed))
	}
	var hints string
	if quantized {
		hints += "; hint: int8 (quantized) models run when made of QuantizeLinear (of an input), QLinearConv, QLinearMatMul, QLinearAdd, QLinearGlobalAveragePool, ConvInteger, MatMulInteger and DequantizeLinear (of an output); for other quantized operators (or QDQ graphs) compile the float model they were quantized from"
	}
	if control {
		hints += "; hint: Loop/Scan (and If with a runtime predicate) are control flow, which a secure program cannot branch on: export with a static sequence length and unrolled loops, or cut the graph around it with --inputs/--outputs"
	}
	return fmt.Errorf("%w operator(s): %s%s; supported operators (default domain): %s",
		ErrUnsupported, strings.Join(parts, ", "), hints, strings.Join(SupportedOps(), ", "))
}

func (im *importer) run(src *Graph) error {
	if err := checkOps(src); err != nil {
		return err
	}
	for _, t := range src.Initializers {
		im.taken[t.Name] = true
	}
	for _, v := range src.Inputs {
		im.taken[v.Name] = true
	}
	im.countUses(src.Nodes)
	for _, o := range src.Outputs {
		im.uses[o.Name]++
	}

	for _, t := range src.Initializers {
		if t.Name == "" {
			return errors.New("initializer without a name")
		}
		if _, dup := im.consts[t.Name]; dup {
			return fmt.Errorf("initializer %q defined twice", t.Name)
		}
		if t.DataType == String {
			continue // never usable by HLIL; an error arises only if something reads it
		}
		c, err := constFromTensor(t)
		if err != nil {
			return fmt.Errorf("initializer %q: %w", t.Name, err)
		}
		im.consts[t.Name] = c
	}
	for _, v := range src.Inputs {
		if _, isConst := im.consts[v.Name]; isConst {
			continue // IR < 4 lists initializers among the inputs
		}
		val, err := im.graphInput(v)
		if err != nil {
			return err
		}
		im.g.Inputs = append(im.g.Inputs, val)
		vv := val
		vv.Shape = val.Shape.Clone()
		im.g.Values[val.Name] = &vv
	}
	if err := im.importNodes(src.Nodes); err != nil {
		return err
	}
	if err := im.checkDequantized(src); err != nil {
		return err
	}
	for _, o := range src.Outputs {
		if err := im.graphOutput(o.Name); err != nil {
			return err
		}
		if q, ok := im.dequantized[o.Name]; ok {
			if im.g.OutputQuant == nil {
				im.g.OutputQuant = map[string]ir.Quant{}
			}
			im.g.OutputQuant[o.Name] = q
		}
	}
	if err := im.g.InferShapes(); err != nil {
		return err
	}
	return nil
}

// countUses records the names the nodes define and how often each value is read, including
// reads from inside subgraphs (If branches), which may use outer values.
func (im *importer) countUses(nodes []*Node) {
	for _, n := range nodes {
		for _, o := range n.Outputs {
			im.taken[o] = true
		}
		for _, in := range n.Inputs {
			if in != "" {
				im.uses[in]++
			}
		}
		for _, a := range n.Attrs {
			if a.G != nil {
				for _, t := range a.G.Initializers {
					im.taken[t.Name] = true
				}
				im.countUses(a.G.Nodes)
				for _, o := range a.G.Outputs {
					im.uses[o.Name]++
				}
			}
		}
	}
}

// importNodes imports nodes in order.
func (im *importer) importNodes(nodes []*Node) error {
	for _, n := range nodes {
		for _, in := range n.Inputs {
			if in != "" && !im.defined(in) {
				return fmt.Errorf("%s: input %q is not defined by an earlier node, an initializer or a graph input", n, in)
			}
		}
		for _, o := range n.Outputs {
			if o != "" && im.defined(o) {
				return fmt.Errorf("%s: output %q is already defined", n, o)
			}
		}
		if err := handlers[handlerKey(n)](im, n); err != nil {
			if strings.HasPrefix(err.Error(), n.String()) {
				return err // already names the node (an HLIL shape error on a same-named node)
			}
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	return nil
}

// graphInput checks a runtime input and fixes its batch dimension.
func (im *importer) graphInput(v *ValueInfo) (ir.Value, error) {
	if v.Kind != KindTensor {
		return ir.Value{}, fmt.Errorf("graph input %q: %w input of kind %s", v.Name, ErrUnsupported, v.Kind)
	}
	if !v.ElemType.IsFloat() {
		return ir.Value{}, fmt.Errorf("graph input %q: %w element type %s (only floating-point inputs are supported)", v.Name, ErrUnsupported, v.ElemType)
	}
	if v.ElemType != Float {
		// float16, bfloat16 and double inputs are float32 in HLIL; the declared type is kept so
		// that the client converts its data.
		if im.g.InputTypes == nil {
			im.g.InputTypes = map[string]string{}
		}
		im.g.InputTypes[v.Name] = v.ElemType.String()
	}
	if !v.HasShape {
		return ir.Value{}, fmt.Errorf("graph input %q has no declared shape", v.Name)
	}
	shape := make(ir.Shape, len(v.Shape))
	for i, d := range v.Shape {
		switch {
		case d.HasValue && d.Value > 0:
			if d.Value > MaxElements {
				return ir.Value{}, fmt.Errorf("graph input %q: dimension %d is too large", v.Name, d.Value)
			}
			shape[i] = int(d.Value)
		case i == 0 && (!d.HasValue || d.Value == 0):
			shape[i] = im.opts.Batch
		case d.HasValue:
			return ir.Value{}, fmt.Errorf("graph input %q: dimension %d is %d", v.Name, i, d.Value)
		case d.Param != "":
			return ir.Value{}, fmt.Errorf("graph input %q: dimension %d is symbolic (%q); only the first (batch) dimension may be: give a static shape with --inputs %s:%s (the declared shape is %s; put the size you run for each symbolic dimension)",
				v.Name, i, d.Param, v.Name, im.suggestShape(v), dimsString(v.Shape))
		default:
			return ir.Value{}, fmt.Errorf("graph input %q: dimension %d is unknown; only the first (batch) dimension may be: give a static shape with --inputs %s:%s (the declared shape is %s)",
				v.Name, i, v.Name, im.suggestShape(v), dimsString(v.Shape))
		}
	}
	if _, err := numElements(toInt64s(shape)); err != nil {
		return ir.Value{}, fmt.Errorf("graph input %q: %w", v.Name, err)
	}
	return ir.Value{Name: v.Name, DType: ir.Float32, Shape: shape}, nil
}

// graphOutput makes sure a graph output is an HLIL value (or a materialised float constant).
func (im *importer) graphOutput(name string) error {
	if _, ok := im.g.Values[name]; ok {
		im.g.Outputs = append(im.g.Outputs, name)
		return nil
	}
	c, ok := im.consts[name]
	if !ok {
		return fmt.Errorf("graph output %q is never produced", name)
	}
	if c.isInt() {
		return fmt.Errorf("graph output %q: %w: constant %s output", name, ErrUnsupported, c.dtype)
	}
	// A constant result: keep the constant under a fresh name and copy it out with Identity, so
	// that the output is an ordinary value.
	t, err := c.tensor()
	if err != nil {
		return err
	}
	cname := im.fresh(name + "/const")
	im.g.Consts[cname] = t
	if err := im.addNode(&ir.Node{Op: ir.Identity, Inputs: []string{cname}, Outputs: []string{name}, Attrs: ir.Attrs{}}); err != nil {
		return err
	}
	im.g.Outputs = append(im.g.Outputs, name)
	return nil
}

// suggestShape proposes a static shape for an input with symbolic or unknown dimensions: the
// batch for the first, the declared size where there is one, 1 elsewhere.
func (im *importer) suggestShape(v *ValueInfo) string {
	parts := make([]string, len(v.Shape))
	for i, d := range v.Shape {
		switch {
		case d.HasValue && d.Value > 0:
			parts[i] = fmt.Sprint(d.Value)
		case i == 0:
			parts[i] = fmt.Sprint(im.opts.Batch)
		default:
			parts[i] = "1"
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func toInt64s(s []int) []int64 {
	out := make([]int64, len(s))
	for i, v := range s {
		out[i] = int64(v)
	}
	return out
}

// defined reports whether a name is a known constant or runtime value.
func (im *importer) defined(name string) bool {
	if _, ok := im.consts[name]; ok {
		return true
	}
	_, ok := im.g.Values[name]
	return ok
}

// fresh returns an unused name derived from base.
func (im *importer) fresh(base string) string {
	name := base
	for k := 1; im.taken[name]; k++ {
		name = fmt.Sprintf("%s_%d", base, k)
	}
	im.taken[name] = true
	return name
}

// constOf returns the constant value of a name, or nil for a runtime value.
func (im *importer) constOf(name string) *constant { return im.consts[name] }

// data returns the HLIL name under which an ONNX value is read as float data, materialising a
// constant into g.Consts on first use.
func (im *importer) data(name string) (string, error) {
	if _, ok := im.g.Values[name]; ok {
		return name, nil
	}
	c, ok := im.consts[name]
	if !ok {
		return "", fmt.Errorf("value %q is not defined", name)
	}
	if _, done := im.g.Consts[name]; done {
		return name, nil
	}
	t, err := c.tensor()
	if err != nil {
		return "", fmt.Errorf("input %q: %w", name, err)
	}
	im.g.Consts[name] = t
	return name, nil
}

// shape returns the static shape of a constant or runtime value.
func (im *importer) shape(name string) (ir.Shape, error) {
	if c, ok := im.consts[name]; ok {
		return c.shape, nil
	}
	if v, ok := im.g.Values[name]; ok {
		return v.Shape, nil
	}
	return nil, fmt.Errorf("value %q is not defined", name)
}

// addNode appends an HLIL node and infers its output.
func (im *importer) addNode(n *ir.Node) error {
	im.g.Nodes = append(im.g.Nodes, n)
	return ir.InferNode(im.g, n)
}

// emit appends an HLIL node for ONNX node src with the given data inputs (ONNX names, resolved
// through data) and output.
func (im *importer) emit(src *Node, op ir.Op, inputs []string, output string, attrs ir.Attrs) error {
	ins := make([]string, len(inputs))
	for i, in := range inputs {
		var err error
		if ins[i], err = im.data(in); err != nil {
			return err
		}
	}
	return im.addNode(&ir.Node{Name: src.Name, Op: op, Inputs: ins, Outputs: []string{output}, Attrs: attrs})
}

// setConst records the folded value of an ONNX output.
func (im *importer) setConst(name string, c *constant) error {
	if err := checkSize(c.shape, im.limit); err != nil {
		return err
	}
	im.consts[name] = c
	return nil
}

// allConst reports whether every non-empty input of n is a known constant.
func (im *importer) allConst(n *Node) bool {
	for _, in := range n.Inputs {
		if in != "" && im.consts[in] == nil {
			return false
		}
	}
	return true
}

// input returns the i-th input name of n, or "" when it is absent or omitted.
func input(n *Node, i int) string {
	if i < len(n.Inputs) {
		return n.Inputs[i]
	}
	return ""
}

// output returns the first output name of n.
func output(n *Node) (string, error) {
	if len(n.Outputs) == 0 || n.Outputs[0] == "" {
		return "", errors.New("node has no output")
	}
	return n.Outputs[0], nil
}

// arityOutput checks the inputs of n with arity and returns its output name.
func arityOutput(n *Node, lo, hi int) (string, error) {
	if err := arity(n, lo, hi); err != nil {
		return "", err
	}
	return output(n)
}

// outputShape returns the output name of n and the shape of its first input.
func (im *importer) outputShape(n *Node) (string, ir.Shape, error) {
	out, err := output(n)
	if err != nil {
		return "", nil, err
	}
	xs, err := im.shape(n.Inputs[0])
	if err != nil {
		return "", nil, err
	}
	return out, xs, nil
}

// arityOutputShape checks the inputs of n with arity, then returns its output name and the shape
// of its first input.
func (im *importer) arityOutputShape(n *Node, lo, hi int) (string, ir.Shape, error) {
	if err := arity(n, lo, hi); err != nil {
		return "", nil, err
	}
	return im.outputShape(n)
}

// arity checks the number of (non-trailing-empty) inputs.
func arity(n *Node, lo, hi int) error {
	k := len(n.Inputs)
	for k > 0 && n.Inputs[k-1] == "" {
		k--
	}
	if k < lo || k > hi {
		if lo == hi {
			return fmt.Errorf("has %d inputs, want %d", k, lo)
		}
		return fmt.Errorf("has %d inputs, want %d to %d", k, lo, hi)
	}
	for i := 0; i < lo; i++ {
		if n.Inputs[i] == "" {
			return fmt.Errorf("required input %d is empty", i)
		}
	}
	return nil
}

// extraOutputsUnused checks that outputs after the first are absent or unread; what names a
// training-only or index output in the error.
func (im *importer) extraOutputsUnused(n *Node, what string) error {
	for i, o := range n.Outputs {
		if i == 0 || o == "" {
			continue
		}
		if im.uses[o] > 0 {
			return fmt.Errorf("%w: output %d (%q, %s) is used", ErrUnsupported, i, o, what)
		}
	}
	return nil
}
