package golden

import (
	"fmt"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/passes"
)

// AttentionBlock returns a two-head self-attention block on 5 tokens of 8 features: input [5, 8];
// Q, K, V fully connected to 8, split into 2 heads of 4 (Reshape, Transpose); scores Q·Kᵀ
// ([2,5,4]·[2,4,5], both operands runtime tensors) scaled by 1/2; Softmax over the keys;
// softmax(…)·V ([2,5,5]·[2,5,4]); heads merged and projected to 8; a 2-D product of two
// runtime tensors (the output times its transpose, [5,8]·[8,5]) as the second output.
func AttentionBlock(seed uint64) (*ir.Graph, error) {
	b := newBuilder(fmt.Sprintf("attention-%d", seed), seed, ir.Shape{5, 8})
	heads := func(x string, perm []int) string {
		r := b.node(ir.Reshape, ir.Attrs{"shape": ir.IntsAttr([]int{5, 2, 4})}, x)
		return b.node(ir.Transpose, ir.Attrs{"perm": ir.IntsAttr(perm)}, r)
	}
	q := heads(b.gemm("input", 8), []int{1, 0, 2}) // [2,5,4]
	k := heads(b.gemm("input", 8), []int{1, 2, 0}) // [2,4,5]
	v := heads(b.gemm("input", 8), []int{1, 0, 2}) // [2,5,4]
	s := b.node(ir.Mul, nil, b.node(ir.MatMul, nil, q, k), b.scalar("scale", 0.5))
	a := b.node(ir.Softmax, ir.Attrs{"axis": ir.IntAttr(2)}, s)
	o := b.node(ir.Transpose, ir.Attrs{"perm": ir.IntsAttr([]int{1, 0, 2})}, b.node(ir.MatMul, nil, a, v))
	y := b.gemm(b.node(ir.Reshape, ir.Attrs{"shape": ir.IntsAttr([]int{5, 8})}, o), 8)
	yt := b.node(ir.Transpose, ir.Attrs{"perm": ir.IntsAttr([]int{1, 0})}, y)
	return b.done(y, b.node(ir.MatMul, nil, y, yt))
}

// TestAttentionSecure runs the attention block securely (SCI_OT and SCI_HE, IKNP and Ferret; the
// products of two shared matrices by OT in every mode) and on the three-party backend, and
// requires the revealed outputs to equal the cleartext run bit for bit; the cleartext run must
// follow the float interpreter.
func TestAttentionSecure(t *testing.T) {
	g, err := AttentionBlock(8)
	if err != nil {
		t.Fatal(err)
	}
	samples := randomSamples(g, 29, 2, 2)
	checkMathModel(t, g, 40, 12, map[fixed.Opcode]int{fixed.OpBatchMatMul: 3, fixed.OpExp: 1, fixed.OpRecip: 1},
		samples, 0.05, true)
	opts := passes.DefaultOptions()
	opts.Bits, opts.Scale, opts.KeepSoftmax = 40, 12, true
	prog, _ := compileOpts(t, g, opts)
	inputs := encodeInputs(t, prog.server, inputsOf(samples))
	clear := runClear(t, prog.server, inputs)
	sec, helper := runSci3(t, prog, inputs, 1, false)
	compareRuns(t, clear, sec)
	logSci3(t, "attention", sec, helper, len(inputs))
}
