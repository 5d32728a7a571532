package golden

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// The trained LSTM sequence classifier (testdata/lstm-mnist, scripts/train_lstm.py): an MNIST image
// read as 14 steps of 56 pixels (two rows), one forward LSTM of hidden size 32, the last hidden
// state through a Linear layer to 10 logits. PyTorch exports it as one ONNX LSTM node, which the
// importer unrolls.
const (
	lstmSteps = 14
	// Per step: sigmoid for the input, output and forget gates (no forget gate at the first step,
	// whose cell state is zero) and tanh for the candidate and the new cell state.
	lstmSigmoids = 3*lstmSteps - 1
	lstmTanhs    = 2 * lstmSteps
)

// lstmMNIST loads the model and checks that the importer unrolled it.
func lstmMNIST(t *testing.T) (*ir.Graph, string) {
	t.Helper()
	dir := filepath.Join(testenv.RepoRoot(t), "testdata", "lstm-mnist")
	return loadModel(t, filepath.Join(dir, "model.onnx")), dir
}

// checkLSTMOps requires the math instructions of the unrolled LSTM.
func checkLSTMOps(t *testing.T, p *fixed.Program) {
	t.Helper()
	ops := map[fixed.Opcode]int{}
	for _, in := range p.Instrs {
		ops[in.Op]++
	}
	if ops[fixed.OpSigmoid] != lstmSigmoids || ops[fixed.OpTanh] != lstmTanhs {
		t.Fatalf("%d sigmoid and %d tanh instructions, want %d and %d", ops[fixed.OpSigmoid], ops[fixed.OpTanh], lstmSigmoids, lstmTanhs)
	}
}

// floatTop1 is the float interpreter's top-1 class of each sample.
func floatTop1(t *testing.T, g *ir.Graph, samples []dataset.Sample) []int {
	t.Helper()
	top := make([]int, len(samples))
	in := g.Inputs[0]
	for i, s := range samples {
		out, err := interp.Run(g, map[string]*ir.Tensor{in.Name: {Shape: in.Shape, Data: s.Input}})
		if err != nil {
			t.Fatalf("%s: float run: %v", s.Name, err)
		}
		v := out[g.Outputs[0]].Data
		top[i] = slices.Index(v, slices.Max(v))
	}
	return top
}

// TestLSTMMNISTAgreement compiles the LSTM classifier as athosc does (autotune on MNIST t10k
// images 0–99) and runs the program in the clear (vm/cleartext, bitwise what every secure backend
// reveals) and the float model (ir/interp) on t10k images 1000–1199: the top-1 classes must agree
// on at least 99 % of the 200 images, and the fixed-point accuracy against the labels must be
// within one point of float's.
func TestLSTMMNISTAgreement(t *testing.T) {
	shared := testenv.SharedTestdata(t)
	g, _ := lstmMNIST(t)
	prog, tune := compileTuned(t, g, mnistSamples(t, shared, 0, 100, true), -1)
	checkLSTMOps(t, prog.server)
	if !tune.Verified {
		t.Errorf("l=%d s=%d: the run in the chosen ring differs from the 64-bit run", tune.Bits, tune.Scale)
	}
	test := mnistSamples(t, shared, 1000, 1200, true)
	clear := runClear(t, prog.server, encodeInputs(t, prog.server, inputsOf(test)))
	float := floatTop1(t, g, test)
	r := ring.Must(prog.server.Bits)
	agree, fixedRight, floatRight := 0, 0, 0
	for i, s := range test {
		c := argmaxSigned(r, clear[i][0].Value.Data)
		if c == float[i] {
			agree++
		} else {
			t.Logf("%s (label %d): fixed-point class %d, float %d", s.Name, s.Label, c, float[i])
		}
		if c == s.Label {
			fixedRight++
		}
		if float[i] == s.Label {
			floatRight++
		}
	}
	n := len(test)
	t.Logf("lstm-mnist l=%d s=%d (tune: %d images, fixed %.1f%%, float %.1f%%); t10k 1000-1199: agreement %d/%d, fixed-point accuracy %d/%d, float %d/%d",
		tune.Bits, tune.Scale, tune.Samples, 100*tune.Chosen.Accuracy, 100*tune.FloatAccuracy, agree, n, fixedRight, n, floatRight, n)
	if 100*agree < 99*n {
		t.Errorf("fixed-point and float top-1 agree on %d of %d images, want at least 99 %%", agree, n)
	}
	if d := fixedRight - floatRight; 100*d < -n || 100*d > n {
		t.Errorf("fixed-point accuracy %d/%d is not within one point of float's %d/%d", fixedRight, n, floatRight, n)
	}
}

// TestLSTMMNISTSecure compiles the LSTM classifier with autotune on its shipped inputs (t10k
// images 0–7), plans the linear layers as athosc's default --backend auto does, and runs inputs
// securely with those engines (two-party, IKNP) and with three parties (sci3): the revealed
// logits equal the cleartext run's bit for bit, and the HE layers' traffic equals heplan's
// formula. -short runs one input.
func TestLSTMMNISTSecure(t *testing.T) {
	g, dir := lstmMNIST(t)
	ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := passes.DefaultOptions()
	opts.Samples, opts.Scale, opts.Backend, opts.Net = ds.Samples, -1, "auto", "lan" // athosc's defaults
	prog, rep := compileOpts(t, g, opts)
	tune := rep.Tune
	checkLSTMOps(t, prog.server)
	nHE := 0
	for _, in := range prog.server.Instrs {
		if (in.Op == fixed.OpMatMul || in.Op == fixed.OpConv) && in.Engine == fixed.EngineHE {
			nHE++
		}
	}
	t.Logf("lstm-mnist: l=%d s=%d, %d linear layers, %d planned for HE", tune.Bits, tune.Scale, linearLayers(prog.server), nHE)
	n := 2
	if testing.Short() {
		n = 1
	}
	inputs := encodeInputs(t, prog.server, inputsOf(ds.Samples[:n]))
	clear := runClear(t, prog.server, inputs)
	sec := runHE(t, prog, inputs, clear, secureOptions{streams: 2, mode: sci.ModeAuto}, nHE)
	logProfile(t, fmt.Sprintf("lstm-mnist auto l=%d s=%d", tune.Bits, tune.Scale), sec, n)
	r := ring.Must(prog.server.Bits)
	for i, s := range ds.Samples[:n] {
		t.Logf("%s: class %d, label %d", s.Name, argmaxSigned(r, sec.client[i][0].Value.Data), s.Label)
	}
	// Three parties (sci3): the helper deals the COTs, triples and linear-layer corrections.
	sec3, helper := runSci3(t, prog, inputs, 2, false)
	compareRuns(t, clear, sec3)
	logSci3(t, fmt.Sprintf("lstm-mnist sci3 l=%d s=%d", tune.Bits, tune.Scale), sec3, helper, n)
}
