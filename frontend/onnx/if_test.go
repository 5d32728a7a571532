package onnx

import (
	"errors"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
)

func aGraph(name string, g graphSpec) pb {
	return cat(fString(attrName, name), fInt(attrType, int64(AttrGraph)), fBytes(attrG, g.encode()))
}

// ifModel builds x [2, 3] -> If(pred) with then = Relu(x), else = Sigmoid(x) (both reading the
// outer x), preceded by the nodes pre that compute pred.
func ifModel(pre []pb, inits []pb, pred string) pb {
	then := graphSpec{nodes: []pb{node("Relu", "then_relu", []string{"x"}, []string{"t"})},
		outputs: []pb{valueInfo("t", Float, 2, 3)}}
	els := graphSpec{nodes: []pb{node("Sigmoid", "else_sigmoid", []string{"x"}, []string{"e"})},
		outputs: []pb{valueInfo("e", Float, 2, 3)}}
	nodes := append(pre, node("If", "if0", []string{pred}, []string{"y"}, aGraph("then_branch", then), aGraph("else_branch", els)))
	return modelBytes(13, graphSpec{nodes: nodes, inits: inits,
		inputs: []pb{valueInfo("x", Float, 2, 3)}, outputs: []pb{valueInfo("y", Float, 2, 3)}})
}

// TestImportIfFolded folds an If with a constant predicate and one computed from the input's
// shape into the taken branch, and checks that a runtime predicate is an error naming the node.
func TestImportIfFolded(t *testing.T) {
	x := &ir.Tensor{Shape: ir.Shape{2, 3}, Data: []float32{-1, 2, -3, 4, -5, 6}}
	for _, c := range []struct {
		name  string
		pre   []pb
		inits []pb
		pred  string
		want  ir.Op
	}{
		{"constant false", nil, []pb{tensorI64("p", nil, []int64{0})}, "p", ir.Sigmoid},
		{"constant true", nil, []pb{tensorI64("p", nil, []int64{1})}, "p", ir.Relu},
		{"from shape", []pb{
			node("Shape", "shape", []string{"x"}, []string{"s"}),
			node("Gather", "dim0", []string{"s", "zero"}, []string{"d"}),
			node("Cast", "as_bool", []string{"d"}, []string{"p"}, aInt("to", int64(Bool))),
		}, []pb{tensorI64("zero", nil, []int64{0})}, "p", ir.Relu},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := Decode(ifModel(c.pre, c.inits, c.pred))
			if err != nil {
				t.Fatal(err)
			}
			g, err := Import(m, Options{})
			if err != nil {
				t.Fatal(err)
			}
			ops := map[ir.Op]int{}
			for _, n := range g.Nodes {
				ops[n.Op]++
			}
			if ops[c.want] != 1 || ops[ir.Relu]+ops[ir.Sigmoid] != 1 {
				t.Fatalf("ops %v, want one %s", ops, c.want)
			}
			got, err := interp.Run(g, map[string]*ir.Tensor{"x": x})
			if err != nil {
				t.Fatal(err)
			}
			if y := got["y"]; y == nil || !y.Shape.Equal(ir.Shape{2, 3}) {
				t.Fatalf("output %v", y)
			}
		})
	}
	m, err := Decode(ifModel(nil, nil, "x"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Import(m, Options{})
	if err == nil || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"if0"`) ||
		!strings.Contains(err.Error(), "computed at run time") {
		t.Fatalf("runtime predicate: %v", err)
	}
	t.Log(err)
}
