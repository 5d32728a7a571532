package tf

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/ir/irtext"
)

// sharedModel is one frozen graph of ../shared/testdata/tf with its test vectors. Vector files
// are input_<tensor>.npy and expected_<tensor>.npy with '/' written as '_'.
type sharedModel struct {
	dir, file string
	inputs    []string // Options.Inputs specifications
	outputs   []string // tensors with expected_*.npy vectors
	extra     []string // further Options.Outputs (computed but not compared)
	ops       string   // the HLIL the import must produce (op counts, sorted), when set
}

var sharedModels = []sharedModel{
	{dir: "tfe_mnist_cnn", file: "mnist_model.pb", inputs: []string{"Placeholder"}, outputs: []string{"fc2/add"},
		ops: "Add:4 AveragePool:2 Conv:2 MatMul:2 Relu:3 Reshape:2 Transpose:1"},
	{dir: "utensor_simple_mnist", file: "simple_mnist.pb", inputs: []string{"x"}, outputs: []string{"y_pred", "OuputLayer/logits"}},
	{dir: "tf2onnx_fc_layers", file: "frozen.pb", inputs: []string{"X"}, outputs: []string{"output"}},
	{dir: "tf2onnx_ae0", file: "frozen.pb", inputs: []string{"X"}, outputs: []string{"output"}},
	{dir: "arm_simple_mnist_softmax", file: "simple_mnist_tf.pb", inputs: []string{"Placeholder:[-1,784]"}, outputs: []string{"Softmax"}},
	{dir: "utensor_cifar10_cnn", file: "cifar10_cnn.pb", inputs: []string{"Placeholder"}, outputs: []string{"pred", "fully_connect_2/logits"}},
	{dir: "arm_mobilenet_v1_025_128_features", file: "mnet.pb", inputs: []string{"input_1"}, outputs: []string{"output_0"},
		ops: "BatchNormalization:27 Clip:27 Conv:27 Transpose:2"},
	{dir: "arm_kws_cnn_s", file: "CNN_S.pb", inputs: []string{"Mfcc:[1,49,10]"}, outputs: []string{"labels_softmax"},
		ops: "Add:5 BatchNormalization:3 Conv:2 MatMul:3 Relu:3 Reshape:2 Softmax:1 Transpose:1"},
}

func fileName(tensor string) string { return strings.ReplaceAll(tensor, "/", "_") }

func readNpy(t *testing.T, path string) *ir.Tensor {
	t.Helper()
	a, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.Float32()
	if err != nil {
		t.Fatal(err)
	}
	return &ir.Tensor{Shape: ir.Shape(a.Shape), Data: d}
}

// loadShared imports a shared model with the batch of its test input.
func loadShared(t *testing.T, root string, m sharedModel, batch int) *ir.Graph {
	t.Helper()
	opts := Options{Outputs: append(append([]string{}, m.outputs...), m.extra...), Batch: batch}
	for _, s := range m.inputs {
		in, err := ParseInput(s)
		if err != nil {
			t.Fatal(err)
		}
		opts.Inputs = append(opts.Inputs, in)
	}
	g, err := Load(filepath.Join(root, m.dir, m.file), opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// compare checks got against want: |got-want| <= 1e-4·max(|want|_inf, 1e-3) element by element
// (relative to the tensor's scale), and returns the largest error relative to that scale.
func compare(got, want *ir.Tensor) (float64, error) {
	if got.Shape.Size() != want.Shape.Size() {
		return 0, fmt.Errorf("shape %v, want %v", got.Shape, want.Shape)
	}
	scale := 1e-3
	for _, w := range want.Data {
		scale = math.Max(scale, math.Abs(float64(w)))
	}
	worst := 0.0
	for i := range want.Data {
		d := math.Abs(float64(got.Data[i])-float64(want.Data[i])) / scale
		if !(d <= 1e-4) {
			return d, fmt.Errorf("element %d is %g, want %g (error %.3g of scale %g)", i, got.Data[i], want.Data[i], d, scale)
		}
		worst = math.Max(worst, d)
	}
	return worst, nil
}

func TestSharedModels(t *testing.T) {
	root := testenv.SharedTestdata(t, "tf")
	for _, m := range sharedModels {
		t.Run(m.dir, func(t *testing.T) {
			in0, _ := ParseInput(m.inputs[0])
			_, node, _ := canonical(in0.Name)
			x := readNpy(t, filepath.Join(root, m.dir, "input_"+fileName(node)+".npy"))
			g := loadShared(t, root, m, x.Shape[0])
			if m.ops != "" {
				if got := opCounts(g); got != m.ops {
					t.Errorf("imported as %s, want %s", got, m.ops)
				}
			}
			if err := irtext.CheckRoundTrip(g); err != nil {
				t.Errorf("HLIL text round trip: %v", err)
			}
			if len(g.Inputs) != 1 {
				t.Fatalf("graph has inputs %v, want one", g.Inputs)
			}
			if !g.Inputs[0].Shape.Equal(x.Shape) && g.Inputs[0].Shape.Size() == x.Shape.Size() {
				x.Shape = g.Inputs[0].Shape
			}
			out, err := interp.Run(g, map[string]*ir.Tensor{g.Inputs[0].Name: x})
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range m.outputs {
				want := readNpy(t, filepath.Join(root, m.dir, "expected_"+fileName(o)+".npy"))
				worst, err := compare(out[o], want)
				if err != nil {
					t.Errorf("output %s: %v", o, err)
					continue
				}
				t.Logf("output %s %v: largest error %.2g of the output's scale", o, want.Shape, worst)
			}
		})
	}
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }

// TestFCLayersRamp feeds tf2onnx's own test input for fc-layers, np.linspace(1, 784, 784).
func TestFCLayersRamp(t *testing.T) {
	root := testenv.SharedTestdata(t, "tf")
	g := loadShared(t, root, sharedModels[2], 1)
	x := &ir.Tensor{Shape: ir.Shape{1, 784}, Data: make([]float32, 784)}
	for i := range x.Data {
		x.Data[i] = float32(i + 1)
	}
	out, err := interp.Run(g, map[string]*ir.Tensor{"X": x})
	if err != nil {
		t.Fatal(err)
	}
	want := readNpy(t, filepath.Join(root, "tf2onnx_fc_layers", "expected_output_for_get_ramp.npy"))
	worst, err := compare(out["output"], want)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("largest error %.2g of the output's scale", worst)
}

// opCounts summarises a graph as "Op:count ..." sorted by op.
func opCounts(g *ir.Graph) string {
	cnt := map[string]int{}
	for _, n := range g.Nodes {
		cnt[string(n.Op)]++
	}
	ops := make([]string, 0, len(cnt))
	for op, k := range cnt {
		ops = append(ops, fmt.Sprintf("%s:%d", op, k))
	}
	sort.Strings(ops)
	return strings.Join(ops, " ")
}
