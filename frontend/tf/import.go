package tf

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/readfile"
	"github.com/cryptflow-go/cryptflow/ir"
)

// Options control the import.
type Options struct {
	// Inputs names the tensors that become graph inputs, each with an optional shape. A named
	// tensor may be the output of any node (the graph is cut there: whatever computes it is
	// dropped). Placeholders that the outputs depend on and that are not listed become inputs
	// with their declared shapes. Graph inputs come in this order, then unlisted placeholders in
	// graph order.
	Inputs []Input
	// Outputs names the tensors ("node" or "node:k") that become graph outputs. Empty means every
	// node whose outputs nothing reads (other than Const, NoOp and placeholders).
	Outputs []string
	// Batch replaces a -1 (unknown) first dimension of an input shape. Zero means 1.
	Batch int
}

// Input is one graph input: a tensor name and, optionally, its shape.
type Input struct {
	Name  string // "node" or "node:k"
	Shape []int  // nil: the placeholder's declared shape; a -1 first dimension becomes Options.Batch
}

// ParseInput parses an input specification NAME[:SHAPE] as given on a command line. SHAPE is a
// bracketed list "[1,49,10]" or a bare comma-separated list "1,49,10" (a one-dimensional shape
// must be bracketed, since "name:3" names output 3 of node name); -1 may stand for the batch.
func ParseInput(spec string) (Input, error) {
	spec = strings.TrimSpace(spec)
	if spec == "" {
		return Input{}, errors.New("empty input specification")
	}
	i := strings.LastIndexByte(spec, ':')
	if i < 0 {
		return Input{Name: spec}, nil
	}
	name, rest := spec[:i], strings.TrimSpace(spec[i+1:])
	bracketed := strings.HasPrefix(rest, "[") && strings.HasSuffix(rest, "]")
	if !bracketed && !strings.Contains(rest, ",") {
		if _, err := strconv.Atoi(rest); err == nil {
			return Input{Name: spec}, nil // an output index, not a shape
		}
		return Input{}, fmt.Errorf("input %q: %q is neither an output index nor a shape like [1,28,28,1]", spec, rest)
	}
	if name == "" {
		return Input{}, fmt.Errorf("input %q has no node name", spec)
	}
	if bracketed {
		rest = rest[1 : len(rest)-1]
	}
	var shape []int
	if strings.TrimSpace(rest) != "" {
		for _, p := range strings.Split(rest, ",") {
			d, err := strconv.Atoi(strings.TrimSpace(p))
			if err != nil || d < -1 {
				return Input{}, fmt.Errorf("input %q: bad dimension %q", spec, p)
			}
			shape = append(shape, d)
		}
	} else {
		shape = []int{}
	}
	return Input{Name: name, Shape: shape}, nil
}

// freezeHelp tells how to turn a SavedModel or checkpoint into a frozen GraphDef.
const freezeHelp = `freeze it into a GraphDef first, with TensorFlow installed:
  TF 2: python -c "import tensorflow as tf; from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2 as c; m=tf.saved_model.load('DIR'); f=c(m.signatures['serving_default']); open('frozen.pb','wb').write(f.graph.as_graph_def().SerializeToString())"
  TF 1: freeze_graph --input_saved_model_dir=DIR --output_node_names=OUT --output_graph=frozen.pb`

// ReadGraphDef reads and decodes a frozen GraphDef file. A SavedModel (a directory holding
// saved_model.pb and variables/, or that saved_model.pb itself) is an error explaining how to
// freeze it.
func ReadGraphDef(path string) (*GraphDef, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		if _, err := os.Stat(filepath.Join(path, "saved_model.pb")); err == nil {
			return nil, fmt.Errorf("%s is a TensorFlow SavedModel directory, not a frozen GraphDef: %w; %s", path, ErrUnsupported, freezeHelp)
		}
		return nil, fmt.Errorf("%s is a directory, not a frozen GraphDef file", path)
	}
	b, err := readfile.ReadFile(context.Background(), path)
	if err != nil {
		return nil, err
	}
	if filepath.Base(path) == "saved_model.pb" || looksLikeSavedModel(b) {
		return nil, fmt.Errorf("%s is a TensorFlow SavedModel, not a frozen GraphDef: %w; %s", path, ErrUnsupported, freezeHelp)
	}
	g, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(g.Nodes) == 0 {
		return nil, fmt.Errorf("%s: GraphDef has no nodes", path)
	}
	return g, nil
}

// Load reads a frozen GraphDef file and imports it into HLIL.
func Load(path string, opts Options) (*ir.Graph, error) {
	gd, err := ReadGraphDef(path)
	if err != nil {
		return nil, err
	}
	g, err := Import(gd, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	g.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	return g, nil
}

// Import converts a decoded GraphDef into a shape-checked HLIL graph. Unsupported operators and
// types are errors wrapping ErrUnsupported.
func Import(gd *GraphDef, opts Options) (*ir.Graph, error) {
	return importLimited(gd, opts, MaxElements)
}

func importLimited(gd *GraphDef, opts Options, limit int) (*ir.Graph, error) {
	if gd == nil {
		return nil, errors.New("import: no graph")
	}
	if opts.Batch < 0 {
		return nil, fmt.Errorf("import: batch %d is negative", opts.Batch)
	}
	if opts.Batch == 0 {
		opts.Batch = 1
	}
	im := &importer{
		opts:   opts,
		nodes:  map[string]*NodeDef{},
		g:      ir.NewGraph("graph"),
		vals:   map[string]*value{},
		taken:  map[string]bool{},
		limit:  limit,
		consts: map[*tconst]map[string]string{},
		scalar: map[float32]string{},
		dead:   map[string]bool{},
	}
	if err := im.run(gd); err != nil {
		return nil, fmt.Errorf("import: %w", err)
	}
	return im.g, nil
}

// value is what the importer knows about one TF tensor: a constant, or a runtime HLIL value.
// A runtime value of TF shape S is held in HLIL as name, the transpose of the TF tensor by perm
// (HLIL dims[i] = S[perm[i]]); alt caches the same tensor in other layouts.
type value struct {
	c     *tconst
	key   string // the TF tensor name ("node" or "node:k"), used to name derived HLIL values
	shape ir.Shape
	dtype ir.DType
	perm  []int
	name  string
	alt   map[string]string
	dead  bool // the untaken output of a Switch
}

// deadValue stands for a tensor that a Switch with a constant predicate never produces.
var deadValue = &value{dead: true}

func (v *value) rank() int {
	if v.c != nil {
		return len(v.c.shape)
	}
	return len(v.shape)
}

func (v *value) tfShape() ir.Shape {
	if v.c != nil {
		return v.c.shape
	}
	return v.shape
}

// importer holds the state of one import.
type importer struct {
	opts     Options
	nodes    map[string]*NodeDef
	g        *ir.Graph
	vals     map[string]*value // by canonical tensor key
	taken    map[string]bool   // TF node names and tensor keys (HLIL may use a key only for its own tensor)
	limit    int
	consts   map[*tconst]map[string]string // HLIL constant names of each folded constant, by layout
	scalar   map[float32]string            // HLIL scalar constants by value
	isOutput map[string]bool               // the requested output tensors
	producer int64                         // GraphDef version of the writer
	dead     map[string]bool               // nodes on branches that constant Switch predicates never take
}

// unknownShape reports whether a placeholder's shape attribute leaves the shape unknown. Graphs
// written up to GraphDef version 21 used an empty (scalar) shape for that, as TF still reads them.
func (im *importer) unknownShape(s *TensorShape) bool {
	return s == nil || s.UnknownRank || (len(s.Dims) == 0 && im.producer <= 21)
}

// tensorKey is the canonical name of output k of a node: the node name for output 0.
func tensorKey(node string, k int) string {
	if k == 0 {
		return node
	}
	return node + ":" + strconv.Itoa(k)
}

// canonical returns the canonical key of a tensor name, and its node.
func canonical(name string) (key, node string, err error) {
	node, k, control, err := parseInput(name)
	if err != nil {
		return "", "", err
	}
	if control {
		return "", "", fmt.Errorf("%q is a control input, not a tensor", name)
	}
	return tensorKey(node, k), node, nil
}

func (im *importer) run(gd *GraphDef) error {
	im.producer = gd.Producer
	for _, n := range gd.Nodes {
		if strings.ContainsAny(n.Name, ":^") || !printable(n.Name) {
			return fmt.Errorf("invalid node name %q", n.Name)
		}
		if _, dup := im.nodes[n.Name]; dup {
			return fmt.Errorf("node %q is defined twice", n.Name)
		}
		im.nodes[n.Name] = n
		im.taken[n.Name] = true
	}
	// Inputs requested by the caller.
	cut := map[string]Input{}
	var cutOrder []string
	for _, in := range im.opts.Inputs {
		key, node, err := canonical(in.Name)
		if err != nil {
			return fmt.Errorf("input %q: %w", in.Name, err)
		}
		if _, ok := im.nodes[node]; !ok {
			return fmt.Errorf("input %q: the graph has no node %q", in.Name, node)
		}
		if _, dup := cut[key]; dup {
			return fmt.Errorf("input %q is given twice", in.Name)
		}
		cut[key] = in
		cutOrder = append(cutOrder, key)
	}
	outputs, err := im.outputs(gd)
	if err != nil {
		return err
	}
	im.isOutput = map[string]bool{}
	for _, o := range outputs {
		im.isOutput[o] = true
	}
	order, reached, err := im.order(outputs, cut)
	if err != nil {
		return err
	}
	if err := checkOps(order); err != nil {
		return err
	}
	for _, key := range cutOrder {
		if !reached[key] {
			return fmt.Errorf("input %q does not feed the outputs %v", cut[key].Name, outputs)
		}
		_, node, _ := canonical(key)
		if err := im.graphInput(im.nodes[node], key, cut[key].Shape); err != nil {
			return err
		}
	}
	for _, n := range order {
		if err := im.node(n); err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
	}
	for _, o := range outputs {
		if err := im.graphOutput(o); err != nil {
			return err
		}
	}
	fuseClips(im.g)
	fuseAffine(im.g)
	fuseReshapes(im.g)
	return im.g.InferShapes()
}

// outputs returns the canonical keys of the graph outputs.
func (im *importer) outputs(gd *GraphDef) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, o := range im.opts.Outputs {
		key, node, err := canonical(o)
		if err != nil {
			return nil, fmt.Errorf("output %q: %w", o, err)
		}
		if _, ok := im.nodes[node]; !ok {
			return nil, fmt.Errorf("output %q: the graph has no node %q", o, node)
		}
		if !seen[key] {
			out = append(out, key)
			seen[key] = true
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	read := map[string]bool{}
	for _, n := range gd.Nodes {
		for _, in := range n.Inputs {
			if node, _, control, err := parseInput(in); err == nil && !control {
				read[node] = true
			}
		}
	}
	for _, n := range gd.Nodes {
		switch n.Op {
		case "Const", "NoOp", "Placeholder", "PlaceholderWithDefault":
			continue
		}
		if !read[n.Name] {
			out = append(out, n.Name)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("the graph has no output node; name the outputs")
	}
	return out, nil
}

// order returns the nodes the outputs depend on in topological order (inputs first), not
// descending below the cut tensors, and the set of cut tensors reached. Control inputs are
// ignored: a frozen inference graph computes the same values without them.
func (im *importer) order(outputs []string, cut map[string]Input) ([]*NodeDef, map[string]bool, error) {
	const (
		unseen = iota
		active
		done
	)
	state := map[string]int{}
	reached := map[string]bool{}
	var order []*NodeDef
	type frame struct {
		n    *NodeDef
		next int
	}
	for _, o := range outputs {
		if cut[o].Name != "" {
			reached[o] = true
			continue
		}
		_, root, _ := canonical(o)
		if state[root] == done {
			continue
		}
		stack := []frame{{n: im.nodes[root]}}
		state[root] = active
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(top.n.Inputs) {
				state[top.n.Name] = done
				order = append(order, top.n)
				stack = stack[:len(stack)-1]
				continue
			}
			in := top.n.Inputs[top.next]
			top.next++
			node, k, control, err := parseInput(in)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", top.n, err)
			}
			if control {
				continue
			}
			if key := tensorKey(node, k); cut[key].Name != "" {
				reached[key] = true
				continue
			}
			src, ok := im.nodes[node]
			if !ok {
				return nil, nil, fmt.Errorf("%s: input %q names no node of the graph", top.n, in)
			}
			switch state[node] {
			case active:
				return nil, nil, fmt.Errorf("%s: the graph has a cycle through %q (while loops are not supported)", top.n, node)
			case unseen:
				state[node] = active
				stack = append(stack, frame{n: src})
			}
		}
	}
	return order, reached, nil
}

// checkOps reports every unsupported operator of the nodes in one error.
func checkOps(nodes []*NodeDef) error {
	type bad struct {
		first string
		count int
	}
	found := map[string]*bad{}
	var ops []string
	for _, n := range nodes {
		if _, ok := handlers[n.Op]; ok {
			continue
		}
		if b, ok := found[n.Op]; ok {
			b.count++
			continue
		}
		found[n.Op] = &bad{first: n.Name, count: 1}
		ops = append(ops, n.Op)
	}
	if len(ops) == 0 {
		return nil
	}
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s (%d node(s), first %q)", op, found[op].count, found[op].first)
	}
	return fmt.Errorf("%w TensorFlow op(s): %s; supported ops: %s (cut the graph below unsupported nodes with input names, e.g. NODE:[1,49,10])",
		ErrUnsupported, strings.Join(parts, ", "), strings.Join(SupportedOps(), ", "))
}

// SupportedOps returns the TensorFlow ops the importer accepts, sorted.
func SupportedOps() []string {
	ops := make([]string, 0, len(handlers))
	for op := range handlers {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	return ops
}

// node imports one TF node.
func (im *importer) node(n *NodeDef) error {
	var ins []*value
	for _, in := range n.Inputs {
		node, k, control, err := parseInput(in)
		if err != nil {
			return err
		}
		if control {
			continue
		}
		v, ok := im.vals[tensorKey(node, k)]
		if im.dead[node] {
			v, ok = deadValue, true
		}
		if !ok {
			return fmt.Errorf("input %q is not available (the importer defines only output 0 of %s nodes)", in, im.nodes[node].Op)
		}
		ins = append(ins, v)
	}
	if n.Op != "Merge" {
		for _, v := range ins {
			if v.dead {
				im.dead[n.Name] = true // on a branch a constant predicate never takes
				return nil
			}
		}
	}
	v, err := handlers[n.Op](im, n, ins)
	if err != nil {
		return err
	}
	if v != nil {
		if v.c != nil {
			if err := checkLimit(v.c.shape, im.limit); err != nil {
				return err
			}
		}
		im.vals[n.Name] = v
	}
	return nil
}

// checkLimit checks, without overflowing, that a shape has at most limit elements.
func checkLimit(s ir.Shape, limit int) error {
	n := 1
	for _, d := range s {
		if d < 0 {
			return fmt.Errorf("shape %v has a negative dimension", s)
		}
		if d > 0 && n > limit/d {
			return fmt.Errorf("shape %v has more than %d elements", s, limit)
		}
		n *= d
	}
	if n > limit {
		return fmt.Errorf("shape %v has more than %d elements", s, limit)
	}
	return nil
}

// graphInput makes TF tensor key (an output of node n) a graph input.
func (im *importer) graphInput(n *NodeDef, key string, shape []int) error {
	if shape == nil {
		if n.Op != "Placeholder" && n.Op != "PlaceholderWithDefault" {
			return fmt.Errorf("input %q: give its shape (e.g. %s:[1,49,10]); only placeholders declare one", key, key)
		}
		a := n.Attr["shape"]
		if a == nil || a.Kind != AttrShape || im.unknownShape(a.Shape) {
			return fmt.Errorf("input %q: placeholder has no declared shape; give one (e.g. %s:[1,784])", key, key)
		}
		for _, d := range a.Shape.Dims {
			shape = append(shape, int(d))
		}
		if shape == nil {
			shape = []int{}
		}
	}
	if n.Op == "Placeholder" || n.Op == "PlaceholderWithDefault" {
		if a := n.Attr["shape"]; a != nil && a.Kind == AttrShape && !im.unknownShape(a.Shape) {
			if err := compatible(a.Shape.Dims, shape); err != nil {
				return fmt.Errorf("input %q: %w", key, err)
			}
		}
		if a := n.Attr["dtype"]; a != nil && a.Kind == AttrType && !a.Type.IsFloat() {
			return fmt.Errorf("input %q: %w placeholder type %s (only float inputs)", key, ErrUnsupported, a.Type)
		}
	}
	s := make(ir.Shape, len(shape))
	for i, d := range shape {
		switch {
		case d > 0:
			s[i] = d
		case d == -1 && i == 0:
			s[i] = im.opts.Batch
		default:
			return fmt.Errorf("input %q: dimension %d of shape %v is unknown; only the first (batch) may be", key, i, shape)
		}
	}
	if err := checkLimit(s, MaxElements); err != nil {
		return fmt.Errorf("input %q: %w", key, err)
	}
	im.g.Inputs = append(im.g.Inputs, ir.Value{Name: key, DType: ir.Float32, Shape: s})
	im.g.Values[key] = &ir.Value{Name: key, DType: ir.Float32, Shape: s.Clone()}
	im.vals[key] = &value{key: key, shape: s, dtype: ir.Float32, perm: identity(len(s)), name: key}
	return nil
}

// graphOutput makes the TF tensor key a graph output, in the TF layout and under its TF name.
func (im *importer) graphOutput(key string) error {
	v, ok := im.vals[key]
	if _, node, _ := canonical(key); im.dead[node] || (ok && v.dead) {
		return fmt.Errorf("output %q lies on a branch that its constant predicate never takes", key)
	}
	if !ok {
		return fmt.Errorf("output %q is not computed", key)
	}
	for _, o := range im.g.Outputs {
		if o == key {
			return nil
		}
	}
	var src string
	if v.c != nil {
		src = im.constName(v.c, key, nil)
	} else {
		id := identity(v.rank())
		if _, cached := v.alt[permKey(id)]; !samePerm(v.perm, id) && !cached && !im.used(key) {
			// Transpose straight into the output name.
			if err := im.add("", ir.Transpose, []string{v.name}, key, ir.Attrs{"perm": ir.IntsAttr(invert(v.perm))}); err != nil {
				return err
			}
			im.g.Outputs = append(im.g.Outputs, key)
			return nil
		}
		var err error
		if src, err = im.hl(v, id); err != nil {
			return err
		}
	}
	if src != key {
		if im.used(key) {
			return fmt.Errorf("output %q: the name is already used", key)
		}
		if err := im.add("", ir.Identity, []string{src}, key, ir.Attrs{}); err != nil {
			return err
		}
	}
	im.g.Outputs = append(im.g.Outputs, key)
	return nil
}

// used reports whether an HLIL name is defined.
func (im *importer) used(name string) bool {
	if _, ok := im.g.Values[name]; ok {
		return true
	}
	_, ok := im.g.Consts[name]
	return ok
}

// fresh returns an unused HLIL name derived from base, avoiding TF names.
func (im *importer) fresh(base string) string {
	name := base
	for k := 1; im.taken[name] || im.used(name); k++ {
		name = fmt.Sprintf("%s_%d", base, k)
	}
	im.taken[name] = true
	return name
}

// outName returns the HLIL name for TF tensor key held in layout perm: the key itself in the TF
// layout (when free), a derived name otherwise.
func (im *importer) outName(key string, perm []int) string {
	if isIdentity(perm) && !im.used(key) {
		return key
	}
	return im.fresh(key + "/" + layoutTag(perm))
}

// add appends an HLIL node and infers its output.
func (im *importer) add(name string, op ir.Op, ins []string, out string, attrs ir.Attrs) error {
	n := &ir.Node{Name: name, Op: op, Inputs: ins, Outputs: []string{out}, Attrs: attrs}
	im.g.Nodes = append(im.g.Nodes, n)
	return ir.InferNode(im.g, n)
}

// emit adds an HLIL node computing TF node n's output in layout perm, and returns its value.
func (im *importer) emit(n *NodeDef, op ir.Op, ins []string, attrs ir.Attrs, tfShape ir.Shape, perm []int) (*value, error) {
	out := im.outName(n.Name, perm)
	if err := im.add(n.Name, op, ins, out, attrs); err != nil {
		return nil, err
	}
	dt := im.g.Values[out].DType
	return &value{key: n.Name, shape: tfShape.Clone(), dtype: dt, perm: perm, name: out}, nil
}

// constName returns the HLIL constant holding c transposed by perm (nil: as is), adding it on
// first use.
func (im *importer) constName(c *tconst, base string, perm []int) string {
	key := permKey(perm)
	if m, ok := im.consts[c]; ok {
		if name, ok := m[key]; ok {
			return name
		}
	} else {
		im.consts[c] = map[string]string{}
	}
	t := c
	if perm != nil && !isIdentity(perm) {
		t = transposeConst(c, perm)
	}
	var name string
	switch {
	case perm != nil && !isIdentity(perm):
		name = im.fresh(base + "/" + layoutTag(perm))
	case !im.used(base) && !im.isOutput[base]:
		name = base // the TF constant's own name, or a derived one (outputs must be values)
		im.taken[name] = true
	default:
		name = im.fresh(base)
	}
	im.g.Consts[name] = t.tensor()
	im.consts[c][key] = name
	return name
}

// scalarConst returns an HLIL scalar constant.
func (im *importer) scalarConst(x float32) string {
	if name, ok := im.scalar[x]; ok {
		return name
	}
	name := im.fresh("scalar/" + strconv.FormatFloat(float64(x), 'g', -1, 32))
	im.g.Consts[name] = &ir.Tensor{Shape: ir.Shape{}, Data: []float32{x}}
	im.scalar[x] = name
	return name
}

// hl returns the HLIL name of runtime value v held in layout perm, emitting a transpose (or a
// reshape, when only unit dimensions move) on first use.
func (im *importer) hl(v *value, perm []int) (string, error) {
	if v.c != nil {
		return im.constName(v.c, v.key, perm), nil
	}
	if samePerm(perm, v.perm) {
		return v.name, nil
	}
	key := permKey(perm)
	if name, ok := v.alt[key]; ok {
		return name, nil
	}
	// HLIL currently holds T(S, v.perm); we want T(S, perm): out[i] = cur[inv(v.perm)[perm[i]]].
	inv := invert(v.perm)
	q := make([]int, len(perm))
	for i, p := range perm {
		q[i] = inv[p]
	}
	cur := im.g.Values[v.name].Shape
	outShape := make(ir.Shape, len(q))
	for i, j := range q {
		outShape[i] = cur[j]
	}
	name := im.outName(v.key, perm)
	var err error
	if movesOnlyUnitDims(cur, q) {
		err = im.add("", ir.Reshape, []string{v.name}, name, ir.Attrs{"shape": ir.IntsAttr(outShape)})
	} else {
		err = im.add("", ir.Transpose, []string{v.name}, name, ir.Attrs{"perm": ir.IntsAttr(q)})
	}
	if err != nil {
		return "", err
	}
	if v.alt == nil {
		v.alt = map[string]string{}
	}
	v.alt[key] = name
	return name, nil
}

// movesOnlyUnitDims reports whether transposing shape s by q keeps the order of its non-unit
// dimensions, so that the transpose is a reshape.
func movesOnlyUnitDims(s ir.Shape, q []int) bool {
	last := -1
	for _, j := range q {
		if s[j] == 1 {
			continue
		}
		if j < last {
			return false
		}
		last = j
	}
	return true
}

func identity(r int) []int {
	p := make([]int, r)
	for i := range p {
		p[i] = i
	}
	return p
}

func isIdentity(p []int) bool {
	for i, x := range p {
		if x != i {
			return false
		}
	}
	return true
}

func samePerm(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func invert(p []int) []int {
	inv := make([]int, len(p))
	for i, x := range p {
		inv[x] = i
	}
	return inv
}

func permKey(p []int) string {
	if p == nil {
		return ""
	}
	return fmt.Sprint(p)
}

// layoutTag names a layout in derived HLIL names: "nchw" for the NHWC->NCHW permutation.
func layoutTag(p []int) string {
	if samePerm(p, nhwcToNCHW) {
		return "nchw"
	}
	if isIdentity(p) {
		return "t"
	}
	parts := make([]string, len(p))
	for i, x := range p {
		parts[i] = strconv.Itoa(x)
	}
	return "perm" + strings.Join(parts, "")
}

// nhwcToNCHW is the layout of an NHWC tensor held as NCHW.
var nhwcToNCHW = []int{0, 3, 1, 2}

// axisIn returns the HLIL position of TF axis a in layout perm.
func axisIn(perm []int, a int) int {
	for j, p := range perm {
		if p == a {
			return j
		}
	}
	return -1
}

// dropAxes returns the layout left when the TF axes are removed from a tensor in layout perm.
func dropAxes(perm []int, axes []int) []int {
	drop := map[int]bool{}
	for _, a := range axes {
		drop[a] = true
	}
	var out []int
	for _, p := range perm {
		if drop[p] {
			continue
		}
		q := p
		for _, a := range axes {
			if a < p {
				q--
			}
		}
		out = append(out, q)
	}
	if out == nil {
		out = []int{}
	}
	return out
}

// fuseClips merges chains of Relu and Clip nodes (Keras' relu6 is Relu, Minimum, Maximum) into
// one Clip where the intermediate values have no other reader and are not graph outputs.
func fuseClips(g *ir.Graph) {
	bounds := func(n *ir.Node) (lo, hi float32, ok bool) {
		switch n.Op {
		case ir.Relu:
			return 0, float32PosInf, true
		case ir.Clip:
			lo, e1 := n.Attrs.Float("min")
			hi, e2 := n.Attrs.Float("max")
			return lo, hi, e1 == nil && e2 == nil
		}
		return 0, 0, false
	}
	isOut := map[string]bool{}
	for _, o := range g.Outputs {
		isOut[o] = true
	}
	for {
		prod := g.Producers()
		cons := g.Consumers()
		changed := false
		for _, n := range g.Nodes {
			lo2, hi2, ok := bounds(n)
			if !ok {
				continue
			}
			p := prod[n.Inputs[0]]
			if p == nil || isOut[p.Outputs[0]] || len(cons[p.Outputs[0]]) != 1 {
				continue
			}
			lo1, hi1, ok := bounds(p)
			if !ok {
				continue
			}
			lo, hi := max(lo1, lo2), min(hi1, hi2)
			if lo > hi {
				continue // disjoint ranges: the result is constant, leave it
			}
			n.Op = ir.Clip
			n.Attrs = ir.Attrs{"min": ir.FloatAttr(lo), "max": ir.FloatAttr(hi)}
			n.Inputs = []string{p.Inputs[0]}
			if n.Name == "" {
				n.Name = p.Name
			}
			kept := g.Nodes[:0]
			for _, m := range g.Nodes {
				if m != p {
					kept = append(kept, m)
				}
			}
			g.Nodes = kept
			delete(g.Values, p.Outputs[0])
			changed = true
			break
		}
		if !changed {
			return
		}
	}
}

// fuseReshapes replaces a Reshape of a Reshape by one Reshape where the intermediate value has no
// other reader and is not a graph output.
func fuseReshapes(g *ir.Graph) {
	isOut := map[string]bool{}
	for _, o := range g.Outputs {
		isOut[o] = true
	}
	cons := g.Consumers()
	prod := g.Producers()
	drop := map[*ir.Node]bool{}
	for _, n := range g.Nodes {
		if n.Op != ir.Reshape {
			continue
		}
		p := prod[n.Inputs[0]]
		if p == nil || p.Op != ir.Reshape || isOut[p.Outputs[0]] || len(cons[p.Outputs[0]]) != 1 {
			continue
		}
		n.Inputs = []string{p.Inputs[0]}
		drop[p] = true
		delete(g.Values, p.Outputs[0])
	}
	if len(drop) == 0 {
		return
	}
	kept := g.Nodes[:0]
	for _, m := range g.Nodes {
		if !drop[m] {
			kept = append(kept, m)
		}
	}
	g.Nodes = kept
}

// compatible checks a given input shape against a placeholder's declared one (-1: any).
func compatible(declared []int64, given []int) error {
	if len(declared) != len(given) {
		return fmt.Errorf("shape %v does not match the declared %v", given, declared)
	}
	for i, d := range declared {
		if d >= 0 && given[i] != -1 && int64(given[i]) != d {
			return fmt.Errorf("shape %v does not match the declared %v", given, declared)
		}
	}
	return nil
}
