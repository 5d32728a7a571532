package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/sciir"
)

func TestListPasses(t *testing.T) {
	cfg, err := parseCompile([]string{"--list-passes"})
	if err != nil || !cfg.listPasses {
		t.Fatalf("parse: %v", err)
	}
	var out bytes.Buffer
	if err := listPasses(&out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, p := range passes.PassTable() {
		if !strings.Contains(s, p.Name+" ") || !strings.Contains(s, p.Doc) {
			t.Errorf("listing lacks pass %s", p.Name)
		}
	}
	for _, r := range passes.OrderRules() {
		if !strings.Contains(s, r.Before+" before "+r.After+": "+r.Why) {
			t.Errorf("listing lacks rule %s before %s", r.Before, r.After)
		}
	}
	if _, err := parseCompile([]string{"--list-passes", "m.onnx"}); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("--list-passes with a model: %v", err)
	}
}

// TestDumpAfterEveryPass: athosc compile --dump-after NAME works for every name --list-passes
// prints, and prints the IR that pass leaves.
func TestDumpAfterEveryPass(t *testing.T) {
	model, val := smallModel(t)
	dir := t.TempDir()
	for i, p := range passes.PassTable() {
		out := filepath.Join(dir, fmt.Sprintf("m%d.sciir", i))
		cfg, err := parseCompile([]string{model, "--validate", val, "--scales", "8", "--dump-after", p.Name, "--backend", "auto", "-q", "-o", out})
		if err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		if err := compileChecked(cfg, &stdout, &stderr); err != nil {
			t.Errorf("--dump-after %s: %v", p.Name, err)
			continue
		}
		s := stdout.String()
		header, body := "# HLIL after pass "+p.Name+"\n", "graph "
		if p.IR != passes.OnHLIL {
			header, body = "# fixed-point program after pass "+p.Name+"\n", "ring Z_2^"
		}
		if !strings.HasPrefix(s, header) || !strings.Contains(s, body) {
			t.Errorf("--dump-after %s printed:\n%.400s", p.Name, s)
		}
		if _, err := sciir.ReadFile(out); err != nil {
			t.Errorf("--dump-after %s: no program written: %v", p.Name, err)
		}
	}
	if _, err := parseCompile([]string{model, "--dump-after", "no-such-pass"}); !errors.Is(err, cli.ErrUsage) ||
		!strings.Contains(err.Error(), "--list-passes") {
		t.Errorf("unknown pass: %v", err)
	}
	// A pass that does not run in this configuration is an error, not an empty dump.
	cfg, err := parseCompile([]string{model, "--dump-after", "autotune", "-o", filepath.Join(dir, "x.sciir")})
	if err != nil {
		t.Fatal(err)
	}
	if err := compileChecked(cfg, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "did not run") {
		t.Errorf("--dump-after autotune without --validate: %v", err)
	}
}

func TestTimePasses(t *testing.T) {
	model, _ := smallModel(t)
	cfg, err := parseCompile([]string{model, "--bitwidth", "40", "--scale", "9", "--time-passes", "--check",
		"-o", filepath.Join(t.TempDir(), "m.sciir")})
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := compileChecked(cfg, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	s := stdout.String()
	_, times, ok := strings.Cut(s, "pass times:\n")
	if !ok {
		t.Fatalf("no pass times:\n%s", s)
	}
	for _, p := range passes.PassTable() {
		if !strings.Contains(times, "  "+p.Name+" ") {
			t.Errorf("pass times lack %s:\n%s", p.Name, times)
		}
	}
	if !strings.Contains(times, "not run: no validation samples") {
		t.Errorf("pass times do not say why autotune did not run:\n%s", times)
	}
}

// TestBitwidthRange: the range --help states is the range the compiler accepts, at both ends.
func TestBitwidthRange(t *testing.T) {
	var help bytes.Buffer
	if _, err := parseCompileOutput([]string{"--help"}, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	want := fmt.Sprintf("(%d..%d; 0 = choose)", passes.MinBits, passes.MaxBits)
	if !strings.Contains(help.String(), want) {
		t.Fatalf("--help does not state %s:\n%s", want, help.String())
	}
	model, _ := smallModel(t)
	for _, bits := range []int{passes.MinBits - 1, passes.MaxBits + 1} {
		_, err := parseCompile([]string{model, "--bitwidth", fmt.Sprint(bits)})
		if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), fmt.Sprintf("not in %d..%d", passes.MinBits, passes.MaxBits)) {
			t.Errorf("--bitwidth %d: %v", bits, err)
		}
	}
	dir := t.TempDir()
	for _, bits := range []int{passes.MinBits, passes.MaxBits} {
		out := filepath.Join(dir, fmt.Sprintf("m%d.sciir", bits))
		cfg, err := parseCompile([]string{model, "--bitwidth", fmt.Sprint(bits), "--scale", "0", "-q", "-o", out})
		if err != nil {
			t.Fatalf("--bitwidth %d: %v", bits, err)
		}
		if err := compileChecked(cfg, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
			t.Errorf("--bitwidth %d: %v", bits, err)
			continue
		}
		f, err := sciir.ReadFile(out)
		if err != nil || f.Program.Bits != bits {
			t.Errorf("--bitwidth %d: wrote %v", bits, err)
		}
	}
}

// TestBackendClearRefused: the recorded backend is for two-party runs; "clear" is not one.
func TestBackendClearRefused(t *testing.T) {
	_, err := parseCompile([]string{"m.onnx", "--backend", "clear"})
	if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "scirun --clear") || !strings.Contains(err.Error(), "sciot") {
		t.Fatalf("--backend clear: %v", err)
	}
	_, err = parseCompile([]string{"m.onnx", "--backend", "gpu"})
	if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), "sciot") {
		t.Fatalf("--backend gpu: %v", err)
	}
	if cfg, err := parseCompile([]string{"m.onnx", "--backend", "sciot"}); err != nil || cfg.backend != "sciot" {
		t.Fatalf("--backend sciot: %v", err)
	}
}
