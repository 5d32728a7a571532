package passes

// This file holds the lowerer's state and the helpers every operator's lowering uses (values,
// scales, emitted instructions, weights). lower.go walks the graph and dispatches to the
// operators' lowerings there and in lower_*.go, which all build on this file.

import (
	"errors"
	"fmt"
	"math"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// ErrNoLowering is wrapped by the error for an operator (or operand combination) that has no
// fixed-point lowering.
var ErrNoLowering = errors.New("no fixed-point lowering")

// lowerOptions controls lower.
type lowerOptions struct {
	Bits  int // ring bitwidth l (1..64)
	Scale int // fixed-point scale s
	// InputParty owns the graph inputs (default 1, the client); OutputParty receives the outputs
	// (default 1).
	InputParty, OutputParty int
	// NoTrunc lowers for the fhe mode: no truncation is ever emitted, so products keep their
	// scale and scales add up through the network (docs/fixed-point.md, "The fhe mode").
	NoTrunc bool
	// LayerNormVar is, per LayerNormalization input value, the smallest row variance the
	// validation samples gave it (layerNormVariances); the lowering widens rsqrt's domain to
	// cover it. Absent: the default domain (layerNormShift).
	LayerNormVar map[string]float64
}

// fval is the lowering of one HLIL value: a tensor id, and for a value still at a product scale,
// the cached truncation back to the program scale.
type fval struct {
	id        int
	trunc     int  // tensor id of Trunc(id) to scale s, once made
	truncated bool // whether trunc is set
	index     bool // an ArgMax result (integer indices, scale 0)
}

type lowerer struct {
	noTrunc bool               // lowerOptions.NoTrunc
	lnVar   map[string]float64 // lowerOptions.LayerNormVar
	g       *ir.Graph
	p       *fixed.Program
	s       int
	vals    map[string]*fval
	uses    map[string]int
	node    *ir.Node
}

func (l *lowerer) source() string {
	if l.node == nil {
		return ""
	}
	if l.node.Name != "" {
		return l.node.Name
	}
	return string(l.node.Op) + " -> " + l.node.Outputs[0]
}

func (l *lowerer) emit(in *fixed.Instr) int {
	if in.Source == "" {
		in.Source = l.source()
	}
	if !in.Op.UsesWeight() {
		in.Weight = -1
	}
	l.p.Instrs = append(l.p.Instrs, in)
	return in.Out
}

// op emits an instruction producing a new tensor whose shape and scale are inferred.
func (l *lowerer) op(in *fixed.Instr, name string) (int, error) {
	if !in.Op.UsesWeight() {
		in.Weight = -1
	}
	shape, scale, err := l.p.InferInstr(in)
	if err != nil {
		return 0, err
	}
	in.Out = l.p.AddTensor(name, shape, scale)
	return l.emit(in), nil
}

func (l *lowerer) get(name string) (*fval, error) {
	if v, ok := l.vals[name]; ok {
		return v, nil
	}
	if _, ok := l.g.Consts[name]; ok {
		return nil, fmt.Errorf("%w: constant %q used where a runtime tensor is needed", ErrNoLowering, name)
	}
	return nil, fmt.Errorf("value %q is not defined", name)
}

// atScale returns v's tensor at the program scale s, truncating (once) when it is above.
func (l *lowerer) atScale(v *fval, name string) (int, error) {
	sc := l.p.Tensors[v.id].Scale
	if v.index || sc == l.s {
		return v.id, nil
	}
	if sc < l.s {
		return l.op(&fixed.Instr{Op: fixed.OpScaleUp, In: []int{v.id}, Shift: l.s - sc}, name)
	}
	if l.noTrunc {
		return v.id, nil // the fhe mode: the value keeps its product scale
	}
	if v.truncated {
		return v.trunc, nil
	}
	t, err := l.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{v.id}, Shift: sc - l.s}, name)
	if err != nil {
		return 0, err
	}
	v.trunc, v.truncated = t, true
	return t, nil
}

// input returns node input i as a runtime tensor at scale s.
func (l *lowerer) input(n *ir.Node, i int) (int, error) {
	v, err := l.get(n.Inputs[i])
	if err != nil {
		return 0, err
	}
	if v.index {
		return 0, fmt.Errorf("%w: %s reads the integer result of an ArgMax", ErrNoLowering, n.Op)
	}
	return l.atScale(v, n.Inputs[i])
}

func (l *lowerer) set(n *ir.Node, id int) {
	l.vals[n.Outputs[0]] = &fval{id: id}
	l.p.Tensors[id].Name = n.Outputs[0]
}

func (l *lowerer) isConst(name string) bool {
	_, ok := l.g.Consts[name]
	return ok
}

// encodeAll quantises compile-time constants (weights, biases, BatchNorm factors, clip bounds,
// pad values) at scale sc: round(x * 2^sc), ties away from zero. Runtime inputs use encode =
// floor(x * 2^s) (docs/fixed-point.md); for constants rounding removes the systematic downward
// bias of floor, which costs accuracy at small scales (mnist-small at s=6: agreement with float
// 98.9% with floor, 99.9% with rounding).
func encodeAll(x []float32, sc int, what string) ([]int64, error) {
	out := make([]int64, len(x))
	for i, v := range x {
		y := math.Round(math.Ldexp(float64(v), sc))
		if math.IsNaN(y) || y < -(1<<62) || y >= 1<<62 {
			return nil, fmt.Errorf("%s: value %g cannot be encoded at scale %d", what, v, sc)
		}
		out[i] = int64(y)
	}
	return out, nil
}

// weight adds a constant as a weight at scale sc.
func (l *lowerer) weight(name string, t *ir.Tensor, sc int) (int, error) {
	data, err := encodeAll(t.Data, sc, "constant "+name)
	if err != nil {
		return 0, err
	}
	return l.p.AddWeight(name, t.Shape, sc, data), nil
}

func noLowering(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrNoLowering, fmt.Sprintf(format, args...))
}

func (l *lowerer) constOf(name string) *ir.Tensor { return l.g.Consts[name] }

// addConst adds constant c (broadcast to tensor id's shape) at the tensor's scale.
func (l *lowerer) addConst(id int, c *ir.Tensor, cname, name string) (int, error) {
	w, err := l.weight(cname, c, l.p.Tensors[id].Scale)
	if err != nil {
		return 0, err
	}
	return l.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{id}, Weight: w}, name)
}
