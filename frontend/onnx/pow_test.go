package onnx

import (
	"errors"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
)

// TestSquareActivations checks the polynomial activations: Mul(x, x) and Pow(x, 2) import as
// Mul(x, x) and compute x²; Pow with another exponent, or a runtime one, is refused.
func TestSquareActivations(t *testing.T) {
	b := modelBytes(13, graphSpec{
		nodes: []pb{
			node("Mul", "mm", []string{"x", "x"}, []string{"mm"}),
			node("Pow", "pw", []string{"x", "two"}, []string{"pw"}),
		},
		inits:   []pb{tensorF("two", nil, []float32{2})},
		inputs:  []pb{valueInfo("x", Float, 2, 3)},
		outputs: []pb{valueInfo("mm", Float), valueInfo("pw", Float)},
	})
	g := mustImport(t, b, Options{})
	for _, n := range g.Nodes {
		if n.Op != ir.Mul || n.Inputs[0] != n.Inputs[1] {
			t.Errorf("node %s: %s%v, want Mul(x, x)", n.Name, n.Op, n.Inputs)
		}
	}
	x := []float32{-2, -0.5, 0, 0.25, 1.5, 3}
	out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{2, 3}, Data: x}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"mm", "pw"} {
		for i, v := range x {
			if got := out[name].Data[i]; got != v*v {
				t.Errorf("%s(%g) = %g, want %g", name, v, got, v*v)
			}
		}
	}
	for _, c := range []struct {
		name string
		n    pb
		init []pb
	}{
		{"exponent 2.5", node("Pow", "p", []string{"x", "e"}, []string{"y"}), []pb{tensorF("e", nil, []float32{2.5})}},
		{"runtime exponent", node("Pow", "p", []string{"x", "x"}, []string{"y"}), nil},
	} {
		if err := oneNodeErr(t, 13, []any{2, 3}, c.n, c.init...); !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: error %v, want ErrUnsupported", c.name, err)
		}
	}
}
