package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// TestEvalInt8MatchesORT: `athosc eval` on mobilenetv2-12-int8 takes the model's float input
// (quantized as its QuantizeLinear, from the graph's record) and writes the dequantized float
// output, bit for bit ONNX Runtime's (golden/testdata/int8, made by its gen.sh).
func TestEvalInt8MatchesORT(t *testing.T) {
	model := filepath.Join(testenv.SharedTestdata(t, "models"), "mobilenetv2-12-int8", "model.onnx")
	img := filepath.Join(testenv.SharedTestdata(t, "datasets", "images-permissive"), "chelsea.png")
	for _, f := range []string{model, img} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("shared test data not available: %v", err)
		}
	}
	pre := &sciir.Preprocess{Width: 224, Height: 224, Channels: 3, Layout: "NCHW", Scale: 1.0 / 255,
		Mean: []float64{0.485, 0.456, 0.406}, Std: []float64{0.229, 0.224, 0.225}, Resize: "bilinear",
		ResizeShorter: 256, CropWidth: 224, CropHeight: 224}
	x, err := input.LoadImage(pre, img)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	in, out := filepath.Join(tmp, "x.npy"), filepath.Join(tmp, "y.npy")
	if err := npy.WriteFileFloat32(in, []int{1, 3, 224, 224}, x); err != nil {
		t.Fatal(err)
	}
	if err := runEval([]string{model, "--input", in, "--output", out, "--top", "0"}); err != nil {
		t.Fatal(err)
	}
	_, got := readFloats(t, out)
	_, want := readFloats(t, filepath.Join(testenv.RepoRoot(t), "golden", "testdata", "int8", "mobilenetv2", "chelsea.ort.npy"))
	if len(got) != 1000 || len(want) != 1000 {
		t.Fatalf("%d outputs, ONNX Runtime %d", len(got), len(want))
	}
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d: %g, ONNX Runtime %g", i, got[i], want[i])
		}
	}
}
