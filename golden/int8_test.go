package golden

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// Quantized (int8) models: the program runs on the integers, at scale 0 in Z_2^64, and must give
// exactly ONNX Runtime's integer outputs (docs/fixed-point.md, "Quantized operators"). The ONNX
// Runtime outputs are fixtures made once by testdata/int8/gen.sh.

// initValue returns the values of a model initializer as float64s.
func initValue(t testing.TB, m *onnx.Model, name string) []float64 {
	t.Helper()
	for _, in := range m.Graph.Initializers {
		if in.Name != name {
			continue
		}
		if in.DataType.IsFloat() {
			f, err := in.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			out := make([]float64, len(f))
			for i, v := range f {
				out[i] = float64(v)
			}
			return out
		}
		v, err := in.Int64s()
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = float64(x)
		}
		return out
	}
	t.Fatalf("no initializer %q", name)
	return nil
}

// ortQuantize is ONNX Runtime's QuantizeLinear (MLAS): x/scale in float32, clamped to
// [qmin − zp, qmax − zp], rounded half to even, plus the zero point. The client does this on its
// own input before sharing it.
func ortQuantize(x []float32, scale float32, zp, qmin, qmax int) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		f := v / scale
		f = min(max(f, float32(qmin-zp)), float32(qmax-zp))
		out[i] = float32(int(math.RoundToEven(float64(f))) + zp)
	}
	return out
}

// ortDequantize is DequantizeLinear: float32(q − zp)·scale in float32.
func ortDequantize(q int64, scale float32, zp int) float32 {
	return float32(q-int64(zp)) * scale
}

func mobilenetInt8(t *testing.T) (string, *onnx.Model) {
	t.Helper()
	path := filepath.Join(testenv.SharedTestdata(t, "models"), "mobilenetv2-12-int8", "model.onnx")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("model not available: %v", err)
	}
	m, err := onnx.ReadModel(path)
	if err != nil {
		t.Fatal(err)
	}
	return path, m
}

// TestMobileNetInt8MatchesORT compiles mobilenetv2-12-int8, runs it in the clear on the shared
// permissive images (ImageNet preprocessing, then ONNX Runtime's QuantizeLinear) and requires its
// integer output, dequantized as DequantizeLinear does, to equal ONNX Runtime's float output bit
// for bit on all 1000 logits of every image.
func TestMobileNetInt8MatchesORT(t *testing.T) {
	if testing.Short() {
		t.Skip("mobilenet in the clear takes a while")
	}
	path, m := mobilenetInt8(t)
	images := testenv.SharedTestdata(t, "datasets", "images-permissive")
	fixtures, err := filepath.Glob(filepath.Join("testdata", "int8", "mobilenetv2", "*.ort.npy"))
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	inScale, inZP := float32(initValue(t, m, "input_scale")[0]), int(initValue(t, m, "input_zero_point")[0])
	outScale, outZP := float32(initValue(t, m, "output_scale")[0]), int(initValue(t, m, "output_zero_point")[0])
	prog := compileGraph(t, loadModel(t, path), 64, 0)
	pre := &sciir.Preprocess{Width: 224, Height: 224, Channels: 3, Layout: "NCHW", Scale: 1.0 / 255,
		Mean: []float64{0.485, 0.456, 0.406}, Std: []float64{0.229, 0.224, 0.225}, Resize: "bilinear",
		ResizeShorter: 256, CropWidth: 224, CropHeight: 224}
	matched := 0
	for _, fx := range fixtures {
		name := strings.TrimSuffix(filepath.Base(fx), ".ort.npy")
		imgs, _ := filepath.Glob(filepath.Join(images, name+".*"))
		if len(imgs) != 1 {
			t.Fatalf("image %s: found %v", name, imgs)
		}
		x, err := input.LoadImage(pre, imgs[0])
		if err != nil {
			t.Fatal(err)
		}
		q := ortQuantize(x, inScale, inZP, 0, 255)
		out := runClear(t, prog.server, encodeInputs(t, prog.server, [][]float32{q}))[0][0]
		got := ring.Must(64).SignedValues(out.Value)
		want, err := npy.ReadFile(fx)
		if err != nil {
			t.Fatal(err)
		}
		wf, err := want.Float32()
		if err != nil {
			t.Fatal(err)
		}
		bad, first := 0, -1
		for i, v := range got {
			if math.Float32bits(ortDequantize(v, outScale, outZP)) != math.Float32bits(wf[i]) {
				if first < 0 {
					first = i
				}
				bad++
			}
		}
		if bad == 0 {
			matched++
			t.Logf("%s: all %d outputs equal ONNX Runtime's", name, len(got))
			continue
		}
		t.Errorf("%s: %d of %d outputs differ from ONNX Runtime's; first at %d: ours q=%d (%g), ORT %g",
			name, bad, len(got), first, got[first], ortDequantize(got[first], outScale, outZP), wf[first])
	}
	t.Logf("%d of %d images bitwise equal to ONNX Runtime", matched, len(fixtures))
}

// TestMobileNetInt8FirstConvSecure runs the first convolution of mobilenetv2-12-int8 (real
// weights: per-channel requantization with corrections and ORT's int16 pair saturation) with the
// two-party backend: bitwise equal to the clear run. The whole network is beyond a test's time
// (148 M ReLU elements at l = 64).
func TestMobileNetInt8FirstConvSecure(t *testing.T) {
	if testing.Short() {
		t.Skip("a secure convolution layer at l = 64")
	}
	path, m := mobilenetInt8(t)
	g, err := onnx.Load(path, onnx.Options{Batch: 1, Outputs: []string{"474_quantized"}})
	if err != nil {
		t.Fatal(err)
	}
	prog := compileGraph(t, g, 64, 0)
	pre := &sciir.Preprocess{Width: 224, Height: 224, Channels: 3, Layout: "NCHW", Scale: 1.0 / 255,
		Mean: []float64{0.485, 0.456, 0.406}, Std: []float64{0.229, 0.224, 0.225}, Resize: "bilinear",
		ResizeShorter: 256, CropWidth: 224, CropHeight: 224}
	x, err := input.LoadImage(pre, filepath.Join(testenv.SharedTestdata(t, "datasets", "images-permissive"), "chelsea.png"))
	if err != nil {
		t.Fatal(err)
	}
	q := ortQuantize(x, float32(initValue(t, m, "input_scale")[0]), int(initValue(t, m, "input_zero_point")[0]), 0, 255)
	inputs := encodeInputs(t, prog.server, [][]float32{q})
	clear := runClear(t, prog.server, inputs)
	sec := runSecure(t, prog, inputs, secureOptions{})
	compareRuns(t, clear, sec)
	t.Logf("secure run %v", sec.runTime[0])
}
