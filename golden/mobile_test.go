package golden

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/ring"
)

func TestMobileSEShape(t *testing.T) {
	g, err := MobileSE(1)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[ir.Op]int{}
	for _, n := range g.Nodes {
		ops[n.Op]++
	}
	// Clip: two HardSwish, the SE gate's HardSigmoid, ReLU6. Mul: per HardSwish and for the SE
	// gate one by α and one of two runtime tensors. Conv: 3×3, depthwise, two in the SE block, 1×1.
	if ops[ir.Clip] != 4 || ops[ir.Mul] != 6 || ops[ir.GlobalAveragePool] != 2 || ops[ir.Conv] != 5 {
		t.Fatalf("operators %v", ops)
	}
	roundTrip(t, g)
}

// TestMobileSESecure compiles the MobileNetV3-style network (HardSwish, ReLU6, a squeeze-and-
// excitation block with a HardSigmoid gate) with passes.Compile and autotuning, and requires the
// secure run to equal the cleartext run bit for bit.
func TestMobileSESecure(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		seeds = seeds[:2]
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			g, err := MobileSE(seed)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 41))
			var samples []dataset.Sample
			for i := 0; i < 3; i++ {
				x := make([]float32, g.Inputs[0].Shape.Size())
				for j := range x {
					x[j] = float32(4*rng.Float64() - 2) // reaches both knees of HardSwish (±3) after the conv
				}
				samples = append(samples, dataset.Sample{Name: fmt.Sprint(i), Input: x, Label: -1})
			}
			opts := passes.DefaultOptions()
			opts.Samples = samples
			opts.Scale = 8 + int(seed)
			prog, rep := compileOpts(t, g, opts)
			muls := 0
			for _, in := range prog.server.Instrs {
				if in.Op == fixed.OpMul {
					muls++
				}
			}
			if muls != 3 {
				t.Fatalf("%d mul instructions, want 3 (two HardSwish, one SE gate)", muls)
			}
			inputs := encodeInputs(t, prog.server, inputsOf(samples))
			clear := runClear(t, prog.server, inputs)
			// The fixed-point logits follow the float model (the lowering is exact up to the
			// encoding and truncation errors).
			for i, smp := range samples {
				want, err := interp.Run(g, map[string]*ir.Tensor{"input": {Shape: g.Inputs[0].Shape, Data: smp.Input}})
				if err != nil {
					t.Fatal(err)
				}
				o := clear[i][0]
				r := ring.Must(prog.server.Bits)
				for j, v := range o.Value.Data {
					f := want[g.Outputs[0]].Data[j]
					if d := math.Abs(math.Ldexp(float64(r.Signed(v)), -o.Scale) - float64(f)); d > 0.05 {
						t.Fatalf("sample %d logit %d: fixed %g, float %g", i, j, math.Ldexp(float64(r.Signed(v)), -o.Scale), f)
					}
				}
			}
			for _, opt := range []secureOptions{{streams: 1}, {streams: 2, oneBatch: true}} {
				sec := runSecure(t, prog, inputs, opt)
				compareRuns(t, clear, sec)
				logProfile(t, fmt.Sprintf("mobile-se l=%d s=%d streams=%d oneBatch=%v", rep.Bits, rep.Scale, opt.streams, opt.oneBatch),
					sec, len(inputs))
			}
		})
	}
}
