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
	r, err := p.Ring()
	if err != nil {
		t.Fatal(err)
	}
	var batch [][]ring.Tensor
	for _, smp := range ds.Samples {
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
	if c := stats[1]; c.RoundTrips != 1 {
		t.Errorf("%d samples took %d round trips, want one ciphertext", len(batch), c.RoundTrips)
	}
	t.Logf("encrypted: %d samples in %d round trip(s), keys %d B, %d B up, %d B down; server %v",
		len(batch), stats[1].RoundTrips, stats[1].KeyBytes, stats[1].UploadBytes, stats[1].DownloadBytes, stats[0].EvalTime)
}
