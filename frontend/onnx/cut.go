package onnx

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Input is one graph input chosen by the caller: a tensor name and, optionally, its shape.
type Input struct {
	Name  string // an ONNX tensor name: a declared graph input or the output of any node
	Shape []int  // nil: the declared shape (graph input or value_info); a -1 first dimension is Options.Batch
}

// Cut returns the sub-graph of g that computes outputs from inputs: the nodes the outputs need,
// walking backwards and stopping at the chosen input tensors, at initializers and at declared
// graph inputs. Chosen inputs become the graph's first inputs (in the given order), followed by
// the declared graph inputs the outputs still need (in declaration order); the outputs are the
// given ones (every declared output when outputs is empty). Unknown tensor names, a chosen
// input that does not feed the outputs, and a chosen input whose shape is unknown (not a graph
// input, no value_info, no shape given) are errors. g is not modified.
func Cut(g *Graph, inputs []Input, outputs []string) (*Graph, error) {
	if g == nil {
		return nil, errors.New("cut: no graph")
	}
	producer := map[string]int{} // tensor -> index of the node that produces it
	for i, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o != "" {
				producer[o] = i
			}
		}
	}
	inits := map[string]bool{}
	for _, t := range g.Initializers {
		inits[t.Name] = true
	}
	declIn := map[string]*ValueInfo{}
	for _, v := range g.Inputs {
		if !inits[v.Name] {
			declIn[v.Name] = v
		}
	}
	info := map[string]*ValueInfo{} // every declared type: value_info, outputs, inputs
	for _, list := range [][]*ValueInfo{g.ValueInfo, g.Outputs, g.Inputs} {
		for _, v := range list {
			info[v.Name] = v
		}
	}
	known := func(name string) bool {
		_, p := producer[name]
		return p || inits[name] || declIn[name] != nil
	}

	// The outputs.
	var outs []*ValueInfo
	if len(outputs) == 0 {
		if len(g.Outputs) == 0 {
			return nil, errors.New("cut: the graph declares no outputs; name them")
		}
		outs = g.Outputs
	}
	seenOut := map[string]bool{}
	for _, o := range outputs {
		if o == "" {
			return nil, errors.New("cut: empty output name")
		}
		if !known(o) {
			return nil, fmt.Errorf("cut: output %q is not a tensor of the graph%s", o, suggest(o, g))
		}
		if seenOut[o] {
			return nil, fmt.Errorf("cut: output %q is given twice", o)
		}
		seenOut[o] = true
		if v := info[o]; v != nil {
			outs = append(outs, v)
		} else {
			outs = append(outs, &ValueInfo{Name: o})
		}
	}

	// The chosen inputs.
	cut := map[string]bool{}
	for _, in := range inputs {
		switch {
		case in.Name == "":
			return nil, errors.New("cut: empty input name")
		case cut[in.Name]:
			return nil, fmt.Errorf("cut: input %q is given twice", in.Name)
		case inits[in.Name] && declIn[in.Name] == nil:
			return nil, fmt.Errorf("cut: input %q is a constant (initializer), not a runtime tensor", in.Name)
		case !known(in.Name):
			return nil, fmt.Errorf("cut: input %q is not a tensor of the graph%s", in.Name, suggest(in.Name, g))
		}
		cut[in.Name] = true
	}

	// Walk backwards from the outputs.
	need := make([]bool, len(g.Nodes))
	reached := map[string]bool{}
	var stack []string
	for _, o := range outs {
		stack = append(stack, o.Name)
	}
	for len(stack) > 0 {
		t := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if t == "" || reached[t] {
			continue
		}
		reached[t] = true
		if cut[t] || inits[t] {
			continue
		}
		i, ok := producer[t]
		if !ok || need[i] {
			continue // a declared graph input, or a node already visited
		}
		need[i] = true
		stack = append(stack, g.Nodes[i].Inputs...)
	}
	for _, in := range inputs {
		if !reached[in.Name] {
			names := make([]string, len(outs))
			for i, o := range outs {
				names[i] = o.Name
			}
			return nil, fmt.Errorf("cut: input %q does not feed the outputs %q", in.Name, names)
		}
	}

	out := &Graph{Name: g.Name, ValueInfo: g.ValueInfo, Outputs: outs}
	for i, n := range g.Nodes {
		if !need[i] {
			continue
		}
		for _, o := range n.Outputs {
			if cut[o] {
				return nil, fmt.Errorf("cut: input %q is one of several outputs of %s, which the outputs also need", o, n)
			}
		}
		out.Nodes = append(out.Nodes, n)
	}
	for _, t := range g.Initializers {
		if reached[t.Name] {
			out.Initializers = append(out.Initializers, t)
		}
	}
	for _, in := range inputs {
		v, err := cutInput(in, declIn[in.Name], info[in.Name])
		if err != nil {
			return nil, err
		}
		out.Inputs = append(out.Inputs, v)
	}
	for _, v := range g.Inputs {
		if declIn[v.Name] != nil && reached[v.Name] && !cut[v.Name] {
			out.Inputs = append(out.Inputs, v)
		}
	}
	return out, nil
}

// cutInput builds the declaration of a chosen input: its given shape (checked against a declared
// one), or the declared shape of a graph input or of its value_info.
func cutInput(in Input, decl, info *ValueInfo) (*ValueInfo, error) {
	if decl == nil {
		decl = info
	}
	v := &ValueInfo{Name: in.Name, Kind: KindTensor, ElemType: Float}
	if decl != nil {
		v.Kind, v.ElemType = decl.Kind, decl.ElemType
		if v.ElemType == Undefined {
			v.ElemType = Float
		}
	}
	if in.Shape == nil {
		if decl == nil || !decl.HasShape {
			return nil, fmt.Errorf("cut: input %q has no declared shape (it is not a graph input and has no value_info): give one, e.g. %s:[1,3,32,32]", in.Name, in.Name)
		}
		v.Shape, v.HasShape = decl.Shape, true
		return v, nil
	}
	v.HasShape = true
	for i, d := range in.Shape {
		switch {
		case d == -1 && i == 0:
			v.Shape = append(v.Shape, Dim{}) // the batch
		case d <= 0:
			return nil, fmt.Errorf("cut: input %q: dimension %d is %d (only the first, the batch, may be -1)", in.Name, i, d)
		default:
			v.Shape = append(v.Shape, Dim{Value: int64(d), HasValue: true})
		}
	}
	if decl != nil && decl.HasShape {
		if len(decl.Shape) != len(in.Shape) {
			return nil, fmt.Errorf("cut: input %q: shape %v has rank %d, but the model declares rank %d (%s)", in.Name, in.Shape, len(in.Shape), len(decl.Shape), dimsString(decl.Shape))
		}
		for i, d := range decl.Shape {
			if d.HasValue && d.Value > 0 && in.Shape[i] > 0 && int64(in.Shape[i]) != d.Value {
				return nil, fmt.Errorf("cut: input %q: shape %v differs from the declared %s in dimension %d", in.Name, in.Shape, dimsString(decl.Shape), i)
			}
		}
	}
	return v, nil
}

func dimsString(ds []Dim) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		switch {
		case d.HasValue:
			parts[i] = fmt.Sprint(d.Value)
		case d.Param != "":
			parts[i] = d.Param
		default:
			parts[i] = "?"
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// suggest lists a few tensor names of g that contain name (case-insensitively), or the graph's
// declared inputs and outputs when none does, as a hint for an error message.
func suggest(name string, g *Graph) string {
	lower := strings.ToLower(name)
	seen := map[string]bool{}
	var hits []string
	add := func(t string) {
		if t != "" && !seen[t] && strings.Contains(strings.ToLower(t), lower) {
			seen[t] = true
			hits = append(hits, t)
		}
	}
	for _, v := range g.Inputs {
		add(v.Name)
	}
	for _, n := range g.Nodes {
		for _, o := range n.Outputs {
			add(o)
		}
	}
	if len(hits) == 0 {
		var io []string
		for _, v := range g.Inputs {
			io = append(io, v.Name)
		}
		for _, v := range g.Outputs {
			io = append(io, v.Name)
		}
		if len(io) == 0 {
			return ""
		}
		return fmt.Sprintf(" (declared inputs and outputs: %q)", io)
	}
	sort.Strings(hits)
	if len(hits) > 8 {
		hits = append(hits[:8], "...")
	}
	return fmt.Sprintf(" (similar names: %q)", hits)
}
