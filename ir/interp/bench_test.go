package interp

import (
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

// mnistLike builds an MNIST-sized CNN with random weights: Conv 1->8 5x5 same, Relu, MaxPool
// 2x2, Conv 8->16 5x5 same, Relu, MaxPool 2x2, Flatten, Gemm 784->10.
func mnistLike(rng *rand.Rand) *ir.Graph {
	g := ir.NewGraph("mnist-like")
	g.Inputs = []ir.Value{{Name: "image", DType: ir.Float32, Shape: ir.Shape{1, 1, 28, 28}}}
	add := func(name string, s ir.Shape, scale float32) {
		d := randData(rng, s.Size())
		for i := range d {
			d[i] *= scale
		}
		g.Consts[name] = &ir.Tensor{Shape: s, Data: d}
	}
	add("w1", ir.Shape{8, 1, 5, 5}, 0.2)
	add("b1", ir.Shape{8}, 0.1)
	add("w2", ir.Shape{16, 8, 5, 5}, 0.07)
	add("b2", ir.Shape{16}, 0.1)
	add("w3", ir.Shape{10, 784}, 0.03)
	add("b3", ir.Shape{10}, 0.1)
	same := convAttrs(1, []int{5, 5}, []int{1, 1}, []int{2, 2, 2, 2}, []int{1, 1})
	mp := poolAttrs([]int{2, 2}, []int{2, 2}, []int{0, 0, 0, 0}, []int{1, 1}, 0)
	node := func(op ir.Op, a ir.Attrs, out string, in ...string) {
		g.Nodes = append(g.Nodes, &ir.Node{Name: out, Op: op, Inputs: in, Outputs: []string{out}, Attrs: a})
	}
	node(ir.Conv, same, "c1", "image", "w1", "b1")
	node(ir.Relu, nil, "r1", "c1")
	node(ir.MaxPool, mp, "p1", "r1")
	node(ir.Conv, same, "c2", "p1", "w2", "b2")
	node(ir.Relu, nil, "r2", "c2")
	node(ir.MaxPool, mp, "p2", "r2")
	node(ir.Flatten, ir.Attrs{"axis": ir.IntAttr(1)}, "f", "p2")
	node(ir.Gemm, gemmAttrs(1, 1, 0, 1), "logits", "f", "w3", "b3")
	g.Outputs = []string{"logits"}
	return g
}

// The whole network agrees with the direct references composed by hand.
func TestMNISTLikeMatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	g := mnistLike(rng)
	x := randData(rng, 784)
	out, err := Run(g, map[string]*ir.Tensor{"image": {Shape: ir.Shape{1, 1, 28, 28}, Data: x}})
	if err != nil {
		t.Fatal(err)
	}
	c := g.Consts
	relu := func(v []float32) []float32 {
		for i := range v {
			v[i] = max(v[i], 0)
		}
		return v
	}
	one, two, pads := []int{1, 1}, []int{2, 2}, []int{2, 2, 2, 2}
	h := relu(naiveConv(x, ir.Shape{1, 1, 28, 28}, c["w1"].Data, c["w1"].Shape, c["b1"].Data, 1, one, pads, one, ir.Shape{1, 8, 28, 28}))
	h = naivePool(true, false, h, ir.Shape{1, 8, 28, 28}, two, two, []int{0, 0, 0, 0}, one, ir.Shape{1, 8, 14, 14})
	h = relu(naiveConv(h, ir.Shape{1, 8, 14, 14}, c["w2"].Data, c["w2"].Shape, c["b2"].Data, 1, one, pads, one, ir.Shape{1, 16, 14, 14}))
	h = naivePool(true, false, h, ir.Shape{1, 16, 14, 14}, two, two, []int{0, 0, 0, 0}, one, ir.Shape{1, 16, 7, 7})
	want := make([]float32, 10)
	for j := range want {
		s := float64(c["b3"].Data[j])
		for i, v := range h {
			s += float64(v) * float64(c["w3"].Data[j*784+i])
		}
		want[j] = float32(s)
	}
	expect(t, out["logits"], ir.Shape{1, 10}, want)
}

// BenchmarkMNISTLike measures one image through the prepared interpreter.
func BenchmarkMNISTLike(b *testing.B) {
	rng := rand.New(rand.NewPCG(15, 16))
	it, err := New(mnistLike(rng))
	if err != nil {
		b.Fatal(err)
	}
	in := map[string]*ir.Tensor{"image": {Shape: ir.Shape{1, 1, 28, 28}, Data: randData(rng, 784)}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := it.Run(in); err != nil {
			b.Fatal(err)
		}
	}
}
