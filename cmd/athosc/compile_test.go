package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// smallModel returns the project's MNIST model and a validation folder made from its sample inputs.
func smallModel(t *testing.T) (model, valDir string) {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small")
	model = filepath.Join(dir, "model.onnx")
	valDir = filepath.Join(dir, "inputs")
	if _, err := os.Stat(filepath.Join(valDir, "labels.txt")); err != nil {
		t.Skipf("testdata/mnist-small/inputs not present: %v", err)
	}
	return model, valDir
}

// compileChecked runs compile as athosc compile --check does: the tests check the IR after every
// pass, which the product does only when asked.
func compileChecked(c *compileConfig, stdout, stderr io.Writer) error {
	c.check = true
	return compileModel(c, stdout, stderr)
}

func TestCompileWritesBothCopies(t *testing.T) {
	model, val := smallModel(t)
	out := filepath.Join(t.TempDir(), "mnist.sciir")
	cfg, err := parseCompile([]string{model, "--validate", val, "-o", out, "--scales", "8,10"})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := compileChecked(cfg, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	report := stdout.String()
	for _, want := range []string{"folded 1 BatchNormalization", "autotune (headroom 1 bit(s))", "bitwidth",
		"chose l=", "identical to the 64-bit run", "rule: highest agreement with the float model", "+/- ref", "why: s=", "ReLU elements", "truncated elements", "with slot reuse",
		"mnist.client.sciir", "program id"} {
		if !strings.Contains(report, want) {
			t.Errorf("report lacks %q:\n%s", want, report)
		}
	}
	if stderr.Len() != 0 {
		t.Errorf("progress written to a non-terminal: %q", stderr.String())
	}
	full, err := sciir.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	client, err := sciir.ReadFile(strings.TrimSuffix(out, ".sciir") + ".client.sciir")
	if err != nil {
		t.Fatal(err)
	}
	if full.ID != client.ID || !full.Program.HasWeights() || client.Program.HasWeights() {
		t.Error("full and client copies do not match")
	}
	a := full.Meta.Autotune
	if a == nil || a.Samples != 8 || len(a.Rows) != 2 || full.Meta.SourceSHA256 == "" || !strings.Contains(a.Reason, "agrees best") {
		t.Errorf("metadata %+v", full.Meta)
	}

	// Pinned by hand, no validation.
	out2 := filepath.Join(t.TempDir(), "pinned")
	cfg, err = parseCompile([]string{model, "--bitwidth", "40", "--scale", "9", "-o", out2, "--no-peephole"})
	if err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if err := compileChecked(cfg, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	f, err := sciir.ReadFile(out2)
	if err != nil {
		t.Fatal(err)
	}
	if f.Program.Bits != 40 || f.Program.Scale != 9 || !strings.Contains(stdout.String(), "without checking for overflow") {
		t.Errorf("pinned: l=%d s=%d\n%s", f.Program.Bits, f.Program.Scale, stdout.String())
	}
	if _, err := os.Stat(out2 + ".client.sciir"); err != nil {
		t.Error(err)
	}
}

func TestCompileErrors(t *testing.T) {
	model, _ := smallModel(t)
	for _, args := range [][]string{
		{},
		{model, model},
		{model, "--bitwidth", "70"},
		{model, "--scale", "40"},
		{model, "--scales", "9-3"},
		{model, "--backend", "gpu"},
		{model, "--headroom", "-1"},
	} {
		if _, err := parseCompile(args); !errors.Is(err, cli.ErrUsage) {
			t.Errorf("%q: error %v, want a usage error", args, err)
		}
	}
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "x.txt"), []byte("?"), 0o644)
	cfg, err := parseCompile([]string{model, "--validate", bad, "-o", filepath.Join(t.TempDir(), "m.sciir")})
	if err != nil {
		t.Fatal(err)
	}
	err = compileChecked(cfg, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "accepted formats") {
		t.Errorf("bad validation folder: %v", err)
	}
	cfg, _ = parseCompile([]string{filepath.Join(bad, "missing.onnx")})
	if err := compileChecked(cfg, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
		t.Error("missing model compiled")
	}
}

func TestDisasmCommand(t *testing.T) {
	model, val := smallModel(t)
	out := filepath.Join(t.TempDir(), "m.sciir")
	cfg, err := parseCompile([]string{model, "--validate", val, "--scale", "8", "-o", out, "-q"})
	if err != nil {
		t.Fatal(err)
	}
	if err := compileChecked(cfg, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if err := runDisasm([]string{out}); err != nil {
		t.Fatal(err)
	}
	trunc := filepath.Join(t.TempDir(), "t.sciir")
	b, _ := os.ReadFile(out)
	os.WriteFile(trunc, b[:len(b)/2], 0o644)
	if err := runDisasm([]string{trunc}); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("truncated file: %v", err)
	}
	if err := runDisasm(nil); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("no file: %v", err)
	}
}

// TestImageNetPreprocessFlags: --resize-shorter and --center-crop are recorded in the
// preprocessing; without them the fields stay zero (the preprocessing of before).
func TestImageNetPreprocessFlags(t *testing.T) {
	in := ir.Value{Name: "x", Shape: ir.Shape{1, 3, 224, 224}}
	cfg, err := parseCompile([]string{"m.onnx", "--resize-shorter", "256", "--center-crop", "224x224",
		"--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := cfg.preprocessFor(in)
	if err != nil {
		t.Fatal(err)
	}
	if p.ResizeShorter != 256 || p.CropWidth != 224 || p.CropHeight != 224 || p.Width != 224 || p.Mean[2] != 0.406 {
		t.Errorf("preprocess %+v", p)
	}
	cfg, _ = parseCompile([]string{"m.onnx"})
	if p, err = cfg.preprocessFor(in); err != nil || p.ResizeShorter != 0 || p.CropWidth != 0 || p.CropHeight != 0 {
		t.Errorf("default preprocess %+v %v", p, err)
	}
	for _, args := range [][]string{{"--center-crop", "224"}, {"--center-crop", "0x224"}, {"--resize-shorter", "-3"}} {
		cfg, err := parseCompile(append([]string{"m.onnx"}, args...))
		if err == nil {
			_, err = cfg.preprocessFor(in)
		}
		if !errors.Is(err, cli.ErrUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

func TestParseHelpers(t *testing.T) {
	if s, err := parseScales("6-8"); err != nil || len(s) != 3 || s[2] != 8 {
		t.Errorf("range: %v %v", s, err)
	}
	if s, err := parseScales("12, 7"); err != nil || len(s) != 2 || s[1] != 7 {
		t.Errorf("list: %v %v", s, err)
	}
	if _, err := parseScales("x"); err == nil {
		t.Error("bad list accepted")
	}
	if v, err := parseFloats("0.5", 3, 0); err != nil || v[2] != 0.5 {
		t.Errorf("broadcast: %v %v", v, err)
	}
	if _, err := parseFloats("1,2", 3, 0); err == nil {
		t.Error("wrong count accepted")
	}
	if clientPath("a/m.sciir") != "a/m.client.sciir" || clientPath("m.bin") != "m.bin.client.sciir" {
		t.Error("clientPath")
	}
}

// TestCompileBackends: sciot and scihe record no engines; auto plans one per linear layer, records
// the link it planned for (scirun's --ot auto follows it) and the disassembly shows both; an unknown
// --net is a usage error.
func TestCompileBackends(t *testing.T) {
	model, _ := smallModel(t)
	dir := t.TempDir()
	for _, be := range []string{"sciot", "scihe", "auto"} {
		out := filepath.Join(dir, be+".sciir")
		cfg, err := parseCompile([]string{model, "--backend", be, "--bitwidth", "32", "--scale", "8", "-q", "-o", out})
		if err != nil {
			t.Fatal(err)
		}
		if err := compileChecked(cfg, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		f, err := sciir.ReadFile(out)
		if err != nil || f.Backend != be {
			t.Fatalf("%s: %v, backend %q", be, err, f.Backend)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var dis bytes.Buffer
		if err := sciir.Disasm(&dis, b); err != nil {
			t.Fatal(err)
		}
		planned := strings.Count(dis.String(), " by he") + strings.Count(dis.String(), " by ot")
		if (be == "auto") != (planned > 0) {
			t.Errorf("%s: %d planned layers in the disassembly", be, planned)
		}
		if want := map[bool]string{true: "lan"}[be == "auto"]; f.Meta.Net != want || (want != "") != strings.Contains(dis.String(), "planned for net lan") {
			t.Errorf("%s: recorded net %q, want %q", be, f.Meta.Net, want)
		}
	}
	// A named link is recorded by name, any other in canonical form (what scirun reads back).
	for _, c := range []struct{ flag, want string }{{"wan", "wan"}, {"1Gbit/s,0.5ms", "125MB/s,500µs"}} {
		out := filepath.Join(dir, "net.sciir")
		cfg, err := parseCompile([]string{model, "--backend", "auto", "--net", c.flag, "--bitwidth", "32", "--scale", "8", "-q", "-o", out})
		if err != nil {
			t.Fatal(err)
		}
		if err := compileChecked(cfg, &bytes.Buffer{}, &bytes.Buffer{}); err != nil {
			t.Fatal(err)
		}
		if f, err := sciir.ReadFile(out); err != nil || f.Meta.Net != c.want {
			t.Fatalf("--net %s: %v, recorded net %q, want %q", c.flag, err, f.Meta.Net, c.want)
		}
	}
	if _, err := parseCompile([]string{model, "--backend", "auto", "--net", "moon"}); !errors.Is(err, cli.ErrUsage) {
		t.Errorf("--net moon: %v", err)
	}
}

// TestCompileDefaultBackendAuto (issue 23): without --backend the program is planned per layer
// (auto, for --net lan), not all-OT, and the output lists every linear layer's engine and expected
// traffic with the total; a pinned sciot says what auto would move instead.
func TestCompileDefaultBackendAuto(t *testing.T) {
	model, _ := smallModel(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "m.sciir")
	cfg, err := parseCompile([]string{model, "--bitwidth", "32", "--scale", "8", "-o", out})
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
	if f.Backend != "auto" || f.Meta.Net != "lan" {
		t.Errorf("default backend %q planned for %q, want auto for lan", f.Backend, f.Meta.Net)
	}
	if f.Meta.Name != "m" {
		t.Errorf("program name %q, want m", f.Meta.Name)
	}
	o := stdout.String()
	for _, want := range []string{"linear layers, backend auto (planned for lan)", "/conv1/Conv", "/conv2/Conv", "/fc1/Gemm", "/fc2/Gemm",
		"total: 4 linear layers", "expected for them"} {
		if !strings.Contains(o, want) {
			t.Errorf("output lacks %q:\n%s", want, o)
		}
	}
	for _, in := range f.Program.Instrs {
		if (in.Op.String() == "conv" || in.Op.String() == "matmul") && !strings.Contains(o, " "+in.Engine.String()+" ") {
			t.Errorf("%s %s: engine %s not in the output", in.Op, in.Source, in.Engine)
		}
	}
	cfg, err = parseCompile([]string{model, "--backend", "sciot", "--bitwidth", "32", "--scale", "8", "-o", out})
	if err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if err := compileChecked(cfg, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatal(err)
	}
	if o := stdout.String(); !strings.Contains(o, "4 by OT and 0 by HE") || !strings.Contains(o, "backend auto would expect") {
		t.Errorf("sciot output:\n%s", o)
	}
	// sci3: the dealt traffic per layer (this failed with "unknown backend" before).
	cfg, err = parseCompile([]string{model, "--backend", "sci3", "--bitwidth", "32", "--scale", "8", "-o", out})
	if err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	if err := compileChecked(cfg, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatalf("--backend sci3: %v", err)
	}
	if o := stdout.String(); !strings.Contains(o, "backend sci3 (every one on the helper's corrections") || !strings.Contains(o, "total: 4 linear layers;") || !strings.Contains(o, "/fc2/Gemm") {
		t.Errorf("sci3 output:\n%s", o)
	}
	if f, err := sciir.ReadFile(out); err != nil || f.Backend != "sci3" {
		t.Errorf("sci3 program: backend %v, %v", f, err)
	}
}

// TestCompileFHEWritesProgram: athosc compile --backend fhe (not quiet) writes the program; the
// two-party traffic estimate, which has no fhe engines, is not printed for it.
func TestCompileFHEWritesProgram(t *testing.T) {
	model := filepath.Join(testenv.RepoRoot(t), "testdata", "lola-mnist", "model.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("testdata/lola-mnist not present: %v", err)
	}
	out := filepath.Join(t.TempDir(), "lola.sciir")
	cfg, err := parseCompile([]string{model, "--backend", "fhe", "--bitwidth", "55", "--scale", "4", "-o", out})
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := compileChecked(cfg, &stdout, &bytes.Buffer{}); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	f, err := sciir.ReadFile(out)
	if err != nil || f.Backend != "fhe" || f.Program.FHE == nil {
		t.Fatalf("%v, backend %q", err, f.Backend)
	}
}
