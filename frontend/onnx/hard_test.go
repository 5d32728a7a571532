package onnx

import (
	"math"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
)

// TestHardSigmoidHardSwish checks the lowering against the ONNX definitions on values around
// the kinks (-3, 3 for HardSwish; -beta/alpha, (1-beta)/alpha for HardSigmoid) and random ones.
func TestHardSigmoidHardSwish(t *testing.T) {
	x := []float32{-5, -3, -2.5, -1, -0.5, 0, 0.5, 1, 2.5, 3, 4, 7}
	x = append(x, floats(12, 7)...)
	for i := range x[12:] {
		x[12+i] *= 6
	}
	b := modelBytes(14, graphSpec{
		nodes: []pb{
			node("HardSigmoid", "hs_default", []string{"x"}, []string{"hs"}),
			node("HardSigmoid", "hs_custom", []string{"x"}, []string{"hs2"}, aFloat("alpha", 0.5), aFloat("beta", 0.6)),
			node("HardSwish", "hsw", []string{"x"}, []string{"hsw"}),
		},
		inputs:  []pb{valueInfo("x", Float, 2, 12)},
		outputs: []pb{valueInfo("hs", Float), valueInfo("hs2", Float), valueInfo("hsw", Float)},
	})
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Import(m, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range g.Nodes {
		switch n.Op {
		case ir.Mul, ir.Add, ir.Clip:
		default:
			t.Errorf("unexpected HLIL op %s", n.Op)
		}
	}
	out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{2, 12}, Data: x}})
	if err != nil {
		t.Fatal(err)
	}
	hs := func(v, a, b float64) float64 { return math.Max(0, math.Min(1, a*v+b)) }
	for i, v := range x {
		xv := float64(v)
		for _, c := range []struct {
			name string
			want float64
		}{
			{"hs", hs(xv, 0.2, 0.5)},
			{"hs2", hs(xv, 0.5, 0.6)},
			{"hsw", xv * hs(xv, 1.0/6, 0.5)},
		} {
			if got := float64(out[c.name].Data[i]); math.Abs(got-c.want) > 1e-6*(1+math.Abs(c.want)) {
				t.Errorf("%s(%g) = %g, want %g", c.name, v, got, c.want)
			}
		}
	}
}
