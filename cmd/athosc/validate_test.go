package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/sciir"
)

// TestValidateRecordsRangeAndRefusesForeignLabels: the program records the input range it was
// validated on, and labels outside the model's classes are refused.
func TestValidateRecordsRangeAndRefusesForeignLabels(t *testing.T) {
	model, val := smallModel(t)
	out := filepath.Join(t.TempDir(), "m.sciir")
	cfg, err := parseCompile([]string{model, "--validate", val, "-o", out, "--scales", "8"})
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := compileChecked(cfg, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	f, err := sciir.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	r := f.Meta.InputRange
	if r == nil || r.Min > r.Max || r.Max <= 0 || !strings.Contains(stdout.String(), "layout (a): .npy inputs with labels.txt") {
		t.Fatalf("input range %+v\n%s", r, stdout.String())
	}

	// The same inputs with a label of an 11th class.
	bad := t.TempDir()
	entries, err := os.ReadDir(val)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(val, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() == "labels.txt" {
			lines := strings.SplitN(string(b), "\n", 2)
			name, _, _ := strings.Cut(lines[0], " ")
			b = []byte(name + " 10\n" + lines[1])
		}
		if err := os.WriteFile(filepath.Join(bad, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err = parseCompile([]string{model, "--validate", bad, "-o", out})
	if err != nil {
		t.Fatal(err)
	}
	err = compileChecked(cfg, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "has label 10, but the model has 10 classes") {
		t.Errorf("label 10: %v", err)
	}
}
