package tf

import (
	"math"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

// TestFoldedOps checks ops that are folded at import time: their results become constant graph
// outputs (copied out with Identity).
func TestFoldedOps(t *testing.T) {
	b := graphBytes(
		placeholder("x", 1, 2),
		constF("sq", []int64{4}, 1, 4, 9, 16),
		node("sqrt", "Sqrt", []string{"sq"}),
		node("rsqrt", "Rsqrt", []string{"sq"}),
		node("recip", "Reciprocal", []string{"sqrt"}),
		node("exp", "Exp", []string{"sqrt"}),
		node("log", "Log", []string{"exp"}),
		constF("fr", []int64{4}, -1.5, -0.5, 0.5, 1.5),
		node("abs", "Abs", []string{"fr"}), node("floor", "Floor", []string{"fr"}), node("ceil", "Ceil", []string{"fr"}),
		node("pow", "Pow", []string{"sqrt", "sqrt"}),
		constI("i", []int64{4}, -7, -6, 6, 7), constI("two", nil, 2),
		node("floordiv", "FloorDiv", []string{"i", "two"}), node("floormod", "FloorMod", []string{"i", "two"}),
		node("truncdiv", "TruncateDiv", []string{"i", "two"}), node("div", "Div", []string{"i", "two"}),
		constF("m", []int64{2, 3}, 1, 2, 3, 4, 5, 6), constI("ax1", nil, 1), constI("ax0", nil, 0),
		node("prod", "Prod", []string{"m", "ax1"}), node("max", "Max", []string{"m", "ax0"}, aB("keep_dims", true)),
		node("min", "Min", []string{"m", "ax1"}), node("msum", "Sum", []string{"m", "ax0"}), node("mmean", "Mean", []string{"m", "ax1"}),
		constI("r0", nil, 3), constI("r1", nil, 11), constI("r2", nil, 3),
		node("range", "Range", []string{"r0", "r1", "r2"}),
		constI("dims", []int64{2}, 2, 2), constF("v", nil, 0.25), node("fill", "Fill", []string{"dims", "v"}),
		node("size", "Size", []string{"m"}), node("rank", "Rank", []string{"m"}),
		constI("sb", []int64{2}, 0, 1), constI("ss", []int64{2}, -1, 2),
		node("slice", "Slice", []string{"m", "sb", "ss"}),
		constI("b", []int64{2}, 1, -1), constI("e", []int64{2}, 0, 0), constI("st", []int64{2}, 1, -1),
		node("rev", "StridedSlice", []string{"m", "b", "e", "st"}, aI("begin_mask", 0), aI("end_mask", 3)),
		node("cast", "Cast", []string{"fr"}, aType("DstT", DTInt32)),
		node("mt", "Transpose", []string{"m", "two2"}), constI("two2", []int64{2}, 1, 0),
		node("y", "Relu", []string{"x"}),
	)
	want := map[string][]float32{
		"sqrt": {1, 2, 3, 4}, "rsqrt": {1, 0.5, 1. / 3, 0.25}, "recip": {1, 0.5, 1. / 3, 0.25},
		"log": {1, 2, 3, 4}, "abs": {1.5, 0.5, 0.5, 1.5}, "floor": {-2, -1, 0, 1}, "ceil": {-1, 0, 1, 2},
		"pow": {1, 4, 27, 256}, "floordiv": {-4, -3, 3, 3}, "floormod": {1, 0, 0, 1}, "truncdiv": {-3, -3, 3, 3},
		"div": {-3, -3, 3, 3}, "prod": {6, 120}, "max": {4, 5, 6}, "min": {1, 4}, "msum": {5, 7, 9}, "mmean": {2, 5},
		"range": {3, 6, 9}, "fill": {0.25, 0.25, 0.25, 0.25}, "size": {6}, "rank": {2}, "slice": {2, 3, 5, 6},
		"rev": {6, 5, 4}, "cast": {-1, 0, 0, 1}, "mt": {1, 4, 2, 5, 3, 6},
	}
	var outs []string
	for k := range want {
		outs = append(outs, k)
	}
	g, out := importRun(t, b, append(outs, "y"), &ir.Tensor{Shape: ir.Shape{1, 2}, Data: []float32{-1, 1}})
	for k, w := range want {
		got := out[k]
		if got == nil || len(got.Data) != len(w) {
			t.Errorf("%s: %v, want %v", k, got, w)
			continue
		}
		for i := range w {
			if math.Abs(float64(got.Data[i]-w[i])) > 1e-5*(1+math.Abs(float64(w[i]))) {
				t.Errorf("%s: %v, want %v", k, got.Data, w)
				break
			}
		}
	}
	if s := g.Values["max"].Shape; !s.Equal(ir.Shape{1, 3}) {
		t.Errorf("max keep_dims shape %v", s)
	}
	if s := g.Values["mt"].Shape; !s.Equal(ir.Shape{3, 2}) {
		t.Errorf("transposed constant shape %v", s)
	}
}

// TestMoreRuntimeOps covers the remaining runtime lowerings: MirrorPad, PadV2, spatial Max,
// PlaceholderWithDefault, the old Concat, Div, NCHW BiasAdd, FusedBatchNorm (NCHW), Identity-like ops.
func TestMoreRuntimeOps(t *testing.T) {
	x := &ir.Tensor{Shape: ir.Shape{1, 2, 3, 2}, Data: []float32{1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6}}
	b := graphBytes(
		placeholder("x", 1, 2, 3, 2),
		constI("p", []int64{4, 2}, 0, 0, 0, 0, 1, 1, 0, 0),
		node("mirror", "MirrorPad", []string{"x", "p"}, aS("mode", "REFLECT")),
		constF("pv", nil, 9),
		node("padv2", "PadV2", []string{"x", "p", "pv"}),
		constI("hw", []int64{2}, 1, 2),
		node("snap", "Snapshot", []string{"x"}), node("chk", "CheckNumerics", []string{"snap"}), node("pg", "PreventGradient", []string{"chk"}),
		node("gmax", "Max", []string{"pg", "hw"}),
		node("pwd", "PlaceholderWithDefault", []string{"x"}),
		constI("ax", nil, 3),
		node("cat", "Concat", []string{"ax", "pwd", "x"}, aI("N", 2)),
		constF("d", []int64{2}, 2, 4),
		node("div", "Div", []string{"x", "d"}),
		constF("bias", []int64{2}, 10, 20),
		node("nchw", "BiasAdd", []string{"x", "bias"}, aS("data_format", "NCHW")),
		constF("one", []int64{2}, 1, 1), constF("zero", []int64{2}, 0, 0),
		node("bn", "FusedBatchNormV2", []string{"x", "one", "zero", "zero", "one"}, aS("data_format", "NCHW"), aB("is_training", false), aF("epsilon", 0)),
	)
	_, out := importRun(t, b, []string{"mirror", "padv2", "gmax", "cat", "div", "nchw", "bn"}, x)
	if s := out["mirror"].Shape; !s.Equal(ir.Shape{1, 2, 5, 2}) {
		t.Fatalf("mirror shape %v", s)
	}
	m := out["mirror"].Data
	wantMirror := []float32{2, -2, 1, -1, 2, -2, 3, -3, 2, -2, 5, -5, 4, -4, 5, -5, 6, -6, 5, -5}
	for i := range wantMirror {
		if m[i] != wantMirror[i] {
			t.Fatalf("mirror %v, want %v", m, wantMirror)
		}
	}
	closeTo(t, "padv2", out["padv2"], []float32{9, 9, 1, -1, 2, -2, 3, -3, 9, 9, 9, 9, 4, -4, 5, -5, 6, -6, 9, 9}, ir.Shape{1, 2, 5, 2})
	closeTo(t, "gmax", out["gmax"], []float32{6, -1}, ir.Shape{1, 2})
	closeTo(t, "cat", out["cat"], []float32{1, -1, 1, -1, 2, -2, 2, -2, 3, -3, 3, -3, 4, -4, 4, -4, 5, -5, 5, -5, 6, -6, 6, -6}, ir.Shape{1, 2, 3, 4})
	closeTo(t, "div", out["div"], []float32{0.5, -0.25, 1, -0.5, 1.5, -0.75, 2, -1, 2.5, -1.25, 3, -1.5}, x.Shape)
	closeTo(t, "nchw", out["nchw"], []float32{11, 9, 12, 8, 13, 7, 24, 16, 25, 15, 26, 14}, x.Shape)
	closeTo(t, "bn", out["bn"], x.Data, x.Shape)
}
