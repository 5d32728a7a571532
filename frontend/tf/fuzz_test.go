package tf

import "testing"

// fuzzLimit bounds folded constants during fuzzing so that a tiny input cannot make the importer
// allocate gigabytes (a real graph may need up to MaxElements).
const fuzzLimit = 1 << 16

// fuzzSeeds are small encoded graphs and tensors covering the decoder's and importer's paths.
func fuzzSeeds() []pb {
	x := placeholder("x", -1, 4, 4, 2)
	return []pb{
		graphBytes(x, constFill("f", []int64{3, 3, 2, 2}, 0.5), node("c", "Conv2D", []string{"x", "f"}, aS("padding", "SAME"),
			aInts("strides", 1, 2, 2, 1)), node("p", "AvgPool", []string{"c"}, aS("padding", "SAME"), aInts("ksize", 1, 2, 2, 1),
			aInts("strides", 1, 2, 2, 1)), constI("hw", []int64{2}, 1, 2), node("m", "Mean", []string{"p", "hw"}),
			node("s", "Softmax", []string{"m"})),
		graphBytes(x, node("sh", "Shape", []string{"x"}), constI("b", []int64{1}, 0), constI("e", []int64{1}, 1),
			node("n", "StridedSlice", []string{"sh", "b", "e", "e"}, aI("shrink_axis_mask", 1)), constI("m1", nil, -1),
			node("pk", "Pack", []string{"n", "m1"}), node("r", "Reshape", []string{"x", "pk"}), constF("six", nil, 6),
			node("mn", "Minimum", []string{"r", "six"}), node("rl", "Relu", []string{"mn"})),
		graphBytes(placeholder("x", 2, 3), constF("w", []int64{3, 2}, 1, 2, 3, 4, 5, 6), node("y", "MatMul", []string{"x", "w"},
			aB("transpose_b", false)), constFill("b", []int64{2}, 1), node("z", "BiasAdd", []string{"y", "b"}),
			constI("a", nil, 1), node("am", "ArgMax", []string{"z", "a"})),
		tensorFloats([]int64{2, 2}, 1, 2, 3, 4),
		tensorInts([]int64{3}, -1, 0, 7),
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = LooksLikeGraphDef(b)
		if gd, err := Decode(b); err == nil {
			if g, err := importLimited(gd, Options{}, fuzzLimit); err == nil {
				if err := g.InferShapes(); err != nil {
					t.Fatalf("imported graph fails shape inference: %v", err)
				}
			}
		}
		if tn, err := DecodeTensor(b); err == nil {
			if v, err := tn.Float64s(); err == nil {
				if n, _ := tn.NumElements(); len(v) != n {
					t.Fatalf("Float64s gave %d values for shape %v", len(v), tn.Shape)
				}
			}
		}
	})
}

// TestFuzzSeedsImport makes sure the graph seeds exercise the importer, not just the decoder.
func TestFuzzSeedsImport(t *testing.T) {
	for i, s := range fuzzSeeds()[:3] {
		gd, err := Decode(s)
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if _, err := importLimited(gd, Options{}, fuzzLimit); err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}
