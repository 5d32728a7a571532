package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/npy"
)

func TestMiniONN(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"minionn", "--seed", "3", "--inputs", "2", "--out", dir}, &out); err != nil {
		t.Fatal(err)
	}
	g, err := onnx.Load(filepath.Join(dir, "model.onnx"), onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := g.Inputs[0].Shape; len(s) != 4 || s[1] != 3 || s[2] != 32 {
		t.Fatalf("input shape %v", s)
	}
	a, err := npy.ReadFile(filepath.Join(dir, "inputs", "00001.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Len() != 3*32*32 {
		t.Fatalf("input has %d values", a.Len())
	}
	if !strings.Contains(out.String(), "parameters") {
		t.Fatalf("output: %s", out.String())
	}
}

func TestRandomAndErrors(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run([]string{"random", "--seed", "5", "--inputs", "0", "--out", dir}, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := onnx.Load(filepath.Join(dir, "model.onnx"), onnx.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"minionn"}, {"minionn", "--out", dir, "--batch", "0"}, {"random", "--out", dir, "--batch", "2"}, {"nosuch"}} {
		if err := run(args, &out); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
