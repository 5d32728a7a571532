package cryptflow

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/cryptflow-go/cryptflow/sciir"
)

// TestCompileIsAthosc: the Go API and athosc compile through the same code, so the same model,
// validation folder and options give the same program (instructions, weights, ring, scale and
// metadata), apart from the compiler's own name in the metadata. Before they shared
// package compile, the API recorded neither the peepholes in the pass log nor the folder's
// class names.
func TestCompileIsAthosc(t *testing.T) {
	if testing.Short() {
		t.Skip("builds athosc and autotunes twice")
	}
	const model = "testdata/mnist-small/model.onnx"
	val := t.TempDir()
	entries, err := os.ReadDir("testdata/mnist-small/inputs")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("testdata/mnist-small/inputs", e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(val, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := "zero\none\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\n"
	if err := os.WriteFile(filepath.Join(val, "classes.txt"), []byte(names), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/athosc").CombinedOutput(); err != nil {
		t.Fatalf("go build athosc: %v\n%s", err, out)
	}
	out := filepath.Join(t.TempDir(), "small.sciir")
	cmd := exec.Command(filepath.Join(bin, "athosc"), model, "--validate", val, "--threads", "2", "-q", "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("athosc: %v\n%s", err, b)
	}
	fromCLI, err := ReadProgram(out)
	if err != nil {
		t.Fatal(err)
	}
	fromAPI, err := Compile(model, CompileOptions{ValidationDir: val, Name: "small", Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got := fromAPI.Classes(); len(got) != 10 || got[3] != "three" {
		t.Errorf("API classes from classes.txt: %q", got)
	}
	// Both sweep athosc's default scales.
	if fromAPI.Bits() != fromCLI.Bits() || fromAPI.Scale() != fromCLI.Scale() {
		t.Fatalf("API chose l=%d s=%d, athosc l=%d s=%d", fromAPI.Bits(), fromAPI.Scale(), fromCLI.Bits(), fromCLI.Scale())
	}
	norm := func(p *Program) []byte {
		f := *p.f
		f.Meta.Compiler = ""
		b, err := sciir.Marshal(&f, true)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if a, c := norm(fromAPI), norm(fromCLI); !bytes.Equal(a, c) {
		t.Errorf("the API's program (%d bytes) differs from athosc's (%d bytes)", len(a), len(c))
	}
}
