package onnx

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
)

// cutModel is x[1,4] -> Mfcc (an unsupported audio op) -> f (value_info [1,4]) -> Relu -> a
// -> MatMul W -> m -> Add B -> c, with declared outputs ArgMax(c) = d and Sigmoid(c) = s.
func cutModel() (pb, []float32, []float32) {
	w, b := floats(12, 7), floats(3, 8)
	g := graphSpec{
		nodes: []pb{
			node("Mfcc", "mfcc", []string{"x"}, []string{"f"}),
			node("Relu", "relu", []string{"f"}, []string{"a"}),
			node("MatMul", "mm", []string{"a", "W"}, []string{"m"}),
			node("Add", "add", []string{"m", "B"}, []string{"c"}),
			node("ArgMax", "argmax", []string{"c"}, []string{"d"}, aInt("axis", 1)),
			node("Sigmoid", "sig", []string{"c"}, []string{"s"}),
		},
		inits:   []pb{tensorF("W", []int64{4, 3}, w), tensorF("B", []int64{3}, b)},
		inputs:  []pb{valueInfo("x", Float, 1, 4)},
		outputs: []pb{valueInfo("d", Int64, 1), valueInfo("s", Float, 1, 3)},
	}
	enc := g.encode()
	enc = append(enc, fBytes(graphValueInfo, valueInfo("f", Float, 1, 4))...)
	model := cat(fInt(modelIRVersion, 8), opsetImport("", 13), fBytes(modelGraph, enc))
	return model, w, b
}

// cutRef computes c = relu(f)·W + B for one row f.
func cutRef(f, w, b []float32) []float32 {
	c := make([]float32, 3)
	for j := 0; j < 3; j++ {
		acc := float64(b[j])
		for i := 0; i < 4; i++ {
			acc += float64(max(f[i], 0)) * float64(w[i*3+j])
		}
		c[j] = float32(acc)
	}
	return c
}

func cutImport(t *testing.T, opts Options) (*ir.Graph, error) {
	t.Helper()
	b, _, _ := cutModel()
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return Import(m, opts)
}

func TestCutBelowUnsupportedFrontEnd(t *testing.T) {
	if _, err := cutImport(t, Options{}); err == nil || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "Mfcc") {
		t.Fatalf("uncut import: %v, want the unsupported Mfcc", err)
	}
	_, w, b := cutModel()
	f := []float32{0.5, -1, 2, 0.25}

	// Cut at f (shape from value_info), keeping only c.
	g, err := cutImport(t, Options{Inputs: []Input{{Name: "f"}}, Outputs: []string{"c"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Inputs) != 1 || g.Inputs[0].Name != "f" || !g.Inputs[0].Shape.Equal(ir.Shape{1, 4}) {
		t.Fatalf("inputs %+v", g.Inputs)
	}
	if len(g.Outputs) != 1 || g.Outputs[0] != "c" {
		t.Fatalf("outputs %v", g.Outputs)
	}
	out, err := interp.Run(g, map[string]*ir.Tensor{"f": {Shape: ir.Shape{1, 4}, Data: f}})
	if err != nil {
		t.Fatal(err)
	}
	want := cutRef(f, w, b)
	for j, v := range out["c"].Data {
		if math.Abs(float64(v-want[j])) > 1e-6 {
			t.Fatalf("c = %v, want %v", out["c"].Data, want)
		}
	}

	// Cut at f with the declared outputs.
	g, err = cutImport(t, Options{Inputs: []Input{{Name: "f"}}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(g.Outputs, ",") != "d,s" {
		t.Fatalf("outputs %v, want the declared d,s", g.Outputs)
	}

	// Cut at a, which has no value_info: a shape is needed; -1 is the batch.
	if _, err := cutImport(t, Options{Inputs: []Input{{Name: "a"}}, Outputs: []string{"c"}}); err == nil || !strings.Contains(err.Error(), `input "a" has no declared shape`) {
		t.Fatalf("a without a shape: %v", err)
	}
	g, err = cutImport(t, Options{Inputs: []Input{{Name: "a", Shape: []int{-1, 4}}}, Outputs: []string{"c"}, Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	if !g.Inputs[0].Shape.Equal(ir.Shape{2, 4}) {
		t.Fatalf("a's shape %v, want [2 4]", g.Inputs[0].Shape)
	}
	if cs, ok := g.ShapeOf("c"); !ok || !cs.Equal(ir.Shape{2, 3}) {
		t.Fatalf("c's shape %v, want [2 3]", cs)
	}
}

func TestCutErrors(t *testing.T) {
	cases := []struct {
		opts Options
		want string
	}{
		{Options{Inputs: []Input{{Name: "nope"}}, Outputs: []string{"c"}}, `input "nope" is not a tensor of the graph`},
		{Options{Inputs: []Input{{Name: "f"}}, Outputs: []string{"nope"}}, `output "nope" is not a tensor of the graph`},
		{Options{Inputs: []Input{{Name: "F"}}}, `input "F" is not a tensor of the graph (similar names: ["f"])`},
		{Options{Inputs: []Input{{Name: "m"}}, Outputs: []string{"a"}}, `input "m" does not feed the outputs ["a"]`},
		{Options{Inputs: []Input{{Name: "W"}}, Outputs: []string{"c"}}, `input "W" is a constant (initializer)`},
		{Options{Inputs: []Input{{Name: "f"}, {Name: "f"}}}, `input "f" is given twice`},
		{Options{Inputs: []Input{{Name: "f"}}, Outputs: []string{"c", "c"}}, `output "c" is given twice`},
		{Options{Inputs: []Input{{Name: "f", Shape: []int{1, 5}}}}, `shape [1 5] differs from the declared [1,4] in dimension 1`},
		{Options{Inputs: []Input{{Name: "f", Shape: []int{4}}}}, `has rank 1, but the model declares rank 2`},
		{Options{Inputs: []Input{{Name: "a", Shape: []int{1, -1}}}, Outputs: []string{"c"}}, `dimension 1 is -1`},
		{Options{Inputs: []Input{{Name: ""}}}, `empty input name`},
		// Cutting at a tensor below the unsupported node does not remove it.
		{Options{Inputs: []Input{{Name: "x"}}, Outputs: []string{"c"}}, `unsupported operator(s): Mfcc`},
	}
	for _, c := range cases {
		_, err := cutImport(t, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.opts, err, c.want)
		}
	}
}

// TestCutKeepsGraphUntouched: Cut copies; the source graph keeps its nodes and inputs, and the
// cut keeps only the initializers it reads.
func TestCutKeepsGraphUntouched(t *testing.T) {
	b, _, _ := cutModel()
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	nodes, inputs := len(m.Graph.Nodes), len(m.Graph.Inputs)
	sub, err := Cut(m.Graph, []Input{{Name: "m", Shape: []int{1, 3}}}, []string{"s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Graph.Nodes) != nodes || len(m.Graph.Inputs) != inputs {
		t.Fatal("Cut modified its graph")
	}
	var ops []string
	for _, n := range sub.Nodes {
		ops = append(ops, n.OpType)
	}
	if strings.Join(ops, ",") != "Add,Sigmoid" || len(sub.Initializers) != 1 || sub.Initializers[0].Name != "B" {
		t.Fatalf("cut nodes %v, %d initializers", ops, len(sub.Initializers))
	}
}

// TestCoverageKeepsHandWritten: regenerating docs/onnx-coverage.md keeps its hand-written part.
func TestCoverageKeepsHandWritten(t *testing.T) {
	old := "# old\n\n" + handWrittenBegin + "\n| op | how |\n" + handWrittenEnd + "\n\n## onnx-node: old\n"
	md := withHandWritten("# ONNX\n\nintro\n\n## onnx-node: 1 passed\n", old)
	want := "# ONNX\n\nintro\n\n" + handWrittenBegin + "\n| op | how |\n" + handWrittenEnd + "\n\n## onnx-node: 1 passed\n"
	if md != want {
		t.Fatalf("got\n%s\nwant\n%s", md, want)
	}
	if got := withHandWritten("x", "no markers"); got != "x" {
		t.Fatalf("without markers: %q", got)
	}
}
