package frontend

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
)

func TestParseInputs(t *testing.T) {
	cases := []struct{ in, want string }{
		{"x", "[{x []}]"},
		{"x:0", "[{x:0 []}]"},
		{"Mfcc:[1,49,10]", "[{Mfcc [1 49 10]}]"},
		{"a:[-1,3,32,32], b ,c:1", "[{a [-1 3 32 32]} {b []} {c:1 []}]"},
		{"scope/in:0:[2,4]", "[{scope/in:0 [2 4]}]"},
	}
	for _, c := range cases {
		got, err := ParseInputs(c.in)
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if s := fmt.Sprint(got); s != c.want {
			t.Errorf("%q = %s, want %s", c.in, s, c.want)
		}
	}
	for _, bad := range []struct{ in, want string }{
		{"Mfcc:1,49,10", "write shapes in brackets"},
		{"a,,b", "empty item"},
		{"a:[1,x]", "bad dimension"},
		{"a:[1,2", "bad dimension"},
		{"", "empty item"},
	} {
		if _, err := ParseInputs(bad.in); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: %v, want an error containing %q", bad.in, err, bad.want)
		}
	}
	if _, err := ParseOutputs("a,,b"); err == nil {
		t.Error("ParseOutputs accepted an empty name")
	}
	if got, err := ParseOutputs("fc2/add, logits"); err != nil || fmt.Sprint(got) != "[fc2/add logits]" {
		t.Errorf("ParseOutputs = %v, %v", got, err)
	}
}

func TestDetectBytes(t *testing.T) {
	// A GraphDef with one node {name: "x", op: "Placeholder"}.
	node := append([]byte{0x0a, 1, 'x', 0x12, 11}, "Placeholder"...)
	gd := append([]byte{0x0a, byte(len(node))}, node...)
	if f := DetectBytes(gd); f != TF {
		t.Errorf("GraphDef detected as %s", f)
	}
	// An ONNX ModelProto starts with ir_version (field 1, varint).
	if f := DetectBytes([]byte{0x08, 0x08, 0x3a, 0x00}); f != ONNX {
		t.Errorf("ONNX detected as %s", f)
	}
}

// TestSavedModelRefused: a SavedModel directory, or its saved_model.pb (which is not a GraphDef
// and would otherwise go to the ONNX decoder), is an error saying how to freeze it.
func TestSavedModelRefused(t *testing.T) {
	dir := t.TempDir()
	sm := []byte{0x08, 0x01, 0x12, 0x00} // schema version 1, one empty MetaGraphDef
	if err := os.WriteFile(filepath.Join(dir, "saved_model.pb"), sm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "variables"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "saved_model.pb")} {
		_, err := Load(p, Options{})
		if err == nil || !strings.Contains(err.Error(), "SavedModel") || !strings.Contains(err.Error(), "freeze") {
			t.Errorf("Load(%s): %v", p, err)
		}
	}
	if _, err := Load(filepath.Join(dir, "missing.onnx"), Options{}); err == nil {
		t.Error("missing file loaded")
	}
	if _, err := Load(filepath.Join(dir, "saved_model.pb"), Options{Batch: -1}); err == nil {
		t.Error("negative batch accepted")
	}
}

// TestLoadBothFormats loads a TF and an ONNX model through the same call with a cut.
func TestLoadBothFormats(t *testing.T) {
	tfRoot := testenv.SharedTestdata(t, "tf")
	g, err := Load(filepath.Join(tfRoot, "arm_kws_cnn_s", "CNN_S.pb"), Options{Inputs: []Input{{Name: "Mfcc", Shape: []int{1, 49, 10}}}, Outputs: []string{"labels_softmax"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Inputs) != 1 || g.Inputs[0].Name != "Mfcc" || !g.Inputs[0].Shape.Equal(ir.Shape{1, 49, 10}) || fmt.Sprint(g.Outputs) != "[labels_softmax]" {
		t.Fatalf("KWS cut: inputs %+v outputs %v", g.Inputs, g.Outputs)
	}
	model := filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small", "model.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("testdata/mnist-small not present: %v", err)
	}
	g, err = Load(model, Options{Batch: 2})
	if err != nil {
		t.Fatal(err)
	}
	if g.Inputs[0].Shape[0] != 2 {
		t.Fatalf("ONNX input %v, want batch 2", g.Inputs[0].Shape)
	}
}

// Issue 24, finding 7: a truncated TF .pb is reported as a truncated GraphDef, not as a
// malformed ONNX model ("field 1 (ir_version) has wire type 2").
func TestTruncatedGraphDefReportedAsTF(t *testing.T) {
	tfRoot := testenv.SharedTestdata(t, "tf")
	b, err := os.ReadFile(filepath.Join(tfRoot, "arm_kws_cnn_s", "CNN_S.pb"))
	if err != nil {
		t.Skip(err)
	}
	cut := filepath.Join(t.TempDir(), "cut.pb")
	if err := os.WriteFile(cut, b[:len(b)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Load(cut, Options{})
	if err == nil || !strings.Contains(err.Error(), "starts as a TensorFlow GraphDef but does not parse") || strings.Contains(err.Error(), "ir_version") {
		t.Fatalf("truncated .pb: %v", err)
	}
	t.Log(err)
}
