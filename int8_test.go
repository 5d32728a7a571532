package cryptflow

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// TestInt8ClearMatchesORT: through the Go API, mobilenetv2-12-int8 takes its float input (the
// program quantizes it as the model's QuantizeLinear) and Result.Output is the dequantized output,
// bit for bit ONNX Runtime's (golden/testdata/int8); Result.Raw holds the integers.
func TestInt8ClearMatchesORT(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles and runs mobilenetv2-12-int8 in the clear")
	}
	model := filepath.Join(testenv.SharedTestdata(t, "models"), "mobilenetv2-12-int8", "model.onnx")
	img := filepath.Join(testenv.SharedTestdata(t, "datasets", "images-permissive"), "chelsea.png")
	for _, f := range []string{model, img} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("shared test data not available: %v", err)
		}
	}
	p, err := Compile(model, CompileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Bits() != 64 || p.Scale() != 0 {
		t.Fatalf("quantized program in Z_2^%d at scale %d, want 64 and 0", p.Bits(), p.Scale())
	}
	pre := &sciir.Preprocess{Width: 224, Height: 224, Channels: 3, Layout: "NCHW", Scale: 1.0 / 255,
		Mean: []float64{0.485, 0.456, 0.406}, Std: []float64{0.229, 0.224, 0.225}, Resize: "bilinear",
		ResizeShorter: 256, CropWidth: 224, CropHeight: 224}
	x, err := input.LoadImage(pre, img)
	if err != nil {
		t.Fatal(err)
	}
	keep := append([]float32(nil), x...)
	res, err := p.Clear(context.Background(), x)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if math.Float32bits(x[i]) != math.Float32bits(keep[i]) {
			t.Fatal("Clear changed the caller's input")
		}
	}
	a, err := npy.ReadFile(filepath.Join("golden", "testdata", "int8", "mobilenetv2", "chelsea.ort.npy"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := a.Float32()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Output) != len(want) {
		t.Fatalf("%d outputs, ONNX Runtime %d", len(res.Output), len(want))
	}
	for i := range want {
		if math.Float32bits(res.Output[i]) != math.Float32bits(want[i]) {
			t.Fatalf("logit %d: %g (q = %d), ONNX Runtime %g", i, res.Output[i], res.Raw[i], want[i])
		}
	}
	if res.Class != 285 || res.Raw[285] != 190 {
		t.Errorf("class %d (q = %d), want 285 (q = 190)", res.Class, res.Raw[285])
	}
}
