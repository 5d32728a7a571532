package ir

import (
	"slices"
	"testing"
)

// TestSelection: Slice (positive and negative steps, a whole axis, an empty result) and Gather
// (repeated indices, a scalar and a 2-D index) read the elements numpy's indexing reads, and
// out-of-range attributes are refused.
func TestSelection(t *testing.T) {
	x := Shape{2, 3, 4}
	at := func(i, j, k int) int { return (i*3+j)*4 + k }
	sel, out, err := Selection(Slice, Attrs{"starts": IntsAttr([]int{0, 2, 1}), "steps": IntsAttr([]int{1, -1, 2}), "sizes": IntsAttr([]int{2, 2, 2})}, x)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Equal(Shape{2, 2, 2}) || sel[0] != nil {
		t.Fatalf("slice: shape %v, selection %v", out, sel)
	}
	var want []int
	for i := 0; i < 2; i++ {
		for _, j := range []int{2, 1} {
			for _, k := range []int{1, 3} {
				want = append(want, at(i, j, k))
			}
		}
	}
	if got := SelectionIndex(x, sel); !slices.Equal(got, want) {
		t.Errorf("slice index %v, want %v", got, want)
	}
	sel, out, err = Selection(Gather, Attrs{"axis": IntAttr(1), "indices": IntsAttr([]int{2, 0, 2, 1}), "indices_shape": IntsAttr([]int{2, 2})}, x)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Equal(Shape{2, 2, 2, 4}) {
		t.Fatalf("gather shape %v", out)
	}
	want = want[:0]
	for i := 0; i < 2; i++ {
		for _, j := range []int{2, 0, 2, 1} {
			for k := 0; k < 4; k++ {
				want = append(want, at(i, j, k))
			}
		}
	}
	if got := SelectionIndex(x, sel); !slices.Equal(got, want) {
		t.Errorf("gather index %v, want %v", got, want)
	}
	if _, out, err = Selection(Gather, Attrs{"axis": IntAttr(0), "indices": IntsAttr([]int{1}), "indices_shape": IntsAttr(nil)}, x); err != nil || !out.Equal(Shape{3, 4}) {
		t.Errorf("scalar gather: %v, %v", out, err)
	}
	if _, out, err = Selection(Slice, Attrs{"starts": IntsAttr([]int{0, 0, 4}), "steps": IntsAttr([]int{1, 1, 1}), "sizes": IntsAttr([]int{2, 3, 0})}, x); err != nil || out.Size() != 0 {
		t.Errorf("empty slice: %v, %v", out, err)
	}
	for name, a := range map[string]Attrs{
		"slice past the end":  {"starts": IntsAttr([]int{0, 0, 2}), "steps": IntsAttr([]int{1, 1, 1}), "sizes": IntsAttr([]int{2, 3, 3})},
		"slice step 0":        {"starts": IntsAttr([]int{0, 0, 0}), "steps": IntsAttr([]int{1, 0, 1}), "sizes": IntsAttr([]int{2, 3, 4})},
		"slice rank mismatch": {"starts": IntsAttr([]int{0, 0}), "steps": IntsAttr([]int{1, 1}), "sizes": IntsAttr([]int{2, 3})},
	} {
		if _, _, err := Selection(Slice, a, x); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
	if _, _, err := Selection(Gather, Attrs{"axis": IntAttr(2), "indices": IntsAttr([]int{4}), "indices_shape": IntsAttr([]int{1})}, x); err == nil {
		t.Error("gather index 4 of 4 accepted")
	}
	if _, _, err := Selection(Gather, Attrs{"axis": IntAttr(2), "indices": IntsAttr([]int{1, 2}), "indices_shape": IntsAttr([]int{3})}, x); err == nil {
		t.Error("gather with 2 indices for shape [3] accepted")
	}
}
