package golden

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
)

// roundTrip encodes g as ONNX, decodes and imports it, and checks that the float interpreter gives
// identical outputs for both graphs on a random input.
func roundTrip(t *testing.T, g *ir.Graph) {
	t.Helper()
	b, err := EncodeONNX(g)
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnx.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	h, err := onnx.Import(m, onnx.Options{Batch: g.Inputs[0].Shape[0]})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Inputs[0].Shape, g.Inputs[0].Shape) || len(h.Outputs) != len(g.Outputs) {
		t.Fatalf("imported graph has input %v and %d outputs", h.Inputs[0].Shape, len(h.Outputs))
	}
	rng := rand.New(rand.NewPCG(1, 1))
	x := ir.NewTensor(g.Inputs[0].Shape)
	for i := range x.Data {
		x.Data[i] = float32(2*rng.Float64() - 1)
	}
	want, err := interp.Run(g, map[string]*ir.Tensor{g.Inputs[0].Name: x})
	if err != nil {
		t.Fatal(err)
	}
	got, err := interp.Run(h, map[string]*ir.Tensor{h.Inputs[0].Name: x})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range g.Outputs {
		if !slices.Equal(got[h.Outputs[i]].Data, want[o].Data) {
			t.Fatalf("output %d differs after the ONNX round trip", i)
		}
	}
}

func TestMiniONNShape(t *testing.T) {
	g, err := MiniONN(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	var convs, relus, avgs, gemms int
	for _, n := range g.Nodes {
		switch n.Op {
		case ir.Conv:
			convs++
		case ir.Relu:
			relus++
		case ir.AveragePool:
			avgs++
		case ir.Gemm:
			gemms++
		}
	}
	if convs != 7 || relus != 7 || avgs != 2 || gemms != 1 {
		t.Fatalf("%d conv, %d relu, %d avgpool, %d gemm; want 7, 7, 2, 1", convs, relus, avgs, gemms)
	}
	if s, _ := g.ShapeOf(g.Outputs[0]); !slices.Equal(s, ir.Shape{1, 10}) {
		t.Fatalf("output shape %v", s)
	}
	// Deterministic in the seed.
	h, _ := MiniONN(1, 1)
	for name, c := range g.Consts {
		if !slices.Equal(c.Data, h.Consts[name].Data) {
			t.Fatalf("constant %s differs between two builds with the same seed", name)
		}
	}
	roundTrip(t, g)
}

func TestRandomCNNsRoundTrip(t *testing.T) {
	for seed := uint64(1); seed <= 24; seed++ {
		g, err := RandomCNN(seed)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		roundTrip(t, g)
	}
}

func TestEncodeONNXRejects(t *testing.T) {
	g := ir.NewGraph("x")
	g.Inputs = []ir.Value{{Name: "input", DType: ir.Float32, Shape: ir.Shape{1, 4}}}
	g.Nodes = []*ir.Node{{Name: "s", Op: ir.Sigmoid, Inputs: []string{"input"}, Outputs: []string{"y"}, Attrs: ir.Attrs{}}}
	g.Outputs = []string{"y"}
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	if _, err := EncodeONNX(g); err == nil {
		t.Fatal("Sigmoid encoded")
	}
	if _, err := MiniONN(1, 0); err == nil {
		t.Fatal("batch 0 accepted")
	}
}
