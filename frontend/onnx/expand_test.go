package onnx

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

// A constant Expand is folded: [3,1] broadcast to [2,3,4] repeats each value along the new and the
// unit axes.
func TestImportExpandConstant(t *testing.T) {
	b := modelBytes(13, graphSpec{
		nodes: []pb{
			node("Expand", "exp", []string{"c", "shp"}, []string{"e"}),
			node("Add", "add", []string{"x", "e"}, []string{"y"}),
		},
		inits:   []pb{tensorF("c", []int64{3, 1}, []float32{1, 2, 3}), ints1("shp", 2, 1, 4)},
		inputs:  []pb{valueInfo("x", Float, 2, 3, 4)},
		outputs: []pb{valueInfo("y", Float)},
	})
	g := mustImport(t, b, Options{})
	if len(g.Nodes) != 1 || g.Nodes[0].Op != ir.Add {
		t.Fatalf("nodes %v", g.Nodes)
	}
	c := g.Consts[g.Nodes[0].Inputs[1]]
	if c == nil {
		t.Fatalf("the Add's second operand %q is not a constant", g.Nodes[0].Inputs[1])
	}
	row := []float32{1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3}
	if want := append(slices.Clone(row), row...); !c.Shape.Equal(ir.Shape{2, 3, 4}) || !slices.Equal(c.Data, want) {
		t.Errorf("expanded constant %v %v, want [2 3 4] %v", c.Shape, c.Data, want)
	}
}

// PyTorch's LSTM export: the zero initial state expanded to the batch read from the input's
// Shape (opset 11 here: Unsqueeze with its axes as an attribute). With a fixed batch it folds to a
// constant [1, batch, hidden].
func TestImportExpandFromShape(t *testing.T) {
	b := modelBytes(11, graphSpec{
		nodes: []pb{
			node("Shape", "shape", []string{"x"}, []string{"s"}),
			node("Constant", "c0", nil, []string{"zero"}, aTensor("value", tensorI64("", nil, []int64{0}))),
			node("Gather", "gather", []string{"s", "zero"}, []string{"n"}, aInt("axis", 0)),
			node("Unsqueeze", "unsq", []string{"n"}, []string{"n1"}, aInts("axes", 0)),
			node("Constant", "c1", nil, []string{"one"}, aInts("value_ints", 1)),
			node("Constant", "c2", nil, []string{"hid"}, aInts("value_ints", 2)),
			node("Concat", "cat", []string{"one", "n1", "hid"}, []string{"shp"}, aInt("axis", 0)),
			node("Expand", "exp", []string{"h0", "shp"}, []string{"h"}),
			node("Add", "add", []string{"x", "h"}, []string{"y"}),
		},
		inits:   []pb{tensorF("h0", []int64{1, 1, 2}, []float32{0.5, -0.25})},
		inputs:  []pb{valueInfo("x", Float, "batch", 2)},
		outputs: []pb{valueInfo("y", Float)},
	})
	g := mustImport(t, b, Options{Batch: 3})
	if len(g.Nodes) != 1 || g.Nodes[0].Op != ir.Add {
		t.Fatalf("nodes %v", g.Nodes)
	}
	c := g.Consts[g.Nodes[0].Inputs[1]]
	if want := []float32{0.5, -0.25, 0.5, -0.25, 0.5, -0.25}; c == nil || !c.Shape.Equal(ir.Shape{1, 3, 2}) || !slices.Equal(c.Data, want) {
		t.Errorf("expanded state %v, want [1 3 2] %v", c, want)
	}
}

// A runtime input whose shape the Expand keeps becomes an Identity; one it would enlarge, a
// runtime shape, or incompatible shapes are errors.
func TestImportExpandRuntime(t *testing.T) {
	g := oneNode(t, 13, []any{2, 3}, node("Expand", "exp", []string{"x", "shp"}, []string{"y"}), ints1("shp", 1, 3))
	if s, ok := g.ShapeOf("y"); !ok || !s.Equal(ir.Shape{2, 3}) {
		t.Errorf("shape of y: %v", s)
	}
	for _, n := range g.Nodes {
		if n.Op != ir.Identity {
			t.Errorf("node %s %s, want only Identity", n.Name, n.Op)
		}
	}
	err := oneNodeErr(t, 13, []any{3, 1}, node("Expand", "exp", []string{"x", "shp"}, []string{"y"}), ints1("shp", 3, 4))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "no broadcast operator") {
		t.Errorf("runtime broadcast: %v", err)
	}
	err = oneNodeErr(t, 13, []any{3, 2}, node("Expand", "exp", []string{"x", "shp"}, []string{"y"}), ints1("shp", 4))
	if err == nil || !strings.Contains(err.Error(), `Expand node "exp"`) || !strings.Contains(err.Error(), "cannot be expanded") {
		t.Errorf("incompatible shapes: %v", err)
	}
	err = oneNodeErr(t, 13, []any{2, 3}, node("Expand", "exp", []string{"x", "shp"}, []string{"y"}), ints1("shp", -1, 3))
	if err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative dimension: %v", err)
	}
}
