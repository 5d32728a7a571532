package onnx

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
)

// RNN, GRU and LSTM have no HLIL operator of their own: the importer unrolls them over the static
// sequence length into Conv, MatMul, Add, Mul, Sub, Sigmoid/Tanh/Relu, Clip, Reshape, Transpose and
// Concat, so that every back end that runs those runs the recurrent layers too.
//
// HLIL has no runtime Slice, so the input of step t is never cut out of X. Instead X is laid out as
// [batch, input, seq] and each gate's projection x_t·W_gᵀ + b_g is one Conv over the time axis with
// a kernel of two taps, dilation t and stride seq, whose first tap is zero: its single output
// position reads x_0·0 + x_t·W_g exactly (t = 0 uses a one-tap kernel). The weights stay
// constants of size 2·H·input per gate and step, and the fixed-point result is the same product
// the direct x_t·W_gᵀ would give. A runtime initial state of a bidirectional layer is picked the
// same way, with identity weights. The recurrent products H_{t−1}·R_gᵀ are MatMuls with the
// constant Rᵀ; products of two gates are secret products (Mul).
//
// Supported: forward, reverse and bidirectional; layout 0 and 1; optional B, initial_h, initial_c
// and (LSTM) peepholes P, all constants except the initial states, which may be runtime values (an
// all-zero constant state is imported as the absent one);
// sequence_lens absent or a constant equal to seq_length everywhere; activations Sigmoid, Tanh and
// Relu (defaults: sigmoid/tanh, sigmoid/tanh/tanh, tanh); clip; GRU linear_before_reset. W, R, B
// and P must be constants (initializers). Refused: input_forget = 1, other activations, shorter
// sequence lengths.

// rnnKind describes one of the three recurrent operators.
type rnnKind struct {
	gates       int      // gate blocks in W and R: RNN 1, GRU 3 (z, r, h), LSTM 4 (i, o, f, c)
	activations []string // default activations per direction
	maxInputs   int
}

var rnnKinds = map[string]rnnKind{
	"RNN":  {gates: 1, activations: []string{"Tanh"}, maxInputs: 6},
	"GRU":  {gates: 3, activations: []string{"Sigmoid", "Tanh"}, maxInputs: 6},
	"LSTM": {gates: 4, activations: []string{"Sigmoid", "Tanh", "Tanh"}, maxInputs: 8},
}

// rnnState is one recurrent state: a runtime HLIL value name, a constant (also named, in
// g.Consts), or absent (zero) when both are empty.
type rnnState struct {
	name  string
	konst []float32 // [batch*H] when the state is a known constant
}

func (s rnnState) zero() bool { return s.name == "" }

// rnnBuilder holds what the unrolling of one node needs.
type rnnBuilder struct {
	im                  *importer
	n                   *Node
	op                  string
	base                string
	seq, batch, in, hid int
	ndir                int
	layout              int
	clip                float32 // 0: none
	acts                []string
	w, r                *constant // [ndir, G*H, in], [ndir, G*H, H]
	b                   []float32 // [ndir, 2*G*H]
	p                   []float32 // [ndir, 3H] (LSTM) or nil
	lbr                 bool
	x3                  string // X as [batch, in, seq]
}

func (im *importer) recurrent(n *Node) error {
	kind := rnnKinds[n.OpType]
	if err := arity(n, 3, kind.maxInputs); err != nil {
		return err
	}
	rb := &rnnBuilder{im: im, n: n, op: n.OpType}
	r := attrReader{n: n}
	hid := r.int("hidden_size", 0)
	rb.layout = int(r.int("layout", 0))
	rb.clip = r.float("clip", 0)
	rb.lbr = r.int("linear_before_reset", 0) != 0
	inputForget := r.int("input_forget", 0)
	dir, _ := n.stringAttr("direction", "forward")
	if r.err != nil {
		return r.err
	}
	if a := n.Attr("activation_alpha"); a != nil && len(a.Floats) > 0 {
		return fmt.Errorf("%w: activation_alpha (only Sigmoid, Tanh and Relu activations)", ErrUnsupported)
	}
	if inputForget != 0 {
		return fmt.Errorf("%w: input_forget=1 (coupled input and forget gates)", ErrUnsupported)
	}
	if rb.clip < 0 {
		return fmt.Errorf("clip %g is negative", rb.clip)
	}
	dirs := map[string][]bool{"forward": {false}, "reverse": {true}, "bidirectional": {false, true}}
	reverse, ok := dirs[dir]
	if !ok {
		return fmt.Errorf("direction %q, want forward, reverse or bidirectional", dir)
	}
	rb.ndir = len(reverse)
	if rb.layout != 0 && rb.layout != 1 {
		return fmt.Errorf("layout %d, want 0 or 1", rb.layout)
	}
	xs, err := im.shape(n.Inputs[0])
	if err != nil {
		return err
	}
	if len(xs) != 3 {
		return fmt.Errorf("input X has shape %v, want rank 3", xs)
	}
	rb.seq, rb.batch, rb.in = xs[0], xs[1], xs[2]
	if rb.layout == 1 {
		rb.seq, rb.batch = xs[1], xs[0]
	}
	G := kind.gates
	rb.hid = int(hid)
	for i, what := range []string{"W", "R"} {
		c := im.constOf(n.Inputs[1+i])
		if c == nil || c.isInt() {
			return fmt.Errorf("%w: %s (%q) is a runtime value; the weights must be constants", ErrUnsupported, what, n.Inputs[1+i])
		}
		if i == 0 {
			rb.w = c
		} else {
			rb.r = c
		}
	}
	if rb.hid <= 0 {
		rb.hid = rb.r.shape[len(rb.r.shape)-1]
	}
	H := rb.hid
	if !rb.w.shape.Equal(ir.Shape{rb.ndir, G * H, rb.in}) {
		return fmt.Errorf("input W has shape %v, want %v", rb.w.shape, ir.Shape{rb.ndir, G * H, rb.in})
	}
	if !rb.r.shape.Equal(ir.Shape{rb.ndir, G * H, H}) {
		return fmt.Errorf("input R has shape %v, want %v", rb.r.shape, ir.Shape{rb.ndir, G * H, H})
	}
	rb.b = make([]float32, rb.ndir*2*G*H)
	if name := input(n, 3); name != "" {
		c := im.constOf(name)
		if c == nil || c.isInt() {
			return fmt.Errorf("%w: B (%q) is a runtime value; the bias must be a constant", ErrUnsupported, name)
		}
		if !c.shape.Equal(ir.Shape{rb.ndir, 2 * G * H}) {
			return fmt.Errorf("input B has shape %v, want %v", c.shape, ir.Shape{rb.ndir, 2 * G * H})
		}
		copy(rb.b, c.f)
	}
	if name := input(n, 4); name != "" {
		c := im.constOf(name)
		if c == nil {
			return fmt.Errorf("%w: sequence_lens (%q) is a runtime value (only absent or constant, equal to seq_length %d)", ErrUnsupported, name, rb.seq)
		}
		lens, err := c.ints()
		if err != nil {
			return fmt.Errorf("sequence_lens: %w", err)
		}
		for _, l := range lens {
			if l != rb.seq {
				return fmt.Errorf("%w: sequence_lens %v (only sequences of the full length %d)", ErrUnsupported, lens, rb.seq)
			}
		}
	}
	if n.OpType == "LSTM" {
		if name := input(n, 7); name != "" {
			c := im.constOf(name)
			if c == nil || c.isInt() {
				return fmt.Errorf("%w: P (%q) is a runtime value; the peepholes must be constants", ErrUnsupported, name)
			}
			if !c.shape.Equal(ir.Shape{rb.ndir, 3 * H}) {
				return fmt.Errorf("input P has shape %v, want %v", c.shape, ir.Shape{rb.ndir, 3 * H})
			}
			rb.p = c.f
		}
	}
	rb.acts = kind.activations
	if a := n.Attr("activations"); a != nil {
		if len(a.Strings) != len(kind.activations)*rb.ndir {
			return fmt.Errorf("%d activations, want %d", len(a.Strings), len(kind.activations)*rb.ndir)
		}
		rb.acts = nil
		for _, s := range a.Strings {
			op, ok := map[string]string{"sigmoid": "Sigmoid", "tanh": "Tanh", "relu": "Relu"}[lower(s)]
			if !ok {
				return fmt.Errorf("%w: activation %q (only Sigmoid, Tanh and Relu)", ErrUnsupported, s)
			}
			rb.acts = append(rb.acts, op)
		}
	} else {
		for d := 1; d < rb.ndir; d++ {
			rb.acts = append(rb.acts, kind.activations...)
		}
	}
	rb.base = n.Name
	if rb.base == "" {
		rb.base = firstOutput(n)
	}

	// X as [batch, in, seq].
	x, err := im.data(n.Inputs[0])
	if err != nil {
		return err
	}
	perm := []int{1, 2, 0}
	if rb.layout == 1 {
		perm = []int{0, 2, 1}
	}
	rb.x3 = rb.fresh("x_bct")
	if err := rb.add(ir.Transpose, []string{x}, rb.x3, ir.Attrs{"perm": ir.IntsAttr(perm)}); err != nil {
		return err
	}

	var ys [][]string // per direction, per time step: H_t as [batch, H]
	var hs, cs []string
	for d, rev := range reverse {
		h0, err := rb.initial(5, d)
		if err != nil {
			return err
		}
		c0 := rnnState{}
		if n.OpType == "LSTM" {
			if c0, err = rb.initial(6, d); err != nil {
				return err
			}
		}
		y, hT, cT, err := rb.direction(d, rev, h0, c0)
		if err != nil {
			return err
		}
		ys, hs, cs = append(ys, y), append(hs, hT), append(cs, cT)
	}
	return rb.outputs(ys, hs, cs)
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func firstOutput(n *Node) string {
	for _, o := range n.Outputs {
		if o != "" {
			return o
		}
	}
	return n.OpType
}

func (rb *rnnBuilder) fresh(what string) string { return rb.im.fresh(rb.base + "/" + what) }

func (rb *rnnBuilder) add(op ir.Op, ins []string, out string, attrs ir.Attrs) error {
	if attrs == nil {
		attrs = ir.Attrs{}
	}
	return rb.im.addNode(&ir.Node{Name: rb.n.Name, Op: op, Inputs: ins, Outputs: []string{out}, Attrs: attrs})
}

// konst adds a constant tensor under a fresh name.
func (rb *rnnBuilder) konst(what string, shape ir.Shape, data []float32) string {
	name := rb.fresh(what)
	rb.im.g.Consts[name] = &ir.Tensor{Shape: shape, Data: data}
	return name
}

// node adds one node with a fresh output name and returns that name.
func (rb *rnnBuilder) node(op ir.Op, what string, attrs ir.Attrs, ins ...string) (string, error) {
	out := rb.fresh(what)
	return out, rb.add(op, ins, out, attrs)
}

// initial returns the initial state of input slot i (initial_h or initial_c) for direction d.
func (rb *rnnBuilder) initial(slot, d int) (rnnState, error) {
	name := input(rb.n, slot)
	if name == "" {
		return rnnState{}, nil
	}
	B, H := rb.batch, rb.hid
	want := ir.Shape{rb.ndir, B, H}
	if rb.layout == 1 {
		want = ir.Shape{B, rb.ndir, H}
	}
	s, err := rb.im.shape(name)
	if err != nil {
		return rnnState{}, err
	}
	if !s.Equal(want) {
		return rnnState{}, fmt.Errorf("input %d (%q) has shape %v, want %v", slot, name, s, want)
	}
	if c := rb.im.constOf(name); c != nil {
		if c.isInt() {
			return rnnState{}, fmt.Errorf("input %d (%q) is an integer tensor", slot, name)
		}
		data := make([]float32, B*H)
		allZero := true
		for b := 0; b < B; b++ {
			for h := 0; h < H; h++ {
				if rb.layout == 0 {
					data[b*H+h] = c.f[(d*B+b)*H+h]
				} else {
					data[b*H+h] = c.f[(b*rb.ndir+d)*H+h]
				}
				allZero = allZero && data[b*H+h] == 0
			}
		}
		if allZero {
			// An explicit zero state (PyTorch's export always writes one) is the absent state:
			// the same values, without the first step's forget (LSTM) or reset (GRU) gate.
			return rnnState{}, nil
		}
		return rnnState{name: rb.konst(fmt.Sprintf("init%d_d%d", slot, d), ir.Shape{B, H}, data), konst: data}, nil
	}
	v, err := rb.im.data(name)
	if err != nil {
		return rnnState{}, err
	}
	if rb.ndir == 1 {
		out, err := rb.node(ir.Reshape, fmt.Sprintf("init%d", slot), ir.Attrs{"shape": ir.IntsAttr([]int{B, H})}, v)
		return rnnState{name: out}, err
	}
	// [batch, H, ndir], then pick direction d with identity weights.
	perm := []int{1, 2, 0}
	if rb.layout == 1 {
		perm = []int{0, 2, 1}
	}
	t, err := rb.node(ir.Transpose, fmt.Sprintf("init%d_bhd", slot), ir.Attrs{"perm": ir.IntsAttr(perm)}, v)
	if err != nil {
		return rnnState{}, err
	}
	eye := make([]float32, H*H)
	for h := 0; h < H; h++ {
		eye[h*H+h] = 1
	}
	out, err := rb.pick(t, H, rb.ndir, d, eye, nil, fmt.Sprintf("init%d_d%d", slot, d))
	return rnnState{name: out}, err
}

// pick returns w·x[:, :, t] (+ bias) as [batch, M] for x of shape [batch, C, L] and constant
// weights w [M, C], by a Conv with taps 0 and t (the first zero), dilation t and stride L.
func (rb *rnnBuilder) pick(x string, C, L, t int, w, bias []float32, what string) (string, error) {
	M := len(w) / C
	taps := 1
	if t > 0 {
		taps = 2
	}
	k := make([]float32, M*C*taps)
	for m := 0; m < M; m++ {
		for c := 0; c < C; c++ {
			k[(m*C+c)*taps+taps-1] = w[m*C+c]
		}
	}
	ins := []string{x, rb.konst(what+"/w", ir.Shape{M, C, taps}, k)}
	if bias != nil {
		ins = append(ins, rb.konst(what+"/b", ir.Shape{M}, bias))
	}
	attrs := ir.Attrs{
		"group": ir.IntAttr(1), "kernel_shape": ir.IntsAttr([]int{taps}), "strides": ir.IntsAttr([]int{L}),
		"pads": ir.IntsAttr([]int{0, 0}), "dilations": ir.IntsAttr([]int{max(t, 1)}),
	}
	conv, err := rb.node(ir.Conv, what+"/conv", attrs, ins...)
	if err != nil {
		return "", err
	}
	return rb.node(ir.Reshape, what, ir.Attrs{"shape": ir.IntsAttr([]int{rb.batch, M})}, conv)
}

// block returns rows [g*H, (g+1)*H) of a [ndir, G*H, cols] constant for direction d.
func (rb *rnnBuilder) block(c *constant, d, g, cols int) []float32 {
	G := c.shape[1] / rb.hid
	off := (d*G + g) * rb.hid * cols
	return append([]float32{}, c.f[off:off+rb.hid*cols]...)
}

// bias returns gate g's part of Wb (which = 0) or Rb (which = 1) for direction d.
func (rb *rnnBuilder) bias(d, g, which int) []float32 {
	G := rb.w.shape[1] / rb.hid
	off := d*2*G*rb.hid + which*G*rb.hid + g*rb.hid
	return append([]float32{}, rb.b[off:off+rb.hid]...)
}

func addVec(a, b []float32) []float32 {
	out := make([]float32, len(a))
	for i := range a {
		out[i] = a[i] + b[i]
	}
	return out
}

// recur returns h·R_gᵀ for state h ([batch, H]) as a value name, or "" when h is zero. A constant
// state is folded.
func (rb *rnnBuilder) recur(h rnnState, d, g int, what string) (string, error) {
	if h.zero() {
		return "", nil
	}
	H := rb.hid
	rg := rb.block(rb.r, d, g, H) // [H_out, H_in]
	if h.konst != nil {
		out := make([]float32, rb.batch*H)
		for b := 0; b < rb.batch; b++ {
			for o := 0; o < H; o++ {
				var s float32
				for i := 0; i < H; i++ {
					s += h.konst[b*H+i] * rg[o*H+i]
				}
				out[b*H+o] = s
			}
		}
		return rb.konst(what, ir.Shape{rb.batch, H}, out), nil
	}
	rt := make([]float32, H*H) // Rᵀ: [H_in, H_out]
	for o := 0; o < H; o++ {
		for i := 0; i < H; i++ {
			rt[i*H+o] = rg[o*H+i]
		}
	}
	return rb.node(ir.MatMul, what, nil, h.name, rb.konst(what+"/rT", ir.Shape{H, H}, rt))
}

// sum adds the non-empty terms.
func (rb *rnnBuilder) sum(what string, terms ...string) (string, error) {
	acc := ""
	for _, t := range terms {
		if t == "" {
			continue
		}
		if acc == "" {
			acc = t
			continue
		}
		var err error
		if acc, err = rb.node(ir.Add, what, nil, acc, t); err != nil {
			return "", err
		}
	}
	return acc, nil
}

// activate applies activation op (after the clip, if any).
func (rb *rnnBuilder) activate(op, x, what string) (string, error) {
	if rb.clip > 0 {
		var err error
		if x, err = rb.node(ir.Clip, what+"/clip", ir.Attrs{"min": ir.FloatAttr(-rb.clip), "max": ir.FloatAttr(rb.clip)}, x); err != nil {
			return "", err
		}
	}
	return rb.node(ir.Op(op), what, nil, x)
}

// gate returns act(x_t·W_gᵀ + h·R_gᵀ + bias + extra) for gate g, where bias includes Wb_g and,
// unless skipRb, Rb_g.
func (rb *rnnBuilder) gate(d, g, t int, h rnnState, act string, extra string, what string) (string, error) {
	bias := rb.bias(d, g, 0)
	bias = addVec(bias, rb.bias(d, g, 1))
	x, err := rb.pick(rb.x3, rb.in, rb.seq, t, rb.block(rb.w, d, g, rb.in), bias, what+"/x")
	if err != nil {
		return "", err
	}
	rec, err := rb.recur(h, d, g, what+"/h")
	if err != nil {
		return "", err
	}
	pre, err := rb.sum(what+"/pre", x, rec, extra)
	if err != nil {
		return "", err
	}
	return rb.activate(act, pre, what)
}

// peep returns P_k ⊙ c (k: 0 = i, 1 = o, 2 = f) or "" without peepholes or with a zero state.
func (rb *rnnBuilder) peep(d, k int, c rnnState, what string) (string, error) {
	if rb.p == nil || c.zero() {
		return "", nil
	}
	H := rb.hid
	p := rb.konst(what+"/p", ir.Shape{H}, append([]float32{}, rb.p[(d*3+k)*H:(d*3+k+1)*H]...))
	return rb.node(ir.Mul, what+"/peep", nil, c.name, p)
}

// direction unrolls one direction and returns every H_t (indexed by time), the last H and the
// last C (LSTM).
func (rb *rnnBuilder) direction(d int, rev bool, h, c rnnState) ([]string, string, string, error) {
	ys := make([]string, rb.seq)
	acts := rb.acts[d*len(rb.acts)/rb.ndir:]
	for step := 0; step < rb.seq; step++ {
		t := step
		if rev {
			t = rb.seq - 1 - step
		}
		pre := fmt.Sprintf("d%d_t%d", d, t)
		var err error
		var hn string
		switch rb.op {
		case "RNN":
			hn, err = rb.gate(d, 0, t, h, acts[0], "", pre+"/h")
		case "GRU":
			hn, err = rb.gruStep(d, t, h, acts, pre)
		case "LSTM":
			var cn string
			hn, cn, err = rb.lstmStep(d, t, h, c, acts, pre)
			c = rnnState{name: cn}
		}
		if err != nil {
			return nil, "", "", err
		}
		h = rnnState{name: hn}
		ys[t] = hn
	}
	return ys, h.name, c.name, nil
}

func (rb *rnnBuilder) lstmStep(d, t int, h, c rnnState, acts []string, pre string) (string, string, error) {
	f, g, hAct := acts[0], acts[1], acts[2]
	pi, err := rb.peep(d, 0, c, pre+"/i")
	if err != nil {
		return "", "", err
	}
	i, err := rb.gate(d, 0, t, h, f, pi, pre+"/i")
	if err != nil {
		return "", "", err
	}
	cc, err := rb.gate(d, 3, t, h, g, "", pre+"/c")
	if err != nil {
		return "", "", err
	}
	ic, err := rb.node(ir.Mul, pre+"/ic", nil, i, cc)
	if err != nil {
		return "", "", err
	}
	cn := ic
	if !c.zero() { // with a zero state the forget gate is not needed
		pf, err := rb.peep(d, 2, c, pre+"/f")
		if err != nil {
			return "", "", err
		}
		fg, err := rb.gate(d, 2, t, h, f, pf, pre+"/f")
		if err != nil {
			return "", "", err
		}
		fc, err := rb.node(ir.Mul, pre+"/fc", nil, fg, c.name)
		if err != nil {
			return "", "", err
		}
		if cn, err = rb.node(ir.Add, pre+"/C", nil, fc, ic); err != nil {
			return "", "", err
		}
	}
	po, err := rb.peep(d, 1, rnnState{name: cn}, pre+"/o")
	if err != nil {
		return "", "", err
	}
	o, err := rb.gate(d, 1, t, h, f, po, pre+"/o")
	if err != nil {
		return "", "", err
	}
	hc, err := rb.activate(hAct, cn, pre+"/hC")
	if err != nil {
		return "", "", err
	}
	hn, err := rb.node(ir.Mul, pre+"/H", nil, o, hc)
	return hn, cn, err
}

func (rb *rnnBuilder) gruStep(d, t int, h rnnState, acts []string, pre string) (string, error) {
	f, g := acts[0], acts[1]
	z, err := rb.gate(d, 0, t, h, f, "", pre+"/z")
	if err != nil {
		return "", err
	}
	var r string
	if !h.zero() || rb.lbr { // with a zero state and linear_before_reset = 0 the reset gate is not needed
		if r, err = rb.gate(d, 1, t, h, f, "", pre+"/r"); err != nil {
			return "", err
		}
	}
	// Candidate: x_t·W_hᵀ + Wb_h + (r ⊙ H)·R_hᵀ + Rb_h, or with linear_before_reset
	// x_t·W_hᵀ + Wb_h + r ⊙ (H·R_hᵀ + Rb_h).
	x, err := rb.pick(rb.x3, rb.in, rb.seq, t, rb.block(rb.w, d, 2, rb.in), rb.bias(d, 2, 0), pre+"/h/x")
	if err != nil {
		return "", err
	}
	rbh := rb.konst(pre+"/h/rb", ir.Shape{rb.hid}, rb.bias(d, 2, 1))
	var rec string
	switch {
	case h.zero() && rb.lbr:
		rec, err = rb.node(ir.Mul, pre+"/h/r_rb", nil, r, rbh)
	case h.zero():
		rec = rbh
	case rb.lbr:
		var hr string
		if hr, err = rb.recur(h, d, 2, pre+"/h/h"); err != nil {
			return "", err
		}
		if hr, err = rb.node(ir.Add, pre+"/h/hrb", nil, hr, rbh); err != nil {
			return "", err
		}
		rec, err = rb.node(ir.Mul, pre+"/h/r_h", nil, r, hr)
	default:
		var rh string
		if rh, err = rb.node(ir.Mul, pre+"/h/rH", nil, r, h.name); err != nil {
			return "", err
		}
		if rec, err = rb.recur(rnnState{name: rh}, d, 2, pre+"/h/h"); err != nil {
			return "", err
		}
		rec, err = rb.node(ir.Add, pre+"/h/hrb", nil, rec, rbh)
	}
	if err != nil {
		return "", err
	}
	sum, err := rb.sum(pre+"/h/pre", x, rec)
	if err != nil {
		return "", err
	}
	cand, err := rb.activate(g, sum, pre+"/h")
	if err != nil {
		return "", err
	}
	// H_t = (1 − z) ⊙ cand + z ⊙ H = cand + z ⊙ (H − cand): one secret product.
	var diff string
	if h.zero() {
		diff, err = rb.node(ir.Mul, pre+"/neg", nil, cand, rb.konst(pre+"/minus1", ir.Shape{}, []float32{-1}))
	} else {
		diff, err = rb.node(ir.Sub, pre+"/diff", nil, h.name, cand)
	}
	if err != nil {
		return "", err
	}
	zd, err := rb.node(ir.Mul, pre+"/zdiff", nil, z, diff)
	if err != nil {
		return "", err
	}
	return rb.node(ir.Add, pre+"/H", nil, cand, zd)
}

// outputs builds Y, Y_h and Y_c (those that are read) from the per-direction states.
func (rb *rnnBuilder) outputs(ys [][]string, hs, cs []string) error {
	B, H := rb.batch, rb.hid
	// stack reshapes each part to one of shape and concatenates them along axis.
	stack := func(parts []string, shape []int, axis int, out string) error {
		rs := make([]string, len(parts))
		for i, p := range parts {
			if len(parts) == 1 {
				return rb.add(ir.Reshape, []string{p}, out, ir.Attrs{"shape": ir.IntsAttr(shape)})
			}
			var err error
			if rs[i], err = rb.node(ir.Reshape, "stack", ir.Attrs{"shape": ir.IntsAttr(shape)}, p); err != nil {
				return err
			}
		}
		return rb.add(ir.Concat, rs, out, ir.Attrs{"axis": ir.IntAttr(axis)})
	}
	used := func(i int) string {
		if i < len(rb.n.Outputs) && rb.n.Outputs[i] != "" && rb.im.uses[rb.n.Outputs[i]] > 0 {
			return rb.n.Outputs[i]
		}
		return ""
	}
	if y := used(0); y != "" {
		// Per time step: the directions stacked; then the time steps stacked.
		steps := make([]string, rb.seq)
		for t := range steps {
			parts := make([]string, rb.ndir)
			for d := range parts {
				parts[d] = ys[d][t]
			}
			shape, axis := []int{1, 1, B, H}, 1
			if rb.layout == 1 {
				shape, axis = []int{B, 1, 1, H}, 2
			}
			if rb.seq == 1 {
				steps[t] = y
			} else {
				steps[t] = rb.fresh(fmt.Sprintf("y_t%d", t))
			}
			if err := stack(parts, shape, axis, steps[t]); err != nil {
				return err
			}
		}
		axis := 0
		if rb.layout == 1 {
			axis = 1
		}
		if rb.seq > 1 {
			if err := rb.add(ir.Concat, steps, y, ir.Attrs{"axis": ir.IntAttr(axis)}); err != nil {
				return err
			}
		}
	}
	shape, axis := []int{1, B, H}, 0
	if rb.layout == 1 {
		shape, axis = []int{B, 1, H}, 1
	}
	if yh := used(1); yh != "" {
		if err := stack(hs, shape, axis, yh); err != nil {
			return err
		}
	}
	if yc := used(2); yc != "" && rb.op == "LSTM" {
		if err := stack(cs, shape, axis, yc); err != nil {
			return err
		}
	}
	return nil
}
