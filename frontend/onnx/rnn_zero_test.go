package onnx

import (
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
)

// An explicit all-zero constant initial state (PyTorch's exporter always writes one) imports as
// the absent state: the same graph as without it, so no forget (LSTM) or reset (GRU) gate at the
// first step; a non-zero constant state keeps them, and the float results of all three agree with
// what the states say.
func TestRecurrentZeroInitialState(t *testing.T) {
	const seq, in, hid = 3, 2, 4
	for _, c := range []struct {
		op     string
		gates  int
		states int // initial_h (and initial_c)
	}{{"LSTM", 4, 2}, {"GRU", 3, 1}} {
		t.Run(c.op, func(t *testing.T) {
			model := func(state []float32) *ir.Graph {
				ins := []string{"x", "W", "R", "B"}
				inits := []pb{
					tensorF("W", []int64{1, int64(c.gates * hid), in}, floats(c.gates*hid*in, 1)),
					tensorF("R", []int64{1, int64(c.gates * hid), hid}, floats(c.gates*hid*hid, 2)),
					tensorF("B", []int64{1, int64(2 * c.gates * hid)}, floats(2*c.gates*hid, 3)),
				}
				if state != nil {
					ins = append(ins, "", "h0", "c0")[:4+1+c.states]
					inits = append(inits, tensorF("h0", []int64{1, 1, hid}, state), tensorF("c0", []int64{1, 1, hid}, state))
				}
				return mustImport(t, modelBytes(14, graphSpec{
					nodes:   []pb{node(c.op, "rnn", ins, []string{"", "y"}, aInt("hidden_size", hid))},
					inits:   inits,
					inputs:  []pb{valueInfo("x", Float, seq, 1, in)},
					outputs: []pb{valueInfo("y", Float)},
				}), Options{})
			}
			run := func(g *ir.Graph) []float32 {
				out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{seq, 1, in}, Data: floats(seq*in, 4)}})
				if err != nil {
					t.Fatal(err)
				}
				return out[g.Outputs[0]].Data
			}
			sigmoids := func(g *ir.Graph) int {
				n := 0
				for _, nd := range g.Nodes {
					if nd.Op == ir.Sigmoid {
						n++
					}
				}
				return n
			}
			none, zero := model(nil), model(make([]float32, hid))
			if len(zero.Nodes) != len(none.Nodes) || sigmoids(zero) != sigmoids(none) {
				t.Errorf("zero state: %d nodes (%d sigmoids), absent state: %d (%d)", len(zero.Nodes), sigmoids(zero), len(none.Nodes), sigmoids(none))
			}
			if a, b := run(none), run(zero); !slices.Equal(a, b) {
				t.Errorf("zero state %v, absent state %v", b, a)
			}
			ones := model([]float32{0.5, -0.5, 0.25, 1})
			if sigmoids(ones) != sigmoids(none)+1 {
				t.Errorf("non-zero state: %d sigmoids, absent state %d; want one gate more", sigmoids(ones), sigmoids(none))
			}
			if a, b := run(none), run(ones); slices.Equal(a, b) {
				t.Errorf("a non-zero initial state changed nothing: %v", a)
			}
		})
	}
}
