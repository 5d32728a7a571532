package passes

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
)

// checkGraph is the HLIL checker Compile runs after every clean-up pass (with Options.Check).
// Shape inference has already run on g (the driver re-infers shapes after every
// HLIL pass, which checks each node's operands and attributes); this adds what inference does not
// check: every value is defined exactly once (by a graph input, a constant or one node), nothing
// is read before it is defined, constants hold as many values as their shapes say, node outputs
// have a recorded type, and the graph outputs are distinct values that exist.
func checkGraph(g *ir.Graph) error {
	defined := map[string]string{}
	define := func(name, what string) error {
		if name == "" {
			return fmt.Errorf("%s has an empty name", what)
		}
		if prev, ok := defined[name]; ok {
			return fmt.Errorf("%q is defined twice: by %s and by %s", name, prev, what)
		}
		defined[name] = what
		return nil
	}
	for _, in := range g.Inputs {
		if err := define(in.Name, "graph input"); err != nil {
			return err
		}
	}
	for _, name := range g.ConstNames() {
		c := g.Consts[name]
		if c == nil {
			return fmt.Errorf("constant %q is nil", name)
		}
		if len(c.Data) != c.Shape.Size() {
			return fmt.Errorf("constant %q has %d values for shape %v", name, len(c.Data), c.Shape)
		}
		if err := define(name, "a constant"); err != nil {
			return err
		}
	}
	for i, n := range g.Nodes {
		if n == nil {
			return fmt.Errorf("node %d is nil", i)
		}
		for _, in := range n.Inputs {
			if _, ok := defined[in]; !ok {
				return fmt.Errorf("%s reads %q before it is defined", n, in)
			}
		}
		for _, o := range n.Outputs {
			if err := define(o, n.String()); err != nil {
				return err
			}
			if v := g.Values[o]; v == nil || v.Name != o {
				return fmt.Errorf("%s: output %q has no recorded type", n, o)
			}
		}
	}
	seen := map[string]bool{}
	for _, o := range g.Outputs {
		if _, ok := defined[o]; !ok {
			return fmt.Errorf("graph output %q is not defined", o)
		}
		if seen[o] {
			return fmt.Errorf("graph output %q is listed twice", o)
		}
		seen[o] = true
	}
	return nil
}
