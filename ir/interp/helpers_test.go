package interp

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

// builder assembles small graphs and their feeds for tests.
type builder struct {
	g     *ir.Graph
	feeds map[string]*ir.Tensor
}

func newBuilder() *builder {
	return &builder{g: ir.NewGraph("test"), feeds: map[string]*ir.Tensor{}}
}

// input adds a graph input with the data it is fed.
func (b *builder) input(name string, shape ir.Shape, data []float32) *builder {
	b.g.Inputs = append(b.g.Inputs, ir.Value{Name: name, DType: ir.Float32, Shape: shape})
	b.feeds[name] = &ir.Tensor{Shape: shape, Data: data}
	return b
}

func (b *builder) constant(name string, shape ir.Shape, data []float32) *builder {
	b.g.Consts[name] = &ir.Tensor{Shape: shape, Data: data}
	return b
}

func (b *builder) node(op ir.Op, attrs ir.Attrs, out string, inputs ...string) *builder {
	b.g.Nodes = append(b.g.Nodes, &ir.Node{Name: out, Op: op, Inputs: inputs, Outputs: []string{out}, Attrs: attrs})
	return b
}

func (b *builder) outputs(names ...string) *builder {
	b.g.Outputs = append(b.g.Outputs, names...)
	return b
}

// run evaluates the graph and returns its single output (the last node's output unless
// outputs were set).
func (b *builder) run(t *testing.T) *ir.Tensor {
	t.Helper()
	if len(b.g.Outputs) == 0 {
		b.g.Outputs = []string{b.g.Nodes[len(b.g.Nodes)-1].Outputs[0]}
	}
	res, err := Run(b.g, b.feeds)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res[b.g.Outputs[0]]
}

func seq(n int, from, step float32) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = from + float32(i)*step
	}
	return out
}

func randData(rng *rand.Rand, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(rng.NormFloat64())
	}
	return out
}

func ints(v ...int) ir.Attr { return ir.IntsAttr(v) }

// expect checks shape and values within the conformance tolerance (1e-4 relative, 1e-5
// absolute).
func expect(t *testing.T, got *ir.Tensor, shape ir.Shape, want []float32) {
	t.Helper()
	if got == nil {
		t.Fatalf("no output")
	}
	if !got.Shape.Equal(shape) {
		t.Fatalf("shape %v, want %v", got.Shape, shape)
	}
	if len(got.Data) != len(want) {
		t.Fatalf("%d elements, want %d", len(got.Data), len(want))
	}
	for i := range want {
		if !close32(got.Data[i], want[i]) {
			t.Fatalf("element %d = %v, want %v\ngot  %v\nwant %v", i, got.Data[i], want[i], got.Data, want)
		}
	}
}

func close32(got, want float32) bool {
	if math.IsNaN(float64(want)) {
		return math.IsNaN(float64(got))
	}
	if math.IsInf(float64(want), 0) {
		return got == want
	}
	d := math.Abs(float64(got) - float64(want))
	return d <= 1e-5+1e-4*math.Abs(float64(want))
}

// unravel decodes a row-major flat index into coordinates of shape s.
func unravel(i int, s []int) []int {
	c := make([]int, len(s))
	for d := len(s) - 1; d >= 0; d-- {
		c[d] = i % s[d]
		i /= s[d]
	}
	return c
}

func ravel(c, s []int) int {
	i := 0
	for d := range s {
		i = i*s[d] + c[d]
	}
	return i
}

// naiveConv is a direct float64 N-d convolution used as an independent reference.
func naiveConv(x []float32, xs ir.Shape, w []float32, ws ir.Shape, bias []float32, group int, strides, pads, dil []int, ys ir.Shape) []float32 {
	k := len(xs) - 2
	y := make([]float32, ys.Size())
	cg, mg := xs[1]/group, ws[0]/group
	kernel := []int(ws[2:])
	for yi := range y {
		yc := unravel(yi, ys)
		n, m := yc[0], yc[1]
		gi := m / mg
		acc := 0.0
		if bias != nil {
			acc = float64(bias[m])
		}
		for c := 0; c < cg; c++ {
			for t := 0; t < ir.Shape(kernel).Size(); t++ {
				tc := unravel(t, kernel)
				xc := []int{n, gi*cg + c}
				inside := true
				for d := 0; d < k; d++ {
					p := yc[2+d]*strides[d] - pads[d] + tc[d]*dil[d]
					if p < 0 || p >= xs[2+d] {
						inside = false
					}
					xc = append(xc, p)
				}
				if !inside {
					continue
				}
				wc := append([]int{m, c}, tc...)
				acc += float64(x[ravel(xc, xs)]) * float64(w[ravel(wc, ws)])
			}
		}
		y[yi] = float32(acc)
	}
	return y
}

// naivePool is a direct N-d max or average pool following onnxruntime's window rules.
func naivePool(isMax, includePad bool, x []float32, xs ir.Shape, kernel, strides, pads, dil []int, ys ir.Shape) []float32 {
	k := len(xs) - 2
	y := make([]float32, ys.Size())
	for yi := range y {
		yc := unravel(yi, ys)
		best, sum, count := math.Inf(-1), 0.0, 0
		for t := 0; t < ir.Shape(kernel).Size(); t++ {
			tc := unravel(t, kernel)
			xc := []int{yc[0], yc[1]}
			inside, inPadded := true, true
			for d := 0; d < k; d++ {
				p := yc[2+d]*strides[d] - pads[d] + tc[d]*dil[d]
				if p < 0 || p >= xs[2+d] {
					inside = false
				}
				if p >= xs[2+d]+pads[k+d] {
					inPadded = false
				}
				xc = append(xc, p)
			}
			if includePad && inPadded {
				count++
			}
			if !inside {
				continue
			}
			if !includePad {
				count++
			}
			v := float64(x[ravel(xc, xs)])
			best = math.Max(best, v)
			sum += v
		}
		if isMax {
			y[yi] = float32(best)
		} else {
			y[yi] = float32(sum / float64(count))
		}
	}
	return y
}
