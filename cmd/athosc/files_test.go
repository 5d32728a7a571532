package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/cli"
)

// TestOutputNeverClobbersInputs: -o equal to the model (or a client-copy name for the weights) is
// refused before anything runs, and an unwritable -o is found before the autotuning.
func TestOutputNeverClobbersInputs(t *testing.T) {
	model, val := smallModel(t)
	dir := t.TempDir()
	m := filepath.Join(dir, "m.onnx")
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(m, data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{m, "-o", m}, "is the input"},
		{[]string{m, "-o", filepath.Join(dir, ".", "m.onnx")}, "is the input"},
		{[]string{m, "-o", filepath.Join(dir, "m.client.sciir")}, "use -o " + filepath.Join(dir, "m.sciir")},
	} {
		_, err := parseCompile(c.args)
		if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
	if got, _ := os.ReadFile(m); !bytes.Equal(got, data) {
		t.Fatal("the model was changed")
	}

	// Issue 24, finding 6: -o inside the validation folder (its labels.txt, one of its samples,
	// the folder itself, or a path through a symbolic link to it) is refused before anything
	// runs; before the fix `--validate val -o val/labels.txt` overwrote the labels.
	labels := filepath.Join(val, "labels.txt")
	before, _ := os.ReadFile(labels)
	link := filepath.Join(dir, "vallink")
	if err := os.Symlink(val, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{labels, filepath.Join(val, "m.sciir"), val, filepath.Join(link, "labels.txt")} {
		_, err := parseCompile([]string{m, "--validate", val, "-o", out})
		if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "inside the input folder") {
			t.Errorf("-o %s with --validate %s: %v, want a usage error", out, val, err)
		}
	}
	if got, _ := os.ReadFile(labels); !bytes.Equal(got, before) {
		t.Fatal("the labels were changed")
	}

	cfg, err := parseCompile([]string{m, "--validate", val, "-o", filepath.Join(dir, "no", "such", "m.sciir")})
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	err = compileChecked(cfg, &stdout, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "cannot be written") || strings.Contains(stdout.String(), "autotune") {
		t.Errorf("unwritable output: %v\n%s", err, stdout.String())
	}
}
