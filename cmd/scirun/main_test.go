package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// binary is the scirun executable built by TestMain, for the tests that need a real process
// (exit codes, stderr, being killed).
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "scirun-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "scirun")
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = "go"
	}
	if out, err := exec.Command(goTool, "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building scirun: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// compileTo compiles an ONNX model at Z_2^bits, scale s into dir/name.sciir and
// dir/name.client.sciir.
func compileTo(t testing.TB, model, dir, name string, bits, scale int) (full, client string) {
	t.Helper()
	g, err := onnx.Load(model, onnx.Options{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	opts := passes.DefaultOptions()
	opts.Bits, opts.Scale, opts.Check = bits, scale, true
	p, _, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	full, client = filepath.Join(dir, name+".sciir"), filepath.Join(dir, name+".client.sciir")
	prep, err := input.DefaultPreprocess(p.Tensors[p.Inputs[0].Tensor].Shape, "NCHW")
	if err != nil {
		t.Fatal(err)
	}
	f := &sciir.File{Program: p, Meta: sciir.Meta{Source: filepath.Base(model), SourceSHA256: fmt.Sprintf("%x", bytesHash(t, model)), Preprocess: prep}}
	if err := cli.WriteProgram(full, f, true); err != nil {
		t.Fatal(err)
	}
	if err := cli.WriteProgram(client, f, false); err != nil {
		t.Fatal(err)
	}
	return full, client
}

var (
	progOnce             sync.Once
	progDir              string
	progFull, progClient string
)

// program compiles the project's MNIST model at l=32, s=12 into a .sciir pair (once per test
// binary).
func program(t *testing.T) (full, client, data string) {
	t.Helper()
	data = filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small")
	if _, err := os.Stat(filepath.Join(data, "expected", "00000.npy")); err != nil {
		t.Skipf("testdata/mnist-small not present: %v", err)
	}
	progOnce.Do(func() {
		dir, err := os.MkdirTemp("", "scirun-prog-")
		if err != nil {
			t.Fatal(err)
		}
		progDir = dir
		progFull, progClient = compileTo(t, filepath.Join(data, "model.onnx"), dir, "m", 32, 12)
	})
	if progFull == "" {
		t.Fatal("compiling mnist-small failed earlier")
	}
	return progFull, progClient, data
}

// testEnv returns an env with captured streams and the real backends plus the insecure test
// backend under its own name.
func testEnv() (*env, *testenv.SyncBuffer, *testenv.SyncBuffer) {
	out, errb := &testenv.SyncBuffer{}, &testenv.SyncBuffer{}
	return &env{stdout: out, stderr: errb, drain: make(chan struct{}),
		backends: map[string]serve.BackendFunc{}}, out, errb
}

func runArgs(args ...string) (string, string, error) {
	e, out, errb := testEnv()
	err := run(context.Background(), args, e)
	return out.String(), errb.String(), err
}

func TestClearRun(t *testing.T) {
	full, _, data := program(t)
	dir := t.TempDir()
	out, raw := filepath.Join(dir, "y.npy"), filepath.Join(dir, "raw.npy")
	in := filepath.Join(data, "inputs", "00000.npy")
	stdout, _, err := runArgs("--clear", full, "--input", in, "--output", out, "--top", "3")
	if err != nil {
		t.Fatal(err)
	}
	// t10k image 0 is a 7.
	if !strings.Contains(stdout, "top class 7") || !strings.Contains(stdout, "top 3: 7 ") {
		t.Errorf("stdout %q", stdout)
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
	if _, _, err := runArgs("--clear", full, "--input", in, "--output", raw, "--raw"); err != nil {
		t.Fatal(err)
	}
	ints := readInts(t, raw)
	for i, v := range ints {
		if float32(math.Ldexp(float64(v), -12)) != g[i] {
			t.Errorf("raw %d = %d, decoded %g", i, v, g[i])
		}
	}
}

func readInts(t testing.TB, path string) []int64 {
	t.Helper()
	r, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ints, err := r.Int64()
	if err != nil {
		t.Fatalf("%s is not int64: %v", path, err)
	}
	return ints
}

func TestUsageErrors(t *testing.T) {
	full, client, data := program(t)
	in := filepath.Join(data, "inputs", "00000.npy")
	for _, c := range []struct {
		args  []string
		usage bool
		want  string
	}{
		{[]string{full, "--input", in}, true, "choose a mode"},
		{[]string{"--party", "3", client}, true, "--party 3: want 0 (the server, with the full program) or 1"},
		{[]string{"--party", "-1", client}, true, "--party -1: want 0"},
		{[]string{"--clear", "--party", "0", full}, true, "exclude"},
		{[]string{"--local", "--party", "1", full}, true, "exclude"},
		{[]string{"--clear", full}, true, "--input is required"},
		{[]string{"--clear"}, true, "one program file"},
		{[]string{"--party", "1", client, "--input", in}, true, "--connect HOST:PORT is required"},
		{[]string{"--party", "1", client, "--connect", "x:1"}, true, "--input is required"},
		{[]string{"--party", "0", full, "--input", in}, true, "--input is not used by the server"},
		{[]string{"--party", "0", full, "--connect", "x:1"}, true, "--connect is not used without --party 1"},
		{[]string{"--party", "1", client, "--connect", "x:1", "--input", in, "--serve"}, true, "--serve is not used without --party 0"},
		{[]string{"--party", "0", full, "--max-sessions", "2"}, true, "--max-sessions is not used without --party 0 --serve"},
		{[]string{"--party", "0", full, "--tls-cert", "c.pem"}, true, "--tls-cert and --tls-key go together"},
		// Issue 24, finding 2: an explicitly empty TLS flag (--tls-pin "$PIN" with PIN unset) ran
		// the session in plaintext, unauthenticated.
		{[]string{"--party", "1", client, "--connect", "x:1", "--input", in, "--tls-pin", ""}, true, "--tls-pin is empty"},
		{[]string{"--party", "1", client, "--connect", "x:1", "--input", in, "--tls-ca="}, true, "--tls-ca is empty"},
		{[]string{"--party", "1", client, "--connect", "x:1", "--input", in, "--tls-ca", "", "--tls-server-name", "s"}, true, "--tls-ca is empty"},
		{[]string{"--party", "1", client, "--connect", "x:1", "--input", in, "--tls-server-name", ""}, true, "--tls-server-name is empty"},
		{[]string{"--party", "0", full, "--tls-cert", "", "--tls-key", ""}, true, "--tls-cert is empty"},
		{[]string{"--party", "0", full, "--tls-self", ""}, true, "--tls-self is empty"},
		{[]string{"--clear", full, "--input", in, "--report", "r.json"}, true, "--report is not used with --clear"},
		{[]string{"--local", full, "--input", in, "--net", "moon"}, true, `--net: link "moon": want lan, wan or BANDWIDTH`},
		{[]string{"--local", full, "--input", in, "--timeout", "0s"}, true, "--timeout 0s"},
		{[]string{"--clear", full, "--input", in, "--top", "0"}, true, "--top 0"},
		{[]string{"--clear", client, "--input", in}, false, "no weights"},
		{[]string{"--party", "0", client}, false, "has no weights (it is a client copy): the server (--party 0) needs the full program file"},
		{[]string{"--local", client, "--input", in}, false, "--local (which also runs the server) needs the full program file"},
		{[]string{"--local", full, "--input", in, "--backend", "gpu"}, false, `backend "gpu" is not available in this build (available: auto, sciot, scihe`},
		{[]string{"--local", full, "--input", in, "--ot", "kos"}, true, `--ot "kos": want auto, iknp or ferret`},
		{[]string{"--local", full, "--input", in, "--backend", "sci3", "--offline-dealt"}, true, "--offline-dealt is for the two-party backends"},
		{[]string{"--clear", full, "--input", filepath.Join(data, "model.onnx")}, false, "input"},
		{[]string{"--clear", in, "--input", in}, false, "not a .sciir program file"},
		{[]string{"--party", "1", client, "--connect", "x:1", "--input", in, "--tls-ca", filepath.Join(data, "model.onnx")}, false, "holds no PEM certificate"},
	} {
		_, _, err := runArgs(c.args...)
		if err == nil {
			t.Errorf("%q: accepted", c.args)
			continue
		}
		if errors.Is(err, cli.ErrUsage) != c.usage || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %q (usage %v), want %q", c.args, err, errors.Is(err, cli.ErrUsage), c.want)
		}
	}
	// An image input for a program that records no preprocessing.
	f, err := sciir.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	f.Meta.Preprocess = nil
	plain := filepath.Join(t.TempDir(), "plain.sciir")
	if err := cli.WriteProgram(plain, f, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runArgs("--clear", plain, "--input", "x.png"); err == nil || !strings.Contains(err.Error(), "no image preprocessing") {
		t.Errorf("image input without preprocessing: %v", err)
	}
	// An input of the wrong shape.
	bad := filepath.Join(t.TempDir(), "bad.npy")
	if err := npy.WriteFileFloat32(bad, []int{2, 2}, make([]float32, 4)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runArgs("--local", full, "--input", bad); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("wrong shape: %v", err)
	}
}

// TestProcessErrors runs the real binary: each failure is one line on stderr (plus the usage
// hint for usage errors), a non-zero exit status, and no stack trace.
func TestProcessErrors(t *testing.T) {
	full, client, data := program(t)
	in := filepath.Join(data, "inputs", "00000.npy")
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.sciir")
	b, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(corrupt, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// A port in use: hold one.
	ln := testenv.ListenLoopback(t)
	defer ln.Close()
	busy := ln.Addr().String()
	// An unreachable server: a port nothing listens on.
	ln2 := testenv.ListenLoopback(t)
	free := ln2.Addr().String()
	ln2.Close()

	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"wrong party", []string{"--party", "2", full}, 2, "scirun: --party 2: want 0 (the server, with the full program) or 1 (the client, with the client copy)"},
		{"server with the client copy", []string{"--party", "0", client, "--listen", "127.0.0.1:0"}, 1, "needs the full program file"},
		{"missing file", []string{"--party", "0", filepath.Join(dir, "nope.sciir")}, 1, "scirun: read program: open " + filepath.Join(dir, "nope.sciir") + ": no such file or directory"},
		{"corrupt file", []string{"--party", "1", corrupt, "--connect", free, "--input", in}, 1, "malformed .sciir program file"},
		{"port in use", []string{"--party", "0", full, "--listen", busy}, 1, "scirun: listen on " + busy + ": the address is already in use (another scirun server?): choose another port with --listen"},
		{"unreachable server", []string{"--party", "1", client, "--connect", free, "--input", in, "--connect-timeout", "300ms"}, 1,
			"scirun: cannot reach the server at " + free + ": connection refused for 300ms (is 'scirun --party 0 ... --listen' running there?)"},
		{"missing input", []string{"--party", "1", client, "--connect", free, "--input", filepath.Join(dir, "x.npy")}, 1, "no such file"},
	} {
		cmd := exec.Command(binary, c.args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code {
			t.Errorf("%s: exit %v, want status %d; stderr %q", c.name, err, c.code, stderr.String())
			continue
		}
		var lines []string // the error: stderr without the progress lines of a non-terminal
		for _, l := range strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n") {
			if !strings.HasPrefix(l, "secure run: ") {
				lines = append(lines, l)
			}
		}
		wantLines := 1
		if c.code == 2 {
			wantLines = 2 // the usage hint
		}
		if len(lines) != wantLines || !strings.Contains(lines[0], c.want) || strings.Contains(stderr.String(), "goroutine") {
			t.Errorf("%s: stderr %q, want one line containing %q", c.name, stderr.String(), c.want)
		}
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
	clear, _, err := runArgs("--clear", full, "--input", path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(clear, "top class 7") {
		t.Errorf("stdout %q", clear)
	}
	// The secure run on the image prints the same.
	secure, _, err := runArgs("--local", full, "--input", path, "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if secure != clear {
		t.Errorf("--local printed %q, --clear %q", secure, clear)
	}
}

func TestLocalReportAndProgress(t *testing.T) {
	full, _, data := program(t)
	in := filepath.Join(data, "inputs", "00003.npy")
	dir := t.TempDir()
	clearRaw, localRaw, rep := filepath.Join(dir, "c.npy"), filepath.Join(dir, "l.npy"), filepath.Join(dir, "r.json")
	if _, _, err := runArgs("--clear", full, "--input", in, "--output", clearRaw, "--raw"); err != nil {
		t.Fatal(err)
	}
	e, _, stderr := testEnv()
	e.terminal = true
	if err := run(context.Background(), []string{"--local", full, "--input", in, "--output", localRaw, "--raw", "--report", rep, "--net", "lan"}, e); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(readInts(t, clearRaw), readInts(t, localRaw)) {
		t.Fatal("the secure output differs from the clear run")
	}
	s := stderr.String()
	if !strings.Contains(s, "\r\033[Ksecure run [") || !strings.Contains(s, "client (party 1) with 127.0.0.1:") || !strings.Contains(s, "emulated lan") {
		t.Errorf("stderr: %q", s)
	}
	r := readReport(t, rep)
	prog, err := sciir.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Layers) != len(prog.Program.Instrs) || !strings.HasPrefix(r.Backend, "sciot ot=iknp") || r.Net != "lan" || r.Total.BytesSent == 0 || r.Setup.BytesSent == 0 {
		t.Errorf("report: %+v", r)
	}
	if runtime.GOOS == "linux" {
		// The peak memory after each layer: known and never falling.
		for i, l := range r.Layers {
			if l.PeakRSS <= 0 || i > 0 && l.PeakRSS < r.Layers[i-1].PeakRSS {
				t.Errorf("layer %d: peak RSS %d after %d", i, l.PeakRSS, r.Layers[max(i-1, 0)].PeakRSS)
				break
			}
		}
	}
	// Not a terminal: no progress bar.
	e, _, stderr = testEnv()
	if err := run(context.Background(), []string{"--local", full, "--input", in}, e); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stderr.String(), "\r") || !strings.Contains(stderr.String(), "total") {
		t.Errorf("stderr without a terminal: %q", stderr.String())
	}
}
