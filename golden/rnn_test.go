package golden

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// rnnClassifierONNX encodes a small recurrent sequence classifier as an ONNX model (opset 14):
// input [seq, 1, in]; op (LSTM or GRU) with hidden size hid in the given direction; Y_h
// reshaped to [1, ndir·hid]; fully connected (MatMul, Add) to classes logits. Weights are random
// from seed, of magnitude about 1/sqrt(fan-in).
func rnnClassifierONNX(op, direction string, seed uint64, seq, in, hid, classes int) ([]byte, error) {
	rng := rand.New(rand.NewPCG(seed, 0x1257))
	rnd := func(n int, a float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(a * (2*rng.Float64() - 1))
		}
		return v
	}
	gates := map[string]int{"LSTM": 4, "GRU": 3}[op]
	ndir := 1
	if direction == "bidirectional" {
		ndir = 2
	}
	var gr pb
	init := func(name string, shape ir.Shape, data []float32) {
		gr = gr.bytes(graphInitializer, tensorFloat(name, shape, data))
	}
	init("W", ir.Shape{ndir, gates * hid, in}, rnd(ndir*gates*hid*in, 0.8))
	init("R", ir.Shape{ndir, gates * hid, hid}, rnd(ndir*gates*hid*hid, 0.6))
	init("B", ir.Shape{ndir, 2 * gates * hid}, rnd(ndir*2*gates*hid, 0.3))
	init("fc_w", ir.Shape{ndir * hid, classes}, rnd(ndir*hid*classes, 0.7))
	init("fc_b", ir.Shape{classes}, rnd(classes, 0.1))
	gr = gr.bytes(graphInitializer, tensorInt64("flat", []int64{1, int64(ndir * hid)}))
	node := func(opType string, ins, outs []string, attrs ...pb) {
		n := pb(nil)
		for _, s := range ins {
			n = n.str(nodeInput, s)
		}
		for _, s := range outs {
			n = n.str(nodeOutput, s)
		}
		n = n.str(nodeName, opType+"_"+outs[len(outs)-1]).str(nodeOpType, opType)
		for _, a := range attrs {
			n = n.bytes(nodeAttribute, a)
		}
		gr = gr.bytes(graphNode, n)
	}
	hs, err := attribute("hidden_size", ir.IntAttr(hid))
	if err != nil {
		return nil, err
	}
	dir, err := attribute("direction", ir.StringAttr(direction))
	if err != nil {
		return nil, err
	}
	node(op, []string{"input", "W", "R", "B"}, []string{"", "y_h"}, hs, dir)
	node("Reshape", []string{"y_h", "flat"}, []string{"h"})
	node("MatMul", []string{"h", "fc_w"}, []string{"fc"})
	node("Add", []string{"fc", "fc_b"}, []string{"logits"})
	gr = gr.str(graphName, fmt.Sprintf("%s-%s-classifier-%d", op, direction, seed))
	vi, err := valueInfo("input", ir.Float32, ir.Shape{seq, 1, in})
	if err != nil {
		return nil, err
	}
	gr = gr.bytes(graphInput, vi)
	vo, err := valueInfo("logits", ir.Float32, ir.Shape{1, classes})
	if err != nil {
		return nil, err
	}
	gr = gr.bytes(graphOutput, vo)
	m := pb(nil).varint(modelIRVersion, 7).str(modelProducer, "cryptflow-golden")
	m = m.bytes(modelGraph, gr)
	m = m.bytes(modelOpset, pb(nil).str(opsetDomain, "").varint(opsetVersion, 14))
	return m, nil
}

func rnnClassifier(t *testing.T, op, direction string, seed uint64) *ir.Graph {
	t.Helper()
	b, err := rnnClassifierONNX(op, direction, seed, 4, 3, 5, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnx.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	g, err := onnx.Import(m, onnx.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestLSTMClassifierSecure imports a small LSTM sequence classifier (4 steps of 3 features,
// hidden size 5, 3 classes) from ONNX, where the LSTM is unrolled into Conv/MatMul/Sigmoid/Tanh/
// Mul, and requires every secure configuration to reveal exactly the cleartext logits.
func TestLSTMClassifierSecure(t *testing.T) {
	g := rnnClassifier(t, "LSTM", "forward", 1)
	// Per step: sigmoid for i, f, o (no f at the first step, whose cell state is zero); tanh for
	// the candidate and for the cell state.
	checkMathModel(t, g, 32, 12, map[fixed.Opcode]int{fixed.OpSigmoid: 11, fixed.OpTanh: 8},
		randomSamples(g, 5, 3, 2), 0.02, false)
}

// TestGRUBidirectionalSecure does the same for a bidirectional GRU classifier.
func TestGRUBidirectionalSecure(t *testing.T) {
	g := rnnClassifier(t, "GRU", "bidirectional", 2)
	// Per step and direction: sigmoid for z and r (no r at the first step, whose state is zero),
	// tanh for the candidate.
	checkMathModel(t, g, 32, 12, map[fixed.Opcode]int{fixed.OpSigmoid: 14, fixed.OpTanh: 8},
		randomSamples(g, 6, 3, 2), 0.02, false)
}
