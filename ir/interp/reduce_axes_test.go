package interp

import (
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

// TestReduceAxes checks ReduceSum/ReduceMean/ReduceMax over non-adjacent axes of a [2,3,2]
// tensor holding 0..11, with and without keepdims.
func TestReduceAxes(t *testing.T) {
	x := seq(12, 0, 1)
	for _, c := range []struct {
		op    ir.Op
		axes  []int
		keep  int
		shape ir.Shape
		want  []float32
	}{
		{ir.ReduceSum, []int{0, 2}, 1, ir.Shape{1, 3, 1}, []float32{0 + 1 + 6 + 7, 2 + 3 + 8 + 9, 4 + 5 + 10 + 11}},
		{ir.ReduceMean, []int{0, 2}, 0, ir.Shape{3}, []float32{3.5, 5.5, 7.5}},
		{ir.ReduceMax, []int{1}, 0, ir.Shape{2, 2}, []float32{4, 5, 10, 11}},
		{ir.ReduceMax, []int{0, 1, 2}, 0, ir.Shape{}, []float32{11}},
	} {
		b := newBuilder().input("x", ir.Shape{2, 3, 2}, x).
			node(c.op, ir.Attrs{"axes": ir.IntsAttr(c.axes), "keepdims": ir.IntAttr(c.keep)}, "y", "x").outputs("y")
		got := b.run(t)
		if !got.Shape.Equal(c.shape) || !slices.Equal(got.Data, c.want) {
			t.Errorf("%s %v keepdims=%d: %v %v, want %v %v", c.op, c.axes, c.keep, got.Shape, got.Data, c.shape, c.want)
		}
	}
}
