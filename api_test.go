package cryptflow

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAPIErrors(t *testing.T) {
	const model = "testdata/mnist-small/model.onnx"
	if _, err := Compile("testdata/none.onnx", CompileOptions{}); err == nil || !strings.Contains(err.Error(), "none.onnx") {
		t.Errorf("missing model: %v", err)
	}
	if _, err := Compile(model, CompileOptions{Backend: "clear"}); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("backend clear: %v", err)
	}
	if _, err := Compile(model, CompileOptions{Net: "moon"}); err == nil {
		t.Error("net moon accepted")
	}
	if _, err := Compile(model, CompileOptions{Samples: []Sample{{Input: []float32{1}, Label: 0}}}); err == nil || !strings.Contains(err.Error(), "values") {
		t.Errorf("wrong-size sample: %v", err)
	}
	if _, err := Compile(model, CompileOptions{Bits: 32, Scale: 8, Classes: []string{"a", "b"}}); err == nil || !strings.Contains(err.Error(), "has 10 classes") {
		t.Errorf("2 class names for 10 classes: %v", err)
	}
	if _, err := Compile(model, CompileOptions{Bits: 32, Scale: 8, Classes: []string{"a", "b\nc", "", "", "", "", "", "", "", ""}}); err == nil || !strings.Contains(err.Error(), "one line") {
		t.Errorf("a class name with a line break: %v", err)
	}
	b, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	p, err := CompileBytes(b, CompileOptions{Bits: 32, Scale: 8})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != "model" || p.Backend() != "auto" || !p.HasWeights() || p.Bits() != 32 || p.Scale() != 8 {
		t.Errorf("program %s %s %d %d", p.Name(), p.Backend(), p.Bits(), p.Scale())
	}
	c, err := p.ClientCopy()
	if err != nil {
		t.Fatal(err)
	}
	if c.HasWeights() || c.ID() != p.ID() {
		t.Error("client copy has weights or another ID")
	}
	if _, err := c.Marshal(true); err == nil {
		t.Error("client copy marshalled with weights")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := Serve(context.Background(), ln, c, nil, nil); err == nil || !strings.Contains(err.Error(), "client copy") {
		t.Errorf("serving a client copy: %v", err)
	}
	if _, err := InferBatch(context.Background(), "127.0.0.1:1", c, nil, nil); err == nil || !strings.Contains(err.Error(), "no inputs") {
		t.Errorf("empty batch: %v", err)
	}
	if _, err := InferBatch(context.Background(), "127.0.0.1:1", c, [][]float32{make([]float32, 784), {1}}, nil); err == nil || !strings.Contains(err.Error(), "input 1") {
		t.Errorf("a short input in a batch: %v", err)
	}
	if _, err := InferLocal(context.Background(), p, []float32{1, 2}, nil); err == nil || !strings.Contains(err.Error(), "784 values") {
		t.Errorf("short input: %v", err)
	}
	if _, err := InferLocal(context.Background(), p, make([]float32, 784), &SessionOptions{OT: "carrier-pigeon"}); err == nil {
		t.Error("unknown OT source accepted")
	}
	dir := t.TempDir()
	cp, err := p.WriteFiles(filepath.Join(dir, "m.sciir"))
	if err != nil || filepath.Base(cp) != "m.client.sciir" {
		t.Fatalf("WriteFiles: %q, %v", cp, err)
	}
	if r, err := ReadProgram(cp); err != nil || r.HasWeights() || r.ID() != p.ID() {
		t.Errorf("read back client copy: %v", err)
	}
	if _, err := p.WriteFiles(filepath.Join(dir, "m.client.sciir")); err == nil {
		t.Error("WriteFiles to a client copy's name accepted")
	}
}
