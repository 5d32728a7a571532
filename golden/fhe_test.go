package golden

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/fhe"
)

// TestLoLaMNISTCompilesForFHE compiles the trained LoLa MNIST network (testdata/lola-mnist,
// square activations) for the fhe mode on its eight sample images: five levels (conv, x², dense,
// x², dense), N = 2^15 for 128-bit security, and the fixed-point program classifies the samples as
// their labels say. Then (not with -short) the eight samples run encrypted in one session, the
// client packing them into one ciphertext's lanes: one round trip, every output bitwise equal to
// the cleartext backend's.
func TestLoLaMNISTCompilesForFHE(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(t), "testdata", "lola-mnist")
	g, err := onnx.Load(filepath.Join(dir, "model.onnx"), onnx.Options{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := passes.DefaultOptions()
	opts.Backend, opts.Samples, opts.Scales = passes.BackendFHE, ds.Samples, []int{3, 4}
	p, rep, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.FHE.Depth != 5 || p.FHE.LogN != 15 {
		t.Errorf("depth %d, N = 2^%d; want 5 and 2^15", p.FHE.Depth, p.FHE.LogN)
	}
	if acc := rep.Tune.Chosen.Accuracy; acc < 7.0/8 {
		t.Errorf("fixed-point accuracy on the samples %.3f", acc)
	}
	t.Logf("s=%d, %s", p.Scale, p.FHE)
	if testing.Short() {
		return
	}
	stats := encryptedEqualsClear(t, p, g, ds.Samples)
	if c := stats[1]; c.RoundTrips != 1 {
		t.Errorf("%d samples took %d round trips, want one ciphertext", len(ds.Samples), c.RoundTrips)
	}
}

// TestLoLaCIFARForFHE compiles LoLa's CIFAR-10 network (testdata/lola-cifar: conv 8×8/2 to 83
// maps, x², conv 6×6/2 to 163 maps, x², dense; trained here on the CIFAR-10 training set,
// scripts/train_cifar.py) for the fhe mode on its eight sample images (test images 50–57) at the
// scale it was trained for (s = 4, its weights are multiples of 2^-4): five levels, N = 2^15 (the
// 83×14×14 = 16,268-element activation fills a ciphertext row: two inferences per ciphertext),
// two plaintext primes of at most 31 bits (the training kept the values within 60 bits), and the
// fixed-point program's top-1 agrees with the float model on the samples. Then, not under -short
// (about 50 CPU-s, 28 s wall on the 2-core VM at load average 2, 5 GB peak with the plaintext
// cache; docs/fhe.md), two samples (one ciphertext) run encrypted, bitwise equal to the
// cleartext backend.
func TestLoLaCIFARForFHE(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(t), "testdata", "lola-cifar")
	g, err := onnx.Load(filepath.Join(dir, "model.onnx"), onnx.Options{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := passes.DefaultOptions()
	opts.Backend, opts.Samples, opts.Scales = passes.BackendFHE, ds.Samples, []int{4}
	p, rep, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p.FHE.Depth != 5 || p.FHE.LogN != 15 || len(p.FHE.T) != 2 {
		t.Errorf("depth %d, N = 2^%d, %d plaintext primes; want 5, 2^15 and 2", p.FHE.Depth, p.FHE.LogN, len(p.FHE.T))
	}
	if a := rep.Tune.Chosen.Agreement; a != 1 {
		t.Errorf("fixed-point top-1 agrees with float on %.3f of the samples, want all", a)
	}
	l, err := fhe.NewLayout(p)
	if err != nil {
		t.Fatal(err)
	}
	if l.Period != 16384 || l.Lanes != 2 {
		t.Errorf("period %d, %d lanes; want 16384 and 2", l.Period, l.Lanes)
	}
	t.Logf("s=%d, %s", p.Scale, p.FHE)
	if testing.Short() {
		t.Skip("the encrypted CIFAR-10 run takes about 50 CPU-s and 5 GB: not with -short")
	}
	stats := encryptedEqualsClear(t, p, g, ds.Samples[:2])
	if c := stats[1]; c.RoundTrips != 1 {
		t.Errorf("two samples (one ciphertext) took %d round trips", c.RoundTrips)
	}
}

// encryptedEqualsClear runs the samples encrypted in one fhe session (the client packing them
// into its ciphertexts' lanes) and checks every output bitwise against the cleartext backend;
// it returns both parties' statistics.
func encryptedEqualsClear(t *testing.T, p *fixed.Program, g *ir.Graph, samples []dataset.Sample) [2]fhe.Stats {
	t.Helper()
	r, err := p.Ring()
	if err != nil {
		t.Fatal(err)
	}
	var batch [][]ring.Tensor
	for _, smp := range samples {
		x, err := r.EncodeTensor(g.Inputs[0].Shape, smp.Input, p.Scale)
		if err != nil {
			t.Fatal(err)
		}
		batch = append(batch, []ring.Tensor{x})
	}
	var stats [2]fhe.Stats
	f := &sciir.File{Program: p, Backend: fhe.BackendName}
	sopt := &serve.Options{File: f, NewBackend: func(ctx context.Context, conn *transport.Conn, _ []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		var b [][]ring.Tensor
		if party == 1 {
			b = batch
		}
		return fhe.NewBackend(ctx, conn, party, r, p, b, func(party int, s *fhe.Stats) { stats[party] = *s })
	}}
	copt := *sopt
	cres, _, err := serve.RunLocalBatch(context.Background(), sopt, &copt, batch)
	if err != nil {
		t.Fatal(err)
	}
	be, _ := cleartext.New(r)
	m, err := vm.New(p, be)
	if err != nil {
		t.Fatal(err)
	}
	for k, in := range batch {
		want, err := m.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		for o := range want {
			if got := cres.Batch[k][o]; !got.Revealed || !slices.Equal(got.Value.Data, want[o].Value.Data) {
				t.Errorf("sample %d output %d: encrypted %v, clear %v", k, o, got.Value.Data, want[o].Value.Data)
			}
		}
	}
	t.Logf("encrypted: %d samples in %d round trip(s), keys %d B, %d B up, %d B down; server %v",
		len(batch), stats[1].RoundTrips, stats[1].KeyBytes, stats[1].UploadBytes, stats[1].DownloadBytes, stats[0].EvalTime)
	return stats
}
