package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/golden"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// TestFHELocalEqualsClear compiles a polynomial MLP for the fhe mode and checks that scirun
// --local (one encrypted round trip) writes the raw ring values scirun --clear writes, and that
// both parties report their fhe account.
func TestFHELocalEqualsClear(t *testing.T) {
	g, err := golden.RandomPolyNet(6, true)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(6, 1))
	dir := t.TempDir()
	var samples []dataset.Sample
	var first string
	if err := os.Mkdir(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		x := make([]float32, g.Inputs[0].Shape.Size())
		for j := range x {
			x[j] = float32(2*rng.Float64() - 1)
		}
		samples = append(samples, dataset.Sample{Name: fmt.Sprint(i), Input: x, Label: -1})
		path := filepath.Join(dir, "in", fmt.Sprintf("x%d.npy", i))
		if err := npy.WriteFileFloat32(path, g.Inputs[0].Shape, x); err != nil {
			t.Fatal(err)
		}
		if first == "" {
			first = path
		}
	}
	opts := passes.DefaultOptions()
	opts.Backend, opts.Samples, opts.Scales = passes.BackendFHE, samples, []int{2, 3}
	p, _, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, "m.sciir")
	if err := cli.WriteProgram(full, &sciir.File{Program: p, Backend: passes.BackendFHE}, true); err != nil {
		t.Fatal(err)
	}
	clearRaw, localRaw := filepath.Join(dir, "c.npy"), filepath.Join(dir, "l.npy")
	if _, _, err := runArgs("--clear", full, "--input", first, "--output", clearRaw, "--raw"); err != nil {
		t.Fatal(err)
	}
	rep := filepath.Join(dir, "r.json")
	_, stderr, err := runArgs("--local", full, "--input", first, "--output", localRaw, "--raw", "--report", rep)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(readInts(t, clearRaw), readInts(t, localRaw)) {
		t.Fatal("the encrypted run differs from the clear run")
	}
	// The report carries both sides' fhe account: the client's keys, bytes and times, and the
	// server's evaluation per layer.
	a := readReport(t, rep).FHE
	if a == nil || a.RoundTrips != 1 || a.KeyBytes <= 0 || a.UploadBytes <= 0 || a.DownloadBytes <= 0 ||
		a.EncryptMS <= 0 || a.EvalMS <= 0 || len(a.Layers) == 0 || a.Ops.PlainMuls == 0 || a.Params == "" {
		t.Fatalf("fhe account in the report: %+v", a)
	}
	var layerOps int
	for _, l := range a.Layers {
		layerOps += l.Ops.PlainMuls
	}
	if layerOps != a.Ops.PlainMuls {
		t.Errorf("the layers' plaintext products add up to %d, the total says %d", layerOps, a.Ops.PlainMuls)
	}
	for _, want := range []string{"fhe client: keys", "fhe server: round trip 1 evaluated", "backend fhe", "round trip 1 (up to 1 inferences each)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// A folder: the four inferences share one ciphertext (one round trip), each output equal to
	// the clear run's.
	in, clearDir, localDir := filepath.Join(dir, "in"), filepath.Join(dir, "clear")+"/", filepath.Join(dir, "local")+"/"
	if _, _, err := runArgs("--clear", full, "--input", in, "--output", clearDir, "--raw"); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err = runArgs("--local", full, "--input", in, "--output", localDir, "--raw"); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		name := fmt.Sprintf("x%d.npy", i)
		if !slices.Equal(readInts(t, filepath.Join(clearDir, name)), readInts(t, filepath.Join(localDir, name))) {
			t.Errorf("%s: the encrypted run differs from the clear run", name)
		}
	}
	if !strings.Contains(stderr, "round trip 1 (up to 4 inferences each)") || strings.Contains(stderr, "round trip 2 ") {
		t.Errorf("the folder's four inferences did not share one round trip:\n%s", stderr)
	}
}
