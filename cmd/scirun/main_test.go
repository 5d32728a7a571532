package main

import (
	"bytes"
	"errors"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/codegen"
	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/passes"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found")
		}
		dir = parent
	}
}

// program compiles the project's MNIST model at l=32, s=12 into a temporary .sciir pair.
func program(t *testing.T) (full, client, data string) {
	t.Helper()
	data = filepath.Join(repoRoot(t), "testdata", "mnist-small")
	if _, err := os.Stat(filepath.Join(data, "expected", "00000.npy")); err != nil {
		t.Skipf("testdata/mnist-small not present: %v", err)
	}
	g, err := onnx.Load(filepath.Join(data, "model.onnx"), onnx.Options{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	cg, _, err := passes.Clean(g, passes.CleanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := passes.Build(cg, 32, 12, true)
	if err != nil {
		t.Fatal(err)
	}
	codegen.AssignSlots(p)
	dir := t.TempDir()
	full, client = filepath.Join(dir, "m.sciir"), filepath.Join(dir, "m.client.sciir")
	prep, err := codegen.DefaultPreprocess([]int{1, 1, 28, 28}, "NCHW")
	if err != nil {
		t.Fatal(err)
	}
	f := &codegen.File{Program: p, Meta: codegen.Meta{Preprocess: prep}}
	if err := codegen.WriteFile(full, f, true); err != nil {
		t.Fatal(err)
	}
	if err := codegen.WriteFile(client, f, false); err != nil {
		t.Fatal(err)
	}
	return full, client, data
}

func TestClearRun(t *testing.T) {
	full, _, data := program(t)
	out := filepath.Join(t.TempDir(), "y.npy")
	raw := filepath.Join(t.TempDir(), "raw.npy")
	in := filepath.Join(data, "inputs", "00000.npy")
	var stdout bytes.Buffer
	if err := run([]string{"--clear", full, "--input", in, "--output", out}, &stdout); err != nil {
		t.Fatal(err)
	}
	// t10k image 0 is a 7.
	if !strings.Contains(stdout.String(), "top class 7") {
		t.Errorf("stdout %q", stdout.String())
	}
	got, err := npy.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := npy.ReadFile(filepath.Join(data, "expected", "00000.npy"))
	if err != nil {
		t.Fatal(err)
	}
	g, _ := got.Float32()
	w, _ := want.Float32()
	for i := range w {
		if math.Abs(float64(g[i]-w[i])) > 0.05 {
			t.Errorf("logit %d: fixed %g, PyTorch %g", i, g[i], w[i])
		}
	}
	// --raw writes the signed ring values: decoded / 2^12 equals the float output exactly.
	if err := run([]string{"--clear", full, "--input", in, "--output", raw, "--raw"}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	r, err := npy.ReadFile(raw)
	if err != nil {
		t.Fatal(err)
	}
	ints, err := r.Int64()
	if err != nil {
		t.Fatalf("raw output is not int64: %v", err)
	}
	for i, v := range ints {
		if float32(math.Ldexp(float64(v), -12)) != g[i] {
			t.Errorf("raw %d = %d, decoded %g", i, v, g[i])
		}
	}
}

func TestErrors(t *testing.T) {
	full, client, data := program(t)
	in := filepath.Join(data, "inputs", "00000.npy")
	for _, c := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{full, "--input", in}, true, "choose a mode"},
		{[]string{"--party", "1", client, "--input", in}, false, "party mode is not implemented yet"},
		{[]string{"--party", "3", client}, true, "want 0 or 1"},
		{[]string{"--clear", "--party", "0", full}, true, "exclude"},
		{[]string{"--clear", full}, true, "--input is required"},
		{[]string{"--clear"}, true, "one program file"},
		{[]string{"--clear", client, "--input", in}, false, "no weights"},
		{[]string{"--clear", full, "--input", filepath.Join(data, "model.onnx")}, false, "input"},
		{[]string{"--clear", in, "--input", in}, false, "not a .sciir program file"},
	} {
		err := run(c.args, &bytes.Buffer{})
		if err == nil {
			t.Errorf("%q: accepted", c.args)
			continue
		}
		if errors.Is(err, cli.ErrUsage) != c.usage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %q (usage %v), want %q", c.args, err, errors.Is(err, cli.ErrUsage), c.want)
		}
	}
	// An image input for a program that records no preprocessing.
	f, err := codegen.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	f.Meta.Preprocess = nil
	plain := filepath.Join(t.TempDir(), "plain.sciir")
	if err := codegen.WriteFile(plain, f, true); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"--clear", plain, "--input", "x.png"}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "no image preprocessing") {
		t.Errorf("image input without preprocessing: %v", err)
	}
	// An input of the wrong shape.
	bad := filepath.Join(t.TempDir(), "bad.npy")
	if err := npy.WriteFileFloat32(bad, []int{2, 2}, make([]float32, 4)); err != nil {
		t.Fatal(err)
	}
	if err := run([]string{"--clear", full, "--input", bad}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("wrong shape: %v", err)
	}
}

func TestImageInput(t *testing.T) {
	full, _, data := program(t)
	a, err := npy.ReadFile(filepath.Join(data, "inputs", "00000.npy"))
	if err != nil {
		t.Fatal(err)
	}
	x, _ := a.Float32()
	img := image.NewGray(image.Rect(0, 0, 28, 28))
	for i, v := range x {
		img.Pix[i] = uint8(math.Round(float64(v) * 255))
	}
	path := filepath.Join(t.TempDir(), "seven.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var stdout bytes.Buffer
	if err := run([]string{"--clear", full, "--input", path}, &stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "top class 7") {
		t.Errorf("stdout %q", stdout.String())
	}
}
