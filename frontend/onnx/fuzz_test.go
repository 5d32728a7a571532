package onnx

import "testing"

// fuzzLimit bounds folded constants during fuzzing, so that a tiny input cannot make the
// importer allocate gigabytes (a legitimate model may need up to MaxElements).
const fuzzLimit = 1 << 16

// fuzzSeeds are small encoded models and tensors covering the decoder's and importer's paths.
// More seeds (legacy opsets, subgraph attributes, external data) live in testdata/fuzz/FuzzDecode.
func fuzzSeeds() []pb {
	return []pb{
		convNetModel(13),
		convNetModel(6),
		modelBytes(9, graphSpec{
			nodes: []pb{
				node("Shape", "shape", []string{"x"}, []string{"s"}),
				node("Gather", "gather", []string{"s", "zero"}, []string{"n"}),
				node("Unsqueeze", "unsq", []string{"n"}, []string{"n1"}, aInts("axes", 0)),
				node("Concat", "cat", []string{"n1", "minus1"}, []string{"shape2"}, aInt("axis", 0)),
				node("Reshape", "reshape", []string{"x", "shape2"}, []string{"y"}),
				node("Softmax", "sm", []string{"y"}, []string{"z"}),
			},
			inits:   []pb{tensorI64("zero", nil, []int64{0}), ints1("minus1", -1)},
			inputs:  []pb{valueInfo("x", Float, "N", 2, 3)},
			outputs: []pb{valueInfo("z", Float)},
		}),
		tensorF("t", []int64{2, 2}, []float32{1, 2, 3, 4}),
		tensorI64("i", []int64{3}, []int64{-1, 0, 7}),
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := Decode(b); err == nil {
			if g, err := importLimited(m, Options{}, fuzzLimit); err == nil {
				if err := g.InferShapes(); err != nil {
					t.Fatalf("imported graph fails shape inference: %v", err)
				}
			}
		}
		if tn, err := DecodeTensor(b); err == nil {
			f32, ferr := tn.Float32s()
			if ferr == nil && len(f32) != tn.NumElements() {
				t.Fatalf("Float32s gave %d values for dims %v", len(f32), tn.Dims)
			}
			i64, ierr := tn.Int64s()
			if ierr == nil && len(i64) != tn.NumElements() {
				t.Fatalf("Int64s gave %d values for dims %v", len(i64), tn.Dims)
			}
		}
	})
}
