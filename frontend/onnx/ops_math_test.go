package onnx

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
)

// TestImportReduce imports ReduceSum/ReduceMean/ReduceMax with axes as attributes (opset 13 for
// Mean/Max) and as a constant input (ReduceSum-13), negative axes, keepdims 0/1, an empty axes
// list, noop_with_empty_axes, and checks the HLIL attributes and the float results on 0..11.
func TestImportReduce(t *testing.T) {
	x := make([]float32, 12)
	for i := range x {
		x[i] = float32(i)
	}
	for _, c := range []struct {
		name  string
		node  pb
		inits []pb
		op    ir.Op
		shape ir.Shape
		want  []float32
	}{
		{"mean attr", node("ReduceMean", "r", []string{"x"}, []string{"y"}, aInts("axes", -1)), nil,
			ir.ReduceMean, ir.Shape{2, 3, 1}, []float32{0.5, 2.5, 4.5, 6.5, 8.5, 10.5}},
		{"max attr keepdims 0", node("ReduceMax", "r", []string{"x"}, []string{"y"}, aInts("axes", 0, 2), aInt("keepdims", 0)), nil,
			ir.ReduceMax, ir.Shape{3}, []float32{7, 9, 11}},
		{"sum input", node("ReduceSum", "r", []string{"x", "ax"}, []string{"y"}, aInt("keepdims", 0)),
			[]pb{tensorI64("ax", []int64{1}, []int64{1})}, ir.ReduceSum, ir.Shape{2, 2}, []float32{6, 9, 24, 27}},
		{"sum all", node("ReduceSum", "r", []string{"x"}, []string{"y"}), nil,
			ir.ReduceSum, ir.Shape{1, 1, 1}, []float32{66}},
		{"sum noop", node("ReduceSum", "r", []string{"x"}, []string{"y"}, aInt("noop_with_empty_axes", 1)), nil,
			"", ir.Shape{2, 3, 2}, x},
	} {
		b := modelBytes(13, graphSpec{nodes: []pb{c.node}, inits: c.inits,
			inputs: []pb{valueInfo("x", Float, 2, 3, 2)}, outputs: []pb{valueInfo("y", Float)}})
		g := mustImport(t, b, Options{})
		if c.op != "" && (len(g.Nodes) != 1 || g.Nodes[0].Op != c.op) {
			t.Errorf("%s: nodes %v", c.name, g.Nodes)
		}
		out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{2, 3, 2}, Data: x}})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		y := out[g.Outputs[0]]
		if !y.Shape.Equal(c.shape) || !slices.Equal(y.Data, c.want) {
			t.Errorf("%s: %v %v, want %v %v", c.name, y.Shape, y.Data, c.shape, c.want)
		}
	}
}

// TestImportPow imports Pow by constant integer exponents as products of x by itself (square-
// and-multiply) and refuses other exponents.
func TestImportPow(t *testing.T) {
	x := []float32{-1.5, 0.5, 2, 3}
	for _, p := range []float32{1, 2, 3, 5, 8} {
		b := modelBytes(13, graphSpec{nodes: []pb{node("Pow", "p", []string{"x", "e"}, []string{"y"})},
			inits:  []pb{tensorF("e", nil, []float32{p})},
			inputs: []pb{valueInfo("x", Float, 4)}, outputs: []pb{valueInfo("y", Float)}})
		g := mustImport(t, b, Options{})
		for _, n := range g.Nodes {
			if n.Op != ir.Mul && n.Op != ir.Identity {
				t.Errorf("x^%g: node %v", p, n)
			}
		}
		out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{4}, Data: x}})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range out[g.Outputs[0]].Data {
			if w := math.Pow(float64(x[i]), float64(p)); math.Abs(float64(v)-w) > 1e-5*math.Abs(w) {
				t.Errorf("x^%g at %g: %g, want %g", p, x[i], v, w)
			}
		}
	}
	for _, p := range []float32{0.5, -1, 0, 9} {
		b := modelBytes(13, graphSpec{nodes: []pb{node("Pow", "p", []string{"x", "e"}, []string{"y"})},
			inits:  []pb{tensorF("e", nil, []float32{p})},
			inputs: []pb{valueInfo("x", Float, 4)}, outputs: []pb{valueInfo("y", Float)}})
		if err := importErr(t, b); !strings.Contains(err.Error(), "Pow") {
			t.Errorf("x^%g: %v", p, err)
		}
	}
}

// TestImportGelu imports Gelu (opset 20) in both forms and checks the float results against the
// formulas; the tanh form has no Erf (it lowers to fixed point), the exact form has one.
func TestImportGelu(t *testing.T) {
	x := []float32{-3, -1, -0.25, 0, 0.5, 1, 2.5, 4}
	for _, approx := range []string{"none", "tanh"} {
		b := modelBytes(20, graphSpec{nodes: []pb{node("Gelu", "g", []string{"x"}, []string{"y"}, aString("approximate", approx))},
			inputs: []pb{valueInfo("x", Float, 8)}, outputs: []pb{valueInfo("y", Float)}})
		g := mustImport(t, b, Options{})
		ops := map[ir.Op]int{}
		for _, n := range g.Nodes {
			ops[n.Op]++
		}
		if approx == "tanh" && (ops[ir.Tanh] != 1 || ops[ir.Erf] != 0) || approx == "none" && ops[ir.Erf] != 1 {
			t.Errorf("%s: operators %v", approx, ops)
		}
		out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{8}, Data: x}})
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range out[g.Outputs[0]].Data {
			xf := float64(x[i])
			w := 0.5 * xf * (1 + math.Erf(xf/math.Sqrt2))
			if approx == "tanh" {
				w = 0.5 * xf * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(xf+0.044715*xf*xf*xf)))
			}
			if math.Abs(float64(v)-w) > 1e-5 {
				t.Errorf("%s gelu(%g) = %g, want %g", approx, xf, v, w)
			}
		}
	}
}

// TestImportLayerNorm imports LayerNormalization (opset 17, axis −1, with B) and checks the float
// result against the formula.
func TestImportLayerNorm(t *testing.T) {
	x := []float32{1, 2, 3, 4, -1, 0, 0, 5}
	b := modelBytes(17, graphSpec{nodes: []pb{node("LayerNormalization", "ln", []string{"x", "g", "b"}, []string{"y"}, aFloat("epsilon", 1e-3))},
		inits:  []pb{tensorF("g", []int64{4}, []float32{1, 2, 0.5, -1}), tensorF("b", []int64{4}, []float32{0, 0.25, 0, 1})},
		inputs: []pb{valueInfo("x", Float, 2, 4)}, outputs: []pb{valueInfo("y", Float)}})
	g := mustImport(t, b, Options{})
	if len(g.Nodes) != 1 || g.Nodes[0].Op != ir.LayerNormalization {
		t.Fatalf("nodes %v", g.Nodes)
	}
	out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{2, 4}, Data: x}})
	if err != nil {
		t.Fatal(err)
	}
	gam, bet := []float64{1, 2, 0.5, -1}, []float64{0, 0.25, 0, 1}
	for r := 0; r < 2; r++ {
		row := x[4*r : 4*r+4]
		m, v := 0.0, 0.0
		for _, e := range row {
			m += float64(e) / 4
		}
		for _, e := range row {
			v += (float64(e) - m) * (float64(e) - m) / 4
		}
		for i, e := range row {
			w := (float64(e)-m)/math.Sqrt(v+1e-3)*gam[i] + bet[i]
			if got := out[g.Outputs[0]].Data[4*r+i]; math.Abs(float64(got)-w) > 1e-5 {
				t.Errorf("row %d [%d]: %g, want %g", r, i, got, w)
			}
		}
	}
}
