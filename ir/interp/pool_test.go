package interp

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

func poolAttrs(kernel, strides, pads, dil []int, ceil int) ir.Attrs {
	return ir.Attrs{
		"kernel_shape": ir.IntsAttr(kernel), "strides": ir.IntsAttr(strides), "pads": ir.IntsAttr(pads),
		"dilations": ir.IntsAttr(dil), "ceil_mode": ir.IntAttr(ceil),
	}
}

func avgAttrs(kernel, strides, pads, dil []int, ceil, includePad int) ir.Attrs {
	a := poolAttrs(kernel, strides, pads, dil, ceil)
	a["count_include_pad"] = ir.IntAttr(includePad)
	return a
}

func runPool(t *testing.T, attrs ir.Attrs, op ir.Op, xs ir.Shape, x []float32) *ir.Tensor {
	t.Helper()
	return newBuilder().input("x", xs, x).node(op, attrs, "y", "x").run(t)
}

// ONNX's maxpool/averagepool 2d_ceil and 2d_dilations examples, computed by hand.
func TestPoolONNXExamples(t *testing.T) {
	x16 := seq(16, 1, 1)
	xs := ir.Shape{1, 1, 4, 4}
	got := runPool(t, poolAttrs([]int{3, 3}, []int{2, 2}, []int{0, 0, 0, 0}, []int{1, 1}, 1), ir.MaxPool, xs, x16)
	expect(t, got, ir.Shape{1, 1, 2, 2}, []float32{11, 12, 15, 16})
	got = runPool(t, avgAttrs([]int{3, 3}, []int{2, 2}, []int{0, 0, 0, 0}, []int{1, 1}, 1, 0), ir.AveragePool, xs, x16)
	expect(t, got, ir.Shape{1, 1, 2, 2}, []float32{6, 7.5, 12, 13.5})
	got = runPool(t, poolAttrs([]int{2, 2}, []int{1, 1}, []int{0, 0, 0, 0}, []int{2, 2}, 0), ir.MaxPool, xs, x16)
	expect(t, got, ir.Shape{1, 1, 2, 2}, []float32{11, 12, 15, 16})
	// Floor mode drops the partial windows.
	got = runPool(t, poolAttrs([]int{3, 3}, []int{2, 2}, []int{0, 0, 0, 0}, []int{1, 1}, 0), ir.MaxPool, xs, x16)
	expect(t, got, ir.Shape{1, 1, 1, 1}, []float32{11})
}

func TestMaxPoolIgnoresPadding(t *testing.T) {
	// All values negative: a zero from the padding must never win.
	x := []float32{-1, -2, -3, -4}
	got := runPool(t, poolAttrs([]int{2, 2}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}, 0), ir.MaxPool, ir.Shape{1, 1, 2, 2}, x)
	expect(t, got, ir.Shape{1, 1, 3, 3}, []float32{-1, -1, -2, -1, -1, -2, -3, -3, -4})
}

func TestAveragePoolCountIncludePad(t *testing.T) {
	x := []float32{1, 2, 3, 4}
	xs := ir.Shape{1, 1, 2, 2}
	pads := []int{1, 1, 1, 1}
	got := runPool(t, avgAttrs([]int{2, 2}, []int{1, 1}, pads, []int{1, 1}, 0, 0), ir.AveragePool, xs, x)
	expect(t, got, ir.Shape{1, 1, 3, 3}, []float32{1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4})
	got = runPool(t, avgAttrs([]int{2, 2}, []int{1, 1}, pads, []int{1, 1}, 0, 1), ir.AveragePool, xs, x)
	expect(t, got, ir.Shape{1, 1, 3, 3}, []float32{0.25, 0.75, 0.5, 1, 2.5, 1.5, 0.75, 1.75, 1})
}

// Windows that ceil_mode runs past the end padding: their taps beyond it count neither as
// elements nor as padding (onnxruntime's rule).
func TestAveragePoolCeilPastPadding(t *testing.T) {
	x := []float32{1, 2, 3, 4, 5}
	xs := ir.Shape{1, 1, 5}
	// kernel 3, stride 2, pads (0, 1): windows start at 0, 2, 4; the last covers x[4], one pad
	// and one position past the padding.
	got := runPool(t, avgAttrs([]int{3}, []int{2}, []int{0, 1}, []int{1}, 1, 1), ir.AveragePool, xs, x)
	expect(t, got, ir.Shape{1, 1, 3}, []float32{2, 4, 2.5})
	got = runPool(t, avgAttrs([]int{3}, []int{2}, []int{0, 1}, []int{1}, 1, 0), ir.AveragePool, xs, x)
	expect(t, got, ir.Shape{1, 1, 3}, []float32{2, 4, 5})
	// Without end padding the partial window averages its real elements either way.
	got = runPool(t, avgAttrs([]int{2}, []int{2}, []int{0, 0}, []int{1}, 1, 1), ir.AveragePool, xs, x)
	expect(t, got, ir.Shape{1, 1, 3}, []float32{1.5, 3.5, 5})

	// ONNX averagepool_2d_ceil_last_window_starts_on_pad: 2x2 input, kernel 3, stride 3, pads
	// 1: ceil would give 2 windows per axis, but the second would start in the end padding, so
	// there is one, covering the whole input and five pads.
	got = runPool(t, avgAttrs([]int{3, 3}, []int{3, 3}, []int{1, 1, 1, 1}, []int{1, 1}, 1, 1), ir.AveragePool, ir.Shape{1, 1, 2, 2}, x[:4])
	expect(t, got, ir.Shape{1, 1, 1, 1}, []float32{10.0 / 9})
	got = runPool(t, avgAttrs([]int{3, 3}, []int{3, 3}, []int{1, 1, 1, 1}, []int{1, 1}, 1, 0), ir.AveragePool, ir.Shape{1, 1, 2, 2}, x[:4])
	expect(t, got, ir.Shape{1, 1, 1, 1}, []float32{2.5})
}

// Random pools of every shape feature against the direct reference; 1-D and 2-D take the 2-D
// kernel, 3-D the N-d one.
func TestPoolMatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		xs                         ir.Shape
		kernel, strides, pads, dil []int
		ceil                       int
	}{
		{ir.Shape{2, 3, 7, 6}, []int{3, 2}, []int{2, 2}, []int{1, 0, 1, 1}, []int{1, 1}, 1},
		{ir.Shape{1, 2, 9, 9}, []int{3, 3}, []int{2, 3}, []int{2, 1, 0, 2}, []int{2, 1}, 1},
		{ir.Shape{1, 2, 8, 8}, []int{2, 2}, []int{2, 2}, []int{0, 0, 0, 0}, []int{1, 1}, 0},
		{ir.Shape{3, 2, 11}, []int{3}, []int{2}, []int{2, 1}, []int{2}, 1},
		{ir.Shape{1, 2, 5, 6, 7}, []int{2, 3, 2}, []int{2, 2, 3}, []int{1, 0, 1, 0, 1, 1}, []int{2, 1, 1}, 1},
		{ir.Shape{1, 1, 6, 5, 4}, []int{3, 3, 3}, []int{1, 1, 1}, []int{1, 1, 1, 1, 1, 1}, []int{1, 1, 1}, 0},
		{ir.Shape{1, 1, 4, 4, 4, 4}, []int{2, 2, 2, 2}, []int{2, 2, 2, 2}, []int{0, 0, 0, 0, 0, 0, 0, 0}, []int{1, 1, 1, 1}, 0},
	} {
		x := randData(rng, c.xs.Size())
		for _, op := range []ir.Op{ir.MaxPool, ir.AveragePool} {
			for include := 0; include < 2; include++ {
				if op == ir.MaxPool && include == 1 {
					continue
				}
				t.Run(fmt.Sprintf("%s_%v_k%v_s%v_p%v_d%v_c%d_i%d", op, c.xs, c.kernel, c.strides, c.pads, c.dil, c.ceil, include), func(t *testing.T) {
					attrs := poolAttrs(c.kernel, c.strides, c.pads, c.dil, c.ceil)
					if op == ir.AveragePool {
						attrs = avgAttrs(c.kernel, c.strides, c.pads, c.dil, c.ceil, include)
					}
					got := runPool(t, attrs, op, c.xs, x)
					want := naivePool(op == ir.MaxPool, include == 1, x, c.xs, c.kernel, c.strides, c.pads, c.dil, got.Shape)
					expect(t, got, got.Shape, want)
				})
			}
		}
	}
}

// The N-d kernel agrees with the 2-D one on 2-D windows.
func TestPoolNDMatches2D(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	xs := ir.Shape{1, 3, 9, 8}
	x := randData(rng, xs.Size())
	for _, op := range []ir.Op{ir.MaxPool, ir.AveragePool} {
		attrs := avgAttrs([]int{3, 2}, []int{2, 3}, []int{1, 0, 1, 1}, []int{2, 1}, 1, 1)
		xslot := &slot{shape: xs, data: x}
		g := ir.NewGraph("t")
		g.Inputs = []ir.Value{{Name: "x", Shape: xs}}
		g.Nodes = []*ir.Node{{Op: op, Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: attrs}}
		g.Outputs = []string{"y"}
		if err := g.InferShapes(); err != nil {
			t.Fatal(err)
		}
		ys := g.Values["y"].Shape
		out2 := &slot{shape: ys, data: make([]float32, ys.Size())}
		run, err := pool(op, attrs, xslot, out2)
		if err != nil {
			t.Fatal(err)
		}
		run()
		w, _ := ir.WindowAttrs(attrs, 2)
		p := &pooler{isMax: op == ir.MaxPool, includePad: true, planes: 3, in: xs[2:], out: ys[2:], dil: w.Dilations}
		for d := 0; d < 2; d++ {
			p.dims = append(p.dims, newPoolTables(xs[2+d], ys[2+d], w.Kernel[d], w.Strides[d], w.Pads[d], w.Pads[2+d], w.Dilations[d]))
		}
		p.inStride, p.oidx, p.tidx = contiguous(p.in), make([]int, 2), make([]int, 2)
		outN := make([]float32, ys.Size())
		p.runND(x, outN)
		expect(t, &ir.Tensor{Shape: ys, Data: outN}, ys, out2.data)
	}
}

func TestGlobalPools(t *testing.T) {
	x := []float32{1, 2, 3, 4, -1, -2, -3, -6}
	got := runPool(t, nil, ir.GlobalAveragePool, ir.Shape{1, 2, 2, 2}, x)
	expect(t, got, ir.Shape{1, 2, 1, 1}, []float32{2.5, -3})
	got = runPool(t, nil, ir.GlobalMaxPool, ir.Shape{2, 1, 4}, x)
	expect(t, got, ir.Shape{2, 1, 1}, []float32{4, -1})
}
