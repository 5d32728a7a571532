package main

import (
	"fmt"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"math"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// compileModel compiles a model of either format (frontend.Load, as athosc does) at Z_2^bits,
// scale s into dir/name.sciir and its client copy.
func compileModel(t testing.TB, model string, opts frontend.Options, dir, name string, bits, scale int) string {
	t.Helper()
	g, err := frontend.Load(model, opts)
	if err != nil {
		t.Fatal(err)
	}
	po := passes.DefaultOptions()
	po.Bits, po.Scale, po.Check = bits, scale, true
	p, _, err := passes.Compile(g, po)
	if err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, name+".sciir")
	f := &sciir.File{Program: p, Meta: sciir.Meta{Source: filepath.Base(model), SourceSHA256: fmt.Sprintf("%x", bytesHash(t, model))}}
	if err := cli.WriteProgram(full, f, true); err != nil {
		t.Fatal(err)
	}
	if err := cli.WriteProgram(filepath.Join(dir, name+".client.sciir"), f, false); err != nil {
		t.Fatal(err)
	}
	return full
}

// firstItem writes item 0 of the batch in src (shape [N, ...]) to dir/x.npy as shape [1, ...]
// and returns the path and the item's expected float output (row 0 of expected).
func firstItem(t testing.TB, src, expected, dir string) (string, []float32) {
	t.Helper()
	a, err := npy.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	x, err := a.Float32()
	if err != nil {
		t.Fatal(err)
	}
	shape := append([]int{1}, a.Shape[1:]...)
	n := len(x) / a.Shape[0]
	path := filepath.Join(dir, "x.npy")
	if err := npy.WriteFileFloat32(path, shape, x[:n]); err != nil {
		t.Fatal(err)
	}
	e, err := npy.ReadFile(expected)
	if err != nil {
		t.Fatal(err)
	}
	y, err := e.Float32()
	if err != nil {
		t.Fatal(err)
	}
	return path, y[:len(y)/e.Shape[0]]
}

// secureVsClear runs program full on input in with --clear and with --local (both parties over
// loopback with the real two-party backend), requires the two raw outputs (ring values) to be
// equal bit for bit, and returns the clear output decoded and the client's report.
func secureVsClear(t *testing.T, full, in string) ([]float64, float64, int64, int64, int64) {
	t.Helper()
	dir := t.TempDir()
	clearRaw, localRaw, rep := filepath.Join(dir, "c.npy"), filepath.Join(dir, "l.npy"), filepath.Join(dir, "r.json")
	if _, _, err := runArgs("--clear", full, "--input", in, "--output", clearRaw, "--raw"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runArgs("--local", full, "--input", in, "--output", localRaw, "--raw", "--report", rep, "--quiet"); err != nil {
		t.Fatal(err)
	}
	c, l := readInts(t, clearRaw), readInts(t, localRaw)
	if !slices.Equal(c, l) {
		t.Fatalf("the secure output differs from the clear run:\nsecure %v\nclear  %v", l, c)
	}
	f, err := sciir.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	r := ring.Must(f.Program.Bits)
	scale := f.Program.Tensors[f.Program.Outputs[0].Tensor].Scale
	dec := make([]float64, len(c))
	for i, v := range c {
		dec[i] = r.Decode(r.FromSigned(v), scale)
	}
	rp := readReport(t, rep)
	return dec, rp.TotalMS, rp.Total.BytesSent, rp.Total.BytesRecv, rp.Total.Rounds
}

// TestLocalTFModels: tfe_mnist_cnn and utensor_cifar10_cnn from ../shared/testdata/tf, compiled
// from their GraphDefs, run securely (scirun --local) bitwise equal to scirun --clear, and the
// fixed-point output is close to the float reference.
func TestLocalTFModels(t *testing.T) {
	root := testenv.SharedTestdata(t, "tf")
	cases := []struct {
		dir, file, input, output string
		bits, scale              int
	}{
		{"tfe_mnist_cnn", "mnist_model.pb", "Placeholder", "fc2/add", 32, 12},
		{"utensor_cifar10_cnn", "cifar10_cnn.pb", "Placeholder", "fully_connect_2/logits", 32, 12},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			dir := t.TempDir()
			full := compileModel(t, filepath.Join(root, c.dir, c.file), frontend.Options{Outputs: []string{c.output}, Batch: 1}, dir, c.dir, c.bits, c.scale)
			in, want := firstItem(t, filepath.Join(root, c.dir, "input_"+c.input+".npy"),
				filepath.Join(root, c.dir, "expected_"+vectorFile(c.output)+".npy"), dir)
			got, ms, sent, recv, rounds := secureVsClear(t, full, in)
			worst := 0.0
			for i := range want {
				worst = math.Max(worst, math.Abs(got[i]-float64(want[i])))
			}
			t.Logf("%s at l=%d s=%d: secure run bitwise equal to --clear; %.0f ms, client sent %d B, received %d B, %d rounds; fixed vs float max |diff| %.3g",
				c.dir, c.bits, c.scale, ms, sent, recv, rounds, worst)
			if argmax64(got) != argmaxF32(want) || worst > 0.05 {
				t.Errorf("fixed-point output %v is far from the float reference %v", got, want)
			}
		})
	}
}

// TestLocalMobileNetV1Features: MobileNetV1 (α=0.25, 128×128) up to conv_pw_13 compiled at
// l=37, s=12 runs securely at 128×128 bitwise equal to the clear run. One run; skipped in -short.
func TestLocalMobileNetV1Features(t *testing.T) {
	if testing.Short() {
		t.Skip("a secure MobileNetV1 inference takes ~40 s and 2 GiB of loopback traffic; run without -short")
	}
	root := testenv.SharedTestdata(t, "tf")
	dir := t.TempDir()
	m := filepath.Join(root, "arm_mobilenet_v1_025_128_features")
	full := compileModel(t, filepath.Join(m, "mnet.pb"), frontend.Options{Batch: 1}, dir, "mnet", 37, 12)
	in, want := firstItem(t, filepath.Join(m, "input_input_1.npy"), filepath.Join(m, "expected_output_0.npy"), dir)
	got, ms, sent, recv, rounds := secureVsClear(t, full, in)
	worst := 0.0
	for i := range want {
		worst = math.Max(worst, math.Abs(got[i]-float64(want[i])))
	}
	t.Logf("MobileNetV1 0.25/128 features at l=37 s=12: secure run bitwise equal to --clear; %.1f s, client sent %.1f MiB, received %.1f MiB, %d rounds; fixed vs float max |diff| %.3g (outputs in [0,6])",
		ms/1000, float64(sent)/(1<<20), float64(recv)/(1<<20), rounds, worst)
	if worst > 0.25 {
		t.Errorf("fixed-point features differ from the float reference by up to %.3g", worst)
	}
}

func vectorFile(tensor string) string {
	b := []byte(tensor)
	for i, c := range b {
		if c == '/' {
			b[i] = '_'
		}
	}
	return string(b)
}

func argmax64(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

func argmaxF32(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}
