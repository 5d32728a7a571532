package serve

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/serve/servetest"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// compile builds the program of an ONNX model at Z_2^bits, scale s, and returns the full file
// and the client copy, both as read back from their encodings (so their IDs are set).
func compile(t testing.TB, model string, bits, scale int) (full, client *sciir.File) {
	t.Helper()
	raw, err := os.ReadFile(model)
	if err != nil {
		t.Skipf("model not available: %v", err)
	}
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
	sum := sha256.Sum256(raw)
	f := &sciir.File{Program: p, Meta: sciir.Meta{Source: filepath.Base(model), SourceSHA256: hex.EncodeToString(sum[:])}}
	decode := func(weights bool) *sciir.File {
		b, err := sciir.Marshal(f, weights)
		if err != nil {
			t.Fatal(err)
		}
		d, err := sciir.Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	return decode(true), decode(false)
}

var (
	mnistOnce                sync.Once
	mnistFull, mnistClient   *sciir.File
	mnistFull8, mnistClient8 *sciir.File
)

// mnistSmall returns the bundled MNIST model compiled at l=32, s=12 (and s=8).
func mnistSmall(t testing.TB) (full, client, full8, client8 *sciir.File) {
	t.Helper()
	model := filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small", "model.onnx")
	mnistOnce.Do(func() {
		mnistFull, mnistClient = compile(t, model, 32, 12)
		mnistFull8, mnistClient8 = compile(t, model, 32, 8)
	})
	if mnistFull == nil {
		t.Fatal("compiling mnist-small failed earlier")
	}
	return mnistFull, mnistClient, mnistFull8, mnistClient8
}

// input reads bundled MNIST input i, encoded for program f.
func input(t testing.TB, f *sciir.File, i int) []ring.Tensor {
	t.Helper()
	path := filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small", "inputs", []string{
		"00000.npy", "00001.npy", "00002.npy", "00003.npy", "00004.npy", "00005.npy", "00006.npy", "00007.npy"}[i%8])
	a, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x, err := a.Float32()
	if err != nil {
		t.Fatal(err)
	}
	p := f.Program
	in := p.Tensors[p.Inputs[0].Tensor]
	r := ring.Must(p.Bits)
	enc, err := r.EncodeTensor(in.Shape, x, in.Scale)
	if err != nil {
		t.Fatal(err)
	}
	return []ring.Tensor{enc}
}

// clearRun runs f in the clear on inputs and returns the outputs' ring values.
func clearRun(t testing.TB, f *sciir.File, inputs []ring.Tensor) [][]uint64 {
	t.Helper()
	be, err := cleartext.New(ring.Must(f.Program.Bits))
	if err != nil {
		t.Fatal(err)
	}
	m, err := vm.New(f.Program, be)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := m.Run(context.Background(), inputs)
	if err != nil {
		t.Fatal(err)
	}
	var v [][]uint64
	for _, o := range outs {
		v = append(v, o.Value.Data)
	}
	return v
}

// checkOutputs asserts that res holds revealed outputs equal to want bit for bit.
func checkOutputs(t testing.TB, what string, res *Result, want [][]uint64) {
	t.Helper()
	if res == nil || len(res.Outputs) != len(want) {
		t.Fatalf("%s: result %+v, want %d outputs", what, res, len(want))
	}
	for i, o := range res.Outputs {
		if !o.Revealed || !slices.Equal(o.Value.Data, want[i]) {
			t.Fatalf("%s: output %d (revealed %v) = %v, clear run %v", what, i, o.Revealed, o.Value.Data, want[i])
		}
	}
}

// options returns session options for f with the insecure test backend.
func options(f *sciir.File) *Options {
	return &Options{File: f, Backend: "insecure-test", NewBackend: servetest.Func(nil), Timeout: 5 * time.Second}
}

// waitFor polls cond for up to 5 s.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, 5*time.Second, what, cond)
}

// logger returns a logger writing text lines into buf.
func logger(buf *testenv.SyncBuffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, nil))
}

// tlsPair returns matching server and client TLS configurations.
func tlsPair(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	dir := t.TempDir()
	cert, key := testenv.SelfSigned(t, dir)
	server, err := LoadServerTLS(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	client, err = LoadClientTLS(cert, "")
	if err != nil {
		t.Fatal(err)
	}
	return server, client
}

// countGoroutines is the baseline for checkNoLeaks.
func countGoroutines() int { return runtime.NumGoroutine() }
