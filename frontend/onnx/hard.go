package onnx

import (
	"github.com/cryptflow-go/cryptflow/ir"
)

// HardSigmoid and HardSwish have no HLIL operator of their own; they are lowered to existing ones:
//
//	HardSigmoid(x) = Clip(Add(Mul(x, alpha), beta), 0, 1)
//	HardSwish(x)   = Mul(x, HardSigmoid(x) with alpha = 1/6, beta = 1/2)
//
// so every back end that handles Mul, Add and Clip (and Mul of two computed tensors) runs them.

// hardSigmoidNodes emits the HardSigmoid chain of node n on HLIL value x into out.
func (im *importer) hardSigmoidNodes(n *Node, x, out string, alpha, beta float32) error {
	a := im.fresh(out + "/alpha")
	b := im.fresh(out + "/beta")
	im.g.Consts[a] = &ir.Tensor{Shape: ir.Shape{}, Data: []float32{alpha}}
	im.g.Consts[b] = &ir.Tensor{Shape: ir.Shape{}, Data: []float32{beta}}
	scaled := im.fresh(out + "/scaled")
	if err := im.addNode(&ir.Node{Name: n.Name, Op: ir.Mul, Inputs: []string{x, a}, Outputs: []string{scaled}, Attrs: ir.Attrs{}}); err != nil {
		return err
	}
	shifted := im.fresh(out + "/shifted")
	if err := im.addNode(&ir.Node{Name: n.Name, Op: ir.Add, Inputs: []string{scaled, b}, Outputs: []string{shifted}, Attrs: ir.Attrs{}}); err != nil {
		return err
	}
	return im.addNode(&ir.Node{Name: n.Name, Op: ir.Clip, Inputs: []string{shifted}, Outputs: []string{out},
		Attrs: ir.Attrs{"min": ir.FloatAttr(0), "max": ir.FloatAttr(1)}})
}

func (im *importer) hardSigmoid(n *Node) error {
	out, err := arityOutput(n, 1, 1)
	if err != nil {
		return err
	}
	r := attrReader{n: n}
	alpha, beta := r.float("alpha", 0.2), r.float("beta", 0.5)
	if r.err != nil {
		return r.err
	}
	x, err := im.data(n.Inputs[0])
	if err != nil {
		return err
	}
	return im.hardSigmoidNodes(n, x, out, alpha, beta)
}

func (im *importer) hardSwish(n *Node) error {
	out, err := arityOutput(n, 1, 1)
	if err != nil {
		return err
	}
	x, err := im.data(n.Inputs[0])
	if err != nil {
		return err
	}
	gate := im.fresh(out + "/gate")
	if err := im.hardSigmoidNodes(n, x, gate, 1.0/6, 0.5); err != nil {
		return err
	}
	return im.addNode(&ir.Node{Name: n.Name, Op: ir.Mul, Inputs: []string{x, gate}, Outputs: []string{out}, Attrs: ir.Attrs{}})
}
