package golden

import (
	"path/filepath"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/passes"
)

// TestLoLaMNISTCompilesForFHE compiles the trained LoLa MNIST network (testdata/lola-mnist,
// square activations) for the fhe mode on its eight sample images: five levels (conv, x², dense,
// x², dense), N = 2^15 for 128-bit security, and the fixed-point program classifies the samples as
// their labels say. (The encrypted run of this network takes minutes; vm/fhe's tests run smaller
// networks encrypted, and docs/fhe.md has this one's measured encrypted run.)
func TestLoLaMNISTCompilesForFHE(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(t), "testdata", "lola-mnist")
	g, err := onnx.Load(filepath.Join(dir, "model.onnx"), onnx.Options{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := passes.DefaultOptions()
	opts.Backend, opts.Samples, opts.Scales = passes.BackendFHE, ds.Samples, []int{3, 4}
	p, rep, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.FHE.Depth != 5 || p.FHE.LogN != 15 {
		t.Errorf("depth %d, N = 2^%d; want 5 and 2^15", p.FHE.Depth, p.FHE.LogN)
	}
	if acc := rep.Tune.Chosen.Accuracy; acc < 7.0/8 {
		t.Errorf("fixed-point accuracy on the samples %.3f", acc)
	}
	t.Logf("s=%d, %s", p.Scale, p.FHE)
}
