package onnx

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

func fconst(shape ir.Shape, v ...float32) *constant {
	return &constant{dtype: Float, shape: shape, f: v}
}

func iconst(shape ir.Shape, v ...int64) *constant {
	return &constant{dtype: Int64, shape: shape, i: v}
}

func TestFoldBinary(t *testing.T) {
	got, err := foldBinary("Sub", fconst(ir.Shape{2, 1}, 10, 20), fconst(ir.Shape{3}, 1, 2, 3), MaxElements)
	if err != nil || !got.shape.Equal(ir.Shape{2, 3}) || !reflect.DeepEqual(got.f, []float32{9, 8, 7, 19, 18, 17}) {
		t.Fatalf("float sub: %+v %v", got, err)
	}
	got, err = foldBinary("Div", iconst(ir.Shape{3}, 7, -7, 9), iconst(ir.Shape{}, 2), MaxElements)
	if err != nil || !reflect.DeepEqual(got.i, []int64{3, -3, 4}) {
		t.Fatalf("int div truncates toward zero: %+v %v", got, err)
	}
	got, err = foldBinary("Mul", iconst(ir.Shape{2}, 3, 4), iconst(ir.Shape{2}, 5, 6), MaxElements)
	if err != nil || !reflect.DeepEqual(got.i, []int64{15, 24}) {
		t.Fatalf("int mul: %+v %v", got, err)
	}
	if _, err := foldBinary("Div", iconst(ir.Shape{1}, 1), iconst(ir.Shape{1}, 0), MaxElements); !errors.Is(err, errDivZero) {
		t.Errorf("division by zero: %v", err)
	}
	if _, err := foldBinary("Add", iconst(ir.Shape{1}, 1), fconst(ir.Shape{1}, 1), MaxElements); err == nil {
		t.Error("mixed types accepted")
	}
	if _, err := foldBinary("Add", fconst(ir.Shape{2}, 1, 2), fconst(ir.Shape{3}, 1, 2, 3), MaxElements); err == nil {
		t.Error("incompatible shapes accepted")
	}
	if _, err := foldBinary("Add", fconst(ir.Shape{300, 1}, make([]float32, 300)...), fconst(ir.Shape{300}, make([]float32, 300)...), 1000); err == nil || !strings.Contains(err.Error(), "more than 1000") {
		t.Errorf("size limit: %v", err)
	}
}

func TestCastConst(t *testing.T) {
	f := fconst(ir.Shape{5}, 300.7, -1.5, 0, float32(math.NaN()), 2)
	for _, c := range []struct {
		to   DataType
		want []int64
	}{
		{Int8, []int64{44, -1, 0, 0, 2}},
		{Uint8, []int64{44, 255, 0, 0, 2}},
		{Int64, []int64{300, -1, 0, 0, 2}},
		{Bool, []int64{1, 1, 0, 0, 1}},
	} {
		got, err := castConst(f, c.to)
		if err != nil || got.dtype != c.to || !reflect.DeepEqual(got.i, c.want) {
			t.Errorf("cast to %s: %+v %v", c.to, got, err)
		}
	}
	got, err := castConst(iconst(ir.Shape{2}, -3, 1<<40), Float)
	if err != nil || !reflect.DeepEqual(got.f, []float32{-3, 1 << 40}) {
		t.Errorf("int to float: %+v %v", got, err)
	}
	got, err = castConst(iconst(ir.Shape{1}, 70000), Int16)
	if err != nil || got.i[0] != 4464 {
		t.Errorf("int64 to int16 wraps: %+v %v", got, err)
	}
	if _, err := castConst(f, String); !errors.Is(err, ErrUnsupported) {
		t.Errorf("cast to string: %v", err)
	}
}

func TestDataMovement(t *testing.T) {
	x := []int64{0, 1, 2, 3, 4, 5} // shape [2,3]
	if got := transposeData(x, ir.Shape{2, 3}, []int{1, 0}); !reflect.DeepEqual(got, []int64{0, 3, 1, 4, 2, 5}) {
		t.Errorf("transpose %v", got)
	}
	if got := gatherData(x, ir.Shape{2, 3}, 1, []int{2, 0}, ir.Shape{2, 2}); !reflect.DeepEqual(got, []int64{2, 0, 5, 3}) {
		t.Errorf("gather %v", got)
	}
	if got := concatData([][]int64{x, {9, 9}}, []ir.Shape{{2, 3}, {2, 1}}, 1, ir.Shape{2, 4}); !reflect.DeepEqual(got, []int64{0, 1, 2, 9, 3, 4, 5, 9}) {
		t.Errorf("concat %v", got)
	}
	// Rows 1..0 reversed, every second column: x[::-1, ::2].
	if got := sliceData(x, ir.Shape{2, 3}, []int{1, 0}, []int{-1, 2}, ir.Shape{2, 2}); !reflect.DeepEqual(got, []int64{3, 5, 0, 2}) {
		t.Errorf("slice %v", got)
	}
}

// Folding through the importer: every value below is known at import time and the result feeds
// a Mul, so it appears in the graph as a float constant.
func TestImportFoldChain(t *testing.T) {
	b := modelBytes(15, graphSpec{
		nodes: []pb{
			node("Shape", "sh", []string{"x"}, []string{"s"}, aInt("start", -2)),
			node("Cast", "c", []string{"s"}, []string{"sf"}, aInt("to", int64(Float))),
			node("Constant", "k", nil, []string{"k"}, aTensor("value", tensorF("", []int64{2, 3}, []float32{1, 2, 3, 4, 5, 6}))),
			node("Constant", "ix", nil, []string{"ix"}, aTensor("value", tensorI64("", []int64{1, 2}, []int64{-1, 0}))),
			node("Gather", "g", []string{"k", "ix"}, []string{"kg"}, aInt("axis", 1)),
			node("Constant", "st", nil, []string{"st"}, aInts("value_ints", -1)),
			node("Constant", "en", nil, []string{"en"}, aInts("value_ints", math.MinInt64)),
			node("Constant", "ax", nil, []string{"ax"}, aInts("value_ints", 2)),
			node("Constant", "sp", nil, []string{"sp"}, aInts("value_ints", -1)),
			node("Slice", "sl", []string{"kg", "st", "en", "ax", "sp"}, []string{"ks"}),
			node("Squeeze", "sq", []string{"ks"}, []string{"kq"}, aInts("axes", 1)),
			node("Relu", "r", []string{"kq"}, []string{"kr"}),
			node("Flatten", "f", []string{"kr"}, []string{"kf"}, aInt("axis", 0)),
			node("Reshape", "rs", []string{"kf", "four"}, []string{"k4"}),
			node("Add", "a", []string{"k4", "sf"}, []string{"k5"}),
			node("Mul", "m", []string{"x", "k5"}, []string{"y"}),
		},
		inits:   []pb{ints1("four", 2, 2)},
		inputs:  []pb{valueInfo("x", Float, 1, 2, 2)},
		outputs: []pb{valueInfo("y", Float)},
	})
	g := mustImport(t, b, Options{})
	if len(g.Nodes) != 1 || g.Nodes[0].Op != ir.Mul {
		t.Fatalf("nodes %v", g.Nodes)
	}
	// k[:, [-1, 0]] = [[3,1],[6,4]] as [2,1,2]; reversed along axis 2 -> [[1,3],[4,6]];
	// squeezed and reshaped to [2,2]; plus Shape(x)[-2:] = [2,2] as float.
	k5 := g.Consts["k5"]
	if k5 == nil || !k5.Shape.Equal(ir.Shape{2, 2}) || !reflect.DeepEqual(k5.Data, []float32{3, 5, 6, 8}) {
		t.Fatalf("folded constant %+v", k5)
	}
}
