package onnx

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
)

// ifNode imports an If whose predicate is known at import time (a constant, or folded from
// constants and shapes, as exporters such as silero-vad's emit for shape checks): the taken
// branch's nodes are imported in place and its outputs become the If's outputs. A predicate
// computed at run time is an ErrUnsupported error: a secure program has one fixed dataflow, and
// evaluating both branches and selecting is not done.
func (im *importer) ifNode(n *Node) error {
	if err := arity(n, 1, 1); err != nil {
		return err
	}
	cond := n.Inputs[0]
	c := im.constOf(cond)
	if c == nil {
		return fmt.Errorf("%w: the predicate %q is computed at run time; only an If whose predicate is known at compile time (a constant, or folded from constants and shapes) is folded into its taken branch", ErrUnsupported, cond)
	}
	if c.size() != 1 {
		return fmt.Errorf("predicate %q has shape %v, want a single value", cond, c.shape)
	}
	v, _ := c.scalarFloat()
	which := "else_branch"
	if v != 0 {
		which = "then_branch"
	}
	a, err := n.attrOfType(which, AttrGraph)
	if err != nil {
		return err
	}
	if a == nil || a.G == nil {
		return fmt.Errorf("missing attribute %s", which)
	}
	br := a.G
	if len(br.Outputs) != len(n.Outputs) {
		return fmt.Errorf("%s has %d outputs, the node %d", which, len(br.Outputs), len(n.Outputs))
	}
	if err := checkOps(br); err != nil {
		return fmt.Errorf("%s: %w", which, err)
	}
	for _, t := range br.Initializers {
		if im.defined(t.Name) {
			return fmt.Errorf("%s: initializer %q is already defined", which, t.Name)
		}
		k, err := constFromTensor(t)
		if err != nil {
			return fmt.Errorf("%s: initializer %q: %w", which, t.Name, err)
		}
		im.consts[t.Name] = k
	}
	if err := im.importNodes(br.Nodes); err != nil {
		return fmt.Errorf("%s: %w", which, err)
	}
	for i, o := range n.Outputs {
		if o == "" {
			continue
		}
		src := br.Outputs[i].Name
		if k := im.constOf(src); k != nil {
			if err := im.setConst(o, k.reshaped(k.shape)); err != nil {
				return err
			}
			continue
		}
		if _, ok := im.g.Values[src]; !ok {
			return fmt.Errorf("%s output %q is never produced", which, src)
		}
		if err := im.addNode(&ir.Node{Name: n.Name, Op: ir.Identity, Inputs: []string{src}, Outputs: []string{o}, Attrs: ir.Attrs{}}); err != nil {
			return err
		}
	}
	return nil
}
