package golden

import (
	"path/filepath"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/passes"
)

// TestLoLaMNISTBlockCirculantForFHE compiles the trained block-circulant LoLa MNIST networks
// (testdata/lola-mnist-bc8 and -bc16, scripts/train_lola_bc.py: the 845→104/112 layer
// block-circulant with k = 8, 16) for the fhe mode on their eight sample images. The compiler
// finds the block size exactly on the fixed-point weights; by its rule (fixed.SpectralWins) the
// layer stays dense (five levels, as the dense LoLa), and with the frequency domain forced it
// takes two more (seven). The fixed-point program classifies the samples as their labels say.
// Then (not with -short) the eight samples run encrypted with the layer in the frequency domain,
// one ciphertext, every output bitwise equal to the cleartext backend's.
func TestLoLaMNISTBlockCirculantForFHE(t *testing.T) {
	for _, k := range []int{8, 16} {
		dir := filepath.Join(testenv.RepoRoot(t), "testdata", map[int]string{8: "lola-mnist-bc8", 16: "lola-mnist-bc16"}[k])
		g, err := onnx.Load(filepath.Join(dir, "model.onnx"), onnx.Options{Batch: 1})
		if err != nil {
			t.Fatal(err)
		}
		ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		var progs [2]*fixed.Program
		for i, mode := range []fixed.BlockMode{fixed.BlockAuto, fixed.BlockSpectral} {
			opts := passes.DefaultOptions()
			opts.Backend, opts.Samples, opts.Scales, opts.FHEBlocks = passes.BackendFHE, ds.Samples, []int{4}, mode
			p, rep, err := passes.Compile(g, opts)
			if err != nil {
				t.Fatal(err)
			}
			if acc := rep.Tune.Chosen.Accuracy; acc < 7.0/8 {
				t.Errorf("k = %d: fixed-point accuracy on the samples %.3f", k, acc)
			}
			var blocks []int
			var spectral []bool
			for _, in := range p.Instrs {
				if in.Op == fixed.OpMatMul {
					blocks, spectral = append(blocks, in.Block), append(spectral, p.FrequencyDomain(in))
				}
			}
			if len(blocks) != 2 || blocks[0] != k || blocks[1] != 0 || spectral[0] != (i == 1) || spectral[1] {
				t.Fatalf("k = %d, mode %d: matmul block sizes %v, frequency domain %v", k, mode, blocks, spectral)
			}
			if want := 5 + 2*i; p.FHE.Depth != want || p.FHE.LogN != 15 {
				t.Errorf("k = %d, mode %d: depth %d, N = 2^%d; want %d and 2^15", k, mode, p.FHE.Depth, p.FHE.LogN, want)
			}
			t.Logf("k = %d, mode %d: s=%d, %s", k, mode, p.Scale, p.FHE)
			progs[i] = p
		}
		if testing.Short() {
			continue
		}
		stats := encryptedEqualsClear(t, progs[1], g, ds.Samples)
		if c := stats[1]; c.RoundTrips != 1 {
			t.Errorf("k = %d: %d samples took %d round trips, want one ciphertext", k, len(ds.Samples), c.RoundTrips)
		}
		t.Logf("k = %d, frequency domain: %+v", k, stats[0].Ops)
	}
}
