package onnx

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/mnist"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/ir/irtext"
)

// modelMeta is the part of a shared model's meta.json the tests use.
type modelMeta struct {
	TestSets []struct {
		TestDataSet int  `json:"test_data_set"`
		Label       *int `json:"label"`
	} `json:"test_sets"`
}

func readMeta(t *testing.T, dir string) modelMeta {
	t.Helper()
	var m modelMeta
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return m
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s/meta.json: %v", dir, err)
	}
	return m
}

// argmax returns the index of the largest element (the first on ties).
func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// checkModel imports model.onnx in dir and checks every test_data_set against its outputs.
func checkModel(t *testing.T, dir string, tol tolerance) {
	t.Helper()
	start := time.Now()
	g, err := Load(filepath.Join(dir, "model.onnx"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	loaded := time.Since(start)
	weights := 0
	for _, c := range g.Consts {
		weights += len(c.Data)
	}
	if weights < 1<<20 { // the text form prints every weight; keep it to the small models
		if err := irtext.CheckRoundTrip(g); err != nil {
			t.Errorf("text round trip: %v", err)
		}
	}
	it, err := interp.New(g)
	if err != nil {
		t.Fatal(err)
	}
	meta := readMeta(t, dir)
	labels := map[int]int{}
	for _, s := range meta.TestSets {
		if s.Label != nil {
			labels[s.TestDataSet] = *s.Label
		}
	}
	sets, _ := filepath.Glob(filepath.Join(dir, "test_data_set_*"))
	sort.Strings(sets)
	if len(sets) == 0 {
		t.Fatalf("no test data sets in %s", dir)
	}
	for _, set := range sets {
		feed := map[string]*ir.Tensor{}
		for k, in := range g.Inputs {
			tp, err := ReadTensor(filepath.Join(set, fmt.Sprintf("input_%d.pb", k)))
			if err != nil {
				t.Fatal(err)
			}
			if feed[in.Name], err = tp.ToIR(); err != nil {
				t.Fatal(err)
			}
		}
		got, err := it.Run(feed)
		if err != nil {
			t.Fatalf("%s: %v", set, err)
		}
		for k, name := range g.Outputs {
			want, err := ReadTensor(filepath.Join(set, fmt.Sprintf("output_%d.pb", k)))
			if err != nil {
				t.Fatal(err)
			}
			if err := compareTensor(got[name], want, tol); err != nil {
				t.Errorf("%s output %q: %v", filepath.Base(set), name, err)
			}
		}
		var idx int
		if _, err := fmt.Sscanf(filepath.Base(set), "test_data_set_%d", &idx); err == nil {
			if label, ok := labels[idx]; ok && len(g.Outputs) == 1 {
				if p := argmax(got[g.Outputs[0]].Data); p != label {
					t.Logf("%s: predicted %d, label %d (the reference output agrees within tolerance)", filepath.Base(set), p, label)
				}
			}
		}
	}
	t.Logf("%d nodes, %d constants; import %v, total %v", len(g.Nodes), len(g.Consts), loaded.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}

func TestSharedModels(t *testing.T) {
	root := testenv.SharedTestdata(t, "models")
	cases := []struct {
		dir   string
		tol   tolerance
		heavy bool // skipped in -short mode
	}{
		// meta.json: logits of magnitude ~1e3, compare with rtol 1e-3.
		{dir: "mnist-8", tol: tolerance{abs: 1e-3, rel: 1e-3}},
		{dir: "cifar10-oval-base-kw", tol: defaultTol},
		{dir: "cifar10-oval-base-kw-simplified", tol: defaultTol},
		{dir: "onnx-light/light_bvlc_alexnet", tol: defaultTol, heavy: true},
		{dir: "onnx-light/light_densenet121", tol: defaultTol},
		{dir: "onnx-light/light_inception_v1", tol: defaultTol},
		{dir: "onnx-light/light_inception_v2", tol: defaultTol},
		{dir: "onnx-light/light_resnet50", tol: defaultTol, heavy: true},
		{dir: "onnx-light/light_shufflenet", tol: defaultTol},
		{dir: "onnx-light/light_squeezenet", tol: defaultTol},
		{dir: "onnx-light/light_vgg19", tol: defaultTol, heavy: true},
		{dir: "onnx-light/light_zfnet512", tol: defaultTol, heavy: true},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			if c.heavy && testing.Short() {
				t.Skip("ImageNet-scale graph with large weights; skipped in -short mode")
			}
			dir := filepath.Join(root, c.dir)
			if _, err := os.Stat(filepath.Join(dir, "model.onnx")); err != nil {
				t.Skipf("model not available: %v", err)
			}
			checkModel(t, dir, c.tol)
		})
	}
}

func TestMobileNetInt8Imports(t *testing.T) {
	path := filepath.Join(testenv.SharedTestdata(t, "models"), "mobilenetv2-12-int8", "model.onnx")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("model not available: %v", err)
	}
	g, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, nd := range g.Nodes {
		if nd.Op == ir.Requant {
			n++
		}
	}
	// 52 QLinearConv, 11 QLinearAdd, 1 QLinearGlobalAveragePool, 1 QLinearMatMul.
	if n != 65 {
		t.Errorf("%d Requant nodes, want 65", n)
	}
	// The input's QuantizeLinear and the output's DequantizeLinear are recorded for the client.
	if q, want := g.InputQuant["input"], (ir.Quant{Scale: 0.018658448, ZeroPoint: 114, Type: "uint8"}); q != want || len(g.InputQuant) != 1 {
		t.Errorf("input quantization %+v, want %+v", g.InputQuant, want)
	}
	if q, want := g.OutputQuant["output"], (ir.Quant{Scale: 0.160144582, ZeroPoint: 75, Type: "uint8"}); q != want || len(g.OutputQuant) != 1 {
		t.Errorf("output dequantization %+v, want %+v", g.OutputQuant, want)
	}
}

// TestMNISTAccuracy runs mnist-8 over the full MNIST t10k set (raw 0..255 pixels, as the model
// zoo's test inputs) and checks the published top-1 accuracy of 98.91 %.
func TestMNISTAccuracy(t *testing.T) {
	model := filepath.Join(testenv.SharedTestdata(t, "models"), "mnist-8", "model.onnx")
	data := testenv.SharedTestdata(t, filepath.Join("datasets", "mnist"))
	images, err := mnist.ReadImagesFile(filepath.Join(data, "t10k-images-idx3-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	labels, err := mnist.ReadLabelsFile(filepath.Join(data, "t10k-labels-idx1-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if images.Count != len(labels) {
		t.Fatalf("%d images, %d labels", images.Count, len(labels))
	}
	g, err := Load(model, Options{})
	if err != nil {
		t.Fatal(err)
	}
	it, err := interp.New(g)
	if err != nil {
		t.Fatal(err)
	}
	in := g.Inputs[0]
	start := time.Now()
	correct := 0
	x := &ir.Tensor{Shape: in.Shape}
	for i := 0; i < images.Count; i++ {
		if x.Data, err = images.Image(i); err != nil {
			t.Fatal(err)
		}
		out, err := it.Run(map[string]*ir.Tensor{in.Name: x})
		if err != nil {
			t.Fatal(err)
		}
		if argmax(out[g.Outputs[0]].Data) == int(labels[i]) {
			correct++
		}
	}
	acc := float64(correct) / float64(images.Count)
	t.Logf("mnist-8 on t10k: %d/%d = %.2f %% in %v", correct, images.Count, 100*acc, time.Since(start).Round(time.Millisecond))
	if correct != 9891 {
		t.Errorf("accuracy %.2f %% (%d correct), want 98.91 %% (9891)", 100*acc, correct)
	}
}
