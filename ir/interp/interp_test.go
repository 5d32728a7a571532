package interp

import (
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

func reluGraph() *ir.Graph {
	b := newBuilder().input("x", ir.Shape{1, 3}, nil).node(ir.Relu, nil, "y", "x")
	b.outputs("y")
	return b.g
}

func TestInputErrors(t *testing.T) {
	it, err := New(reluGraph())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		inputs map[string]*ir.Tensor
		want   string
	}{
		{"missing", map[string]*ir.Tensor{}, `missing input "x"`},
		{"nil tensor", map[string]*ir.Tensor{"x": nil}, `missing input "x"`},
		{"wrong shape", map[string]*ir.Tensor{"x": {Shape: ir.Shape{3}, Data: make([]float32, 3)}}, `input "x" has shape [3], want [1,3]`},
		{"short data", map[string]*ir.Tensor{"x": {Shape: ir.Shape{1, 3}, Data: make([]float32, 2)}}, `input "x" has 2 elements`},
		{"unknown name", map[string]*ir.Tensor{"x": ir.NewTensor(ir.Shape{1, 3}), "z": ir.NewTensor(ir.Shape{1})}, `"z" is not an input`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := it.Run(c.inputs)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestGraphErrors(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Fatal("nil graph accepted")
	}
	// A shape inference failure names the node.
	g := reluGraph()
	g.Nodes[0].Inputs = []string{"nope"}
	if _, err := New(g); err == nil || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("undefined input: got %v", err)
	}
	// A constant whose data does not fill its shape.
	b := newBuilder().input("x", ir.Shape{2}, nil).constant("c", ir.Shape{2}, []float32{1}).node(ir.Add, nil, "y", "x", "c")
	b.outputs("y")
	if _, err := New(b.g); err == nil || !strings.Contains(err.Error(), `constant "c" has 1 elements`) {
		t.Fatalf("short constant: got %v", err)
	}
	// A value defined twice.
	b = newBuilder().input("x", ir.Shape{2}, nil).node(ir.Relu, nil, "y", "x").node(ir.Relu, nil, "y", "x")
	b.outputs("y")
	if _, err := New(b.g); err == nil || !strings.Contains(err.Error(), `"y" is already defined`) {
		t.Fatalf("redefinition: got %v", err)
	}
	// An output nobody produces.
	g = reluGraph()
	g.Outputs = []string{"q"}
	if _, err := New(g); err == nil || !strings.Contains(err.Error(), `"q"`) {
		t.Fatalf("missing output: got %v", err)
	}
}

// New infers shapes on its own copy: the caller's graph is untouched and stale shapes in
// g.Values do not matter.
func TestNewDoesNotModifyGraph(t *testing.T) {
	g := reluGraph()
	g.Values = map[string]*ir.Value{"y": {Name: "y", Shape: ir.Shape{7, 7}}}
	it, err := New(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Values) != 1 || !g.Values["y"].Shape.Equal(ir.Shape{7, 7}) {
		t.Fatalf("graph values changed: %v", g.Values)
	}
	out, err := it.Run(map[string]*ir.Tensor{"x": {Shape: ir.Shape{1, 3}, Data: []float32{-1, 0, 2}}})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, out["y"], ir.Shape{1, 3}, []float32{0, 0, 2})
	if ins := it.Inputs(); len(ins) != 1 || ins[0].Name != "x" || !ins[0].Shape.Equal(ir.Shape{1, 3}) {
		t.Fatalf("Inputs() = %v", ins)
	}
}

// Buffers are reused between runs; the results handed out are not.
func TestRepeatedRuns(t *testing.T) {
	b := newBuilder().input("x", ir.Shape{2, 2}, nil).
		constant("w", ir.Shape{2, 2}, []float32{1, 2, 3, 4}).
		node(ir.MatMul, nil, "m", "x", "w").
		node(ir.Reshape, ir.Attrs{"shape": ints(4)}, "r", "m").
		node(ir.Relu, nil, "y", "r")
	b.outputs("y", "r", "x", "w")
	it, err := New(b.g)
	if err != nil {
		t.Fatal(err)
	}
	x1 := []float32{1, 0, 0, 1}
	out1, err := it.Run(map[string]*ir.Tensor{"x": {Shape: ir.Shape{2, 2}, Data: x1}})
	if err != nil {
		t.Fatal(err)
	}
	out2, err := it.Run(map[string]*ir.Tensor{"x": {Shape: ir.Shape{2, 2}, Data: []float32{0, -1, 1, 0}}})
	if err != nil {
		t.Fatal(err)
	}
	expect(t, out1["y"], ir.Shape{4}, []float32{1, 2, 3, 4})
	expect(t, out2["y"], ir.Shape{4}, []float32{0, 0, 1, 2})
	expect(t, out2["r"], ir.Shape{4}, []float32{-3, -4, 1, 2})
	// Graph inputs and constants may be outputs too; they come back as copies.
	expect(t, out1["x"], ir.Shape{2, 2}, x1)
	expect(t, out1["w"], ir.Shape{2, 2}, []float32{1, 2, 3, 4})
	out1["x"].Data[0] = 42
	out1["w"].Data[0] = 42
	if x1[0] != 1 || b.g.Consts["w"].Data[0] != 1 {
		t.Fatal("an output aliases the caller's input or a constant")
	}
}

// Every HLIL operator runs: a new operator in ir.AllOps() fails here until it has a kernel and
// an entry in this table.
func TestAllOpsRun(t *testing.T) {
	x := seq(8, -3.5, 1) // [1,2,2,2]
	win := func(extra ir.Attrs) ir.Attrs {
		a := poolAttrs([]int{1, 1}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}, 0)
		for k, v := range extra {
			a[k] = v
		}
		return a
	}
	p2 := ir.Shape{2}
	cases := map[ir.Op]func(b *builder) *builder{
		ir.Conv: func(b *builder) *builder {
			return b.constant("w", ir.Shape{2, 2, 1, 1}, ones(4)).node(ir.Conv, convAttrs(1, []int{1, 1}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}), "y", "x", "w")
		},
		ir.Gemm: func(b *builder) *builder {
			return b.node(ir.Reshape, ir.Attrs{"shape": ints(2, 4)}, "r", "x").constant("w", ir.Shape{4, 1}, ones(4)).
				node(ir.Gemm, gemmAttrs(1, 1, 0, 0), "y", "r", "w")
		},
		ir.MatMul: func(b *builder) *builder {
			return b.constant("w", ir.Shape{2, 1}, ones(2)).node(ir.MatMul, nil, "y", "x", "w")
		},
		ir.Add:       func(b *builder) *builder { return b.node(ir.Add, nil, "y", "x", "x") },
		ir.Sub:       func(b *builder) *builder { return b.node(ir.Sub, nil, "y", "x", "x") },
		ir.Mul:       func(b *builder) *builder { return b.node(ir.Mul, nil, "y", "x", "x") },
		ir.Div:       func(b *builder) *builder { return b.node(ir.Div, nil, "y", "x", "x") },
		ir.Sum:       func(b *builder) *builder { return b.node(ir.Sum, nil, "y", "x", "x", "x") },
		ir.Relu:      func(b *builder) *builder { return b.node(ir.Relu, nil, "y", "x") },
		ir.LeakyRelu: func(b *builder) *builder { return b.node(ir.LeakyRelu, ir.Attrs{"alpha": ir.FloatAttr(0.1)}, "y", "x") },
		ir.Clip: func(b *builder) *builder {
			return b.node(ir.Clip, ir.Attrs{"min": ir.FloatAttr(-1), "max": ir.FloatAttr(1)}, "y", "x")
		},
		ir.Sigmoid: func(b *builder) *builder { return b.node(ir.Sigmoid, nil, "y", "x") },
		ir.MaxPool: func(b *builder) *builder { return b.node(ir.MaxPool, win(nil), "y", "x") },
		ir.AveragePool: func(b *builder) *builder {
			return b.node(ir.AveragePool, win(ir.Attrs{"count_include_pad": ir.IntAttr(0)}), "y", "x")
		},
		ir.GlobalAveragePool: func(b *builder) *builder { return b.node(ir.GlobalAveragePool, nil, "y", "x") },
		ir.GlobalMaxPool:     func(b *builder) *builder { return b.node(ir.GlobalMaxPool, nil, "y", "x") },
		ir.BatchNormalization: func(b *builder) *builder {
			return b.constant("s", p2, ones(2)).constant("b", p2, ones(2)).constant("m", p2, ones(2)).constant("v", p2, ones(2)).
				node(ir.BatchNormalization, ir.Attrs{"epsilon": ir.FloatAttr(1e-5)}, "y", "x", "s", "b", "m", "v")
		},
		ir.LRN: func(b *builder) *builder {
			return b.node(ir.LRN, ir.Attrs{"size": ir.IntAttr(3), "alpha": ir.FloatAttr(1e-4), "beta": ir.FloatAttr(0.75), "bias": ir.FloatAttr(1)}, "y", "x")
		},
		ir.Flatten:   func(b *builder) *builder { return b.node(ir.Flatten, ir.Attrs{"axis": ir.IntAttr(2)}, "y", "x") },
		ir.Reshape:   func(b *builder) *builder { return b.node(ir.Reshape, ir.Attrs{"shape": ints(8)}, "y", "x") },
		ir.Transpose: func(b *builder) *builder { return b.node(ir.Transpose, ir.Attrs{"perm": ints(3, 2, 1, 0)}, "y", "x") },
		ir.Concat:    func(b *builder) *builder { return b.node(ir.Concat, ir.Attrs{"axis": ir.IntAttr(3)}, "y", "x", "x") },
		ir.Pad: func(b *builder) *builder {
			return b.node(ir.Pad, padAttrs("edge", 0, 0, 0, 1, 1, 0, 0, 1, 1), "y", "x")
		},
		ir.Squeeze:   func(b *builder) *builder { return b.node(ir.Squeeze, ir.Attrs{"axes": ints(0)}, "y", "x") },
		ir.Unsqueeze: func(b *builder) *builder { return b.node(ir.Unsqueeze, ir.Attrs{"axes": ints(4)}, "y", "x") },
		ir.Identity:  func(b *builder) *builder { return b.node(ir.Identity, nil, "y", "x") },
		ir.Tanh:      func(b *builder) *builder { return b.node(ir.Tanh, nil, "y", "x") },
		ir.Exp:       func(b *builder) *builder { return b.node(ir.Exp, nil, "y", "x") },
		ir.Softmax:   func(b *builder) *builder { return b.node(ir.Softmax, ir.Attrs{"axis": ir.IntAttr(3)}, "y", "x") },
		ir.ReduceSum: func(b *builder) *builder {
			return b.node(ir.ReduceSum, ir.Attrs{"axes": ints(1, 3), "keepdims": ir.IntAttr(1)}, "y", "x")
		},
		ir.ReduceMean: func(b *builder) *builder {
			return b.node(ir.ReduceMean, ir.Attrs{"axes": ints(2), "keepdims": ir.IntAttr(0)}, "y", "x")
		},
		ir.ReduceMax: func(b *builder) *builder {
			return b.node(ir.ReduceMax, ir.Attrs{"axes": ints(0, 1, 2, 3), "keepdims": ir.IntAttr(0)}, "y", "x")
		},
		ir.Erf: func(b *builder) *builder { return b.node(ir.Erf, nil, "y", "x") },
		ir.LayerNormalization: func(b *builder) *builder {
			return b.constant("s", ir.Shape{2, 2}, ones(4)).constant("b", ir.Shape{2}, ones(2)).
				node(ir.LayerNormalization, ir.Attrs{"axis": ir.IntAttr(2), "epsilon": ir.FloatAttr(1e-5)}, "y", "x", "s", "b")
		},
		ir.Requant: func(b *builder) *builder {
			return b.node(ir.Requant, ir.Attrs{"axis": ir.IntAttr(1), "mult": ints(3, 5), "add": ints(1, 2),
				"shift": ir.IntAttr(2), "min": ir.IntAttr(-2), "max": ir.IntAttr(2)}, "y", "x")
		},
		ir.Slice: func(b *builder) *builder {
			return b.node(ir.Slice, ir.Attrs{"starts": ints(0, 1, 1, 0), "steps": ints(1, 1, -1, 1), "sizes": ints(1, 1, 2, 2)}, "y", "x")
		},
		ir.Gather: func(b *builder) *builder {
			return b.node(ir.Gather, ir.Attrs{"axis": ir.IntAttr(2), "indices": ints(1, 1, 0), "indices_shape": ints(3)}, "y", "x")
		},
		ir.LogSoftmax: func(b *builder) *builder {
			return b.node(ir.LogSoftmax, ir.Attrs{"axis": ir.IntAttr(1)}, "y", "x")
		},
		ir.ArgMax: func(b *builder) *builder {
			return b.node(ir.ArgMax, ir.Attrs{"axis": ir.IntAttr(1), "keepdims": ir.IntAttr(1), "select_last_index": ir.IntAttr(0)}, "y", "x")
		},
	}
	for _, op := range ir.AllOps() {
		mk, ok := cases[op]
		if !ok {
			t.Errorf("%s: no case", op)
			continue
		}
		b := mk(newBuilder().input("x", ir.Shape{1, 2, 2, 2}, x))
		b.outputs("y")
		out, err := Run(b.g, b.feeds)
		if err != nil {
			t.Errorf("%s: %v", op, err)
			continue
		}
		if y := out["y"]; y == nil || len(y.Data) != y.Shape.Size() {
			t.Errorf("%s: bad output %v", op, y)
		}
	}
}

// Values whose lifetimes do not overlap share buffers, and the results stay right.
func TestBufferReuse(t *testing.T) {
	one := ir.Shape{}
	b := newBuilder().input("x", ir.Shape{2, 3}, seq(6, 0, 1)).
		constant("k1", one, []float32{1}).constant("k2", one, []float32{2}).constant("k3", one, []float32{3}).
		node(ir.Add, nil, "a", "x", "k1").
		node(ir.Mul, nil, "b", "a", "k2").
		node(ir.Flatten, ir.Attrs{"axis": ir.IntAttr(1)}, "bv", "b"). // a view keeps b alive
		node(ir.Sub, nil, "c", "a", "k3").
		node(ir.Add, nil, "d", "c", "bv").
		node(ir.Div, nil, "e", "d", "k2")
	b.outputs("e")
	it, err := New(b.g)
	if err != nil {
		t.Fatal(err)
	}
	data := map[string]*float32{}
	for _, st := range it.steps {
		if !isView(st.node.Op) {
			data[st.out.name] = &st.out.data[0]
		}
	}
	// a dies at c's step, so d reuses it; b lives through its view until d, so c must not
	// take b's buffer, nor a's (a is c's input).
	if data["d"] != data["a"] || data["c"] == data["b"] || data["c"] == data["a"] || data["b"] == data["a"] {
		t.Fatalf("unexpected buffer sharing: %v", data)
	}
	out, err := it.Run(b.feeds)
	if err != nil {
		t.Fatal(err)
	}
	// e = ((x+1-3) + (x+1)*2) / 2 = (3x) / 2
	want := make([]float32, 6)
	for i := range want {
		want[i] = 1.5 * float32(i)
	}
	expect(t, out["e"], ir.Shape{2, 3}, want)
}
