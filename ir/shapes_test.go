package ir

import (
	"strings"
	"testing"
)

func convGraph(pads []int, group int, wshape Shape) *Graph {
	g := NewGraph("t")
	g.Inputs = []Value{{Name: "x", DType: Float32, Shape: Shape{1, 4, 8, 8}}}
	g.Consts["w"] = NewTensor(wshape)
	g.Nodes = []*Node{{Name: "c", Op: Conv, Inputs: []string{"x", "w"}, Outputs: []string{"y"}, Attrs: Attrs{
		"group": IntAttr(group), "kernel_shape": IntsAttr([]int{3, 3}), "strides": IntsAttr([]int{2, 2}),
		"pads": IntsAttr(pads), "dilations": IntsAttr([]int{1, 1}),
	}}, {Op: Relu, Inputs: []string{"y"}, Outputs: []string{"z"}}}
	g.Outputs = []string{"z"}
	return g
}

func TestInferConv(t *testing.T) {
	g := convGraph([]int{1, 1, 1, 1}, 2, Shape{6, 2, 3, 3})
	if err := g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	if s := g.Values["z"].Shape; !s.Equal(Shape{1, 6, 4, 4}) {
		t.Fatalf("got %v", s)
	}
	g = convGraph([]int{1, 1, 1, 1}, 2, Shape{6, 4, 3, 3})
	err := g.InferShapes()
	if err == nil || !strings.Contains(err.Error(), `Conv node "c"`) {
		t.Fatalf("want error naming the node, got %v", err)
	}
}

func TestPoolOutSize(t *testing.T) {
	for _, c := range []struct {
		in, k, s, pb, pe int
		ceil             bool
		want             int
	}{
		{4, 3, 2, 0, 0, true, 2},    // ONNX averagepool_2d_ceil
		{4, 3, 2, 0, 0, false, 1},   // floor mode
		{5, 2, 2, 0, 0, true, 3},    // last window partly outside
		{6, 3, 3, 0, 1, true, 2},    // the last window would start in the trailing pad: dropped
		{32, 3, 1, 1, 1, false, 32}, // same padding
	} {
		w := Window{Kernel: []int{c.k}, Strides: []int{c.s}, Pads: []int{c.pb, c.pe}, Dilations: []int{1}, CeilMode: c.ceil}
		got, err := w.OutSize(0, c.in)
		if err != nil || got != c.want {
			t.Errorf("%+v: got %d, %v; want %d", c, got, err, c.want)
		}
	}
}

func TestBroadcastAndMatMul(t *testing.T) {
	s, err := Broadcast(Shape{2, 1, 3}, Shape{4, 1}, Shape{})
	if err != nil || !s.Equal(Shape{2, 4, 3}) {
		t.Fatalf("broadcast: %v %v", s, err)
	}
	if _, err := Broadcast(Shape{2, 3}, Shape{4}); err == nil {
		t.Fatal("want incompatible")
	}
	for _, c := range []struct{ a, b, want Shape }{
		{Shape{3}, Shape{3}, Shape{}},
		{Shape{2, 3}, Shape{3}, Shape{2}},
		{Shape{3}, Shape{3, 4}, Shape{4}},
		{Shape{5, 1, 2, 3}, Shape{4, 3, 6}, Shape{5, 4, 2, 6}},
	} {
		got, err := MatMulShape(c.a, c.b)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("%v x %v: got %v %v want %v", c.a, c.b, got, err, c.want)
		}
	}
}

func TestInferErrors(t *testing.T) {
	g := NewGraph("t")
	g.Inputs = []Value{{Name: "x", Shape: Shape{1, 10}}}
	g.Nodes = []*Node{{Op: Reshape, Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: Attrs{"shape": IntsAttr([]int{3, 3})}}}
	g.Outputs = []string{"y"}
	if err := g.InferShapes(); err == nil || !strings.Contains(err.Error(), "cannot reshape") {
		t.Fatalf("got %v", err)
	}
	g.Nodes[0] = &Node{Op: Transpose, Inputs: []string{"q"}, Outputs: []string{"y"}, Attrs: Attrs{"perm": IntsAttr([]int{1, 0})}}
	if err := g.InferShapes(); err == nil || !strings.Contains(err.Error(), "not defined") {
		t.Fatalf("got %v", err)
	}
}
