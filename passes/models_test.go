package passes

import (
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/internal/testsets"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

type testModel struct {
	name, path string
	samples    func(t testing.TB) []dataset.Sample
}

func testModels(t *testing.T) []testModel {
	shared := testenv.SharedTestdata(t)
	return []testModel{
		{"mnist-small", filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small", "model.onnx"),
			func(t testing.TB) []dataset.Sample { return mnistSamples(t, shared, 0, 60, true) }},
		{"mnist-8", filepath.Join(shared, "models", "mnist-8", "model.onnx"),
			func(t testing.TB) []dataset.Sample { return mnistSamples(t, shared, 0, 60, false) }},
		{"cifar10-oval-base-kw", filepath.Join(shared, "models", "cifar10-oval-base-kw", "model.onnx"),
			func(t testing.TB) []dataset.Sample { return cifarSamples(t, shared, 20) }},
		{"cifar10-oval-base-kw-simplified", filepath.Join(shared, "models", "cifar10-oval-base-kw-simplified", "model.onnx"),
			func(t testing.TB) []dataset.Sample { return cifarSamples(t, shared, 20) }},
	}
}

// TestModelsPeepholeExact compiles every test model with and without peepholes and checks that
// both give bit-identical cleartext outputs on validation inputs, and that the peepholes removed
// ReLU work or truncations (or made them cheaper) where the patterns occur.
func TestModelsPeepholeExact(t *testing.T) {
	for _, m := range testModels(t) {
		t.Run(m.name, func(t *testing.T) {
			g, err := onnx.Load(m.path, onnx.Options{Batch: 1})
			if err != nil {
				t.Fatal(err)
			}
			cg, _, err := clean(g, false)
			if err != nil {
				t.Fatal(err)
			}
			samples := m.samples(t)
			opts := defaultTuneOptions()
			opts.Scale = 10
			res, err := tuneGraph(cg, g, samples, opts)
			if err != nil {
				t.Fatal(err)
			}
			plain, err := lower(cg, lowerOptions{Bits: res.Bits, Scale: res.Scale})
			if err != nil {
				t.Fatal(err)
			}
			opt, rep, err := peephole(plain)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range samples {
				a, _ := runFixedRaw(t, plain, s.Input)
				b, _ := runFixedRaw(t, opt, s.Input)
				if !equalInts(a, b) {
					t.Fatalf("%s: outputs differ with and without peepholes:\n%v\n%v", s.Name, a, b)
				}
			}
			hasMaxPool := false
			for _, in := range plain.Instrs {
				hasMaxPool = hasMaxPool || in.Op == fixed.OpMaxPool
			}
			b, a := rep.Before, rep.After
			if hasMaxPool && (a.ReLU >= b.ReLU || a.Trunc >= b.Trunc) {
				t.Errorf("ReLU elements %d -> %d, truncations %d -> %d", b.ReLU, a.ReLU, b.Trunc, a.Trunc)
			}
			if a.TruncNonNeg <= b.TruncNonNeg {
				t.Errorf("no truncation marked non-negative: %+v", rep)
			}
			t.Logf("l=%d s=%d on %d inputs, accuracy %.1f%% (float %.1f%%); %s; %s; %s",
				res.Bits, res.Scale, len(samples), 100*res.Chosen.Accuracy, 100*res.FloatAccuracy,
				strings.Join(strings.Fields(rep.Lines()[1]), " "), strings.Join(strings.Fields(rep.Lines()[3]), " "),
				strings.Join(strings.Fields(rep.Lines()[4]), " "))
		})
	}
}

// TestMNISTAccuracy autotunes mnist-8 (raw 0..255 input, logits around 1e3) and the project's
// mnist-small (input 0..1) on the first 1000 MNIST t10k images and checks that fixed-point
// accuracy on the other 9000 is within 0.1 points of float. -short uses fewer images and a looser
// bound.
func TestMNISTAccuracy(t *testing.T) {
	shared := testenv.SharedTestdata(t)
	nTune, nTest, tol := 1000, 10000, 0.1
	scales := defaultScales
	if testing.Short() {
		nTune, nTest, tol = 300, 2000, 0.5
		scales = []int{6, 8, 10, 12}
	}
	for _, m := range []struct {
		name, path string
		unit       bool
	}{
		{"mnist-8", filepath.Join(shared, "models", "mnist-8", "model.onnx"), false},
		{"mnist-small", filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small", "model.onnx"), true},
	} {
		t.Run(m.name, func(t *testing.T) {
			g, err := onnx.Load(m.path, onnx.Options{Batch: 1})
			if err != nil {
				t.Fatal(err)
			}
			cg, _, err := clean(g, false)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			opts := defaultTuneOptions()
			opts.Scales = scales
			res, err := tuneGraph(cg, g, mnistSamples(t, shared, 0, nTune, m.unit), opts)
			if err != nil {
				t.Fatal(err)
			}
			tuned := time.Since(start)
			if !res.Verified {
				t.Errorf("l=%d s=%d not verified against the 64-bit run", res.Bits, res.Scale)
			}
			p, err := build(cg, res.Bits, res.Scale, true)
			if err != nil {
				t.Fatal(err)
			}
			test := mnistSamples(t, shared, nTune, nTest, m.unit)
			start = time.Now()
			fixed, err := runClear(p, test, 2, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			ran := time.Since(start)
			float, err := floatPredictions(g, test, 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			fa, xa := 100*accuracy(float, test), 100*accuracy(fixed.top, test)
			t.Logf("%s: chose l=%d s=%d (bits used %d, tune accuracy %.2f%%, float %.2f%%) in %v; on %d other images: float %.2f%%, fixed %.2f%%, agreement %.2f%% (fixed-point run %v)",
				m.name, res.Bits, res.Scale, res.Chosen.BitsUsed, 100*res.Chosen.Accuracy, 100*res.FloatAccuracy, tuned.Round(time.Millisecond),
				len(test), fa, xa, 100*agreement(fixed.top, float), ran.Round(time.Millisecond))
			if math.Abs(fa-xa) > tol {
				t.Errorf("fixed-point accuracy %.2f%% is not within %.1f points of float %.2f%%", xa, tol, fa)
			}
		})
	}
}

// mnistSamples returns t10k images from..to-1 (see testsets.MNIST).
func mnistSamples(t testing.TB, shared string, from, to int, unit bool) []dataset.Sample {
	return toSamples(testsets.MNIST(t, shared, from, to, unit))
}

// cifarSamples returns the first n CIFAR-10 test images as the OVAL models expect them.
func cifarSamples(t testing.TB, shared string, n int) []dataset.Sample {
	return toSamples(testsets.CIFAROval(t, shared, n))
}

func toSamples(in []testsets.Sample) []dataset.Sample {
	out := make([]dataset.Sample, len(in))
	for i, s := range in {
		out[i] = dataset.Sample(s)
	}
	return out
}
