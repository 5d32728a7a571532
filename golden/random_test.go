package golden

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/passes"
)

// TestRandomCNNs compiles random small CNNs (random layer sequences, shapes, weights, batch,
// bitwidth and scale) and requires the secure outputs to equal the cleartext ones bitwise.
func TestRandomCNNs(t *testing.T) {
	nets := 24
	if testing.Short() {
		nets = 5
	}
	covered := map[fixed.Opcode]bool{}
	conv2D := 0 // convolutions the backend ran itself (the others were lowered to im2col)
	for seed := uint64(1); seed <= uint64(nets); seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			g, err := RandomCNN(seed)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 99))
			in := g.Inputs[0].Shape
			var samples []dataset.Sample
			for i := 0; i < 3; i++ {
				x := make([]float32, in.Size())
				for j := range x {
					x[j] = float32(2*rng.Float64() - 1)
				}
				samples = append(samples, dataset.Sample{Name: fmt.Sprint(i), Input: x, Label: -1})
			}
			opts := passes.DefaultOptions()
			opts.Samples = samples
			opts.Scale = 3 + rng.IntN(9)
			opts.Headroom = 1 + rng.IntN(3)
			prog, rep := compileOpts(t, g, opts)
			// Also run rings wider than the autotuned one.
			bits := min(64, rep.Bits+rng.IntN(6))
			if bits != rep.Bits {
				prog = compileGraph(t, g, bits, rep.Scale)
			}
			t.Logf("input %v, %d instructions, l=%d s=%d", in, len(prog.server.Instrs), bits, rep.Scale)
			inputs := encodeInputs(t, prog.server, inputsOf(samples))
			clear := runClear(t, prog.server, inputs)
			sec := runSecure(t, prog, inputs, secureOptions{streams: 1 + int(seed%2)})
			compareRuns(t, clear, sec)
			conv2D += sec.calls[0].conv2D
			for _, in := range prog.server.Instrs {
				covered[in.Op] = true
			}
		})
	}
	if testing.Short() {
		return
	}
	// The random networks together must exercise every backend call and the local operations.
	if conv2D == 0 {
		t.Error("no random network ran a convolution as Conv2D")
	}
	for _, op := range []fixed.Opcode{fixed.OpConv, fixed.OpMatMul, fixed.OpReLU, fixed.OpTrunc, fixed.OpMaxPool, fixed.OpSumPool,
		fixed.OpDiv, fixed.OpMulConst, fixed.OpAddConst, fixed.OpAdd, fixed.OpConcat, fixed.OpPad, fixed.OpArgMax, fixed.OpReshape} {
		if !covered[op] {
			t.Errorf("no random network used %s", op)
		}
	}
}
