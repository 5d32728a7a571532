package golden

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// The golden tests of the HE linear layers: the scihe backend (every matrix product and
// convolution by RLWE, package he) and the auto backend (per layer as the program records it)
// must give the cleartext run's outputs bit for bit, and the HE layers' traffic must equal
// package he's exact formulas.

// setEngines records an engine on every linear layer (OpMatMul, OpConv) of both copies of the
// program, as athosc --backend auto would: pick(i) for the i-th linear layer. It returns how many
// layers got HE and OT.
func setEngines(p *program, pick func(i int) fixed.Engine) (nHE, nOT int) {
	i := 0
	for j, in := range p.server.Instrs {
		if in.Op != fixed.OpMatMul && in.Op != fixed.OpConv {
			continue
		}
		e := pick(i)
		i++
		in.Engine = e
		p.client.Instrs[j].Engine = e
		if e == fixed.EngineHE {
			nHE++
		} else {
			nOT++
		}
	}
	return nHE, nOT
}

// alternate is HE for even linear layers and OT for odd ones (first = HE), or the other way.
func alternate(first fixed.Engine) func(int) fixed.Engine {
	other := fixed.EngineOT
	if first == fixed.EngineOT {
		other = fixed.EngineHE
	}
	return func(i int) fixed.Engine {
		if i%2 == 0 {
			return first
		}
		return other
	}
}

// linearLayers is the number of linear layers (OpMatMul, OpConv) of a program.
func linearLayers(p *fixed.Program) int {
	n := 0
	for _, in := range p.Instrs {
		if in.Op == fixed.OpMatMul || in.Op == fixed.OpConv {
			n++
		}
	}
	return n
}

// runHE runs prog securely in the given mode (scihe, or auto with the engines the program
// records), requires the outputs to equal clear bitwise, the HE layers' traffic (both parties'
// bytes, frame headers included) to equal heplan.ConvBytes/heplan.MatMulBytes exactly, and wantHE linear
// layers per inference to have run by HE (-1: all of them, i.e. every Conv2D and MatMul call).
func runHE(t testing.TB, prog *program, inputs []ring.Tensor, clear [][]vm.Output, opt secureOptions, wantHE int) *secureRun {
	t.Helper()
	sec := runSecure(t, prog, inputs, opt)
	compareRuns(t, clear, sec)
	c0, c1 := sec.calls[0], sec.calls[1]
	if c0.he != c1.he || c0.conv2D != c1.conv2D || c0.matMul != c1.matMul {
		t.Fatalf("the parties made different calls: %+v and %+v", c0, c1)
	}
	if c0.heFormula != c1.heFormula {
		t.Fatalf("the parties' HE formulas differ: %d and %d", c0.heFormula, c1.heFormula)
	}
	n := len(inputs)
	switch {
	case wantHE < 0:
		if c0.he != c0.conv2D+c0.matMul || c0.he == 0 {
			t.Fatalf("%d of %d linear calls ran by HE, want all", c0.he, c0.conv2D+c0.matMul)
		}
	case c0.he != wantHE*n:
		t.Fatalf("%d linear calls ran by HE, want %d", c0.he, wantHE*n)
	}
	if got := c0.heSent + c1.heSent; got != c0.heFormula {
		t.Errorf("HE layers sent %d bytes (both parties), formula %d", got, c0.heFormula)
	}
	return sec
}

// heModes are the ways the tests run a program by HE: every layer (scihe), and auto with the
// engines alternating per layer, starting with HE or with OT (set on the program by hand, as
// the planner of athosc --backend auto records them).
var heModes = []struct {
	name  string
	mode  sci.Mode
	first fixed.Engine // auto: engine of the first linear layer
}{
	{"scihe", sci.ModeHE, 0},
	{"auto-he-first", sci.ModeAuto, fixed.EngineHE},
	{"auto-ot-first", sci.ModeAuto, fixed.EngineOT},
}

// runAllModes runs prog in every HE mode (short: scihe and the first auto alternation) on one
// stream and on two, and returns the scihe run.
func runAllModes(t *testing.T, name string, prog *program, inputs []ring.Tensor, clear [][]vm.Output) *secureRun {
	t.Helper()
	modes := heModes
	if testing.Short() {
		modes = modes[:2]
	}
	var first *secureRun
	for i, m := range modes {
		opt := secureOptions{streams: 1 + i%2, mode: m.mode}
		want := -1
		if m.mode == sci.ModeAuto {
			nHE, nOT := setEngines(prog, alternate(m.first))
			want = nHE
			if nHE+nOT != linearLayers(prog.server) {
				t.Fatal("setEngines missed a layer")
			}
		}
		sec := runHE(t, prog, inputs, clear, opt, want)
		logProfile(t, fmt.Sprintf("%s %s streams=%d", name, m.name, opt.streams), sec, len(inputs))
		if first == nil {
			first = sec
		}
	}
	setEngines(prog, func(int) fixed.Engine { return fixed.EngineDefault })
	return first
}

// randomSamples draws n inputs of the graph's input shape uniform in [-a, a].
func randomSamples(g *ir.Graph, seed uint64, n int, a float64) []dataset.Sample {
	rng := rand.New(rand.NewPCG(seed, 0x4e))
	var out []dataset.Sample
	for i := 0; i < n; i++ {
		x := make([]float32, g.Inputs[0].Shape.Size())
		for j := range x {
			x[j] = float32(a * (2*rng.Float64() - 1))
		}
		out = append(out, dataset.Sample{Name: fmt.Sprint(i), Input: x, Label: -1})
	}
	return out
}

// TestHEMNISTSmall runs the project's MNIST model by HE on its validation inputs and a constant
// image.
func TestHEMNISTSmall(t *testing.T) {
	dir := filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small")
	g := loadModel(t, filepath.Join(dir, "model.onnx"))
	ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
	if err != nil {
		t.Fatal(err)
	}
	prog, tune := compileTuned(t, g, ds.Samples, -1)
	xs := inputsOf(ds.Samples)
	if testing.Short() {
		xs = xs[:2]
	}
	flat := make([]float32, len(xs[0]))
	for i := range flat {
		flat[i] = 0.5
	}
	inputs := encodeInputs(t, prog.server, append(xs, flat))
	clear := runClear(t, prog.server, inputs)
	t.Logf("mnist-small: l=%d s=%d, %d linear layers", tune.Bits, tune.Scale, linearLayers(prog.server))
	runAllModes(t, "mnist-small", prog, inputs, clear)
}

// TestHEMNIST8 runs the ONNX zoo's mnist-8 by HE on MNIST test images.
func TestHEMNIST8(t *testing.T) {
	shared := testenv.SharedTestdata(t)
	g := loadModel(t, filepath.Join(shared, "models", "mnist-8", "model.onnx"))
	samples := mnistSamples(t, shared, 0, 20, false)
	prog, tune := compileTuned(t, g, samples, -1)
	n := 4
	if testing.Short() {
		n = 2
	}
	inputs := encodeInputs(t, prog.server, inputsOf(samples[:n]))
	clear := runClear(t, prog.server, inputs)
	t.Logf("mnist-8: l=%d s=%d", tune.Bits, tune.Scale)
	runAllModes(t, "mnist-8", prog, inputs, clear)
}

// TestHECIFAR10Oval runs the OVAL CIFAR-10 networks by HE (not with -short).
func TestHECIFAR10Oval(t *testing.T) {
	if testing.Short() {
		t.Skip("CIFAR-10 networks by HE: not with -short")
	}
	shared := testenv.SharedTestdata(t)
	for _, name := range []string{"cifar10-oval-base-kw", "cifar10-oval-base-kw-simplified"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(shared, "models", name, "model.onnx")
			if _, err := os.Stat(path); err != nil {
				t.Skipf("%s not present: %v", path, err)
			}
			g := loadModel(t, path)
			samples := cifarSamples(t, shared, 10)
			prog, tune := compileTuned(t, g, samples, -1)
			t.Logf("%s: l=%d s=%d", name, tune.Bits, tune.Scale)
			inputs := encodeInputs(t, prog.server, inputsOf(samples[:2]))
			clear := runClear(t, prog.server, inputs)
			runAllModes(t, name, prog, inputs, clear)
		})
	}
}

// TestHERandomCNNs runs the random networks of TestRandomCNNs (random layers, geometries, batch,
// bitwidth up to 64) by HE and by auto with alternating engines.
func TestHERandomCNNs(t *testing.T) {
	nets := 24
	if testing.Short() {
		nets = 6
	}
	for seed := uint64(1); seed <= uint64(nets); seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			g, err := RandomCNN(seed)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 99))
			opts := passes.DefaultOptions()
			opts.Samples = randomSamples(g, seed, 2, 1)
			opts.Scale = 3 + rng.IntN(9)
			prog, rep := compileOpts(t, g, opts)
			bits := min(64, rep.Bits+rng.IntN(24)) // wider rings too: up to the two-prime reply (l > 46)
			if bits != rep.Bits {
				prog = compileGraph(t, g, bits, rep.Scale)
			}
			t.Logf("input %v, %d linear layers, l=%d s=%d", g.Inputs[0].Shape, linearLayers(prog.server), bits, rep.Scale)
			inputs := encodeInputs(t, prog.server, inputsOf(opts.Samples))
			clear := runClear(t, prog.server, inputs)
			m := heModes[seed%uint64(len(heModes))]
			opt := secureOptions{streams: 1 + int(seed%2), mode: m.mode}
			want := -1
			if m.mode == sci.ModeAuto {
				want, _ = setEngines(prog, alternate(m.first))
			}
			runHE(t, prog, inputs, clear, opt, want)
		})
	}
}

// heGeometryNet covers the geometries of the HE packing: batch 2; grouped, depthwise (with a
// multiplier), strided, dilated, padded (symmetric and asymmetric), 1×1 and a stride larger than
// the kernel; then a fully connected layer on a batch of 2 (a matrix product with n = 2).
func heGeometryNet(seed uint64) (*ir.Graph, error) {
	b := newBuilder("he-geometries", seed, ir.Shape{2, 4, 14, 12})
	x := "input"
	x = b.node(ir.Relu, nil, b.convAttrs(x, 8, []int{3, 3}, []int{1, 2}, []int{1, 1, 1, 0}, []int{1, 1}, 4)) // grouped (4), strided columns
	x = b.convAttrs(x, 16, []int{3, 3}, []int{1, 1}, []int{2, 2, 2, 2}, []int{2, 2}, 8)                      // depthwise ×2, dilated, padded
	x = b.node(ir.Relu, nil, b.conv(x, 6, 1, 1, 0, 1, 1, true))                                              // 1×1
	x = b.convAttrs(x, 6, []int{2, 3}, []int{3, 2}, []int{0, 1, 2, 0}, []int{1, 1}, 2)                       // stride 3 > kernel 2, grouped
	x = b.node(ir.Relu, nil, b.conv(x, 5, 3, 2, 1, 1, 1, true))                                              // strided, padded
	return b.done(b.gemm(b.flatten(x), 7))
}

// bigInputNet is a network whose input (3×64×64 = 12288 values) and first output (4×64×64) exceed
// the ring degree N = 8192 of l ≥ 19, so that every layer spans several input ciphertexts.
func bigInputNet(seed uint64, side int) (*ir.Graph, error) {
	b := newBuilder("he-big-input", seed, ir.Shape{1, 3, side, side})
	x := b.node(ir.Relu, nil, b.conv("input", 4, 3, 1, 1, 1, 1, true))
	x = b.node(ir.Relu, nil, b.conv(x, 4, 3, 2, 2, 2, 1, true)) // strided, dilated
	x = b.node(ir.GlobalAveragePool, nil, x)
	return b.done(b.gemm(b.flatten(x), 10))
}

// TestHEConvGeometries runs the geometry networks (2-D with batch 2, 1-D, and an input larger
// than N) by HE.
func TestHEConvGeometries(t *testing.T) {
	for _, tc := range []struct {
		name string
		net  func(uint64) (*ir.Graph, error)
		bits int
	}{
		{"2d", heGeometryNet, 37},
		{"2d-conv-ot-net", convNet, 41},
		{"1d", conv1DNet, 44},
		{"input-larger-than-N", func(s uint64) (*ir.Graph, error) { return bigInputNet(s, 64) }, 37},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, err := tc.net(7)
			if err != nil {
				t.Fatal(err)
			}
			samples := randomSamples(g, 7, 2, 1)
			prog := compileGraph(t, g, tc.bits, 12)
			if tc.name == "input-larger-than-N" {
				p, err := heplan.ParamsFor(tc.bits)
				if err != nil {
					t.Fatal(err)
				}
				if in := g.Inputs[0].Shape.Size(); in <= p.N() {
					t.Fatalf("input of %d values is not larger than N = %d", in, p.N())
				}
			}
			inputs := encodeInputs(t, prog.server, inputsOf(samples))
			clear := runClear(t, prog.server, inputs)
			runAllModes(t, tc.name, prog, inputs, clear)
		})
	}
}

// edgeNet is a small network with a padded 3×3 convolution, a strided grouped one, a depthwise
// one and two fully connected layers.
func edgeNet(seed uint64) (*ir.Graph, error) {
	b := newBuilder("he-edge", seed, ir.Shape{1, 3, 10, 10})
	x := b.node(ir.Relu, nil, b.conv("input", 4, 3, 1, 1, 1, 1, true))
	x = b.node(ir.Relu, nil, b.conv(x, 6, 3, 2, 1, 1, 2, true))
	x = b.conv(x, 6, 3, 1, 1, 1, 6, true)
	x = b.node(ir.Relu, nil, b.gemm(b.flatten(x), 12))
	return b.done(b.gemm(x, 5))
}

// TestHEEdgeBitwidths pins the ring at the edge values l = 32, 37, 41, 44 (the rings of the
// paper's benchmarks, and the largest l with a one-prime reply) and at 46/47 (the last one-prime
// and the first two-prime reply modulus) and 64, with the scale at 12, and runs edgeNet by HE.
func TestHEEdgeBitwidths(t *testing.T) {
	g, err := edgeNet(11)
	if err != nil {
		t.Fatal(err)
	}
	samples := randomSamples(g, 11, 2, 2)
	bitwidths := []int{32, 37, 41, 44, 46, 47, 64}
	for _, l := range bitwidths {
		t.Run(fmt.Sprintf("l%d", l), func(t *testing.T) {
			prog := compileGraph(t, g, l, 12)
			if prog.server.Bits != l {
				t.Fatalf("compiled at l = %d, want %d", prog.server.Bits, l)
			}
			inputs := encodeInputs(t, prog.server, inputsOf(samples))
			clear := runClear(t, prog.server, inputs)
			// The outputs must not be trivial (a network that outputs zeros proves little).
			nonzero := false
			for _, v := range clear[0][0].Value.Data {
				nonzero = nonzero || v != 0
			}
			if !nonzero {
				t.Fatal("the clear run's logits are all zero")
			}
			sec := runHE(t, prog, inputs, clear, secureOptions{streams: 1 + l%2, mode: sci.ModeHE}, -1)
			logProfile(t, fmt.Sprintf("edge l=%d", l), sec, len(inputs))
		})
	}
}

// plantedNet is a network whose weights are planted patterns: a 3×3 convolution 2→4 whose 72
// weights are a permuted ramp k/2^s (k = −35…36, every value distinct), and a fully connected
// layer 16·4·4 → 6 whose weights repeat a 12-value pattern. At scale s the fixed-point weights
// are exactly the integers k.
func plantedNet(scale int) (*ir.Graph, error) {
	b := newBuilder("planted-weights", 1, ir.Shape{1, 2, 8, 8})
	unit := 1 / float64(int(1)<<scale)
	plant := func(name string, shape ir.Shape, f func(i int) int) string {
		t := ir.NewTensor(shape)
		for i := range t.Data {
			t.Data[i] = float32(float64(f(i)) * unit)
		}
		b.g.Consts[name] = t
		return name
	}
	w := plant("W_planted_conv", ir.Shape{4, 2, 3, 3}, func(i int) int { return (i*29)%72 - 35 })
	x := b.node(ir.Conv, ir.Attrs{"group": ir.IntAttr(1), "kernel_shape": ir.IntsAttr([]int{3, 3}),
		"strides": ir.IntsAttr([]int{2, 2}), "pads": ir.IntsAttr([]int{1, 1, 1, 1}), "dilations": ir.IntsAttr([]int{1, 1})},
		"input", w)
	x = b.flatten(b.node(ir.Relu, nil, x))
	fc := plant("W_planted_fc", ir.Shape{6, 64}, func(i int) int { return []int{7, -300, 12, 5000, -1, 33, 90, -77, 2, 1234, -5, 61}[i%12] })
	return b.done(b.node(ir.Gemm, ir.Attrs{"alpha": ir.FloatAttr(1), "beta": ir.FloatAttr(1),
		"transA": ir.IntAttr(0), "transB": ir.IntAttr(1)}, x, fc))
}

// narrowPatterns adds to the detector's encodings one more: the first values of each weight
// tensor as little-endian two's complement of the narrowest byte width that holds all of the
// tensor (as the program file stores them), at least 8 bytes long.
func narrowPatterns(w [][]int64) [][]byte {
	var pats [][]byte
	for _, data := range w {
		width := 1
		for _, v := range data {
			for v < -(1<<(8*width-1)) || v >= 1<<(8*width-1) {
				width++
			}
		}
		run := max(6, (8+width-1)/width)
		if len(data) < run {
			continue
		}
		var p []byte
		for _, v := range data[:run] {
			for b := 0; b < width; b++ {
				p = append(p, byte(uint64(v)>>(8*b)))
			}
		}
		pats = append(pats, p)
	}
	return pats
}

// TestHEPlantedWeightsNotOnWire plants weight patterns in a network and runs it by HE (scihe, and
// auto with both engines) with party 1 on the client copy: the leak detector of
// TestWeightsNeverReachClient finds the patterns in the server's program file but nowhere in what
// party 1 received nor in the tensors it held.
func TestHEPlantedWeightsNotOnWire(t *testing.T) {
	for _, l := range []int{32, 41, 52} {
		t.Run(fmt.Sprintf("l%d", l), func(t *testing.T) {
			const scale = 10
			g, err := plantedNet(scale)
			if err != nil {
				t.Fatal(err)
			}
			prog := compileGraph(t, g, l, scale)
			r := ring.Must(l)
			var weights [][]int64
			for _, w := range prog.server.Weights {
				weights = append(weights, w.Data)
			}
			pats := append(weightPatterns(&r, weights, 6), narrowPatterns(weights)...)
			if len(pats) != 8 {
				t.Fatalf("%d patterns, want 4 encodings of each of the 2 weight tensors", len(pats))
			}
			// The planted values are what the program carries (the compiler did not fold or
			// rescale them), and the detector finds them in the server's file (which stores the
			// weights at their narrowest width, one of the patterns).
			if got := weights[0][:3]; got[0] != (0*29)%72-35 || got[1] != (1*29)%72-35 || got[2] != (2*29)%72-35 {
				t.Fatalf("planted conv weights encoded as %v", got)
			}
			full, err := sciir.Marshal(&sciir.File{Program: prog.server}, true)
			if err != nil {
				t.Fatal(err)
			}
			if containsAny(full, pats) < 0 {
				t.Fatal("the detector does not find the planted weights in the server's program file")
			}
			if k := containsAny(prog.clientFile, pats); k >= 0 {
				t.Fatalf("the client's program file contains a planted weight encoding (pattern %d)", k)
			}
			samples := randomSamples(g, 3, 2, 1)
			inputs := encodeInputs(t, prog.server, inputsOf(samples))
			clear := runClear(t, prog.server, inputs)
			for _, m := range heModes {
				var recs []*recorder
				var mu sync.Mutex
				var held bytes.Buffer
				want := -1
				if m.mode == sci.ModeAuto {
					want, _ = setEngines(prog, alternate(m.first))
				}
				runHE(t, prog, inputs, clear, secureOptions{streams: 2, mode: m.mode,
					wrap: func(party int, c net.Conn) net.Conn {
						if party == 0 {
							return c
						}
						rc := &recorder{Conn: c}
						recs = append(recs, rc)
						return rc
					},
					observe: func(party, _ int, v ring.Tensor) {
						if party == 1 {
							mu.Lock()
							for _, e := range v.Data {
								held.Write(binary.LittleEndian.AppendUint64(nil, e))
							}
							mu.Unlock()
						}
					},
				}, want)
				total := 0
				for i, rc := range recs {
					rc.mu.Lock()
					total += rc.buf.Len()
					if k := containsAny(rc.buf.Bytes(), pats); k >= 0 {
						t.Errorf("%s: stream %d: party 1 received a planted weight encoding (pattern %d)", m.name, i, k)
					}
					rc.mu.Unlock()
				}
				if k := containsAny(held.Bytes(), pats); k >= 0 {
					t.Errorf("%s: a tensor of party 1 contains a planted weight encoding (pattern %d)", m.name, k)
				}
				if total == 0 || held.Len() == 0 {
					t.Fatalf("%s: nothing recorded", m.name)
				}
				t.Logf("%s: %d patterns checked against %d bytes received by party 1 and %d bytes of its tensors", m.name, len(pats), total, held.Len())
			}
		})
	}
}

// TestHEMiniONN runs one MiniONN inference (CrypTFlow2 Table 5's CIFAR-10 network, random
// weights) at l = 41, s = 12 by HE (nonlinear layers on IKNP), bitwise equal to the clear run, and
// requires the bound: at most 0.4 GB per inference, both directions (not with -short).
// On Ferret the traffic is lower still, but Ferret's setup costs tens of seconds of CPU here.
func TestHEMiniONN(t *testing.T) {
	if testing.Short() {
		t.Skip("MiniONN by HE: not with -short")
	}
	g, err := MiniONN(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	samples := randomSamples(g, 2, 4, 2) // CIFAR pixels normalised to about ±2
	opts := passes.DefaultOptions()
	opts.Samples, opts.Bits, opts.Scale = samples, 41, 12
	prog, rep := compileOpts(t, g, opts)
	if rep.Tune.Chosen.Overflow {
		t.Fatalf("MiniONN overflows Z_2^41 at scale 12 (%d bits used)", rep.Tune.Chosen.BitsUsed)
	}
	inputs := encodeInputs(t, prog.server, inputsOf(samples[:1]))
	clear := runClear(t, prog.server, inputs)
	for _, o := range []sci.OTSource{sci.OTIKNP} {
		sec := runHE(t, prog, inputs, clear, secureOptions{streams: 2, mode: sci.ModeHE, ot: o}, -1)
		logProfile(t, "minionn scihe ot="+o.String(), sec, 1)
		on := sec.prof[0].Online().Add(sec.prof[1].Online())
		setup := sec.prof[0].Setup.Add(sec.prof[1].Setup)
		t.Logf("minionn scihe ot=%s: online %.1f MB, setup %.1f MB, linear (HE) %.1f MB", o, mb(on.BytesSent),
			mb(setup.BytesSent), mb(sec.calls[0].heFormula))
		if on.BytesSent > 400e6 {
			t.Errorf("minionn scihe ot=%s: %d bytes per inference, want ≤ 0.4 GB", o, on.BytesSent)
		}
	}
}

// engineCounts counts the engines a program records on its linear layers.
func engineCounts(p *fixed.Program) (nHE, nOT, unset int) {
	for _, in := range p.Instrs {
		if in.Op != fixed.OpMatMul && in.Op != fixed.OpConv {
			continue
		}
		switch in.Engine {
		case fixed.EngineHE:
			nHE++
		case fixed.EngineOT:
			nOT++
		default:
			unset++
		}
	}
	return
}

// TestHEAutoPlanned compiles networks with the engine planner (passes.Options.Backend "auto", the
// LAN and the WAN link), which records OT or HE on every linear layer in the program (kept
// through both .sciir copies), and runs them with the auto backend: the outputs equal the
// cleartext run bitwise, and exactly the layers planned for HE run by HE.
func TestHEAutoPlanned(t *testing.T) {
	shared := testenv.SharedTestdata(t)
	type model struct {
		name  string
		graph func(t *testing.T) (*ir.Graph, []dataset.Sample)
	}
	synth := func(f func(uint64) (*ir.Graph, error), seed uint64, a float64) func(t *testing.T) (*ir.Graph, []dataset.Sample) {
		return func(t *testing.T) (*ir.Graph, []dataset.Sample) {
			g, err := f(seed)
			if err != nil {
				t.Fatal(err)
			}
			return g, randomSamples(g, seed, 2, a)
		}
	}
	models := []model{
		{"mnist-small", func(t *testing.T) (*ir.Graph, []dataset.Sample) {
			dir := filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small")
			g := loadModel(t, filepath.Join(dir, "model.onnx"))
			ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
			if err != nil {
				t.Fatal(err)
			}
			return g, ds.Samples[:3]
		}},
		{"mnist-8", func(t *testing.T) (*ir.Graph, []dataset.Sample) {
			g := loadModel(t, filepath.Join(shared, "models", "mnist-8", "model.onnx"))
			return g, mnistSamples(t, shared, 0, 3, false)
		}},
		{"he-geometries", synth(heGeometryNet, 3, 1)},
		{"conv-geometries", synth(convNet, 4, 1)},
		{"minionn", synth(func(s uint64) (*ir.Graph, error) { return MiniONN(s, 1) }, 1, 2)},
	}
	if testing.Short() {
		models = models[:3]
	}
	for _, md := range models {
		for _, net := range []string{"lan", "wan"} {
			if md.name == "minionn" && net == "wan" {
				continue // the largest model on one link only (CI time)
			}
			t.Run(md.name+"-"+net, func(t *testing.T) {
				g, samples := md.graph(t)
				opts := passes.DefaultOptions()
				opts.Samples, opts.Scale, opts.Backend, opts.Net = samples, 12, "auto", net
				if md.name == "minionn" {
					opts.Bits = 41
				}
				prog, rep := compileOpts(t, g, opts)
				nHE, nOT, unset := engineCounts(prog.server)
				if unset != 0 || nHE+nOT == 0 {
					t.Fatalf("the planner left %d of %d linear layers unplanned", unset, nHE+nOT+unset)
				}
				if c0, c1, c2 := engineCounts(prog.client); c0 != nHE || c1 != nOT || c2 != 0 {
					t.Fatalf("the client copy records %d HE and %d OT layers, the server's %d and %d", c0, c1, nHE, nOT)
				}
				inputs := encodeInputs(t, prog.server, inputsOf(samples[:min(2, len(samples))]))
				clear := runClear(t, prog.server, inputs)
				sec := runHE(t, prog, inputs, clear, secureOptions{streams: 2, mode: sci.ModeAuto}, nHE)
				t.Logf("%s --net %s: l=%d, %d layers by HE, %d by OT", md.name, net, rep.Bits, nHE, nOT)
				logProfile(t, fmt.Sprintf("%s auto/%s", md.name, net), sec, len(inputs))
			})
		}
	}
}
