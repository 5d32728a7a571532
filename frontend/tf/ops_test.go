package tf

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
)

// The tests in this file build small graphs with the encoder of encode_test.go, import them,
// run them through the float interpreter and compare with direct NHWC reference loops written
// from TensorFlow's op definitions.

func randTensor(r *rand.Rand, shape ...int) *ir.Tensor {
	t := ir.NewTensor(ir.Shape(shape))
	for i := range t.Data {
		t.Data[i] = float32(r.NormFloat64())
	}
	return t
}

func dims64(s ir.Shape) []int64 {
	out := make([]int64, len(s))
	for i, d := range s {
		out[i] = int64(d)
	}
	return out
}

func constT(name string, t *ir.Tensor) pb { return constF(name, dims64(t.Shape), t.Data...) }

// importRun imports the graph with the given outputs and runs it on x fed to placeholder "x".
func importRun(t *testing.T, b pb, outputs []string, x *ir.Tensor) (*ir.Graph, map[string]*ir.Tensor) {
	t.Helper()
	gd, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	g, err := Import(gd, Options{Outputs: outputs})
	if err != nil {
		t.Fatal(err)
	}
	out, err := interp.Run(g, map[string]*ir.Tensor{"x": x})
	if err != nil {
		t.Fatal(err)
	}
	return g, out
}

func closeTo(t *testing.T, what string, got *ir.Tensor, want []float32, shape ir.Shape) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: no output", what)
	}
	if !got.Shape.Equal(shape) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape, shape)
	}
	for i := range want {
		if d := math.Abs(float64(got.Data[i] - want[i])); !(d <= 1e-4*(1+math.Abs(float64(want[i])))) {
			t.Fatalf("%s: element %d is %g, want %g", what, i, got.Data[i], want[i])
		}
	}
}

// nhwc indexes an NHWC tensor.
func at(t *ir.Tensor, i ...int) float32 {
	idx := 0
	for k, d := range t.Shape {
		idx = idx*d + i[k]
	}
	return t.Data[idx]
}

// tfPads returns TF's SAME padding (odd element at the end) or zero for VALID.
func tfPads(same bool, in, k, s, d int) (before, out int) {
	eff := (k-1)*d + 1
	if !same {
		return 0, (in-eff)/s + 1
	}
	out = (in + s - 1) / s
	return max(0, (out-1)*s+eff-in) / 2, out
}

// refConv is TF Conv2D / DepthwiseConv2dNative on NHWC x with HWIO (or HW C mult) filter f and
// explicit begin pads.
func refConv(x, f *ir.Tensor, depthwise bool, sh, sw, dh, dw, ph, pw, oh, ow int) *ir.Tensor {
	n, h, w, c := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	kh, kw, fo := f.Shape[0], f.Shape[1], f.Shape[3]
	oc := fo
	if depthwise {
		oc = c * fo
	}
	y := ir.NewTensor(ir.Shape{n, oh, ow, oc})
	for b := 0; b < n; b++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for o := 0; o < oc; o++ {
					var acc float64
					for a := 0; a < kh; a++ {
						for e := 0; e < kw; e++ {
							hi, wi := i*sh+a*dh-ph, j*sw+e*dw-pw
							if hi < 0 || hi >= h || wi < 0 || wi >= w {
								continue
							}
							if depthwise {
								ci, m := o/fo, o%fo
								acc += float64(at(x, b, hi, wi, ci)) * float64(at(f, a, e, ci, m))
								continue
							}
							for ci := 0; ci < c; ci++ {
								acc += float64(at(x, b, hi, wi, ci)) * float64(at(f, a, e, ci, o))
							}
						}
					}
					y.Data[((b*oh+i)*ow+j)*oc+o] = float32(acc)
				}
			}
		}
	}
	return y
}

// refPool is TF MaxPool / AvgPool on NHWC: padding never takes part (SAME averages divide by the
// number of real elements in the window).
func refPool(x *ir.Tensor, isMax bool, kh, kw, sh, sw, ph, pw, oh, ow int) *ir.Tensor {
	n, h, w, c := x.Shape[0], x.Shape[1], x.Shape[2], x.Shape[3]
	y := ir.NewTensor(ir.Shape{n, oh, ow, c})
	for b := 0; b < n; b++ {
		for i := 0; i < oh; i++ {
			for j := 0; j < ow; j++ {
				for ch := 0; ch < c; ch++ {
					acc, cnt := 0.0, 0
					best := math.Inf(-1)
					for a := 0; a < kh; a++ {
						for e := 0; e < kw; e++ {
							hi, wi := i*sh+a-ph, j*sw+e-pw
							if hi < 0 || hi >= h || wi < 0 || wi >= w {
								continue
							}
							v := float64(at(x, b, hi, wi, ch))
							acc += v
							cnt++
							best = math.Max(best, v)
						}
					}
					r := acc / float64(cnt)
					if isMax {
						r = best
					}
					y.Data[((b*oh+i)*ow+j)*c+ch] = float32(r)
				}
			}
		}
	}
	return y
}

func TestConvVariants(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name            string
		depthwise, same bool
		x, f            []int
		sh, sw, dh, dw  int
		explicit        []int64 // NHWC explicit_paddings, or nil
	}{
		{name: "same stride 2", same: true, x: []int{2, 7, 6, 3}, f: []int{3, 2, 3, 4}, sh: 2, sw: 2, dh: 1, dw: 1},
		{name: "valid stride (2,1)", x: []int{1, 6, 5, 2}, f: []int{2, 3, 2, 3}, sh: 2, sw: 1, dh: 1, dw: 1},
		{name: "same dilated", same: true, x: []int{1, 8, 7, 2}, f: []int{3, 3, 2, 2}, sh: 1, sw: 1, dh: 2, dw: 3},
		{name: "explicit", x: []int{1, 5, 5, 2}, f: []int{3, 3, 2, 2}, sh: 1, sw: 2, dh: 1, dw: 1, explicit: []int64{0, 0, 1, 2, 0, 1, 0, 0}},
		{name: "depthwise same stride 2", depthwise: true, same: true, x: []int{1, 7, 7, 3}, f: []int{3, 3, 3, 2}, sh: 2, sw: 2, dh: 1, dw: 1},
		{name: "depthwise valid", depthwise: true, x: []int{2, 5, 6, 4}, f: []int{2, 2, 4, 1}, sh: 1, sw: 1, dh: 1, dw: 1},
	}
	for _, c := range cases {
		for _, format := range []string{"NHWC", "NCHW"} {
			if format == "NCHW" && c.explicit != nil {
				continue
			}
			t.Run(c.name+" "+format, func(t *testing.T) {
				x := randTensor(r, c.x...)
				f := randTensor(r, c.f...)
				op, padding := "Conv2D", "VALID"
				if c.depthwise {
					op = "DepthwiseConv2dNative"
				}
				if c.same {
					padding = "SAME"
				}
				ph, oh := tfPads(c.same, c.x[1], c.f[0], c.sh, c.dh)
				pw, ow := tfPads(c.same, c.x[2], c.f[1], c.sw, c.dw)
				if c.explicit != nil {
					padding = "EXPLICIT"
					ph, pw = int(c.explicit[2]), int(c.explicit[4])
					oh = (c.x[1]+int(c.explicit[2]+c.explicit[3])-((c.f[0]-1)*c.dh+1))/c.sh + 1
					ow = (c.x[2]+int(c.explicit[4]+c.explicit[5])-((c.f[1]-1)*c.dw+1))/c.sw + 1
				}
				want := refConv(x, f, c.depthwise, c.sh, c.sw, c.dh, c.dw, ph, pw, oh, ow)
				strides := []int64{1, int64(c.sh), int64(c.sw), 1}
				dil := []int64{1, int64(c.dh), int64(c.dw), 1}
				feed := x
				if format == "NCHW" {
					strides = []int64{1, 1, int64(c.sh), int64(c.sw)}
					dil = []int64{1, 1, int64(c.dh), int64(c.dw)}
					feed = transposeT(x, 0, 3, 1, 2)
					want = transposeT(want, 0, 3, 1, 2)
				}
				attrs := []pb{aS("padding", padding), aInts("strides", strides...), aInts("dilations", dil...), aS("data_format", format)}
				if c.explicit != nil {
					attrs = append(attrs, aInts("explicit_paddings", c.explicit...))
				}
				b := graphBytes(placeholder("x", dims64(feed.Shape)...), constT("f", f), node("y", op, []string{"x", "f"}, attrs...))
				g, out := importRun(t, b, []string{"y"}, feed)
				closeTo(t, "y", out["y"], want.Data, want.Shape)
				transposes := 0
				for _, n := range g.Nodes {
					if n.Op == ir.Transpose {
						transposes++
					}
				}
				if wantT := map[string]int{"NHWC": 2, "NCHW": 0}[format]; transposes != wantT {
					t.Errorf("%d transposes, want %d (in and out of NCHW)", transposes, wantT)
				}
			})
		}
	}
}

// transposeT transposes an ir.Tensor (test helper on top of transposeConst).
func transposeT(x *ir.Tensor, perm ...int) *ir.Tensor {
	c := &tconst{dtype: DTFloat, shape: x.Shape, v: make([]float64, len(x.Data))}
	for i, v := range x.Data {
		c.v[i] = float64(v)
	}
	return transposeConst(c, perm).tensor()
}

func TestPools(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		op             string
		same           bool
		x              []int
		kh, kw, sh, sw int
	}{
		{"AvgPool", true, []int{1, 5, 5, 2}, 3, 3, 2, 2},
		{"AvgPool", true, []int{2, 6, 7, 3}, 2, 3, 2, 2},
		{"AvgPool", false, []int{1, 6, 6, 2}, 2, 2, 2, 2},
		{"MaxPool", true, []int{1, 5, 6, 2}, 3, 3, 2, 2},
		{"MaxPool", false, []int{1, 7, 7, 1}, 3, 2, 2, 1},
		{"MaxPoolV2", true, []int{1, 6, 5, 2}, 2, 3, 2, 2},
	} {
		t.Run(fmt.Sprintf("%s same=%v %v k%dx%d s%dx%d", c.op, c.same, c.x, c.kh, c.kw, c.sh, c.sw), func(t *testing.T) {
			x := randTensor(r, c.x...)
			padding := "VALID"
			if c.same {
				padding = "SAME"
			}
			ph, oh := tfPads(c.same, c.x[1], c.kh, c.sh, 1)
			pw, ow := tfPads(c.same, c.x[2], c.kw, c.sw, 1)
			want := refPool(x, c.op != "AvgPool", c.kh, c.kw, c.sh, c.sw, ph, pw, oh, ow)
			b := graphBytes(placeholder("x", dims64(x.Shape)...), node("y", c.op, []string{"x"}, aS("padding", padding),
				aInts("ksize", 1, int64(c.kh), int64(c.kw), 1), aInts("strides", 1, int64(c.sh), int64(c.sw), 1)))
			if c.op == "MaxPoolV2" {
				b = graphBytes(placeholder("x", dims64(x.Shape)...), constI("k", []int64{4}, 1, int64(c.kh), int64(c.kw), 1),
					constI("s", []int64{4}, 1, int64(c.sh), int64(c.sw), 1), node("y", c.op, []string{"x", "k", "s"}, aS("padding", padding)))
			}
			_, out := importRun(t, b, []string{"y"}, x)
			closeTo(t, "y", out["y"], want.Data, want.Shape)
		})
	}
}

// TestLayoutChain runs NHWC ops that the importer keeps in NCHW (bias, batch norm, Relu6 as
// Minimum/Maximum, per-channel Maximum, Pad, ConcatV2, spatial Mean) and a flatten through a
// Shape/StridedSlice/Pack chain, then the classifier head.
func TestLayoutChain(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	x := randTensor(r, 2, 4, 5, 3)
	f := randTensor(r, 1, 1, 3, 3)
	bias := randTensor(r, 3)
	scale, offset, mean := randTensor(r, 3), randTensor(r, 3), randTensor(r, 3)
	variance := ir.NewTensor(ir.Shape{3})
	for i := range variance.Data {
		variance.Data[i] = 0.5 + float32(i)
	}
	floor := randTensor(r, 3)
	w := randTensor(r, 2*6*5*6/2, 4)
	b := graphBytes(
		placeholder("x", 2, 4, 5, 3),
		constT("f", f), constT("bias", bias),
		node("conv", "Conv2D", []string{"x", "f"}, aS("padding", "SAME"), aInts("strides", 1, 1, 1, 1)),
		node("biased", "BiasAdd", []string{"conv", "bias"}),
		constT("scale", scale), constT("offset", offset), constT("mean", mean), constT("var", variance),
		node("bn", "FusedBatchNormV3", []string{"biased", "scale", "offset", "mean", "var"}, aF("epsilon", 0.01), aB("is_training", false)),
		constF("six", nil, 6), constF("zero", nil, 0),
		node("relu", "Relu", []string{"bn"}), node("min6", "Minimum", []string{"relu", "six"}), node("relu6", "Maximum", []string{"min6", "zero"}),
		constT("floor", floor), node("floored", "Maximum", []string{"bn", "floor"}),
		constI("paddings", []int64{4, 2}, 0, 0, 1, 1, 0, 0, 0, 0),
		node("padded", "Pad", []string{"floored", "paddings"}),
		node("padded6", "Pad", []string{"relu6", "paddings"}),
		constI("axis", nil, 3),
		node("cat", "ConcatV2", []string{"padded", "padded6", "axis"}, aI("N", 2)),
		constI("hw", []int64{2}, 1, 2),
		node("gap", "Mean", []string{"cat", "hw"}, aB("keep_dims", false)),
		node("shape", "Shape", []string{"cat"}),
		constI("b0", []int64{1}, 0), constI("b1", []int64{1}, 1), constI("one", []int64{1}, 1),
		node("n", "StridedSlice", []string{"shape", "b0", "b1", "one"}, aI("shrink_axis_mask", 1)),
		constI("m1", nil, -1),
		node("flatshape", "Pack", []string{"n", "m1"}, aI("axis", 0)),
		node("flat", "Reshape", []string{"cat", "flatshape"}),
		constT("w", w),
		node("logits", "MatMul", []string{"flat", "w"}),
	)
	g, out := importRun(t, b, []string{"gap", "logits", "relu6"}, x)

	// Reference, NHWC.
	bn := ir.NewTensor(ir.Shape{2, 4, 5, 3})
	for i := range bn.Data {
		p, ch := i/3, i%3
		var acc float64
		for ci := 0; ci < 3; ci++ {
			acc += float64(x.Data[p*3+ci]) * float64(f.Data[ci*3+ch])
		}
		acc += float64(bias.Data[ch])
		bn.Data[i] = float32((acc-float64(mean.Data[ch]))/math.Sqrt(float64(variance.Data[ch])+0.01)*float64(scale.Data[ch]) + float64(offset.Data[ch]))
	}
	relu6 := make([]float32, len(bn.Data))
	floored := make([]float32, len(bn.Data))
	for i, v := range bn.Data {
		relu6[i] = min(max(v, 0), 6)
		floored[i] = max(v, floor.Data[i%3])
	}
	closeTo(t, "relu6", out["relu6"], relu6, ir.Shape{2, 4, 5, 3})
	// cat: [2,6,5,6]: H padded by one row each side, channels floored then relu6.
	cat := make([]float32, 2*6*5*6)
	for n := 0; n < 2; n++ {
		for h := 0; h < 6; h++ {
			for wi := 0; wi < 5; wi++ {
				for c := 0; c < 6; c++ {
					var v float32
					if h >= 1 && h <= 4 {
						src := ((n*4+h-1)*5+wi)*3 + c%3
						if c < 3 {
							v = floored[src]
						} else {
							v = relu6[src]
						}
					}
					cat[((n*6+h)*5+wi)*6+c] = v
				}
			}
		}
	}
	gap := make([]float32, 2*6)
	for n := 0; n < 2; n++ {
		for c := 0; c < 6; c++ {
			var s float64
			for p := 0; p < 30; p++ {
				s += float64(cat[(n*30+p)*6+c])
			}
			gap[n*6+c] = float32(s / 30)
		}
	}
	closeTo(t, "gap", out["gap"], gap, ir.Shape{2, 6})
	logits := make([]float32, 2*4)
	for n := 0; n < 2; n++ {
		for o := 0; o < 4; o++ {
			var s float64
			for k := 0; k < 180; k++ {
				s += float64(cat[n*180+k]) * float64(w.Data[k*4+o])
			}
			logits[n*4+o] = float32(s)
		}
	}
	closeTo(t, "logits", out["logits"], logits, ir.Shape{2, 4})

	ops := map[ir.Op]int{}
	for _, n := range g.Nodes {
		ops[n.Op]++
	}
	// One transpose into NCHW for the conv, one out of it for the flatten, one for relu6.
	if ops[ir.Transpose] != 3 || ops[ir.BatchNormalization] != 1 || ops[ir.GlobalAveragePool] != 1 {
		t.Errorf("unexpected lowering %v", ops)
	}
	if ops[ir.Clip] != 1 || ops[ir.Relu] != 1 {
		t.Errorf("Relu+Minimum+Maximum should fuse into one Clip and the per-channel Maximum use one Relu: %v", ops)
	}
}

// TestElementwiseAndShapes covers the remaining runtime ops against direct formulas.
func TestElementwiseAndShapes(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	x := randTensor(r, 2, 3, 4)
	c := randTensor(r, 4)
	for i := range c.Data {
		c.Data[i] = 1 + float32(i) // a safe divisor
	}
	m := randTensor(r, 5, 4)
	b := graphBytes(
		placeholder("x", 2, 3, 4),
		constT("c", c),
		node("tanh", "Tanh", []string{"x"}),
		node("neg", "Neg", []string{"x"}),
		node("div", "RealDiv", []string{"x", "c"}),
		node("sub", "Sub", []string{"c", "x"}),
		node("sq", "SquaredDifference", []string{"x", "c"}),
		node("mul", "Mul", []string{"x", "tanh"}),
		node("sig", "Sigmoid", []string{"x"}),
		node("lrelu", "LeakyRelu", []string{"x"}, aF("alpha", 0.1)),
		node("r6", "Relu6", []string{"x"}),
		constI("perm", []int64{3}, 2, 0, 1),
		node("tr", "Transpose", []string{"x", "perm"}),
		constI("ax1", []int64{1}, 1),
		node("sum", "Sum", []string{"x", "ax1"}, aB("keep_dims", true)),
		node("mean0", "Mean", []string{"tr", "ax1"}),
		constI("d0", nil, 0),
		node("exp", "ExpandDims", []string{"x", "d0"}),
		node("sqz", "Squeeze", []string{"exp"}, aInts("squeeze_dims", 0)),
		constI("shape2", []int64{2}, 6, 4),
		node("x2", "Reshape", []string{"x", "shape2"}),
		constT("m", m),
		node("mmT", "MatMul", []string{"x2", "m"}, aB("transpose_b", true)),
		node("mmTA", "MatMul", []string{"mmT", "x2"}, aB("transpose_a", true)),
		constI("am", nil, -1),
		node("argmax", "ArgMax", []string{"x", "am"}, aType("output_type", DTInt64)),
		node("softmax", "Softmax", []string{"tr"}),
		constI("six", nil, 6),
		node("sixf", "Cast", []string{"six"}, aType("SrcT", DTInt32), aType("DstT", DTFloat)),
		node("capped", "Minimum", []string{"x", "sixf"}),
		node("stack", "Pack", []string{"x", "neg"}, aI("axis", 1)),
		node("addn", "AddN", []string{"x", "neg", "x"}),
		node("meankd", "Mean", []string{"x", "ax1"}, aB("keep_dims", true)),
		constI("ax0", nil, 0),
		node("mean2", "Mean", []string{"x2", "ax0"}),
	)
	outs := []string{"tanh", "neg", "div", "sub", "sq", "mul", "sig", "lrelu", "r6", "tr", "sum", "mean0", "sqz", "mmT", "mmTA", "argmax", "softmax", "capped", "stack", "addn", "meankd", "mean2"}
	_, out := importRun(t, b, outs, x)
	ew := func(name string, f func(v float32, i int) float64) {
		t.Helper()
		want := make([]float32, len(x.Data))
		for i, v := range x.Data {
			want[i] = float32(f(v, i))
		}
		closeTo(t, name, out[name], want, x.Shape)
	}
	ew("tanh", func(v float32, _ int) float64 { return math.Tanh(float64(v)) })
	ew("neg", func(v float32, _ int) float64 { return -float64(v) })
	ew("div", func(v float32, i int) float64 { return float64(v) / float64(c.Data[i%4]) })
	ew("sub", func(v float32, i int) float64 { return float64(c.Data[i%4]) - float64(v) })
	ew("sq", func(v float32, i int) float64 { d := float64(v) - float64(c.Data[i%4]); return d * d })
	ew("mul", func(v float32, _ int) float64 { return float64(v) * math.Tanh(float64(v)) })
	ew("sig", func(v float32, _ int) float64 { return 1 / (1 + math.Exp(-float64(v))) })
	ew("lrelu", func(v float32, _ int) float64 { return math.Max(float64(v), 0.1*float64(v)) })
	ew("r6", func(v float32, _ int) float64 { return math.Min(math.Max(float64(v), 0), 6) })
	ew("capped", func(v float32, _ int) float64 { return math.Min(float64(v), 6) })
	ew("sqz", func(v float32, _ int) float64 { return float64(v) })
	ew("addn", func(v float32, _ int) float64 { return float64(v) })
	tr := transposeT(x, 2, 0, 1)
	closeTo(t, "tr", out["tr"], tr.Data, tr.Shape)
	sum := make([]float32, 2*4)
	for n := 0; n < 2; n++ {
		for k := 0; k < 4; k++ {
			for j := 0; j < 3; j++ {
				sum[n*4+k] += at(x, n, j, k)
			}
		}
	}
	closeTo(t, "sum", out["sum"], sum, ir.Shape{2, 1, 4})
	meankd := make([]float32, len(sum))
	for i, v := range sum {
		meankd[i] = v / 3
	}
	closeTo(t, "meankd", out["meankd"], meankd, ir.Shape{2, 1, 4})
	mean2 := make([]float32, 4)
	for i, v := range x.Data {
		mean2[i%4] += v / 6
	}
	closeTo(t, "mean2", out["mean2"], mean2, ir.Shape{4})
	mean0 := make([]float32, 4*3) // mean over axis 1 (the old batch) of tr [4,2,3]
	for k := 0; k < 4; k++ {
		for j := 0; j < 3; j++ {
			mean0[k*3+j] = (at(x, 0, j, k) + at(x, 1, j, k)) / 2
		}
	}
	closeTo(t, "mean0", out["mean0"], mean0, ir.Shape{4, 3})
	mmT := make([]float32, 6*5)
	for i := 0; i < 6; i++ {
		for j := 0; j < 5; j++ {
			var s float32
			for k := 0; k < 4; k++ {
				s += x.Data[i*4+k] * m.Data[j*4+k]
			}
			mmT[i*5+j] = s
		}
	}
	closeTo(t, "mmT", out["mmT"], mmT, ir.Shape{6, 5})
	mmTA := make([]float32, 5*4)
	for i := 0; i < 5; i++ {
		for j := 0; j < 4; j++ {
			var s float32
			for k := 0; k < 6; k++ {
				s += mmT[k*5+i] * x.Data[k*4+j]
			}
			mmTA[i*4+j] = s
		}
	}
	closeTo(t, "mmTA", out["mmTA"], mmTA, ir.Shape{5, 4})
	am := make([]float32, 6)
	for i := range am {
		am[i] = float32(argmax(x.Data[i*4 : i*4+4]))
	}
	closeTo(t, "argmax", out["argmax"], am, ir.Shape{2, 3})
	sm := make([]float32, len(tr.Data))
	for i := 0; i < len(tr.Data); i += 3 {
		var z float64
		for k := 0; k < 3; k++ {
			z += math.Exp(float64(tr.Data[i+k]))
		}
		for k := 0; k < 3; k++ {
			sm[i+k] = float32(math.Exp(float64(tr.Data[i+k])) / z)
		}
	}
	closeTo(t, "softmax", out["softmax"], sm, tr.Shape)
	stack := make([]float32, 0, 48)
	for n := 0; n < 2; n++ {
		stack = append(stack, x.Data[n*12:n*12+12]...)
		for _, v := range x.Data[n*12 : n*12+12] {
			stack = append(stack, -v)
		}
	}
	closeTo(t, "stack", out["stack"], stack, ir.Shape{2, 2, 3, 4})
}

func TestImportErrors(t *testing.T) {
	x := placeholder("x", 1, 4)
	cases := map[string]struct {
		b    pb
		opts Options
		want string
	}{
		"unsupported op": {graphBytes(x, node("y", "Erf", []string{"x"}), node("z", "Erf", []string{"y"})), Options{},
			`Erf (2 node(s), first "y")`},
		"lists supported ops": {graphBytes(x, node("y", "Erf", []string{"x"})), Options{}, "supported ops: Abs, Add"},
		"strided slice step 0": {graphBytes(x, constI("b", []int64{2}, 0, 0), node("y", "StridedSlice", []string{"x", "b", "b", "b"})),
			Options{}, "stride 0"},
		"unknown placeholder shape": {graphBytes(node("x", "Placeholder", nil, aType("dtype", DTFloat)), node("y", "Relu", []string{"x"})),
			Options{}, "give one"},
		"int placeholder": {graphBytes(node("x", "Placeholder", nil, aType("dtype", DTInt32), aShape("shape", 2)), node("y", "Relu", []string{"x"})),
			Options{}, "only float inputs"},
		"cycle":          {graphBytes(node("a", "Relu", []string{"b"}), node("b", "Relu", []string{"a"})), Options{Outputs: []string{"a"}}, "cycle"},
		"missing input":  {graphBytes(node("a", "Relu", []string{"nope"})), Options{}, "names no node"},
		"unknown output": {graphBytes(x), Options{Outputs: []string{"q"}}, "no node \"q\""},
		"second output":  {graphBytes(x, node("y", "Relu", []string{"x:1"})), Options{}, "only output 0"},
		"training bn": {graphBytes(placeholder("x", 1, 2, 2, 1), constF("s", []int64{1}, 1),
			node("y", "FusedBatchNorm", []string{"x", "s", "s", "s", "s"})), Options{}, "is_training"},
		"cut without shape": {graphBytes(x, node("y", "Relu", []string{"x"}), node("z", "Relu", []string{"y"})),
			Options{Inputs: []Input{{Name: "y"}}}, "give its shape"},
		"unused input": {graphBytes(x, placeholder("u", 1), node("y", "Relu", []string{"x"})),
			Options{Inputs: []Input{{Name: "u"}}, Outputs: []string{"y"}}, "does not feed"},
		"shape mismatch": {graphBytes(x, node("y", "Relu", []string{"x"})), Options{Inputs: []Input{{Name: "x", Shape: []int{1, 5}}}},
			"does not match the declared"},
		"unknown dim": {graphBytes(placeholder("x", 1, -1), node("y", "Relu", []string{"x"})), Options{}, "only the first (batch)"},
		"bad reshape": {graphBytes(x, constI("s", []int64{1}, 3), node("y", "Reshape", []string{"x", "s"})), Options{}, "cannot reshape"},
		"huge fill": {graphBytes(x, constI("d", []int64{2}, 1<<20, 1<<20), constF("v", nil, 1), node("y", "Fill", []string{"d", "v"}),
			node("z", "Add", []string{"x", "y"})), Options{}, "elements"},
	}
	for name, c := range cases {
		gd, err := Decode(c.b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = Import(gd, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", name, err, c.want)
		}
	}
	gd, _ := Decode(graphBytes(x, node("y", "Erf", []string{"x"})))
	if _, err := Import(gd, Options{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("unsupported op error does not wrap ErrUnsupported: %v", err)
	}
}

// TestCutAndBatch cuts a graph below an unsupported front end and fixes the batch.
func TestCutAndBatch(t *testing.T) {
	b := graphBytes(
		node("wav", "Placeholder", nil, aType("dtype", DTString), aShape("shape")),
		node("feat", "Mfcc", []string{"wav"}),
		constI("s", []int64{2}, -1, 6),
		node("flat", "Reshape", []string{"feat", "s"}),
		node("y", "Relu", []string{"flat"}),
	)
	gd, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Import(gd, Options{}); err == nil || !strings.Contains(err.Error(), "Mfcc") {
		t.Fatalf("uncut import: %v", err)
	}
	in, err := ParseInput("feat:[-1,2,3]")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Import(gd, Options{Inputs: []Input{in}, Batch: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Inputs) != 1 || g.Inputs[0].Name != "feat" || !g.Inputs[0].Shape.Equal(ir.Shape{4, 2, 3}) {
		t.Fatalf("inputs %v", g.Inputs)
	}
	if len(g.Outputs) != 1 || g.Outputs[0] != "y" || !g.Values["y"].Shape.Equal(ir.Shape{4, 6}) {
		t.Fatalf("outputs %v %v", g.Outputs, g.Values["y"])
	}
}

// TestLegacyScalarPlaceholderShape: up to GraphDef version 21 an empty placeholder shape means
// "unknown" (as TF's shape function reads it); later it means a scalar.
func TestLegacyScalarPlaceholderShape(t *testing.T) {
	ph := node("x", "Placeholder", nil, aType("dtype", DTFloat), aShape("shape"))
	y := node("y", "Relu", []string{"x"})
	old := msg(fBytes(1, ph), fBytes(1, y), fBytes(4, fVarint(1, 21)))
	gd, err := Decode(old)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Import(gd, Options{}); err == nil || !strings.Contains(err.Error(), "no declared shape") {
		t.Errorf("version 21 scalar shape: %v", err)
	}
	if _, err := Import(gd, Options{Inputs: []Input{{Name: "x", Shape: []int{2, 3}}}}); err != nil {
		t.Errorf("version 21 scalar shape with a given shape: %v", err)
	}
	gd, err = Decode(graphBytes(ph, y)) // producer 27
	if err != nil {
		t.Fatal(err)
	}
	g, err := Import(gd, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if s := g.Inputs[0].Shape; len(s) != 0 {
		t.Errorf("version 27 scalar placeholder has shape %v", s)
	}
}

// TestResidualBlock is a ResNet-style NHWC block: explicit Pad then a VALID stride-2 conv, batch
// norm, Relu, SAME max pool, a 3x3 conv, a residual Add of two computed tensors (both held as
// NCHW), global mean with keep_dims, Squeeze, MatMul, Softmax and ArgMax.
func TestResidualBlock(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	x := randTensor(r, 2, 9, 9, 3)
	f1 := randTensor(r, 3, 3, 3, 4)
	f2 := randTensor(r, 3, 3, 4, 4)
	w := randTensor(r, 4, 5)
	one, zero := ir.NewTensor(ir.Shape{4}), ir.NewTensor(ir.Shape{4})
	for i := range one.Data {
		one.Data[i] = 1 + 0.25*float32(i)
	}
	b := graphBytes(
		placeholder("x", 2, 9, 9, 3),
		constI("p", []int64{4, 2}, 0, 0, 1, 1, 1, 1, 0, 0),
		node("pad", "Pad", []string{"x", "p"}),
		constT("f1", f1), constT("f2", f2), constT("one", one), constT("zero", zero), constT("w", w),
		node("c1", "Conv2D", []string{"pad", "f1"}, aS("padding", "VALID"), aInts("strides", 1, 2, 2, 1)),
		node("bn", "FusedBatchNorm", []string{"c1", "one", "zero", "zero", "one"}, aB("is_training", false)),
		node("relu", "Relu", []string{"bn"}),
		node("pool", "MaxPool", []string{"relu"}, aS("padding", "SAME"), aInts("ksize", 1, 3, 3, 1), aInts("strides", 1, 1, 1, 1)),
		node("c2", "Conv2D", []string{"pool", "f2"}, aS("padding", "SAME"), aInts("strides", 1, 1, 1, 1)),
		node("res", "AddV2", []string{"c2", "relu"}),
		constI("hw", []int64{2}, 1, 2),
		node("gap", "Mean", []string{"res", "hw"}, aB("keep_dims", true)),
		node("sq", "Squeeze", []string{"gap"}, aInts("squeeze_dims", 1, 2)),
		node("logits", "MatMul", []string{"sq", "w"}),
		node("prob", "Softmax", []string{"logits"}),
		constI("a1", nil, 1),
		node("pred", "ArgMax", []string{"prob", "a1"}),
	)
	g, out := importRun(t, b, []string{"prob", "pred"}, x)

	// Reference in NHWC.
	c1 := refConv(x, f1, false, 2, 2, 1, 1, 1, 1, 5, 5)
	relu := ir.NewTensor(c1.Shape)
	for i, v := range c1.Data {
		s := one.Data[i%4]
		relu.Data[i] = max(0, float32(float64(v)/math.Sqrt(float64(s)+1e-4)*float64(s)))
	}
	pool := refPool(relu, true, 3, 3, 1, 1, 1, 1, 5, 5)
	c2 := refConv(pool, f2, false, 1, 1, 1, 1, 1, 1, 5, 5)
	gap := make([]float64, 8)
	for i, v := range c2.Data {
		gap[(i/100)*4+i%4] += float64(v+relu.Data[i]) / 25
	}
	prob := make([]float32, 10)
	pred := make([]float32, 2)
	for n := 0; n < 2; n++ {
		var z float64
		logit := make([]float64, 5)
		for o := 0; o < 5; o++ {
			for k := 0; k < 4; k++ {
				logit[o] += gap[n*4+k] * float64(w.Data[k*5+o])
			}
			z += math.Exp(logit[o])
		}
		best := 0
		for o := 0; o < 5; o++ {
			prob[n*5+o] = float32(math.Exp(logit[o]) / z)
			if logit[o] > logit[best] {
				best = o
			}
		}
		pred[n] = float32(best)
	}
	closeTo(t, "prob", out["prob"], prob, ir.Shape{2, 5})
	closeTo(t, "pred", out["pred"], pred, ir.Shape{2})
	// One transpose into NCHW; the global mean leaves [N,C], already in TF order.
	if got := opCounts(g); got != "Add:1 ArgMax:1 BatchNormalization:1 Conv:2 GlobalAveragePool:1 MatMul:1 MaxPool:1 Pad:1 Relu:1 Softmax:1 Squeeze:1 Transpose:1" {
		t.Errorf("imported as %s", got)
	}
}

// TestConstantSwitchMerge resolves a Keras-style learning-phase cond: the predicate is a
// PlaceholderWithDefault of a constant, so only one branch is imported.
func TestConstantSwitchMerge(t *testing.T) {
	for _, training := range []bool{false, true} {
		pred := node("phase_default", "Const", nil, aType("dtype", DTBool),
			aTensor("value", msg(fVarint(1, uint64(DTBool)), fVarint(11, uint64(boolInt(training))))))
		b := graphBytes(
			placeholder("x", 1, 4),
			pred,
			node("phase", "PlaceholderWithDefault", []string{"phase_default"}, aType("dtype", DTBool), aShape("shape")),
			node("cond/Switch", "Switch", []string{"x", "phase"}),
			node("cond/switch_t", "Identity", []string{"cond/Switch:1"}),
			constF("cond/half", nil, 0.5),
			node("cond/half_dep", "Identity", []string{"cond/half", "^cond/switch_t"}),
			node("cond/train", "Mul", []string{"cond/Switch:1", "cond/half_dep"}),
			node("cond/infer", "Relu", []string{"cond/Switch"}),
			node("cond/Merge", "Merge", []string{"cond/infer", "cond/train"}),
			node("y", "Neg", []string{"cond/Merge"}),
		)
		x := &ir.Tensor{Shape: ir.Shape{1, 4}, Data: []float32{-2, -1, 1, 2}}
		g, out := importRun(t, b, []string{"y"}, x)
		want := []float32{-0, -0, -1, -2}
		if training {
			want = []float32{1, 0.5, -0.5, -1}
		}
		closeTo(t, "y", out["y"], want, x.Shape)
		wantOps := map[bool]string{false: "Mul:1 Relu:1", true: "Mul:2"}[training]
		if got := opCounts(g); got != wantOps {
			t.Errorf("training=%v: imported as %s, want %s", training, got, wantOps)
		}
	}
	// A runtime predicate cannot be resolved.
	b := graphBytes(placeholder("x", 1), placeholder("p"), node("s", "Switch", []string{"x", "p"}), node("y", "Relu", []string{"s"}))
	gd, _ := Decode(b)
	if _, err := Import(gd, Options{}); err == nil || !strings.Contains(err.Error(), "predicate") {
		t.Errorf("runtime predicate: %v", err)
	}
}

// TestRuntimeSlices: StridedSlice (a reversed stride-2 range, a shrunk axis, a new axis) and Slice
// of a runtime tensor import as HLIL's Slice (and a Reshape for the shrunk and new axes) and
// read what TensorFlow reads; x[:, 0] is a Keras class-token selection.
func TestRuntimeSlices(t *testing.T) {
	x := &ir.Tensor{Shape: ir.Shape{2, 3, 4}, Data: make([]float32, 24)}
	for i := range x.Data {
		x.Data[i] = float32(i)
	}
	at := func(i, j, k int) float32 { return x.Data[(i*3+j)*4+k] }
	b := graphBytes(placeholder("x", 2, 3, 4), node("r", "Relu", []string{"x"}),
		constI("b1", []int64{3}, 0, 1, -1), constI("e1", []int64{3}, 0, 2, -5), constI("s1", []int64{3}, 1, 1, -2),
		node("ss", "StridedSlice", []string{"r", "b1", "e1", "s1"}, aI("begin_mask", 1), aI("end_mask", 1),
			aI("shrink_axis_mask", 2), aI("new_axis_mask", 0)),
		constI("b2", []int64{3}, 0, 1, 1), constI("z2", []int64{3}, 1, -1, 2),
		node("sl", "Slice", []string{"r", "b2", "z2"}),
		constI("b3", []int64{2}, 0, 0), constI("e3", []int64{2}, 0, 1), constI("s3", []int64{2}, 1, 1),
		node("tok", "StridedSlice", []string{"r", "b3", "e3", "s3"}, aI("begin_mask", 1), aI("end_mask", 1), aI("shrink_axis_mask", 2)))
	g, out := importRun(t, b, []string{"ss", "sl", "tok"}, x)
	var want []float32
	for i := 0; i < 2; i++ {
		for _, k := range []int{3, 1} {
			want = append(want, at(i, 1, k))
		}
	}
	closeTo(t, "x[:, 1, -1:-5:-2]", out["ss"], want, ir.Shape{2, 2})
	want = want[:0]
	for j := 1; j < 3; j++ {
		for k := 1; k < 3; k++ {
			want = append(want, at(0, j, k))
		}
	}
	closeTo(t, "Slice(x, [0,1,1], [1,-1,2])", out["sl"], want, ir.Shape{1, 2, 2})
	want = want[:0]
	for i := 0; i < 2; i++ {
		for k := 0; k < 4; k++ {
			want = append(want, at(i, 0, k))
		}
	}
	closeTo(t, "x[:, 0]", out["tok"], want, ir.Shape{2, 4})
	n := 0
	for _, nd := range g.Nodes {
		if nd.Op == ir.Slice {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d Slice nodes, want 3", n)
	}
}

// TestRuntimeGatherV2: GatherV2 of a runtime tensor by constant indices (a negative one, a 2-D
// index tensor) imports as HLIL's Gather and reads what TensorFlow reads.
func TestRuntimeGatherV2(t *testing.T) {
	x := &ir.Tensor{Shape: ir.Shape{2, 3, 4}, Data: make([]float32, 24)}
	for i := range x.Data {
		x.Data[i] = float32(i)
	}
	b := graphBytes(placeholder("x", 2, 3, 4), node("r", "Relu", []string{"x"}),
		constI("ix", []int64{1, 2}, -1, 0), constI("ax", nil, 2),
		node("g", "GatherV2", []string{"r", "ix", "ax"}))
	_, out := importRun(t, b, []string{"g"}, x)
	var want []float32
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			want = append(want, x.Data[(i*3+j)*4+3], x.Data[(i*3+j)*4])
		}
	}
	closeTo(t, "gather", out["g"], want, ir.Shape{2, 3, 1, 2})
}
