package fhe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/golden"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/passes"
	fheproto "github.com/cryptflow-go/cryptflow/protocols/fhe"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

func randInput(g *ir.Graph, rng *rand.Rand) []float32 {
	x := make([]float32, g.Inputs[0].Shape.Size())
	for j := range x {
		x[j] = float32(2*rng.Float64() - 1)
	}
	return x
}

func compileFHE(t *testing.T, g *ir.Graph, seed uint64) *fixed.Program {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	var samples []dataset.Sample
	for i := range 6 {
		samples = append(samples, dataset.Sample{Name: fmt.Sprint(i), Input: randInput(g, rng), Label: -1})
	}
	opts := passes.DefaultOptions()
	opts.Backend, opts.Samples, opts.Scales = passes.BackendFHE, samples, []int{2, 3}
	p, _, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEncryptedEqualsClear is the fhe mode's golden test: random small polynomial CNNs and MLPs
// compiled with --backend fhe, evaluated on BGV ciphertexts, decrypted and CRT-recombined, equal
// the cleartext run over Z_n bit for bit — on inputs inside and outside the validated range, one
// inference alone and a ciphertext whose every lane holds its own inference.
func TestEncryptedEqualsClear(t *testing.T) {
	// Seeds 22, 23 and 39 start with a stride-2 convolution: the input goes up in its polyphase
	// layout and the convolution's output in a chosen strided one.
	// Seed 100 is golden.WidePolyCNN: the input goes up channel-minor; seed 101 is
	// golden.ConvRepPolyCNN: the input goes up in its convolution representation (two vectors);
	// seed 102 is golden.StridedPairPolyCNN: that, then a phase-blocked square and a wide one.
	type tc struct {
		seed uint64
		mlp  bool
	}
	cases := []tc{{1, false}, {2, true}, {22, false}, {100, false}, {101, false}, {102, false}, {3, false}, {4, true}, {23, false}, {39, false}}
	if testing.Short() {
		cases = cases[:5] // seed 102 is at N = 2^15: a minute
	}
	for _, c := range cases {
		seed := c.seed
		g, err := golden.RandomPolyNet(seed, c.mlp)
		switch seed {
		case 100:
			g, err = golden.WidePolyCNN(seed)
		case 101:
			g, err = golden.ConvRepPolyCNN(seed)
		case 102:
			g, err = golden.StridedPairPolyCNN(seed)
		}
		if err != nil {
			t.Fatal(err)
		}
		p := compileFHE(t, g, seed)
		r, err := p.Ring()
		if err != nil {
			t.Fatal(err)
		}
		be, err := cleartext.New(r)
		if err != nil {
			t.Fatal(err)
		}
		m, err := vm.New(p, be)
		if err != nil {
			t.Fatal(err)
		}
		l, err := NewLayout(p)
		if err != nil {
			t.Fatal(err)
		}
		if convRep := l.InGather[0] != nil; convRep != (seed == 101 || seed == 102) || convRep && l.Vectors(0) != 2 {
			t.Errorf("seed %d: input in its convolution representation %v (%d vectors)", seed, convRep, l.Vectors(0))
		}
		cl, err := fheproto.NewClient(l.Params)
		if err != nil {
			t.Fatal(err)
		}
		keys, err := cl.Keys(l.Rotations)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := fheproto.NewEvaluator(l.Params, keys, l.Stride)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(seed, 77))
		// Trial 0: one inference; trial 1: every lane of the ciphertext holds its own input,
		// every third far outside the validated range (values wrap mod n in both runs).
		for trial, count := range []int{1, l.Lanes} {
			var batch [][]ring.Tensor
			for k := range count {
				xf := randInput(g, rng)
				if k%3 == 2 {
					for i := range xf {
						xf[i] *= 50
					}
				}
				x, err := r.EncodeTensor(g.Inputs[0].Shape, xf, p.Tensors[p.Inputs[0].Tensor].Scale)
				if err != nil {
					t.Fatal(err)
				}
				batch = append(batch, []ring.Tensor{x})
			}
			before := ev.Stats
			cts, err := l.EncryptInputs(cl, batch)
			if err != nil {
				t.Fatal(err)
			}
			outs, times, err := Evaluate(context.Background(), p, l, ev, cts)
			if err != nil {
				t.Fatalf("seed %d: %v", seed, err)
			}
			got, err := l.DecryptOutputs(cl, outs, count)
			if err != nil {
				t.Fatal(err)
			}
			for k, in := range batch {
				want, err := m.Run(context.Background(), in)
				if err != nil {
					t.Fatal(err)
				}
				for o := range want {
					if !slices.Equal(got[k][o], want[o].Value.Data) {
						t.Errorf("seed %d trial %d lane %d output %d: encrypted %v, clear %v", seed, trial, k, o, got[k][o], want[o].Value.Data)
					}
				}
			}
			if trial == 0 {
				t.Logf("seed %d: %s, period %d, %d lanes, rotations %v, input laid out %v, %d input vectors, %d instructions, %+v", seed, p.FHE, l.Period, l.Lanes, l.Rotations, l.InPos[0] != nil, l.Vectors(0), len(times), ev.Stats)
			} else if d := ev.Stats.PlainMuls - before.PlainMuls; d != before.PlainMuls {
				t.Errorf("seed %d: %d plaintext products for %d lanes, %d for one: lanes must cost the same", seed, d, count, before.PlainMuls)
			}
		}
	}
}
