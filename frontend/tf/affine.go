package tf

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
)

// fuseAffine rewrites x·s + b, with s and b per-channel constants (channel = axis 1 of x), as
// BatchNormalization(x, scale=s, B=b, mean=0, var=1, epsilon=0). This is exact ((x−0)/√1·s + b)
// and is what unfused batch norm (Keras' Mul/Add after folding the moving statistics) means, so
// the later clean-up passes can fold it into the preceding convolution like a fused one. The Mul
// result must have no other reader and not be a graph output.
func fuseAffine(g *ir.Graph) {
	isOut := map[string]bool{}
	for _, o := range g.Outputs {
		isOut[o] = true
	}
	cons := g.Consumers()
	drop := map[*ir.Node]bool{}
	k := 0
	for _, mul := range g.Nodes {
		if mul.Op != ir.Mul || len(mul.Inputs) != 2 || isOut[mul.Outputs[0]] || len(cons[mul.Outputs[0]]) != 1 {
			continue
		}
		add := cons[mul.Outputs[0]][0]
		if add.Op != ir.Add || len(add.Inputs) != 2 {
			continue
		}
		x, s := splitConst(g, mul.Inputs)
		_, b := splitConst(g, add.Inputs)
		if x == "" || s == nil || b == nil {
			continue
		}
		xs := g.Values[x].Shape
		if len(xs) < 2 || !g.Values[add.Outputs[0]].Shape.Equal(xs) {
			continue
		}
		scale, bias := channelVec(s, xs), channelVec(b, xs)
		if scale == nil || bias == nil {
			continue
		}
		c := xs[1]
		mean, variance := ir.NewTensor(ir.Shape{c}), ir.NewTensor(ir.Shape{c})
		for i := range variance.Data {
			variance.Data[i] = 1
		}
		names := make([]string, 4)
		for i, t := range []*ir.Tensor{scale, bias, mean, variance} {
			for {
				names[i] = fmt.Sprintf("%s/bn%d_%d", add.Outputs[0], k, i)
				k++
				if _, used := g.Consts[names[i]]; !used && g.Values[names[i]] == nil {
					break
				}
			}
			g.Consts[names[i]] = t
		}
		add.Op = ir.BatchNormalization
		add.Inputs = append([]string{x}, names...)
		add.Attrs = ir.Attrs{"epsilon": ir.FloatAttr(0)}
		drop[mul] = true
		delete(g.Values, mul.Outputs[0])
	}
	if len(drop) == 0 {
		return
	}
	kept := g.Nodes[:0]
	for _, n := range g.Nodes {
		if !drop[n] {
			kept = append(kept, n)
		}
	}
	g.Nodes = kept
}

// splitConst returns the runtime operand and the constant operand of a binary node, if it has
// exactly one of each.
func splitConst(g *ir.Graph, ins []string) (string, *ir.Tensor) {
	c0, c1 := g.Consts[ins[0]], g.Consts[ins[1]]
	switch {
	case c0 == nil && c1 != nil:
		return ins[0], c1
	case c1 == nil && c0 != nil:
		return ins[1], c0
	}
	return "", nil
}

// channelVec returns constant t as a vector over axis 1 of shape x when t broadcasts against x
// (right-aligned) with every other dimension 1; a single value is repeated.
func channelVec(t *ir.Tensor, x ir.Shape) *ir.Tensor {
	r := len(x)
	if len(t.Shape) > r {
		return nil
	}
	off := r - len(t.Shape)
	n := 1
	for i, d := range t.Shape {
		ax := off + i
		if d == 1 {
			continue
		}
		if ax != 1 || d != x[1] {
			return nil
		}
		n = d
	}
	out := ir.NewTensor(ir.Shape{x[1]})
	for i := range out.Data {
		out.Data[i] = t.Data[i%n]
	}
	return out
}
