package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/frontend"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/internal/testsets"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// tfModel is one frozen graph of ../shared/testdata/tf as the athosc command line takes it: the
// --inputs and --outputs flags, and the outputs with expected_<tensor>.npy vectors.
type tfModel struct {
	dir, file string
	inputs    string   // --inputs
	input     string   // the node whose input_<node>.npy is the test input
	outputs   []string // --outputs, each with an expected_*.npy
}

var tfModels = []tfModel{
	{"tfe_mnist_cnn", "mnist_model.pb", "", "Placeholder", []string{"fc2/add"}},
	{"utensor_simple_mnist", "simple_mnist.pb", "", "x", []string{"y_pred", "OuputLayer/logits"}},
	{"tf2onnx_fc_layers", "frozen.pb", "", "X", []string{"output"}},
	{"tf2onnx_ae0", "frozen.pb", "", "X", []string{"output"}},
	{"arm_simple_mnist_softmax", "simple_mnist_tf.pb", "Placeholder:[-1,784]", "Placeholder", []string{"Softmax"}},
	{"utensor_cifar10_cnn", "cifar10_cnn.pb", "", "Placeholder", []string{"pred", "fully_connect_2/logits"}},
	{"arm_mobilenet_v1_025_128_features", "mnet.pb", "", "input_1", []string{"output_0"}},
	{"arm_kws_cnn_s", "CNN_S.pb", "Mfcc:[1,49,10]", "Mfcc", []string{"labels_softmax"}},
}

func vectorName(tensor string) string { return strings.ReplaceAll(tensor, "/", "_") }

func readFloats(t *testing.T, path string) ([]int, []float32) {
	t.Helper()
	a, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d, err := a.Float32()
	if err != nil {
		t.Fatal(err)
	}
	return a.Shape, d
}

// TestEvalSharedTF: every model of ../shared/testdata/tf run through `athosc eval` (format
// detection, --inputs/--outputs/--batch, --output NAME=FILE) reproduces its expected outputs
// within 1e-4 of each output's largest magnitude.
func TestEvalSharedTF(t *testing.T) {
	root := testenv.SharedTestdata(t, "tf")
	for _, m := range tfModels {
		t.Run(m.dir, func(t *testing.T) {
			dir := filepath.Join(root, m.dir)
			in := filepath.Join(dir, "input_"+vectorName(m.input)+".npy")
			shape, _ := readFloats(t, in)
			args := []string{filepath.Join(dir, m.file), "--input", in, "--batch", fmt.Sprint(shape[0]), "--top", "0",
				"--outputs", strings.Join(m.outputs, ",")}
			if m.inputs != "" {
				args = append(args, "--inputs", m.inputs)
			}
			tmp := t.TempDir()
			for _, o := range m.outputs {
				args = append(args, "--output", o+"="+filepath.Join(tmp, vectorName(o)+".npy"))
			}
			if err := runEval(args); err != nil {
				t.Fatalf("athosc eval %s: %v", strings.Join(args, " "), err)
			}
			for _, o := range m.outputs {
				gs, got := readFloats(t, filepath.Join(tmp, vectorName(o)+".npy"))
				ws, want := readFloats(t, filepath.Join(dir, "expected_"+vectorName(o)+".npy"))
				if len(got) != len(want) {
					t.Fatalf("output %s: shape %v, want %v", o, gs, ws)
				}
				scale := 1e-3
				for _, w := range want {
					scale = math.Max(scale, math.Abs(float64(w)))
				}
				worst := 0.0
				for i := range want {
					d := math.Abs(float64(got[i])-float64(want[i])) / scale
					if !(d <= 1e-4) {
						t.Fatalf("output %s element %d: %g, want %g (error %.3g of scale %g)", o, i, got[i], want[i], d, scale)
					}
					worst = math.Max(worst, d)
				}
				t.Logf("output %s %v: largest error %.2g of the output's scale %.3g", o, ws, worst, scale)
			}
		})
	}
}

// TestLoadDetectsFormat: athosc reads a .pb copied to a .onnx name as TensorFlow, and an ONNX
// model under a .pb name as ONNX (the bytes decide); cutting flags reach both front ends.
func TestLoadDetectsFormat(t *testing.T) {
	root := testenv.SharedTestdata(t, "tf")
	tmp := t.TempDir()
	b, err := os.ReadFile(filepath.Join(root, "tf2onnx_fc_layers", "frozen.pb"))
	if err != nil {
		t.Fatal(err)
	}
	disguised := filepath.Join(tmp, "model.onnx")
	if err := os.WriteFile(disguised, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := frontend.Detect(disguised); err != nil || f != frontend.TF {
		t.Fatalf("Detect(%s) = %v, %v", disguised, f, err)
	}
	var mf modelFlags
	mf.outputs = multiFlag{"output"}
	g, err := mf.load(disguised, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Inputs) != 1 || !g.Inputs[0].Shape.Equal(ir.Shape{3, 784}) {
		t.Fatalf("inputs %+v", g.Inputs)
	}

	model, _ := smallModel(t)
	ob, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	asPB := filepath.Join(tmp, "model.pb")
	if err := os.WriteFile(asPB, ob, 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := frontend.Detect(asPB); err != nil || f != frontend.ONNX {
		t.Fatalf("Detect(%s) = %v, %v", asPB, f, err)
	}
	if _, err := mf.load(asPB, 1); err == nil || !strings.Contains(err.Error(), `output "output" is not a tensor of the graph`) {
		t.Fatalf("ONNX with a foreign --outputs: %v", err)
	}
}

// TestInputsFlagSyntax: --inputs takes NAME, NAME:k and NAME:[SHAPE] items, repeated or as a
// comma list split outside brackets; a bare shape is refused with a hint.
func TestInputsFlagSyntax(t *testing.T) {
	var mf modelFlags
	mf.inputs = multiFlag{"a:[1,49,10],b:1", "c:[-1,3]"}
	mf.outputs = multiFlag{"x,y", "z"}
	opts, err := mf.options(4)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(opts.Inputs, opts.Outputs, opts.Batch)
	if want := "[{a [1 49 10]} {b:1 []} {c [-1 3]}] [x y z] 4"; got != want {
		t.Fatalf("options %s, want %s", got, want)
	}
	for _, bad := range []string{"Mfcc:1,49,10", "a,,b", "a:[1,x]", ":[1,2]", "a:shape"} {
		mf := modelFlags{inputs: multiFlag{bad}}
		if _, err := mf.options(1); err == nil {
			t.Errorf("--inputs %q accepted", bad)
		}
	}
	mf = modelFlags{inputs: multiFlag{"Mfcc:1,49,10"}}
	if _, err := mf.options(1); err == nil || !strings.Contains(err.Error(), "brackets") {
		t.Errorf("bare shape: %v", err)
	}
}

// mnistFolder writes t10k images from..to-1 as NNNNN.npy [1,784] files in [0,1] plus
// labels.txt, the layout the TF MNIST models take (meta.json: Placeholder [-1,784]).
func mnistFolder(t *testing.T, samples []testsets.Sample) string {
	t.Helper()
	dir := t.TempDir()
	var labels strings.Builder
	for i, s := range samples {
		name := fmt.Sprintf("%05d.npy", i)
		if err := npy.WriteFileFloat32(filepath.Join(dir, name), []int{1, 784}, s.Input); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&labels, "%s %d\n", name, s.Label)
	}
	if err := os.WriteFile(filepath.Join(dir, "labels.txt"), []byte(labels.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func argmaxF(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// TestCompileTFMNISTAccuracy compiles the MNIST classifiers of ../shared/testdata/tf with
// `athosc MODEL.pb --validate DIR` (DIR: t10k images 0..499 as .npy with labels, autotuned l
// and s) and compares the fixed-point program's accuracy, run on the cleartext VM, with the float
// model's on the held-out t10k images 500..9999: within 0.2 points. With -short: 100 validation
// images, 500 held-out images (5000..5499), within 1 point.
func TestCompileTFMNISTAccuracy(t *testing.T) {
	root := testenv.SharedTestdata(t, "tf")
	shared := testenv.SharedTestdata(t)
	nVal, from, to, bound := 500, 500, 10000, 0.2
	if testing.Short() {
		nVal, from, to, bound = 100, 5000, 5500, 1.0
	}
	val := mnistFolder(t, testsets.MNIST(t, shared, 0, nVal, true))
	held := testsets.MNIST(t, shared, from, to, true)
	cases := []struct{ dir, file, inputs, output string }{
		{"tfe_mnist_cnn", "mnist_model.pb", "", "fc2/add"},
		{"tf2onnx_fc_layers", "frozen.pb", "", "output"},
		{"arm_simple_mnist_softmax", "simple_mnist_tf.pb", "Placeholder:[-1,784]", "Softmax"},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			model := filepath.Join(root, c.dir, c.file)
			out := filepath.Join(t.TempDir(), c.dir+".sciir")
			args := []string{model, "--validate", val, "-o", out, "--outputs", c.output}
			if c.inputs != "" {
				args = append(args, "--inputs", c.inputs)
			}
			cfg, err := parseCompile(args)
			if err != nil {
				t.Fatal(err)
			}
			var stdout bytes.Buffer
			start := time.Now()
			if err := compileChecked(cfg, &stdout, &bytes.Buffer{}); err != nil {
				t.Fatalf("athosc %s: %v\n%s", strings.Join(args, " "), err, stdout.String())
			}
			compileTime := time.Since(start)
			f, err := sciir.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			for _, line := range strings.Split(stdout.String(), "\n") {
				if strings.HasPrefix(line, "chose l=") || strings.HasPrefix(line, "autotune") {
					t.Log(line)
				}
			}

			g, err := frontend.Load(model, frontend.Options{Inputs: cfg.mustInputs(t), Outputs: []string{c.output}, Batch: 1})
			if err != nil {
				t.Fatal(err)
			}
			it, err := interp.New(g)
			if err != nil {
				t.Fatal(err)
			}
			p := f.Program
			r := ring.Must(p.Bits)
			be, err := cleartext.New(r)
			if err != nil {
				t.Fatal(err)
			}
			m, err := vm.New(p, be)
			if err != nil {
				t.Fatal(err)
			}
			in := p.Tensors[p.Inputs[0].Tensor]
			floatOK, fixedOK, agree := 0, 0, 0
			for _, s := range held {
				y, err := it.Run(map[string]*ir.Tensor{g.Inputs[0].Name: {Shape: g.Inputs[0].Shape, Data: s.Input}})
				if err != nil {
					t.Fatal(err)
				}
				fc := argmaxF(y[c.output].Data)
				x, err := r.EncodeTensor(in.Shape, s.Input, in.Scale)
				if err != nil {
					t.Fatal(err)
				}
				outs, err := m.Run(context.Background(), []ring.Tensor{x})
				if err != nil {
					t.Fatal(err)
				}
				xc := argmaxF(r.DecodeTensor(outs[0].Value, outs[0].Scale))
				if fc == s.Label {
					floatOK++
				}
				if xc == s.Label {
					fixedOK++
				}
				if fc == xc {
					agree++
				}
			}
			n := float64(len(held))
			fa, xa := 100*float64(floatOK)/n, 100*float64(fixedOK)/n
			t.Logf("%s: l=%d s=%d (compiled in %v): t10k[%d:%d] float %.2f %%, fixed point %.2f %% (difference %+.2f points), top-1 agreement %.2f %%",
				c.dir, p.Bits, p.Scale, compileTime.Round(time.Millisecond), from, to, fa, xa, xa-fa, 100*float64(agree)/n)
			if math.Abs(xa-fa) > bound {
				t.Errorf("fixed-point accuracy %.2f %% is more than %.1f points from float %.2f %%", xa, bound, fa)
			}
		})
	}
}

// mustInputs returns the --inputs of a parsed compile command line as frontend inputs.
func (c *compileConfig) mustInputs(t *testing.T) []frontend.Input {
	t.Helper()
	opts, err := c.modelFlags.options(c.batch)
	if err != nil {
		t.Fatal(err)
	}
	return opts.Inputs
}
