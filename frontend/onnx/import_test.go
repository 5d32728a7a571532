package onnx

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/ir/irtext"
)

// convNetModel builds Conv(SAME_UPPER) -> Relu -> MaxPool -> Flatten -> Gemm over an input
// [N,1,6,6] whose batch dimension is symbolic.
func convNetModel(opset int64) pb {
	return modelBytes(opset, graphSpec{
		nodes: []pb{
			node("Conv", "conv1", []string{"x", "w1", "b1"}, []string{"c1"}, aString("auto_pad", "SAME_UPPER"), aInts("kernel_shape", 3, 3)),
			node("Relu", "relu1", []string{"c1"}, []string{"r1"}),
			node("MaxPool", "pool1", []string{"r1"}, []string{"p1"}, aInts("kernel_shape", 2, 2), aInts("strides", 2, 2)),
			node("Flatten", "flat", []string{"p1"}, []string{"f1"}),
			node("Gemm", "fc", []string{"f1", "w2", "b2"}, []string{"y"}, aInt("transB", 1)),
		},
		inits: []pb{
			tensorF("w1", []int64{2, 1, 3, 3}, floats(18, 1)),
			tensorFTyped("b1", []int64{2}, []float32{0.1, -0.2}),
			tensorF("w2", []int64{4, 18}, floats(72, 2)),
			tensorF("b2", []int64{4}, floats(4, 3)),
		},
		inputs:  []pb{valueInfo("x", Float, "N", 1, 6, 6)},
		outputs: []pb{valueInfo("y", Float, "N", 4)},
	})
}

// convNetReference computes the same network directly, for one image of 36 pixels.
func convNetReference(x []float32) []float32 {
	w1, b1 := floats(18, 1), []float32{0.1, -0.2}
	w2, b2 := floats(72, 2), floats(4, 3)
	var c [2][6][6]float32
	for o := 0; o < 2; o++ {
		for i := 0; i < 6; i++ {
			for j := 0; j < 6; j++ {
				s := b1[o]
				for ki := 0; ki < 3; ki++ {
					for kj := 0; kj < 3; kj++ {
						// SAME_UPPER with a 3x3 kernel pads one pixel on each side.
						ii, jj := i+ki-1, j+kj-1
						if ii >= 0 && ii < 6 && jj >= 0 && jj < 6 {
							s += w1[o*9+ki*3+kj] * x[ii*6+jj]
						}
					}
				}
				c[o][i][j] = max(s, 0)
			}
		}
	}
	flat := make([]float32, 0, 18)
	for o := 0; o < 2; o++ {
		for i := 0; i < 3; i++ {
			for j := 0; j < 3; j++ {
				m := float32(math.Inf(-1))
				for di := 0; di < 2; di++ {
					for dj := 0; dj < 2; dj++ {
						m = max(m, c[o][2*i+di][2*j+dj])
					}
				}
				flat = append(flat, m)
			}
		}
	}
	y := make([]float32, 4)
	for o := range y {
		s := b2[o]
		for k, v := range flat {
			s += w2[o*18+k] * v
		}
		y[o] = s
	}
	return y
}

func mustImport(t *testing.T, b pb, opts Options) *ir.Graph {
	t.Helper()
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Import(m, opts)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func importErr(t *testing.T, b pb) error {
	t.Helper()
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Import(m, Options{})
	if err == nil {
		t.Fatal("import succeeded")
	}
	return err
}

func TestImportConvNet(t *testing.T) {
	for _, opset := range []int64{7, 11, 13, 22} {
		g := mustImport(t, convNetModel(opset), Options{Batch: 3})
		if len(g.Inputs) != 1 || !g.Inputs[0].Shape.Equal(ir.Shape{3, 1, 6, 6}) {
			t.Fatalf("opset %d: inputs %+v", opset, g.Inputs)
		}
		ops := []ir.Op{}
		for _, n := range g.Nodes {
			ops = append(ops, n.Op)
		}
		if !reflect.DeepEqual(ops, []ir.Op{ir.Conv, ir.Relu, ir.MaxPool, ir.Flatten, ir.Gemm}) {
			t.Fatalf("opset %d: ops %v", opset, ops)
		}
		conv := g.Nodes[0].Attrs
		if p, _ := conv.Ints("pads"); !reflect.DeepEqual(p, []int{1, 1, 1, 1}) {
			t.Errorf("conv pads %v", p)
		}
		if s, _ := conv.Ints("strides"); !reflect.DeepEqual(s, []int{1, 1}) {
			t.Errorf("conv strides %v", s)
		}
		if d, _ := conv.Ints("dilations"); !reflect.DeepEqual(d, []int{1, 1}) {
			t.Errorf("conv dilations %v", d)
		}
		if gr, _ := conv.Int("group"); gr != 1 {
			t.Errorf("conv group %d", gr)
		}
		pool := g.Nodes[2].Attrs
		for _, k := range []string{"kernel_shape", "strides", "pads", "dilations", "ceil_mode"} {
			if _, ok := pool[k]; !ok {
				t.Errorf("maxpool lacks %s", k)
			}
		}
		if s, ok := g.ShapeOf("y"); !ok || !s.Equal(ir.Shape{3, 4}) {
			t.Errorf("output shape %v", s)
		}
		if err := irtext.CheckRoundTrip(g); err != nil {
			t.Errorf("opset %d: text round trip: %v", opset, err)
		}

		x := floats(3*36, 9)
		out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{3, 1, 6, 6}, Data: x}})
		if err != nil {
			t.Fatal(err)
		}
		for b := 0; b < 3; b++ {
			want := convNetReference(x[b*36 : (b+1)*36])
			got := out["y"].Data[b*4 : (b+1)*4]
			for i := range want {
				if math.Abs(float64(got[i]-want[i])) > 1e-5 {
					t.Fatalf("opset %d image %d: got %v, want %v", opset, b, got, want)
				}
			}
		}
	}
}

// oneNode builds a model with a single node over a float input x of the given shape, with extra
// initializers, and returns the imported graph's single HLIL node (or nodes).
func oneNode(t *testing.T, opset int64, shape []any, n pb, inits ...pb) *ir.Graph {
	t.Helper()
	return mustImport(t, modelBytes(opset, graphSpec{
		nodes: []pb{n}, inits: inits,
		inputs: []pb{valueInfo("x", Float, shape...)}, outputs: []pb{valueInfo("y", Float)},
	}), Options{})
}

func oneNodeErr(t *testing.T, opset int64, shape []any, n pb, inits ...pb) error {
	t.Helper()
	return importErr(t, modelBytes(opset, graphSpec{
		nodes: []pb{n}, inits: inits,
		inputs: []pb{valueInfo("x", Float, shape...)}, outputs: []pb{valueInfo("y", Float)},
	}))
}

// attrsOf returns the attributes of the only node, checking its op.
func attrsOf(t *testing.T, g *ir.Graph, op ir.Op) ir.Attrs {
	t.Helper()
	if len(g.Nodes) != 1 || g.Nodes[0].Op != op {
		var ops []ir.Op
		for _, n := range g.Nodes {
			ops = append(ops, n.Op)
		}
		t.Fatalf("nodes %v, want one %s", ops, op)
	}
	return g.Nodes[0].Attrs
}

func wantAttrs(t *testing.T, got ir.Attrs, want ir.Attrs) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("attrs\n got %v\nwant %v", got, want)
	}
}

func scalarF(name string, v float32) pb { return tensorF(name, nil, []float32{v}) }
func ints1(name string, vs ...int64) pb { return tensorI64(name, []int64{int64(len(vs))}, vs) }

var inf = float32(math.Inf(1))

func TestImportClipForms(t *testing.T) {
	s := []any{2, 3}
	g := oneNode(t, 6, s, node("Clip", "c", []string{"x"}, []string{"y"}, aFloat("min", -1), aFloat("max", 2)))
	wantAttrs(t, attrsOf(t, g, ir.Clip), ir.Attrs{"min": ir.FloatAttr(-1), "max": ir.FloatAttr(2)})
	g = oneNode(t, 6, s, node("Clip", "c", []string{"x"}, []string{"y"}))
	wantAttrs(t, attrsOf(t, g, ir.Clip), ir.Attrs{"min": ir.FloatAttr(-inf), "max": ir.FloatAttr(inf)})
	g = oneNode(t, 13, s, node("Clip", "c", []string{"x", "lo", "hi"}, []string{"y"}), scalarF("lo", -1), scalarF("hi", 2))
	wantAttrs(t, attrsOf(t, g, ir.Clip), ir.Attrs{"min": ir.FloatAttr(-1), "max": ir.FloatAttr(2)})
	g = oneNode(t, 13, s, node("Clip", "c", []string{"x", "", "hi"}, []string{"y"}), scalarF("hi", 6))
	wantAttrs(t, attrsOf(t, g, ir.Clip), ir.Attrs{"min": ir.FloatAttr(-inf), "max": ir.FloatAttr(6)})

	// A bound fed at run time is unsupported.
	err := importErr(t, modelBytes(13, graphSpec{
		nodes:   []pb{node("Clip", "c", []string{"x", "lo"}, []string{"y"})},
		inputs:  []pb{valueInfo("x", Float, 2), valueInfo("lo", Float)},
		outputs: []pb{valueInfo("y", Float)},
	}))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `bound "lo"`) {
		t.Errorf("runtime bound: %v", err)
	}
}

func TestImportSqueezeUnsqueeze(t *testing.T) {
	s := []any{1, 3, 1, 2}
	g := oneNode(t, 11, s, node("Squeeze", "s", []string{"x"}, []string{"y"}, aInts("axes", -2, 0)))
	wantAttrs(t, attrsOf(t, g, ir.Squeeze), ir.Attrs{"axes": ir.IntsAttr([]int{0, 2})})
	g = oneNode(t, 13, s, node("Squeeze", "s", []string{"x", "ax"}, []string{"y"}), ints1("ax", 2))
	wantAttrs(t, attrsOf(t, g, ir.Squeeze), ir.Attrs{"axes": ir.IntsAttr([]int{2})})
	g = oneNode(t, 13, s, node("Squeeze", "s", []string{"x"}, []string{"y"}))
	wantAttrs(t, attrsOf(t, g, ir.Squeeze), ir.Attrs{"axes": ir.IntsAttr([]int{0, 2})})

	g = oneNode(t, 11, []any{3, 2}, node("Unsqueeze", "u", []string{"x"}, []string{"y"}, aInts("axes", -1, 0)))
	wantAttrs(t, attrsOf(t, g, ir.Unsqueeze), ir.Attrs{"axes": ir.IntsAttr([]int{0, 3})})
	if s, _ := g.ShapeOf("y"); !s.Equal(ir.Shape{1, 3, 2, 1}) {
		t.Errorf("unsqueeze shape %v", s)
	}
	g = oneNode(t, 13, []any{3, 2}, node("Unsqueeze", "u", []string{"x", "ax"}, []string{"y"}), ints1("ax", 1))
	wantAttrs(t, attrsOf(t, g, ir.Unsqueeze), ir.Attrs{"axes": ir.IntsAttr([]int{1})})

	if err := oneNodeErr(t, 13, []any{3, 2}, node("Unsqueeze", "u", []string{"x", "ax"}, []string{"y"}), ints1("ax", 1, 1)); !strings.Contains(err.Error(), "repeat") {
		t.Errorf("duplicate axes: %v", err)
	}
	if err := oneNodeErr(t, 11, s, node("Squeeze", "s", []string{"x"}, []string{"y"}, aInts("axes", 1))); !strings.Contains(err.Error(), `Squeeze node "s"`) {
		t.Errorf("squeeze of a non-1 axis: %v", err)
	}
}

func TestImportPadForms(t *testing.T) {
	s := []any{1, 2, 3}
	g := oneNode(t, 2, s, node("Pad", "p", []string{"x"}, []string{"y"}, aInts("pads", 0, 0, 1, 0, 0, 2), aFloat("value", 0.5)))
	wantAttrs(t, attrsOf(t, g, ir.Pad), ir.Attrs{"mode": ir.StringAttr("constant"), "pads": ir.IntsAttr([]int{0, 0, 1, 0, 0, 2}), "value": ir.FloatAttr(0.5)})
	g = oneNode(t, 1, s, node("Pad", "p", []string{"x"}, []string{"y"}, aInts("paddings", 0, 0, 1, 0, 0, 1), aString("mode", "edge")))
	wantAttrs(t, attrsOf(t, g, ir.Pad), ir.Attrs{"mode": ir.StringAttr("edge"), "pads": ir.IntsAttr([]int{0, 0, 1, 0, 0, 1}), "value": ir.FloatAttr(0)})
	g = oneNode(t, 11, s, node("Pad", "p", []string{"x", "pads", "v"}, []string{"y"}, aString("mode", "reflect")),
		ints1("pads", 0, 0, 1, 0, 0, 1), scalarF("v", 3))
	wantAttrs(t, attrsOf(t, g, ir.Pad), ir.Attrs{"mode": ir.StringAttr("reflect"), "pads": ir.IntsAttr([]int{0, 0, 1, 0, 0, 1}), "value": ir.FloatAttr(3)})
	g = oneNode(t, 18, s, node("Pad", "p", []string{"x", "pads", "", "axes"}, []string{"y"}),
		ints1("pads", 2, -1), ints1("axes", -1))
	wantAttrs(t, attrsOf(t, g, ir.Pad), ir.Attrs{"mode": ir.StringAttr("constant"), "pads": ir.IntsAttr([]int{0, 0, 2, 0, 0, -1}), "value": ir.FloatAttr(0)})
	if err := oneNodeErr(t, 11, s, node("Pad", "p", []string{"x", "pads"}, []string{"y"}), ints1("pads", 1, 1)); !strings.Contains(err.Error(), "for rank 3") {
		t.Errorf("short pads: %v", err)
	}
}

func TestImportReshape(t *testing.T) {
	s := []any{2, 3, 4}
	g := oneNode(t, 13, s, node("Reshape", "r", []string{"x", "shape"}, []string{"y"}), ints1("shape", 0, -1))
	wantAttrs(t, attrsOf(t, g, ir.Reshape), ir.Attrs{"shape": ir.IntsAttr([]int{2, 12})})
	g = oneNode(t, 1, s, node("Reshape", "r", []string{"x"}, []string{"y"}, aInts("shape", -1, 4)))
	wantAttrs(t, attrsOf(t, g, ir.Reshape), ir.Attrs{"shape": ir.IntsAttr([]int{6, 4})})
	for _, c := range []struct {
		shape []int64
		allow int64
		want  string
	}{
		{[]int64{-1, -1}, 0, "more than one -1"},
		{[]int64{5, -1}, 0, "cannot infer"},
		{[]int64{0, 0, 0, 0}, 0, "copies dimension 3"},
		{[]int64{0, 24}, 1, "cannot reshape"},
		{[]int64{-2, 12}, 0, "negative"},
	} {
		err := oneNodeErr(t, 14, s, node("Reshape", "r", []string{"x", "shape"}, []string{"y"}, aInt("allowzero", c.allow)), ints1("shape", c.shape...))
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `Reshape node "r"`) {
			t.Errorf("shape %v: %v", c.shape, err)
		}
	}
	// A runtime shape is a dynamic reshape.
	err := importErr(t, modelBytes(13, graphSpec{
		nodes:   []pb{node("Reshape", "r", []string{"x", "s"}, []string{"y"})},
		inputs:  []pb{valueInfo("x", Float, 2, 2), valueInfo("s", Int64, 1)},
		outputs: []pb{valueInfo("y", Float)},
	}))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `"s"`) {
		t.Errorf("runtime shape: %v", err)
	}
}

func TestImportSoftmax(t *testing.T) {
	s := []any{2, 3, 4}
	g := oneNode(t, 11, s, node("Softmax", "sm", []string{"x"}, []string{"y"}))
	var ops []ir.Op
	for _, n := range g.Nodes {
		ops = append(ops, n.Op)
	}
	if !reflect.DeepEqual(ops, []ir.Op{ir.Flatten, ir.Softmax, ir.Reshape}) {
		t.Fatalf("opset-11 softmax over axis 1 of a 3-D input: ops %v", ops)
	}
	wantAttrs(t, g.Nodes[2].Attrs, ir.Attrs{"shape": ir.IntsAttr([]int{2, 3, 4})})
	// The coerced form normalises over the whole [3,4] block of each batch element.
	x := floats(24, 5)
	out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{2, 3, 4}, Data: x}})
	if err != nil {
		t.Fatal(err)
	}
	for b := 0; b < 2; b++ {
		var sum float64
		for _, v := range out["y"].Data[b*12 : (b+1)*12] {
			sum += float64(v)
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("batch %d sums to %g", b, sum)
		}
	}

	g = oneNode(t, 11, s, node("Softmax", "sm", []string{"x"}, []string{"y"}, aInt("axis", -1)))
	wantAttrs(t, attrsOf(t, g, ir.Softmax), ir.Attrs{"axis": ir.IntAttr(2)})
	g = oneNode(t, 13, s, node("Softmax", "sm", []string{"x"}, []string{"y"}))
	wantAttrs(t, attrsOf(t, g, ir.Softmax), ir.Attrs{"axis": ir.IntAttr(2)})
	g = oneNode(t, 13, s, node("Softmax", "sm", []string{"x"}, []string{"y"}, aInt("axis", 1)))
	wantAttrs(t, attrsOf(t, g, ir.Softmax), ir.Attrs{"axis": ir.IntAttr(1)})
}

// TestImportLogSoftmax: LogSoftmax follows Softmax's axis rules (the opset-11 coerced form as
// Flatten/LogSoftmax/Reshape; opset 13 one axis), and each row's exps sum to 1.
func TestImportLogSoftmax(t *testing.T) {
	s := []any{2, 3, 4}
	g := oneNode(t, 11, s, node("LogSoftmax", "lsm", []string{"x"}, []string{"y"}))
	var ops []ir.Op
	for _, n := range g.Nodes {
		ops = append(ops, n.Op)
	}
	if !reflect.DeepEqual(ops, []ir.Op{ir.Flatten, ir.LogSoftmax, ir.Reshape}) {
		t.Fatalf("opset-11 log softmax over axis 1 of a 3-D input: ops %v", ops)
	}
	g = oneNode(t, 13, s, node("LogSoftmax", "lsm", []string{"x"}, []string{"y"}))
	wantAttrs(t, attrsOf(t, g, ir.LogSoftmax), ir.Attrs{"axis": ir.IntAttr(2)})
	out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{2, 3, 4}, Data: floats(24, 5)}})
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < 6; r++ {
		var sum float64
		for _, v := range out["y"].Data[r*4 : (r+1)*4] {
			sum += math.Exp(float64(v))
		}
		if math.Abs(sum-1) > 1e-5 {
			t.Errorf("row %d: exps sum to %g", r, sum)
		}
	}
}

func TestImportDropoutAndBatchNorm(t *testing.T) {
	s := []any{1, 2, 3, 3}
	g := oneNode(t, 12, s, node("Dropout", "d", []string{"x", "r"}, []string{"y"}), scalarF("r", 0.3))
	attrsOf(t, g, ir.Identity)
	g = oneNode(t, 6, s, node("Dropout", "d", []string{"x"}, []string{"y", "mask"}, aInt("is_test", 1), aFloat("ratio", 0.5)))
	attrsOf(t, g, ir.Identity)

	mask := modelBytes(13, graphSpec{
		nodes:   []pb{node("Dropout", "d", []string{"x"}, []string{"y", "mask"})},
		inputs:  []pb{valueInfo("x", Float, 2)},
		outputs: []pb{valueInfo("y", Float), valueInfo("mask", Bool)},
	})
	if err := importErr(t, mask); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "mask") {
		t.Errorf("used mask: %v", err)
	}
	tm := cat(fInt(tensorDataType, int64(Bool)), fBytes(tensorRawData, []byte{1}), fString(tensorName, "tm"))
	if err := oneNodeErr(t, 13, s, node("Dropout", "d", []string{"x", "", "tm"}, []string{"y"}), tm); !errors.Is(err, ErrUnsupported) {
		t.Errorf("training dropout: %v", err)
	}

	params := []pb{tensorF("sc", []int64{2}, []float32{1, 2}), tensorF("bi", []int64{2}, []float32{0, 1}),
		tensorF("mu", []int64{2}, []float32{0.5, 0}), tensorF("va", []int64{2}, []float32{1, 4})}
	bnIn := []string{"x", "sc", "bi", "mu", "va"}
	g = oneNode(t, 6, s, node("BatchNormalization", "bn", bnIn, []string{"y"}, aInt("is_test", 1), aInt("spatial", 1), aFloat("epsilon", 1e-3)), params...)
	wantAttrs(t, attrsOf(t, g, ir.BatchNormalization), ir.Attrs{"epsilon": ir.FloatAttr(1e-3)})
	g = oneNode(t, 15, s, node("BatchNormalization", "bn", bnIn, []string{"y"}), params...)
	wantAttrs(t, attrsOf(t, g, ir.BatchNormalization), ir.Attrs{"epsilon": ir.FloatAttr(1e-5)})
	if err := oneNodeErr(t, 7, s, node("BatchNormalization", "bn", bnIn, []string{"y"}, aInt("spatial", 0)), params...); !errors.Is(err, ErrUnsupported) {
		t.Errorf("spatial=0: %v", err)
	}
	if err := oneNodeErr(t, 15, s, node("BatchNormalization", "bn", bnIn, []string{"y"}, aInt("training_mode", 1)), params...); !errors.Is(err, ErrUnsupported) {
		t.Errorf("training_mode=1: %v", err)
	}
	// Unused training outputs are ignored.
	g = oneNode(t, 9, s, node("BatchNormalization", "bn", bnIn, []string{"y", "m", "v"}), params...)
	attrsOf(t, g, ir.BatchNormalization)
}

func TestImportWindows(t *testing.T) {
	s := []any{1, 1, 5, 5}
	w := tensorF("w", []int64{1, 1, 2, 2}, floats(4, 1))
	g := oneNode(t, 11, s, node("Conv", "c", []string{"x", "w"}, []string{"y"}, aString("auto_pad", "SAME_LOWER"), aInts("strides", 2, 2)), w)
	wantAttrs(t, attrsOf(t, g, ir.Conv), ir.Attrs{
		"group": ir.IntAttr(1), "kernel_shape": ir.IntsAttr([]int{2, 2}), "strides": ir.IntsAttr([]int{2, 2}),
		"pads": ir.IntsAttr([]int{1, 1, 0, 0}), "dilations": ir.IntsAttr([]int{1, 1}),
	})
	if sh, _ := g.ShapeOf("y"); !sh.Equal(ir.Shape{1, 1, 3, 3}) {
		t.Errorf("SAME_LOWER output %v", sh)
	}
	g = oneNode(t, 11, s, node("Conv", "c", []string{"x", "w"}, []string{"y"}, aString("auto_pad", "VALID"), aInts("dilations", 2, 2)), w)
	if sh, _ := g.ShapeOf("y"); !sh.Equal(ir.Shape{1, 1, 3, 3}) {
		t.Errorf("VALID dilated output %v", sh)
	}
	if err := oneNodeErr(t, 11, s, node("Conv", "c", []string{"x", "w"}, []string{"y"}, aString("auto_pad", "SAME_UPPER"), aInts("pads", 1, 1, 1, 1)), w); !strings.Contains(err.Error(), "auto_pad") {
		t.Errorf("auto_pad with pads: %v", err)
	}
	if err := oneNodeErr(t, 11, s, node("Conv", "c", []string{"x", "w"}, []string{"y"}, aString("auto_pad", "SAME")), w); !strings.Contains(err.Error(), "unknown auto_pad") {
		t.Errorf("bad auto_pad: %v", err)
	}

	g = oneNode(t, 10, s, node("AveragePool", "ap", []string{"x"}, []string{"y"}, aInts("kernel_shape", 2, 2), aInts("strides", 2, 2), aInt("ceil_mode", 1), aInt("count_include_pad", 1)))
	wantAttrs(t, attrsOf(t, g, ir.AveragePool), ir.Attrs{
		"kernel_shape": ir.IntsAttr([]int{2, 2}), "strides": ir.IntsAttr([]int{2, 2}), "pads": ir.IntsAttr([]int{0, 0, 0, 0}),
		"dilations": ir.IntsAttr([]int{1, 1}), "ceil_mode": ir.IntAttr(1), "count_include_pad": ir.IntAttr(1),
	})
	if sh, _ := g.ShapeOf("y"); !sh.Equal(ir.Shape{1, 1, 3, 3}) {
		t.Errorf("ceil-mode pool output %v", sh)
	}
	g = oneNode(t, 8, s, node("MaxPool", "mp", []string{"x"}, []string{"y", "idx"}, aInts("kernel_shape", 3, 3)))
	wantAttrs(t, attrsOf(t, g, ir.MaxPool), ir.Attrs{
		"kernel_shape": ir.IntsAttr([]int{3, 3}), "strides": ir.IntsAttr([]int{1, 1}), "pads": ir.IntsAttr([]int{0, 0, 0, 0}),
		"dilations": ir.IntsAttr([]int{1, 1}), "ceil_mode": ir.IntAttr(0),
	})
	idx := modelBytes(12, graphSpec{
		nodes:   []pb{node("MaxPool", "mp", []string{"x"}, []string{"y", "idx"}, aInts("kernel_shape", 2, 2))},
		inputs:  []pb{valueInfo("x", Float, 1, 1, 4, 4)},
		outputs: []pb{valueInfo("y", Float), valueInfo("idx", Int64)},
	})
	if err := importErr(t, idx); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "Indices") {
		t.Errorf("MaxPool indices: %v", err)
	}
	if err := oneNodeErr(t, 11, s, node("MaxPool", "mp", []string{"x"}, []string{"y"})); !strings.Contains(err.Error(), "kernel_shape") {
		t.Errorf("MaxPool without kernel: %v", err)
	}
}

func TestImportSimpleOps(t *testing.T) {
	s := []any{2, 3, 4}
	g := oneNode(t, 13, s, node("ArgMax", "am", []string{"x"}, []string{"y"}, aInt("axis", -1)))
	wantAttrs(t, attrsOf(t, g, ir.ArgMax), ir.Attrs{"axis": ir.IntAttr(2), "keepdims": ir.IntAttr(1), "select_last_index": ir.IntAttr(0)})
	if v := g.Values["y"]; v.DType != ir.Int64 {
		t.Errorf("ArgMax output type %v", v.DType)
	}
	g = oneNode(t, 13, s, node("Flatten", "f", []string{"x"}, []string{"y"}, aInt("axis", -1)))
	wantAttrs(t, attrsOf(t, g, ir.Flatten), ir.Attrs{"axis": ir.IntAttr(2)})
	g = oneNode(t, 13, s, node("Transpose", "t", []string{"x"}, []string{"y"}))
	wantAttrs(t, attrsOf(t, g, ir.Transpose), ir.Attrs{"perm": ir.IntsAttr([]int{2, 1, 0})})
	g = oneNode(t, 13, s, node("LeakyRelu", "l", []string{"x"}, []string{"y"}))
	wantAttrs(t, attrsOf(t, g, ir.LeakyRelu), ir.Attrs{"alpha": ir.FloatAttr(0.01)})
	g = oneNode(t, 13, s, node("LRN", "l", []string{"x"}, []string{"y"}, aInt("size", 3)))
	wantAttrs(t, attrsOf(t, g, ir.LRN), ir.Attrs{"size": ir.IntAttr(3), "alpha": ir.FloatAttr(1e-4), "beta": ir.FloatAttr(0.75), "bias": ir.FloatAttr(1)})
	g = oneNode(t, 13, []any{2, 3}, node("Gemm", "g", []string{"x", "w"}, []string{"y"}), tensorF("w", []int64{3, 5}, floats(15, 1)))
	wantAttrs(t, attrsOf(t, g, ir.Gemm), ir.Attrs{"alpha": ir.FloatAttr(1), "beta": ir.FloatAttr(1), "transA": ir.IntAttr(0), "transB": ir.IntAttr(0)})
	g = oneNode(t, 13, s, node("Concat", "c", []string{"x", "x"}, []string{"y"}, aInt("axis", -2)))
	wantAttrs(t, attrsOf(t, g, ir.Concat), ir.Attrs{"axis": ir.IntAttr(1)})
	if n := g.Nodes[0]; !reflect.DeepEqual(n.Inputs, []string{"x", "x"}) {
		t.Errorf("Concat(x, x) inputs %v", n.Inputs)
	}
	g = oneNode(t, 13, s, node("Cast", "c", []string{"x"}, []string{"y"}, aInt("to", int64(Float))))
	attrsOf(t, g, ir.Identity)
	if err := oneNodeErr(t, 13, s, node("Cast", "c", []string{"x"}, []string{"y"}, aInt("to", int64(Int64)))); !errors.Is(err, ErrUnsupported) {
		t.Errorf("cast to int64: %v", err)
	}
	g = oneNode(t, 13, s, node("Sum", "s", []string{"x", "x", "x"}, []string{"y"}))
	attrsOf(t, g, ir.Sum)
	g = oneNode(t, 13, s, node("GlobalAveragePool", "gap", []string{"x"}, []string{"y"}))
	if sh, _ := g.ShapeOf("y"); !sh.Equal(ir.Shape{2, 3, 1}) {
		t.Errorf("GlobalAveragePool shape %v", sh)
	}
}

func TestImportLegacyBroadcast(t *testing.T) {
	s := []any{2, 3, 4, 4}
	bias := tensorF("b", []int64{3}, []float32{1, 2, 3})
	g := oneNode(t, 6, s, node("Add", "a", []string{"x", "b"}, []string{"y"}, aInt("broadcast", 1), aInt("axis", 1)), bias)
	attrsOf(t, g, ir.Add)
	c := g.Consts[g.Nodes[0].Inputs[1]]
	if c == nil || !c.Shape.Equal(ir.Shape{3, 1, 1}) {
		t.Fatalf("broadcast bias %+v", c)
	}
	x := floats(96, 4)
	out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{2, 3, 4, 4}, Data: x}})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range out["y"].Data {
		ch := (i / 16) % 3
		if v != x[i]+float32(ch+1) {
			t.Fatalf("element %d: %g, want %g", i, v, x[i]+float32(ch+1))
		}
	}
	// A runtime B is reshaped by a Reshape node.
	g = mustImport(t, modelBytes(6, graphSpec{
		nodes:   []pb{node("Mul", "m", []string{"x", "b"}, []string{"y"}, aInt("broadcast", 1), aInt("axis", 0))},
		inputs:  []pb{valueInfo("x", Float, 2, 3), valueInfo("b", Float, 2)},
		outputs: []pb{valueInfo("y", Float)},
	}), Options{})
	if len(g.Nodes) != 2 || g.Nodes[0].Op != ir.Reshape || g.Nodes[1].Op != ir.Mul {
		t.Fatalf("runtime legacy broadcast: %v", g.Nodes)
	}
}

// The exporters' dynamic flatten: Shape -> Gather -> Unsqueeze -> Concat -> Reshape, folded.
func TestImportDynamicFlatten(t *testing.T) {
	b := modelBytes(9, graphSpec{
		nodes: []pb{
			node("Relu", "relu", []string{"x"}, []string{"r"}),
			node("Shape", "shape", []string{"r"}, []string{"s"}),
			node("Constant", "c0", nil, []string{"zero"}, aTensor("value", tensorI64("", nil, []int64{0}))),
			node("Gather", "gather", []string{"s", "zero"}, []string{"n"}, aInt("axis", 0)),
			node("Unsqueeze", "unsq", []string{"n"}, []string{"n1"}, aInts("axes", 0)),
			node("Constant", "c1", nil, []string{"minus1"}, aInts("value_ints", -1)),
			node("Concat", "cat", []string{"n1", "minus1"}, []string{"shape2"}, aInt("axis", 0)),
			node("Cast", "cast", []string{"shape2"}, []string{"shape3"}, aInt("to", int64(Int64))),
			node("Reshape", "reshape", []string{"r", "shape3"}, []string{"y"}),
		},
		inputs:  []pb{valueInfo("x", Float, "batch", 3, 2, 2)},
		outputs: []pb{valueInfo("y", Float)},
	})
	g := mustImport(t, b, Options{Batch: 5})
	if len(g.Nodes) != 2 || g.Nodes[1].Op != ir.Reshape {
		t.Fatalf("nodes %v", g.Nodes)
	}
	wantAttrs(t, g.Nodes[1].Attrs, ir.Attrs{"shape": ir.IntsAttr([]int{5, 12})})
	if len(g.Consts) != 0 {
		t.Errorf("shape constants leaked into the graph: %v", g.ConstNames())
	}
}

func TestImportConstantFolding(t *testing.T) {
	b := modelBytes(13, graphSpec{
		nodes: []pb{
			node("ConstantOfShape", "cos", []string{"shp"}, []string{"w0"}, aTensor("value", tensorF("", []int64{1}, []float32{0.5}))),
			node("Constant", "k", nil, []string{"two"}, aFloat("value_float", 2)),
			node("Mul", "scale", []string{"w0", "two"}, []string{"w1"}),
			node("Transpose", "tr", []string{"w1"}, []string{"w2"}, aInts("perm", 1, 0)),
			node("Constant", "st", nil, []string{"starts"}, aInts("value_ints", 0)),
			node("Constant", "en", nil, []string{"ends"}, aInts("value_ints", 2)),
			node("Slice", "sl", []string{"w2", "starts", "ends"}, []string{"w3"}),
			node("Sum", "sum", []string{"w3", "w3"}, []string{"w4"}),
			node("MatMul", "mm", []string{"x", "w4"}, []string{"y"}),
		},
		inits:   []pb{ints1("shp", 3, 2)},
		inputs:  []pb{valueInfo("x", Float, 1, 2)},
		outputs: []pb{valueInfo("y", Float)},
	})
	g := mustImport(t, b, Options{})
	if len(g.Nodes) != 1 || g.Nodes[0].Op != ir.MatMul {
		t.Fatalf("nodes %v", g.Nodes)
	}
	w := g.Consts["w4"]
	if w == nil || !w.Shape.Equal(ir.Shape{2, 3}) || !reflect.DeepEqual(w.Data, []float32{2, 2, 2, 2, 2, 2}) {
		t.Fatalf("folded weight %+v", w)
	}
	// A constant graph output is copied out by an Identity.
	b = modelBytes(13, graphSpec{
		nodes:   []pb{node("Constant", "k", nil, []string{"y"}, aFloats("value_floats", 1, 2))},
		inputs:  []pb{valueInfo("x", Float, 1)},
		outputs: []pb{valueInfo("y", Float)},
	})
	g = mustImport(t, b, Options{})
	out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{1}, Data: []float32{0}}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out["y"].Data, []float32{1, 2}) {
		t.Errorf("constant output %v", out["y"].Data)
	}
}

func TestImportBatchAndInputs(t *testing.T) {
	in := func(v pb) pb {
		return modelBytes(13, graphSpec{
			nodes:  []pb{node("Relu", "r", []string{"x"}, []string{"y"})},
			inputs: []pb{v}, outputs: []pb{valueInfo("y", Float)},
		})
	}
	for _, c := range []struct {
		v     pb
		batch int
		want  ir.Shape
	}{
		{valueInfo("x", Float, "N", 3), 0, ir.Shape{1, 3}},
		{valueInfo("x", Float, "N", 3), 7, ir.Shape{7, 3}},
		{valueInfo("x", Float, 0, 3), 2, ir.Shape{2, 3}},
		{valueInfo("x", Float, nil, 3), 2, ir.Shape{2, 3}},
		{valueInfo("x", Float, 4, 3), 2, ir.Shape{4, 3}},
	} {
		g := mustImport(t, in(c.v), Options{Batch: c.batch})
		if !g.Inputs[0].Shape.Equal(c.want) {
			t.Errorf("batch %d: input shape %v, want %v", c.batch, g.Inputs[0].Shape, c.want)
		}
	}
	for _, c := range []struct {
		v           pb
		want        string
		unsupported bool
	}{
		{valueInfo("x", Float, 1, "H"), `dimension 1 is symbolic ("H")`, false},
		{valueInfo("x", Float, 1, nil), "dimension 1 is unknown", false},
		{valueInfo("x", Int64, 1, 3), `graph input "x"`, true},
		{cat(fString(1, "x"), fBytes(2, fBytes(typeTensor, fInt(tensorTypeElem, 1)))), "no declared shape", false},
		{cat(fString(1, "x"), fBytes(2, fBytes(typeSequence, nil))), "sequence", true},
	} {
		err := importErr(t, in(c.v))
		if !strings.Contains(err.Error(), c.want) || errors.Is(err, ErrUnsupported) != c.unsupported {
			t.Errorf("err = %v, want %q (unsupported %v)", err, c.want, c.unsupported)
		}
	}
	m, _ := Decode(in(valueInfo("x", Float, 1)))
	if _, err := Import(m, Options{Batch: -1}); err == nil {
		t.Error("negative batch accepted")
	}
}

func TestImportErrors(t *testing.T) {
	s := []any{1, 2}
	// Unsupported operators are all listed with their nodes and the supported set.
	b := modelBytes(13, graphSpec{
		nodes: []pb{
			node("Sin", "t1", []string{"x"}, []string{"a"}),
			node("Sin", "t2", []string{"a"}, []string{"b"}),
			cat(node("FusedConv", "fc", []string{"b"}, []string{"y"}), fString(nodeDomain, "com.microsoft")),
		},
		inputs: []pb{valueInfo("x", Float, s...)}, outputs: []pb{valueInfo("y", Float)},
	})
	err := importErr(t, b)
	for _, want := range []string{`Sin (2 node(s), first Sin node "t1")`, `com.microsoft::FusedConv (1 node(s)`, "supported operators", "Conv, ", "Unsqueeze"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("unsupported-op error lacks %q: %v", want, err)
		}
	}
	if !errors.Is(err, ErrUnsupported) {
		t.Errorf("not ErrUnsupported: %v", err)
	}
	// An undefined input, and shape errors, name the node.
	err = oneNodeErr(t, 13, s, node("Add", "add7", []string{"x", "ghost"}, []string{"y"}))
	if !strings.Contains(err.Error(), `Add node "add7": input "ghost" is not defined`) {
		t.Errorf("undefined input: %v", err)
	}
	err = oneNodeErr(t, 13, s, node("MatMul", "mm3", []string{"x", "w"}, []string{"y"}), tensorF("w", []int64{3, 1}, floats(3, 1)))
	if !strings.Contains(err.Error(), `MatMul node "mm3"`) || !strings.Contains(err.Error(), "inner dimensions") {
		t.Errorf("shape error: %v", err)
	}
	err = oneNodeErr(t, 13, s, node("Gather", "g", []string{"k", "x"}, []string{"y"}), tensorF("k", []int64{3}, floats(3, 1)))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "runtime indices") {
		t.Errorf("gather by runtime indices: %v", err)
	}
	err = oneNodeErr(t, 13, s, node("Add", "a", []string{"x", "k"}, []string{"y"}), ints1("k", 1, 2))
	if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "int64") {
		t.Errorf("integer data: %v", err)
	}
	err = oneNodeErr(t, 13, s, node("Relu", "again", []string{"x"}, []string{"x"}))
	if !strings.Contains(err.Error(), `Relu node "again": output "x" is already defined`) {
		t.Errorf("redefinition: %v", err)
	}
	err = oneNodeErr(t, 13, s, node("Identity", "i", []string{"x"}, nil))
	if !strings.Contains(err.Error(), "no output") {
		t.Errorf("node without output: %v", err)
	}
	err = oneNodeErr(t, 13, s, node("LeakyRelu", "lr", []string{"x"}, []string{"y"}, aInt("alpha", 1)))
	if !strings.Contains(err.Error(), `attribute "alpha" has type INT, want FLOAT`) {
		t.Errorf("mistyped attribute: %v", err)
	}
	err = importErr(t, modelBytes(13, graphSpec{
		nodes:  []pb{node("ConstantOfShape", "big", []string{"s"}, []string{"y"})},
		inits:  []pb{ints1("s", 1<<20, 1<<20)},
		inputs: []pb{valueInfo("x", Float, 1)}, outputs: []pb{valueInfo("y", Float)},
	}))
	if !strings.Contains(err.Error(), "more than") {
		t.Errorf("huge ConstantOfShape: %v", err)
	}
}

// The same network written with opset-6/10 attributes and with opset-13/18 inputs imports to the
// same canonical HLIL.
func TestOpsetFormsAgree(t *testing.T) {
	legacy := modelBytes(10, graphSpec{
		nodes: []pb{
			node("Pad", "pad", []string{"x"}, []string{"p"}, aInts("pads", 0, 1, 0, 2), aString("mode", "edge")),
			node("Clip", "clip", []string{"p"}, []string{"c"}, aFloat("min", -0.5)),
			node("Unsqueeze", "unsq", []string{"c"}, []string{"u"}, aInts("axes", 0, -1)),
			node("Squeeze", "sq", []string{"u"}, []string{"s"}, aInts("axes", 3)),
			node("Softmax", "sm", []string{"s"}, []string{"m"}, aInt("axis", 2)),
			node("Dropout", "drop", []string{"m"}, []string{"d"}, aFloat("ratio", 0.1)),
			node("Reshape", "rs", []string{"d", "shape"}, []string{"y"}),
		},
		inits:   []pb{ints1("shape", -1)},
		inputs:  []pb{valueInfo("x", Float, 2, 3)},
		outputs: []pb{valueInfo("y", Float)},
	})
	modern := modelBytes(18, graphSpec{
		nodes: []pb{
			node("Pad", "pad", []string{"x", "pads", "", "axes"}, []string{"p"}, aString("mode", "edge")),
			node("Clip", "clip", []string{"p", "lo"}, []string{"c"}),
			node("Unsqueeze", "unsq", []string{"c", "uaxes"}, []string{"u"}),
			node("Squeeze", "sq", []string{"u", "saxes"}, []string{"s"}),
			node("Softmax", "sm", []string{"s"}, []string{"m"}),
			node("Dropout", "drop", []string{"m", "ratio"}, []string{"d"}),
			node("Reshape", "rs", []string{"d", "shape"}, []string{"y"}),
		},
		inits: []pb{ints1("pads", 1, 2), ints1("axes", 1), scalarF("lo", -0.5), ints1("uaxes", -1, 0),
			ints1("saxes", -1), scalarF("ratio", 0.1), ints1("shape", -1)},
		inputs:  []pb{valueInfo("x", Float, 2, 3)},
		outputs: []pb{valueInfo("y", Float)},
	})
	a, b := mustImport(t, legacy, Options{}), mustImport(t, modern, Options{})
	if err := irtext.Compare(a, b); err != nil {
		t.Fatalf("%v\nlegacy:\n%s\nmodern:\n%s", err, irtext.Format(a), irtext.Format(b))
	}
	if s, _ := a.ShapeOf("y"); !s.Equal(ir.Shape{2 * 6}) {
		t.Errorf("output shape %v", s)
	}
}

// TestImportRuntimeSliceGather: Slice and Gather of a runtime tensor import as HLIL's Slice and
// Gather (constants are still folded), with ONNX's clamping and negative values normalised, and
// the float interpreter reads what numpy's indexing reads.
func TestImportRuntimeSliceGather(t *testing.T) {
	s := []any{2, 3, 4}
	x := floats(24, 3)
	run := func(g *ir.Graph) []float32 {
		t.Helper()
		out, err := interp.Run(g, map[string]*ir.Tensor{"x": {Shape: ir.Shape{2, 3, 4}, Data: x}})
		if err != nil {
			t.Fatal(err)
		}
		return out["y"].Data
	}
	// x[:, ::-2, 1:100] (ends past the end clamp; a negative step from the last row).
	g := oneNode(t, 13, s, node("Slice", "sl", []string{"x", "st", "en", "ax", "sp"}, []string{"y"}),
		ints1("st", -1, 1), ints1("en", math.MinInt64, 100), ints1("ax", 1, 2), ints1("sp", -2, 1))
	wantAttrs(t, attrsOf(t, g, ir.Slice), ir.Attrs{"starts": ir.IntsAttr([]int{0, 2, 1}), "steps": ir.IntsAttr([]int{1, -2, 1}),
		"sizes": ir.IntsAttr([]int{2, 2, 3})})
	var want []float32
	for i := 0; i < 2; i++ {
		for _, j := range []int{2, 0} {
			for k := 1; k < 4; k++ {
				want = append(want, x[(i*3+j)*4+k])
			}
		}
	}
	if got := run(g); !reflect.DeepEqual(got, want) {
		t.Errorf("slice: %v, want %v", got, want)
	}
	// x[:, [-1, 0], :] with a [1, 2] index tensor, and the class-token pattern x[:, 0].
	g = oneNode(t, 13, s, node("Gather", "ga", []string{"x", "ix"}, []string{"y"}, aInt("axis", 1)),
		tensorI64("ix", []int64{1, 2}, []int64{-1, 0}))
	wantAttrs(t, attrsOf(t, g, ir.Gather), ir.Attrs{"axis": ir.IntAttr(1), "indices": ir.IntsAttr([]int{2, 0}), "indices_shape": ir.IntsAttr([]int{1, 2})})
	want = want[:0]
	for i := 0; i < 2; i++ {
		for _, j := range []int{2, 0} {
			want = append(want, x[(i*3+j)*4:(i*3+j)*4+4]...)
		}
	}
	if got := run(g); !reflect.DeepEqual(got, want) {
		t.Errorf("gather: %v, want %v", got, want)
	}
	g = oneNode(t, 13, s, node("Gather", "ga", []string{"x", "ix"}, []string{"y"}, aInt("axis", 1)), tensorI64("ix", nil, []int64{0}))
	if v := g.Values["y"]; v == nil || !v.Shape.Equal(ir.Shape{2, 4}) {
		t.Fatalf("x[:, 0]: %+v", v)
	}
	if err := oneNodeErr(t, 13, s, node("Gather", "ga", []string{"x", "x"}, []string{"y"})); err == nil || !strings.Contains(err.Error(), "indices must be constants") {
		t.Errorf("runtime indices: %v", err)
	}
}
