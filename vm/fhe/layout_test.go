package fhe

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/golden"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/passes"
	fheproto "github.com/cryptflow-go/cryptflow/protocols/fhe"
)

// firstSquareOperand composes the program's linear instructions up to its first square and
// returns the executor and the square's operand (no homomorphic operation is needed for that).
func firstSquareOperand(t *testing.T, p *fixed.Program, l *Layout) (*executor, *form, []int) {
	t.Helper()
	r, err := p.Ring()
	if err != nil {
		t.Fatal(err)
	}
	x := newExecutor(context.Background(), p, l, nil, r, make([]*fheproto.Vector, l.vectorCount()))
	for _, in := range p.Instrs {
		if in.Op == fixed.OpMul {
			return x, x.forms[in.In[0]], p.Tensors[in.Out].Shape
		}
		if err := x.exec(in, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("no square")
	return nil, nil, nil
}

// TestLoLaLayoutsCutDiagonals: LoLa MNIST's first layer (conv 1→5, 5×5, stride 2, pad 1, on
// 28×28) composed into one map needs a diagonal for every one of its 1024 residues with the
// input and output row-major; with the input in its polyphase layout and the output in the
// chosen strided layout, every tap of a channel is one shift, and the map needs 63.
func TestLoLaLayoutsCutDiagonals(t *testing.T) {
	model := filepath.Join(testenv.RepoRoot(t), "testdata", "lola-mnist", "model.onnx")
	g, err := onnx.Load(model, onnx.Options{Batch: 1})
	if err != nil {
		t.Skipf("testdata/lola-mnist: %v", err)
	}
	opts := passes.DefaultOptions()
	opts.Backend, opts.Bits, opts.Scale = passes.BackendFHE, 55, 4
	p, _, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(p)
	if err != nil {
		t.Fatal(err)
	}
	if l.InPos[0] == nil {
		t.Fatal("the input, read by a stride-2 convolution, is not polyphase")
	}
	seen := map[int32]bool{}
	for _, v := range l.InPos[0] {
		if v < 0 || int(v) >= pow2(len(l.InPos[0])) || seen[v] {
			t.Fatalf("the polyphase layout is not one-to-one into the period: position %d", v)
		}
		seen[v] = true
	}
	rowMajor := *l
	rowMajor.InPos = [][]int32{nil}
	x, f, _ := firstSquareOperand(t, p, &rowMajor)
	before := x.diagCount(f, nil, pow2(f.n))
	x, f, shape := firstSquareOperand(t, p, l)
	pos := x.chooseLayout(f, shape)
	after := x.diagCount(f, pos, pow2(f.n))
	t.Logf("conv map: %d diagonals row-major, %d polyphase in and strided out", before, after)
	if before != 1024 || after != 63 || pos == nil {
		t.Errorf("conv map: %d diagonals row-major (want 1024), %d with the layouts (want 63)", before, after)
	}
}

// TestSquareOutputInLayout: a program whose output is the square of a stride-2 convolution (the
// convolution's output written in a strided layout, the input polyphase) returns the square
// row-major, bitwise equal to the clear run: the change of layout at the output is a linear map
// whose rotations the key plan covers.
func TestSquareOutputInLayout(t *testing.T) {
	g, err := golden.RandomPolyNet(22, false)
	if err != nil {
		t.Fatal(err)
	}
	full := compileFHE(t, g, 22)
	p := full.Clone()
	p.Instrs = nil
	for _, in := range full.Instrs {
		p.Instrs = append(p.Instrs, in)
		if in.Op == fixed.OpMul {
			p.Outputs = []fixed.IO{{Name: "square", Tensor: in.Out, Party: 1}}
			p.Instrs = append(p.Instrs, &fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{in.Out}, Weight: -1, Source: "square"})
			break
		}
	}
	l, err := NewLayout(p)
	if err != nil {
		t.Fatal(err)
	}
	if l.InPos[0] == nil {
		t.Fatal("seed 22's input is not polyphase")
	}
	if x, f, shape := firstSquareOperand(t, p, l); x.chooseLayout(f, shape) == nil {
		t.Fatal("seed 22's convolution output stays row-major: the test would not change layouts")
	}
	r, _ := p.Ring()
	be, _ := cleartext.New(r)
	m, err := vm.New(p, be)
	if err != nil {
		t.Fatal(err)
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
	rng := rand.New(rand.NewPCG(22, 5))
	x, err := r.EncodeTensor(g.Inputs[0].Shape, randInput(g, rng), p.Tensors[p.Inputs[0].Tensor].Scale)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Run(context.Background(), []ring.Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	cts, err := l.EncryptInputs(cl, [][]ring.Tensor{{x}})
	if err != nil {
		t.Fatal(err)
	}
	outs, _, err := Evaluate(context.Background(), p, l, ev, cts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.DecryptOutputs(cl, outs, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0][0], want[0].Value.Data) {
		t.Errorf("encrypted %v, clear %v", got[0][0], want[0].Value.Data)
	}
}

// conv1Diagonals is the number of diagonals of the map to program p's first square (its first
// convolution, composed) with the input in layout in and the output in the layout chooseLayout
// picks for it.
func conv1Diagonals(t *testing.T, p *fixed.Program, l *Layout, in []int32) int {
	t.Helper()
	ll := *l
	ll.InPos, ll.InGather = [][]int32{in}, [][][]int32{nil}
	return conv1DiagonalsIn(t, p, &ll)
}

// conv1DiagonalsIn is conv1Diagonals with the input as layout l has it and the output in the
// layout the executor chooses (chooseLayoutNext).
func conv1DiagonalsIn(t *testing.T, p *fixed.Program, l *Layout) int {
	t.Helper()
	d, _ := squareDiagonals(t, p, l)
	return d[0]
}

// TestChannelMinorCutsDiagonals: when a strided first convolution has many output maps (more
// (map, input channel, tap) triples than half its output's period), the input goes up
// channel-minor, one-to-one mod its period, and the convolution's map needs fewer diagonals
// than with the polyphase input: golden.WidePolyCNN, and LoLa's CIFAR-10 network
// (testdata/lola-cifar, trained on CIFAR-10) where it goes from 16,278 polyphase to 1,600. LoLa
// CIFAR-10's input goes up in its convolution representation instead (three vectors; the time
// model of inputGather prefers it), with 432 diagonals (at most 165 + 165 + 108) and no other
// rotation. The counts are of the committed weights (a weight that rounds to zero at 2^-4 drops
// its diagonal); the distilled model before them gave 1,605, 16,384 and 437.
func TestChannelMinorCutsDiagonals(t *testing.T) {
	type tc struct {
		name      string
		p         *fixed.Program
		maxMinor  int
		minPolyph int
		convRep   int // the diagonals with the input in its convolution representation (0: not used)
	}
	g, err := golden.WidePolyCNN(100)
	if err != nil {
		t.Fatal(err)
	}
	cases := []tc{{"wide-poly-cnn", compileFHE(t, g, 100), 0, 0, 0}}
	model := filepath.Join(testenv.RepoRoot(t), "testdata", "lola-cifar", "model.onnx")
	if g, err := onnx.Load(model, onnx.Options{Batch: 1}); err == nil {
		opts := passes.DefaultOptions()
		opts.Backend, opts.Bits, opts.Scale = passes.BackendFHE, 61, 4
		p, _, err := passes.Compile(g, opts)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, tc{"lola-cifar", p, 1700, 16000, 432})
	} else {
		t.Logf("testdata/lola-cifar: %v (only the small network)", err)
	}
	for _, c := range cases {
		l, err := NewLayout(c.p)
		if err != nil {
			t.Fatal(err)
		}
		var conv *fixed.Instr
		for _, in := range c.p.Instrs {
			if in.Op == fixed.OpConv {
				conv = in
				break
			}
		}
		s := c.p.Tensors[c.p.Inputs[0].Tensor].Shape
		minor, poly := channelMinorLayout(c.p, conv, s), polyphaseLayout(conv, s)
		if c.convRep > 0 {
			if l.InGather[0] == nil || l.Vectors(0) != 3 {
				t.Fatalf("%s: the input is not in its convolution representation in 3 vectors", c.name)
			}
			if d := conv1DiagonalsIn(t, c.p, l); d != c.convRep {
				t.Errorf("%s: %d diagonals with the convolution representation, want %d", c.name, d, c.convRep)
			}
		} else if minor == nil || poly == nil || !slices.Equal(l.InPos[0], minor) {
			t.Fatalf("%s: the input is not laid out channel-minor", c.name)
		}
		P := pow2(len(minor))
		seen := make([]bool, P)
		for _, v := range minor {
			if seen[int(v)%P] {
				t.Fatalf("%s: the channel-minor layout is not one-to-one mod the period %d", c.name, P)
			}
			seen[int(v)%P] = true
		}
		dm, dp := conv1Diagonals(t, c.p, l, minor), conv1Diagonals(t, c.p, l, poly)
		t.Logf("%s: first map %d diagonals channel-minor, %d polyphase", c.name, dm, dp)
		if dm >= dp || c.maxMinor > 0 && (dm > c.maxMinor || dp < c.minPolyph) {
			t.Errorf("%s: %d diagonals channel-minor, %d polyphase", c.name, dm, dp)
		}
	}
}

// squareDiagonals walks program p as Evaluate does, without ciphertexts, and returns the number
// of diagonals of the map written before each square (in the layout the executor chooses), and
// the period of each square's result.
func squareDiagonals(t *testing.T, p *fixed.Program, l *Layout) (diags, periods []int) {
	t.Helper()
	r, err := p.Ring()
	if err != nil {
		t.Fatal(err)
	}
	x := newExecutor(context.Background(), p, l, nil, r, make([]*fheproto.Vector, l.vectorCount()))
	for _, in := range p.Instrs {
		if in.Op == fixed.OpOutput {
			break
		}
		if in.Op != fixed.OpMul {
			if err := x.exec(in, nil, nil); err != nil {
				t.Fatal(err)
			}
			continue
		}
		f, n := x.forms[in.In[0]], p.Tensors[in.Out].Shape.Size()
		pos, ph := x.chooseLayoutNext(f, p.Tensors[in.Out].Shape, nextStride(p, in.Out))
		period := layoutPeriod(n, pos)
		diags = append(diags, x.diagCount(f, pos, period))
		periods = append(periods, period)
		x.forms[in.Out] = x.newVecPeriod(nil, n, pos, period)
		if ph != nil {
			if x.phase == nil {
				x.phase = map[int]phaseInfo{}
			}
			x.phase[len(x.vecs)-1] = *ph
		}
	}
	return diags, periods
}

// TestStridedPairLayouts: with the first convolution's input in its convolution representation,
// its square is written phase-blocked (no extra diagonal) and the second strided convolution's
// output wide, with a period of twice pow2(n): LoLa CIFAR-10's second map 4,096 → 1,930
// diagonals (at most 2·993; the first stays at 432; 1,983 and 437 for the distilled model before
// the trained one), golden.StridedPairPolyCNN 832 → 315.
func TestStridedPairLayouts(t *testing.T) {
	g, err := golden.StridedPairPolyCNN(102)
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name           string
		p              *fixed.Program
		diags, periods []int
	}
	cases := []tc{{"strided-pair-poly-cnn", compileFHE(t, g, 102), nil, []int{2048, 2048}}}
	model := filepath.Join(testenv.RepoRoot(t), "testdata", "lola-cifar", "model.onnx")
	if g, err := onnx.Load(model, onnx.Options{Batch: 1}); err == nil {
		opts := passes.DefaultOptions()
		opts.Backend, opts.Bits, opts.Scale = passes.BackendFHE, 61, 4
		p, _, err := passes.Compile(g, opts)
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, tc{"lola-cifar", p, []int{432, 1930}, []int{16384, 8192}})
	} else {
		t.Logf("testdata/lola-cifar: %v (only the small network)", err)
	}
	for _, c := range cases {
		l, err := NewLayout(c.p)
		if err != nil {
			t.Fatal(err)
		}
		diags, periods := squareDiagonals(t, c.p, l)
		t.Logf("%s: diagonals before each square %v, periods %v", c.name, diags, periods)
		if !slices.Equal(periods, c.periods) || c.diags != nil && !slices.Equal(diags, c.diags) {
			t.Errorf("%s: diagonals %v, periods %v; want %v and %v", c.name, diags, periods, c.diags, c.periods)
		}
	}
}
