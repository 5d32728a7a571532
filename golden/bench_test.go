package golden

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// benchInference runs b.N secure inferences of prog on one session and reports the per-inference
// time, traffic and flights split into linear and nonlinear layers (both parties together).
func benchInference(b *testing.B, prog *program, x ring.Tensor, opt secureOptions) {
	inputs := make([]ring.Tensor, b.N)
	for i := range inputs {
		inputs[i] = x
	}
	clear := runClear(b, prog.server, inputs[:1])
	b.ResetTimer()
	sec := runSecure(b, prog, inputs, opt)
	b.StopTimer()
	compareRuns(b, clear, &secureRun{client: sec.client[:1], server: sec.server[:1]})
	n := float64(b.N)
	p0, p1 := sec.prof[0], sec.prof[1]
	cost := func(c0, c1 sci.Cost) (secs, mbytes, flights float64) {
		// Time: the slower party's (both run concurrently).
		t := max(c0.Time, c1.Time)
		return t.Seconds() / n, float64(c0.BytesSent+c1.BytesSent) / 1e6 / n, float64(c0.Rounds+c1.Rounds) / n
	}
	ls, lmb, lf := cost(p0.Linear, p1.Linear)
	ns, nmb, nf := cost(p0.Nonlinear, p1.Nonlinear)
	_, omb, of := cost(p0.Online(), p1.Online())
	b.ReportMetric(ls, "linear-s")
	b.ReportMetric(lmb, "linear-MB")
	b.ReportMetric(lf, "linear-flights")
	b.ReportMetric(ns, "nonlinear-s")
	b.ReportMetric(nmb, "nonlinear-MB")
	b.ReportMetric(nf, "nonlinear-flights")
	b.ReportMetric(omb, "total-MB")
	b.ReportMetric(of, "total-flights")
	b.ReportMetric(float64(p0.Setup.BytesSent+p1.Setup.BytesSent)/1e6, "setup-MB")
	var tot time.Duration
	for _, d := range sec.runTime {
		tot += d
	}
	b.Logf("l=%d s=%d, %d inferences, %v each; setup %v; linear formula %.3f MB", prog.server.Bits, prog.server.Scale, b.N,
		(tot / time.Duration(b.N)).Round(time.Millisecond), max(p0.Setup.Time, p1.Setup.Time).Round(time.Millisecond),
		float64(linearFormulaBits(prog.server, opt.oneBatch, opt.im2col))/8e6)
}

// benchCases are the settings the inference benchmarks run: the in-memory pipe with one and two
// streams, and the LAN model of package transport, each with the linear layers in per-bit OT
// batches (exact communication) or in one batch per chunk; and each with the convolutions run by
// the backend where that is cheaper (the default) or all lowered to im2col + MatMul (_im2col, the
// VM's lowering before the backend had Conv2D).
var benchCases = []benchCase{
	{"pipe", 1, false, false}, {"pipe", 2, false, false}, {"pipe", 1, true, false}, {"lan", 1, false, false}, {"lan", 1, true, false},
	{"pipe", 1, false, true}, {"pipe", 2, false, true}, {"pipe", 1, true, true}, {"lan", 1, false, true}, {"lan", 1, true, true},
}

type benchCase struct {
	net     string
	streams int
	one     bool
	im2col  bool
}

func (c benchCase) name() string {
	s := fmt.Sprintf("%s_streams%d", c.net, c.streams)
	if c.one {
		s += "_onebatch"
	}
	if c.im2col {
		s += "_im2col"
	}
	return s
}

func (c benchCase) options() secureOptions {
	return secureOptions{streams: c.streams, net: netModel(c.net), oneBatch: c.one, im2col: c.im2col}
}

func netModel(name string) *netmodel.Model {
	m, err := netmodel.Parse(name)
	if err != nil {
		panic(err) // the bench cases name lan or wan
	}
	return m
}

// BenchmarkMNISTSmall is one secure inference of the project's MNIST model (testdata/mnist-small).
func BenchmarkMNISTSmall(b *testing.B) {
	dir := filepath.Join(testenv.RepoRoot(b), "testdata", "mnist-small")
	g := loadModel(b, filepath.Join(dir, "model.onnx"))
	ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
	if err != nil {
		b.Fatal(err)
	}
	prog, _ := compileTuned(b, g, ds.Samples, -1)
	x := encodeInputs(b, prog.server, inputsOf(ds.Samples[:1]))[0]
	for _, tc := range benchCases {
		b.Run(tc.name(), func(b *testing.B) {
			benchInference(b, prog, x, tc.options())
		})
	}
}

// BenchmarkMNIST8 is one secure inference of the ONNX zoo's mnist-8 (../shared/testdata),
// autotuned on 20 MNIST test images.
func BenchmarkMNIST8(b *testing.B) {
	shared := testenv.SharedTestdata(b)
	g := loadModel(b, filepath.Join(shared, "models", "mnist-8", "model.onnx"))
	samples := mnistSamples(b, shared, 0, 20, false)
	prog, _ := compileTuned(b, g, samples, -1)
	x := encodeInputs(b, prog.server, inputsOf(samples[:1]))[0]
	for _, tc := range benchCases {
		b.Run(tc.name(), func(b *testing.B) {
			benchInference(b, prog, x, tc.options())
		})
	}
}

// BenchmarkMiniONN is one secure inference of the MiniONN-shaped CIFAR-10 network (CrypTFlow2
// Table 5) with random weights, at l = 41 (as in Table 5) and s = 12. It takes about a minute per
// inference: run it explicitly (-bench MiniONN -benchtime 1x).
func BenchmarkMiniONN(b *testing.B) {
	g, err := MiniONN(1, 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(2, 3))
	var samples []dataset.Sample
	for i := 0; i < 4; i++ {
		x := make([]float32, g.Inputs[0].Shape.Size())
		for j := range x {
			x[j] = float32(4*rng.Float64() - 2) // CIFAR pixels normalised to about ±2
		}
		samples = append(samples, dataset.Sample{Name: fmt.Sprint(i), Input: x, Label: -1})
	}
	opts := passes.DefaultOptions()
	opts.Samples, opts.Bits, opts.Scale = samples, 41, 12
	prog, rep := compileOpts(b, g, opts)
	if res := rep.Tune; res.Chosen.Overflow {
		b.Fatalf("MiniONN overflows Z_2^41 at scale 12 (%d bits used)", res.Chosen.BitsUsed)
	}
	x := encodeInputs(b, prog.server, inputsOf(samples[:1]))[0]
	for _, tc := range benchCases {
		b.Run(tc.name(), func(b *testing.B) {
			benchInference(b, prog, x, tc.options())
		})
	}
}
