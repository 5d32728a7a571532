package golden

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/ring"
)

// SigmoidTanhMLP returns a small multilayer perceptron for golden tests of the math functions:
// input [1, 12]; fully connected to 16, Sigmoid; fully connected to 10, Tanh; fully connected to
// 4 logits. Weights are random from seed.
func SigmoidTanhMLP(seed uint64) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("sigmoid-tanh-mlp-%d", seed), seed, ir.Shape{1, 12})
	x := b.node(ir.Sigmoid, nil, b.gemm("input", 16))
	x = b.node(ir.Tanh, nil, b.gemm(x, 10))
	return b.done(b.gemm(x, 4))
}

// SigmoidHeadCNN returns a small CNN with a sigmoid head (multi-label style): input [1, 2, 8, 8];
// 3×3 convolution to 4 channels, ReLU, 2×2 max pooling; 3×3 convolution to 4 channels, Tanh;
// flatten, fully connected to 5, Sigmoid (the output).
func SigmoidHeadCNN(seed uint64) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("sigmoid-head-cnn-%d", seed), seed, ir.Shape{1, 2, 8, 8})
	x := b.node(ir.Relu, nil, b.conv("input", 4, 3, 1, 1, 1, 1, true))
	x = b.pool(ir.MaxPool, x, 2, 2, 0, false)
	x = b.node(ir.Tanh, nil, b.conv(x, 4, 3, 1, 1, 1, 1, true))
	return b.done(b.node(ir.Sigmoid, nil, b.gemm(b.flatten(x), 5)))
}

// mathConfigs are the secure configurations the math golden tests run: SCI_OT and SCI_HE, each on
// IKNP and on Ferret silent OT (Ferret not with -short: its setup is seconds of CPU).
func mathConfigs() []imagenetRun {
	if testing.Short() {
		return []imagenetRun{sciotIKNP, sciheIKNP}
	}
	return []imagenetRun{sciotIKNP, sciheIKNP, sciotFerret, sciheFerret}
}

// checkMathModel compiles g at (bits, scale), checks the math opcodes it must contain, checks the
// cleartext run against the float interpreter within tol (absolute, in real units), and requires
// every secure configuration to reveal exactly the cleartext outputs.
func checkMathModel(t *testing.T, g *ir.Graph, bits, scale int, want map[fixed.Opcode]int, samples []dataset.Sample, tol float64, keepSoftmax bool) {
	t.Helper()
	opts := passes.DefaultOptions()
	opts.Bits, opts.Scale, opts.KeepSoftmax = bits, scale, keepSoftmax
	prog, _ := compileOpts(t, g, opts)
	ops := map[fixed.Opcode]int{}
	for _, in := range prog.server.Instrs {
		ops[in.Op]++
	}
	for op, n := range want {
		if ops[op] != n {
			t.Fatalf("%d %s instructions, want %d (program: %v)", ops[op], op, n, ops)
		}
	}
	inputs := encodeInputs(t, prog.server, inputsOf(samples))
	clear := runClear(t, prog.server, inputs)
	r := ring.Must(prog.server.Bits)
	worst := 0.0
	for i, smp := range samples {
		ref, err := interp.Run(g, map[string]*ir.Tensor{"input": {Shape: g.Inputs[0].Shape, Data: smp.Input}})
		if err != nil {
			t.Fatal(err)
		}
		for k, o := range clear[i] {
			f := ref[g.Outputs[k]].Data
			for j, v := range o.Value.Data {
				got := math.Ldexp(float64(r.Signed(v)), -o.Scale)
				d := math.Abs(got - float64(f[j]))
				worst = max(worst, d)
				if d > tol {
					t.Fatalf("sample %d output %q[%d]: fixed %g, float %g", i, o.Name, j, got, f[j])
				}
			}
		}
	}
	t.Logf("%s l=%d s=%d: largest |fixed − float| %.3g over %d samples", g.Name, bits, scale, worst, len(samples))
	for _, c := range mathConfigs() {
		sec := runWith(t, prog, inputs, 1, c.opt(prog.server))
		compareRuns(t, clear, sec)
		logProfile(t, fmt.Sprintf("%s %s l=%d s=%d", g.Name, c.name, bits, scale), sec, len(inputs))
	}
}

// TestSigmoidTanhMLPSecure runs the sigmoid/tanh MLP securely (SCI_OT and SCI_HE, IKNP and
// Ferret) and requires the revealed outputs to equal the cleartext run bit for bit.
func TestSigmoidTanhMLPSecure(t *testing.T) {
	for _, c := range []struct{ bits, scale int }{{32, 12}, {40, 14}} {
		t.Run(fmt.Sprintf("l%d_s%d", c.bits, c.scale), func(t *testing.T) {
			g, err := SigmoidTanhMLP(uint64(c.scale))
			if err != nil {
				t.Fatal(err)
			}
			// Inputs of ±4 drive the sigmoid into both tails and the tanh across its range.
			checkMathModel(t, g, c.bits, c.scale, map[fixed.Opcode]int{fixed.OpSigmoid: 1, fixed.OpTanh: 1},
				randomSamples(g, uint64(c.bits), 3, 4), 0.01, false)
		})
	}
}

// TestSigmoidHeadCNNSecure runs the CNN with a Tanh layer and a sigmoid head securely and requires
// the revealed probabilities to equal the cleartext run bit for bit.
func TestSigmoidHeadCNNSecure(t *testing.T) {
	g, err := SigmoidHeadCNN(3)
	if err != nil {
		t.Fatal(err)
	}
	checkMathModel(t, g, 32, 12, map[fixed.Opcode]int{fixed.OpSigmoid: 1, fixed.OpTanh: 1, fixed.OpMaxPool: 1},
		randomSamples(g, 9, 2, 2), 0.01, false)
}

// SoftmaxMLP returns an MLP with a Softmax in the middle (an attention-like normalisation over 8
// features) and one as its output: input [2, 12]; fully connected to 8, Softmax; fully connected
// to 6, Softmax. With op LogSoftmax, the same with LogSoftmax.
func SoftmaxMLP(seed uint64, op ir.Op) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("%s-mlp-%d", strings.ToLower(string(op)), seed), seed, ir.Shape{2, 12})
	x := b.node(op, ir.Attrs{"axis": ir.IntAttr(1)}, b.gemm("input", 8))
	x = b.gemm(x, 6)
	return b.done(b.node(op, ir.Attrs{"axis": ir.IntAttr(1)}, x))
}

// TestSoftmaxSecure runs the softmax MLP securely, the trailing Softmax kept (KeepSoftmax), and
// requires the revealed probabilities to equal the cleartext run bit for bit.
func TestSoftmaxSecure(t *testing.T) {
	g, err := SoftmaxMLP(5, ir.Softmax)
	if err != nil {
		t.Fatal(err)
	}
	checkMathModel(t, g, 32, 12, map[fixed.Opcode]int{fixed.OpExp: 2, fixed.OpRecip: 2, fixed.OpMaxPool: 2, fixed.OpMul: 2},
		randomSamples(g, 11, 3, 4), 0.01, true)
}

// TestLogSoftmaxSecure runs the log-softmax MLP securely, the trailing LogSoftmax kept, and
// requires the revealed log-probabilities to equal the cleartext run bit for bit (and the
// float model's within 0.01).
func TestLogSoftmaxSecure(t *testing.T) {
	g, err := SoftmaxMLP(7, ir.LogSoftmax)
	if err != nil {
		t.Fatal(err)
	}
	checkMathModel(t, g, 32, 12, map[fixed.Opcode]int{fixed.OpExp: 2, fixed.OpLog: 2, fixed.OpMaxPool: 2, fixed.OpRecip: 0, fixed.OpMul: 0},
		randomSamples(g, 13, 3, 4), 0.01, true)
}

// SelectNet returns an MLP that slices and gathers runtime tensors: input [2, 12]; fully
// connected to 8, reshaped [2, 2, 4]; Slice with a reversed middle axis and a stride-2 last axis
// ([2, 2, 2]); Gather of last-axis entries [1, 0, 1] ([2, 2, 3]); ReLU; fully connected to 4 from
// the flattened [2, 6]; and the class-token pattern: Gather of row 0 of a [2, 2, 3] view.
func SelectNet(seed uint64) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("select-net-%d", seed), seed, ir.Shape{2, 12})
	h := b.node(ir.Reshape, ir.Attrs{"shape": ir.IntsAttr([]int{2, 2, 4})}, b.gemm("input", 8))
	sl := b.node(ir.Slice, ir.Attrs{"starts": ir.IntsAttr([]int{0, 1, 1}), "steps": ir.IntsAttr([]int{1, -1, 2}), "sizes": ir.IntsAttr([]int{2, 2, 2})}, h)
	ga := b.node(ir.Gather, ir.Attrs{"axis": ir.IntAttr(2), "indices": ir.IntsAttr([]int{1, 0, 1}), "indices_shape": ir.IntsAttr([]int{3})}, sl)
	r := b.node(ir.Relu, nil, ga)
	y := b.gemm(b.node(ir.Reshape, ir.Attrs{"shape": ir.IntsAttr([]int{2, 6})}, r), 4)
	tok := b.node(ir.Gather, ir.Attrs{"axis": ir.IntAttr(1), "indices": ir.IntsAttr([]int{0}), "indices_shape": ir.IntsAttr(nil)}, r)
	return b.done(y, tok)
}

// TestSelectSecure runs SelectNet securely: Slice and Gather of runtime tensors are local gathers,
// and the revealed outputs equal the cleartext run bit for bit.
func TestSelectSecure(t *testing.T) {
	g, err := SelectNet(3)
	if err != nil {
		t.Fatal(err)
	}
	checkMathModel(t, g, 32, 12, map[fixed.Opcode]int{fixed.OpGather: 3}, randomSamples(g, 17, 3, 2), 0.01, false)
}

// ReduceNet returns a graph of the ONNX reductions, a Concat with a constant block and a cube:
// input [1, 4, 6]; a = ReduceMean over the last axis (keepdims), the centred x − a squared and
// summed over axes 1, 2 (a variance-like [1]); the ReduceMax over axis 1 concatenated with a
// constant [1, 2, 6] block and cubed (x·x·x, as the importer writes Pow(x, 3)).
func ReduceNet(seed uint64) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("reduce-net-%d", seed), seed, ir.Shape{1, 4, 6})
	red := func(op ir.Op, x string, keep int, axes ...int) string {
		return b.node(op, ir.Attrs{"axes": ir.IntsAttr(axes), "keepdims": ir.IntAttr(keep)}, x)
	}
	a := red(ir.ReduceMean, "input", 1, 2)
	d := b.node(ir.Sub, nil, "input", a)
	v := red(ir.ReduceSum, b.node(ir.Mul, nil, d, d), 0, 1, 2)
	c := b.node(ir.Concat, ir.Attrs{"axis": ir.IntAttr(1)}, red(ir.ReduceMax, "input", 1, 1), b.konst("block", ir.Shape{1, 2, 6}, 1))
	cube := b.node(ir.Mul, nil, b.node(ir.Mul, nil, c, c), c)
	return b.done(cube, v, a)
}

// TestReduceSecure runs ReduceNet securely and requires the revealed outputs to equal the
// cleartext run bit for bit.
func TestReduceSecure(t *testing.T) {
	g, err := ReduceNet(2)
	if err != nil {
		t.Fatal(err)
	}
	checkMathModel(t, g, 32, 12, map[fixed.Opcode]int{fixed.OpMaxPool: 1, fixed.OpDiv: 1, fixed.OpMul: 3},
		randomSamples(g, 13, 3, 2), 0.02, false)
}

// geluTanh adds GELU in its tanh form as the ONNX importer writes Gelu(approximate="tanh"):
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x·x·x))).
func (b *builder) geluTanh(x string) string {
	x3 := b.node(ir.Mul, nil, b.node(ir.Mul, nil, x, x), x)
	s := b.node(ir.Add, nil, x, b.node(ir.Mul, nil, x3, b.scalar("c", 0.044715)))
	t := b.node(ir.Tanh, nil, b.node(ir.Mul, nil, s, b.scalar("k", float32(math.Sqrt(2/math.Pi)))))
	return b.node(ir.Mul, nil, b.node(ir.Mul, nil, x, b.scalar("half", 0.5)), b.node(ir.Add, nil, t, b.scalar("one", 1)))
}

// GeluMLP returns a transformer-style feed-forward block: input [2, 8]; fully connected to 16,
// GELU (tanh form); fully connected to 4.
func GeluMLP(seed uint64) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("gelu-mlp-%d", seed), seed, ir.Shape{2, 8})
	return b.done(b.gemm(b.geluTanh(b.gemm("input", 16)), 4))
}

// TestGeluSecure runs the GELU (tanh form) block securely, bitwise equal to the cleartext run.
func TestGeluSecure(t *testing.T) {
	g, err := GeluMLP(4)
	if err != nil {
		t.Fatal(err)
	}
	checkMathModel(t, g, 32, 12, map[fixed.Opcode]int{fixed.OpTanh: 1, fixed.OpMul: 3},
		randomSamples(g, 17, 3, 2), 0.02, false)
}

// TransformerBlock returns a small transformer-style block on 4 tokens of 8 features: input
// [4, 8]; LayerNorm over the features (affine); fully connected to 8 and a Softmax over the
// features (an attention-like normalisation, mid-graph); fully connected to 12, GELU (tanh form);
// fully connected to 8; a second LayerNorm (no affine) as the output.
func TransformerBlock(seed uint64) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("transformer-block-%d", seed), seed, ir.Shape{4, 8})
	ln := func(x string, affine bool) string {
		g, beta := b.konstIn("gamma", ir.Shape{8}, 0.5, 1.5), b.konst("beta", ir.Shape{8}, 0.5)
		if !affine {
			g = b.konstIn("gamma", ir.Shape{8}, 1, 1)
			return b.node(ir.LayerNormalization, ir.Attrs{"axis": ir.IntAttr(1), "epsilon": ir.FloatAttr(1e-5)}, x, g)
		}
		return b.node(ir.LayerNormalization, ir.Attrs{"axis": ir.IntAttr(1), "epsilon": ir.FloatAttr(1e-5)}, x, g, beta)
	}
	x := ln("input", true)
	x = b.node(ir.Softmax, ir.Attrs{"axis": ir.IntAttr(1)}, b.gemm(x, 8))
	x = b.gemm(b.geluTanh(b.gemm(x, 12)), 8)
	return b.done(ln(x, false))
}

// TestTransformerBlockSecure runs the transformer-style block (LayerNorm, Softmax, GELU) at
// l = 40, s = 12 securely, bitwise equal to the cleartext run.
func TestTransformerBlockSecure(t *testing.T) {
	g, err := TransformerBlock(6)
	if err != nil {
		t.Fatal(err)
	}
	checkMathModel(t, g, 40, 12, map[fixed.Opcode]int{fixed.OpRsqrt: 2, fixed.OpExp: 1, fixed.OpTanh: 1, fixed.OpRecip: 1},
		randomSamples(g, 19, 2, 2), 0.05, false)
}

// TestExpandedSoftmaxSecure compiles ONNX's Softmax node tests in their expanded form
// (ReduceMax, Sub, Exp, ReduceSum, Div: the Softmax function body, with axes as an attribute and,
// for opset 18, as an input) and requires the program to give exactly the fused Softmax's
// outputs — the lowering recognises max-shifted exps and the sum they make — and the secure run
// to equal the cleartext run bit for bit.
func TestExpandedSoftmaxSecure(t *testing.T) {
	root := testenv.SharedTestdata(t, "onnx-node")
	for _, name := range []string{"test_softmax_axis_1", "test_softmax_axis_0", "test_softmax_default_axis"} {
		t.Run(name, func(t *testing.T) {
			opts := passes.DefaultOptions()
			opts.Bits, opts.Scale, opts.KeepSoftmax, opts.Check = 32, 12, true, true
			// These graphs have no weights, so the two .sciir copies are the same (compileOpts
			// requires a client copy without weights, which a weightless program cannot show).
			compile := func(path string) *program {
				p, _, err := passes.Compile(loadModel(t, path), opts)
				if err != nil {
					t.Fatal(err)
				}
				return &program{server: p, client: p}
			}
			fused := compile(filepath.Join(root, name, "model.onnx"))
			g := loadModel(t, filepath.Join(root, name, "model.onnx"))
			samples := randomSamples(g, 23, 2, 3)
			inputs := encodeInputs(t, fused.server, inputsOf(samples))
			want := runClear(t, fused.server, inputs)
			for _, exp := range []string{name + "_expanded", name + "_expanded_ver18"} {
				prog := compile(filepath.Join(root, exp, "model.onnx"))
				clear := runClear(t, prog.server, inputs)
				for i := range clear {
					if !slices.Equal(clear[i][0].Value.Data, want[i][0].Value.Data) || clear[i][0].Scale != want[i][0].Scale {
						t.Fatalf("%s input %d: expanded %v differs from fused %v", exp, i, head(clear[i][0].Value.Data), head(want[i][0].Value.Data))
					}
				}
				sec := runWith(t, prog, inputs, 1, sciotIKNP.opt(prog.server))
				compareRuns(t, clear, sec)
			}
		})
	}
}

// geluErf adds GELU in its exact form as the ONNX importer writes Gelu(approximate="none"):
// 0.5·x·(1 + erf(x/√2)).
func (b *builder) geluErf(x string) string {
	e := b.node(ir.Erf, nil, b.node(ir.Mul, nil, x, b.scalar("rsqrt2", float32(1/math.Sqrt2))))
	return b.node(ir.Mul, nil, b.node(ir.Mul, nil, x, b.scalar("half", 0.5)), b.node(ir.Add, nil, e, b.scalar("one", 1)))
}

// TestGeluErfSecure runs a feed-forward block with GELU in its erf form (the fixed-point erf of
// docs/fixed-point.md, "Erf") securely, bitwise equal to the cleartext run.
func TestGeluErfSecure(t *testing.T) {
	b := newBuilder("gelu-erf-mlp", 8, ir.Shape{2, 8})
	g, err := b.done(b.gemm(b.geluErf(b.gemm("input", 16)), 4))
	if err != nil {
		t.Fatal(err)
	}
	checkMathModel(t, g, 32, 12, map[fixed.Opcode]int{fixed.OpTanh: 1, fixed.OpMul: 3},
		randomSamples(g, 29, 3, 2), 0.02, false)
}
