package sci_test

import (
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// testProg builds the small fixed-point programs of the backend tests: party 1's input x, random
// weights in [−100, 100), and instructions whose output tensors are inferred.
type testProg struct {
	t   testing.TB
	rng *rand.Rand
	p   *fixed.Program
	x   int // the input tensor
}

// newTestProg starts a program in Z_2^bits at the given scale with party 1's input of shape in.
func newTestProg(t testing.TB, rng *rand.Rand, bits, scale int, in ir.Shape) *testProg {
	t.Helper()
	p := &fixed.Program{Bits: bits, Scale: scale}
	x := p.AddTensor("x", in, scale)
	p.Inputs = append(p.Inputs, fixed.IO{Name: "x", Tensor: x, Party: 1})
	p.Instrs = append(p.Instrs, &fixed.Instr{Op: fixed.OpInput, Out: x, Weight: -1, Index: 0})
	return &testProg{t: t, rng: rng, p: p, x: x}
}

// ints returns n random weights.
func (b *testProg) ints(n int) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = b.rng.Int64N(200) - 100
	}
	return v
}

// add appends in with a new output tensor of the inferred shape and scale, and returns it.
func (b *testProg) add(in *fixed.Instr) int {
	b.t.Helper()
	shape, scale, err := b.p.InferInstr(in)
	if err != nil {
		b.t.Fatal(err)
	}
	in.Out = b.p.AddTensor("t", shape, scale)
	b.p.Instrs = append(b.p.Instrs, in)
	return in.Out
}
