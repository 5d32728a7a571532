package onnx

import (
	"bufio"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/ir/irtext"
)

// TestBundledMNISTMatchesPyTorch runs the project's own MNIST model (testdata/mnist-small, made by
// scripts/train_mnist.py) through the importer and the float interpreter and compares with the
// outputs PyTorch computed when the model was exported. It needs nothing outside the repository.
func TestBundledMNISTMatchesPyTorch(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "mnist-small")
	for _, batch := range []int{1, 3} {
		g, err := Load(filepath.Join(dir, "model.onnx"), Options{Batch: batch})
		if err != nil {
			t.Fatal(err)
		}
		if got := g.Inputs[0].Shape; !got.Equal(ir.Shape{batch, 1, 28, 28}) {
			t.Fatalf("batch %d: input shape %v", batch, got)
		}
		if err := irtext.CheckRoundTrip(g); err != nil {
			t.Fatalf("text round trip: %v", err)
		}
	}
	g, err := Load(filepath.Join(dir, "model.onnx"), Options{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	it, err := interp.New(g)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "inputs", "labels.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		file, _, _ := strings.Cut(sc.Text(), " ")
		x := readNpy(t, filepath.Join(dir, "inputs", file))
		want := readNpy(t, filepath.Join(dir, "expected", file))
		outs, err := it.Run(map[string]*ir.Tensor{g.Inputs[0].Name: {Shape: g.Inputs[0].Shape, Data: x}})
		if err != nil {
			t.Fatal(err)
		}
		got := outs[g.Outputs[0]].Data
		if len(got) != len(want) {
			t.Fatalf("%s: %d outputs, want %d", file, len(got), len(want))
		}
		for i := range got {
			if d := math.Abs(float64(got[i] - want[i])); d > 1e-4+1e-4*math.Abs(float64(want[i])) {
				t.Errorf("%s: logit %d = %g, PyTorch %g", file, i, got[i], want[i])
			}
		}
	}
	if n == 0 {
		t.Fatal("no inputs listed")
	}
}

func readNpy(t *testing.T, path string) []float32 {
	t.Helper()
	a, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.Float32()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
