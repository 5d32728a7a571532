package tf

import (
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/passes"
)

// TestMathOpsReachLowering checks that TensorFlow's Sigmoid, Tanh, a mid-graph Softmax and
// LogSoftmax (with a Mean after them) import to the HLIL operators that passes.Compile lowers to the fixed-point math functions.
func TestMathOpsReachLowering(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	w := randTensor(r, 4, 6)
	b := graphBytes(
		placeholder("x", 1, 4),
		constT("w", w),
		node("fc", "MatMul", []string{"x", "w"}),
		node("sig", "Sigmoid", []string{"fc"}),
		node("tanh", "Tanh", []string{"sig"}),
		node("softmax", "Softmax", []string{"tanh"}),
		node("logsoftmax", "LogSoftmax", []string{"tanh"}),
		node("mul0", "Mul", []string{"softmax", "tanh"}),
		node("mul", "Add", []string{"mul0", "logsoftmax"}),
		constI("ax1", []int64{1}, 1),
		node("mean", "Mean", []string{"mul", "ax1"}),
	)
	gd, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Import(gd, Options{Outputs: []string{"mean"}})
	if err != nil {
		t.Fatal(err)
	}
	ops := map[ir.Op]int{}
	for _, n := range g.Nodes {
		ops[n.Op]++
	}
	for _, op := range []ir.Op{ir.Sigmoid, ir.Tanh, ir.Softmax, ir.LogSoftmax} { // Mean becomes a linear map (MatMul)
		if ops[op] != 1 {
			t.Errorf("%d %s nodes, want 1 (%v)", ops[op], op, ops)
		}
	}
	opts := passes.DefaultOptions()
	opts.Bits, opts.Scale = 32, 12
	prog, _, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	codes := map[fixed.Opcode]int{}
	for _, in := range prog.Instrs {
		codes[in.Op]++
	}
	for _, op := range []fixed.Opcode{fixed.OpSigmoid, fixed.OpTanh, fixed.OpExp, fixed.OpLog} {
		if codes[op] == 0 {
			t.Errorf("no %s instruction (%v)", op, codes)
		}
	}
}
