package golden

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ring"
)

// TestMNISTSmall is the golden test of the project's own MNIST model: compiled with its shipped
// validation inputs, run on those and on further inputs, secure equals clear bitwise.
func TestMNISTSmall(t *testing.T) {
	root := testenv.RepoRoot(t)
	dir := filepath.Join(root, "testdata", "mnist-small")
	g := loadModel(t, filepath.Join(dir, "model.onnx"))
	ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, tune := compileTuned(t, g, ds.Samples, -1)
	t.Logf("mnist-small: l=%d s=%d", tune.Bits, tune.Scale)
	xs := inputsOf(ds.Samples)
	// An input outside the validation set: a constant image (all 0.5) and its negation.
	flat := make([]float32, len(xs[0]))
	neg := make([]float32, len(xs[0]))
	for i := range flat {
		flat[i], neg[i] = 0.5, -0.5
	}
	xs = append(xs, flat, neg)
	inputs := encodeInputs(t, prog.server, xs)
	clear := runClear(t, prog.server, inputs)
	opt := secureOptions{streams: 2}
	sec := runSecure(t, prog, inputs, opt)
	compareRuns(t, clear, sec)
	checkLinearTraffic(t, prog.server, sec, len(inputs), opt)
	logProfile(t, "mnist-small", sec, len(inputs))
	r := ring.Must(prog.server.Bits)
	for i, s := range ds.Samples {
		if got := argmaxSigned(r, sec.client[i][0].Value.Data); s.Label >= 0 && got != s.Label {
			t.Logf("%s: class %d, label %d", s.Name, got, s.Label)
		}
	}
}

// TestMNIST8 runs the ONNX zoo's mnist-8 on 20 MNIST test images, one after the other on one
// SCI_OT session: the raw outputs and the classes equal the cleartext run's.
func TestMNIST8(t *testing.T) {
	shared := testenv.SharedTestdata(t)
	g := loadModel(t, filepath.Join(shared, "models", "mnist-8", "model.onnx"))
	samples := mnistSamples(t, shared, 0, 20, false)
	prog, tune := compileTuned(t, g, samples, -1)
	t.Logf("mnist-8: l=%d s=%d, fixed-point accuracy on the 20 images %.2f", tune.Bits, tune.Scale, tune.Chosen.Accuracy)
	inputs := encodeInputs(t, prog.server, inputsOf(samples))
	clear := runClear(t, prog.server, inputs)
	opt := secureOptions{streams: 2}
	sec := runSecure(t, prog, inputs, opt)
	compareRuns(t, clear, sec)
	checkLinearTraffic(t, prog.server, sec, len(inputs), opt)
	logProfile(t, "mnist-8", sec, len(inputs))
	r := ring.Must(prog.server.Bits)
	correct := 0
	for i, s := range samples {
		got := argmaxSigned(r, sec.client[i][0].Value.Data)
		if want := argmaxSigned(r, clear[i][0].Value.Data); got != want {
			t.Fatalf("%s: secure class %d, clear class %d", s.Name, got, want)
		}
		if got == s.Label {
			correct++
		}
	}
	t.Logf("mnist-8: secure classes equal the clear ones on all %d images; %d/%d match the labels", len(samples), correct, len(samples))
}

// TestCIFAR10OvalBase runs the OVAL CIFAR-10 "base" network on CIFAR-10 test images.
func TestCIFAR10OvalBase(t *testing.T) {
	shared := testenv.SharedTestdata(t)
	for _, name := range []string{"cifar10-oval-base-kw", "cifar10-oval-base-kw-simplified"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(shared, "models", name, "model.onnx")
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s not present: %v", path, err)
			}
			g := loadModel(t, path)
			samples := cifarSamples(t, shared, 10)
			prog, tune := compileTuned(t, g, samples, -1)
			t.Logf("%s: l=%d s=%d", name, tune.Bits, tune.Scale)
			inputs := encodeInputs(t, prog.server, inputsOf(samples[:4]))
			clear := runClear(t, prog.server, inputs)
			sec := runSecure(t, prog, inputs, secureOptions{streams: 1})
			compareRuns(t, clear, sec)
			logProfile(t, name, sec, len(inputs))
		})
	}
}
