package onnx

import (
	"errors"
	"strings"
	"testing"
)

// TestUnsupportedHints checks the grouped unsupported-operator error: at most eight groups, a
// hint for quantized operators outside the supported int8 set and one for control flow.
func TestUnsupportedHints(t *testing.T) {
	var nodes []pb
	prev := "x"
	for i, op := range []string{"QLinearSigmoid", "QLinearConcat", "QLinearConcat", "Loop", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan"} {
		out := "v" + string(rune('a'+i))
		nodes = append(nodes, node(op, "n"+out, []string{prev}, []string{out}))
		prev = out
	}
	b := modelBytes(13, graphSpec{nodes: nodes,
		inputs: []pb{valueInfo("x", Float, 1, 2)}, outputs: []pb{valueInfo(prev, Float)}})
	err := importErr(t, b)
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("not ErrUnsupported: %v", err)
	}
	for _, want := range []string{`QLinearConcat (2 node(s), first QLinearConcat node "nvb")`, "and 1 more operator(s)",
		"hint: int8 (quantized) models run when made of", "hint: Loop/Scan (and If with a runtime predicate)"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if strings.Contains(err.Error(), "Atan (") {
		t.Errorf("ninth group listed: %v", err)
	}
}

// TestSymbolicDimensionFix checks that a symbolic inner dimension names the --inputs fix.
func TestSymbolicDimensionFix(t *testing.T) {
	b := modelBytes(13, graphSpec{nodes: []pb{node("Relu", "r", []string{"audio"}, []string{"y"})},
		inputs: []pb{valueInfo("audio", Float, "batch", 64, "time")}, outputs: []pb{valueInfo("y", Float)}})
	err := importErr(t, b)
	if want := `--inputs audio:[1,64,1] (the declared shape is [batch,64,time]`; !strings.Contains(err.Error(), want) {
		t.Fatalf("error lacks %q: %v", want, err)
	}
}

// TestFloat16Input imports a float16 input as float32 and records its declared type.
func TestFloat16Input(t *testing.T) {
	b := modelBytes(13, graphSpec{nodes: []pb{node("Relu", "r", []string{"x"}, []string{"y"})},
		inputs: []pb{valueInfo("x", Float16, 1, 3)}, outputs: []pb{valueInfo("y", Float16)}})
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Import(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if g.InputTypes["x"] != "float16" || len(g.InputTypes) != 1 {
		t.Fatalf("InputTypes %v", g.InputTypes)
	}
}
