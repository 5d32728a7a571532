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

func compileFHEBlocks(t *testing.T, g *ir.Graph, seed uint64, mode fixed.BlockMode) *fixed.Program {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 9))
	var samples []dataset.Sample
	for i := range 6 {
		samples = append(samples, dataset.Sample{Name: fmt.Sprint(i), Input: randInput(g, rng), Label: -1})
	}
	opts := passes.DefaultOptions()
	opts.Backend, opts.Samples, opts.Scales, opts.FHEBlocks = passes.BackendFHE, samples, []int{2, 3}, mode
	p, _, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runEncrypted evaluates p on one ciphertext of random inputs (every lane its own, every third
// far outside the validated range), checks every output bitwise against the cleartext run over
// Z_n, and returns the operations and the per-instruction account.
func runEncrypted(t *testing.T, g *ir.Graph, p *fixed.Program, seed uint64) (Ops, []LayerTime, *Layout) {
	t.Helper()
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
	rng := rand.New(rand.NewPCG(seed, 78))
	var batch [][]ring.Tensor
	for k := range l.Lanes {
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
	cts, err := l.EncryptInputs(cl, batch)
	if err != nil {
		t.Fatal(err)
	}
	outs, times, err := Evaluate(context.Background(), p, l, ev, cts)
	if err != nil {
		t.Fatalf("%s: %v", g.Name, err)
	}
	got, err := l.DecryptOutputs(cl, outs, len(batch))
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
				t.Errorf("%s lane %d output %d: encrypted %v, clear %v", g.Name, k, o, got[k][o], want[o].Value.Data)
			}
		}
	}
	return ev.Stats, times, l
}

// opsOf returns the operations of the instructions with the given opcode, in order.
func opsOf(times []LayerTime, op fixed.Opcode) []Ops {
	var out []Ops
	for _, lt := range times {
		if lt.Op == op {
			out = append(out, lt.Ops)
		}
	}
	return out
}

// TestBlockCirculantEqualsClear compiles golden.BlockCirculantPolyNet (a convolution, x², a
// block-circulant dense layer with a zero block, a block at the largest magnitude and, for
// hidden not a multiple of k, a cut-short row block, x², a dense layer) for the fhe mode with the
// frequency domain forced, checks the recorded block size and the two extra levels, and that
// the encrypted run of a full ciphertext of inputs in and far outside the validated range is
// bitwise the clear run.
func TestBlockCirculantEqualsClear(t *testing.T) {
	type tc struct {
		seed      uint64
		k, hidden int
	}
	cases := []tc{{1, 8, 24}, {2, 4, 21}, {3, 16, 32}}
	if testing.Short() {
		cases = cases[:2]
	}
	for _, c := range cases {
		g, err := golden.BlockCirculantPolyNet(c.seed, c.k, c.hidden)
		if err != nil {
			t.Fatal(err)
		}
		p := compileFHEBlocks(t, g, c.seed, fixed.BlockSpectral)
		var mm []*fixed.Instr
		for _, in := range p.Instrs {
			if in.Op == fixed.OpMatMul {
				mm = append(mm, in)
			}
		}
		if len(mm) != 2 || mm[0].Block != c.k || mm[1].Block != 0 || !p.FrequencyDomain(mm[0]) {
			t.Fatalf("seed %d: matmul block sizes %v (frequency domain %v), want %d then 0", c.seed, blocks(mm), p.FrequencyDomain(mm[0]), c.k)
		}
		// conv, x², transform, eigenvalues, inverse, x², last map: 7 (5 with the dense method).
		if p.FHE.Depth != 7 {
			t.Errorf("seed %d: depth %d, want 7", c.seed, p.FHE.Depth)
		}
		ops, _, l := runEncrypted(t, g, p, c.seed)
		t.Logf("seed %d k %d: %s, %d lanes, keys %v: %+v", c.seed, c.k, p.FHE, l.Lanes, l.Rotations, ops)
	}
}

// TestBlockCirculantSquareLayer: a 256×256 block-circulant layer (k = 8) is put in the
// frequency domain by the compiler's rule and needs fewer rotations and products there than by
// the dense method on the same weights, with the products of docs/fhe.md: 2k − 1 per transform
// and 256/k = 32 for the eigenvalues (the diagonals k·(J − I) − 2(k − 1) mod 256), against 256
// dense diagonals; both runs bitwise equal to the clear run.
func TestBlockCirculantSquareLayer(t *testing.T) {
	if testing.Short() {
		t.Skip("two encrypted runs of a 256-wide layer (about a minute)")
	}
	const n, k = 256, 8
	g, err := golden.BlockCirculantPolyMLP(7, n, k)
	if err != nil {
		t.Fatal(err)
	}
	auto := compileFHEBlocks(t, g, 7, fixed.BlockAuto)
	dense := compileFHEBlocks(t, g, 7, fixed.BlockDense)
	var fm *fixed.Instr
	for _, in := range auto.Instrs {
		if in.Op == fixed.OpMatMul && in.Block != 0 {
			fm = in
		}
	}
	if fm == nil || fm.Block != k || !auto.FrequencyDomain(fm) {
		t.Fatalf("the compiler did not put the %d×%d layer in the frequency domain", n, n)
	}
	if auto.FHE.Depth != dense.FHE.Depth+2 {
		t.Errorf("depths %d (frequency) and %d (dense): want two more levels", auto.FHE.Depth, dense.FHE.Depth)
	}
	sOps, sTimes, _ := runEncrypted(t, g, auto, 7)
	dOps, dTimes, _ := runEncrypted(t, g, dense, 7)
	// The frequency domain: the matmul instruction applies the transform and the eigenvalues,
	// the square applies the inverse transform.
	sm, sq := opsOf(sTimes, fixed.OpMatMul)[0], opsOf(sTimes, fixed.OpMul)[0]
	if want := (2*k - 1) + n/k; sm.PlainMuls != want {
		t.Errorf("transform and eigenvalues: %d plaintext products, want %d", sm.PlainMuls, want)
	}
	if sq.PlainMuls != 2*k-1 {
		t.Errorf("inverse transform: %d plaintext products, want %d", sq.PlainMuls, 2*k-1)
	}
	if dq := opsOf(dTimes, fixed.OpMul)[0]; dq.PlainMuls != n {
		t.Errorf("dense map: %d plaintext products, want %d", dq.PlainMuls, n)
	}
	layer := func(o ...Ops) (r, pm int) {
		for _, x := range o {
			r, pm = r+x.Rotations, pm+x.PlainMuls
		}
		return
	}
	sr, sp := layer(sm, sq)
	dr, dp := layer(opsOf(dTimes, fixed.OpMul)[0])
	if sr >= dr || sp >= dp {
		t.Errorf("the %d×%d layer: %d rotations and %d products in the frequency domain, %d and %d dense", n, n, sr, sp, dr, dp)
	}
	t.Logf("%d×%d block-circulant layer, k = %d: frequency domain %d rotations, %d products (whole network %+v); dense %d rotations, %d products (whole network %+v)", n, n, k, sr, sp, sOps, dr, dp, dOps)
}

func blocks(mm []*fixed.Instr) []int {
	var out []int
	for _, in := range mm {
		out = append(out, in.Block)
	}
	return out
}
