package interp

import (
	"math"
	"slices"

	"github.com/cryptflow-go/cryptflow/ir"
)

// reduce is ReduceSum, ReduceMean (the float32 sum divided by the element count) or ReduceMax
// over the axes attribute; keepdims only changes the output's shape, not its data order.
func reduce(op ir.Op, attrs ir.Attrs, x, out *slot) (func(), error) {
	axes, err := attrs.Ints("axes")
	if err != nil {
		return nil, err
	}
	rank := len(x.shape)
	// strides of the input, and for every input position the output position (reduced axes
	// contribute nothing).
	outStride := make([]int, rank)
	st := 1
	for a := rank - 1; a >= 0; a-- {
		if slices.Contains(axes, a) {
			continue
		}
		outStride[a] = st
		st *= x.shape[a]
	}
	count := 1
	for _, a := range axes {
		count *= x.shape[a]
	}
	n := x.shape.Size()
	idx := make([]int, n) // output index of every input element
	coord := make([]int, rank)
	for i := 0; i < n; i++ {
		o := 0
		for a := 0; a < rank; a++ {
			o += coord[a] * outStride[a]
		}
		idx[i] = o
		for a := rank - 1; a >= 0; a-- {
			coord[a]++
			if coord[a] < x.shape[a] {
				break
			}
			coord[a] = 0
		}
	}
	return func() {
		yd := out.data
		for i := range yd {
			if op == ir.ReduceMax {
				yd[i] = float32(math.Inf(-1))
			} else {
				yd[i] = 0
			}
		}
		for i, v := range x.data[:n] {
			if op == ir.ReduceMax {
				yd[idx[i]] = max(yd[idx[i]], v)
			} else {
				yd[idx[i]] += v
			}
		}
		if op == ir.ReduceMean {
			for i := range yd {
				yd[i] /= float32(count)
			}
		}
	}, nil
}

// layerNorm is inference LayerNormalization over the axes axis..rank−1: per row, mean and
// (biased) variance in float64, y = (x − mean)/sqrt(var + eps)·scale (+ B), scale and B
// broadcast to the normalised shape.
func layerNorm(attrs ir.Attrs, in []*slot, out *slot) (func(), error) {
	axis, err := attrs.Int("axis")
	if err != nil {
		return nil, err
	}
	eps, err := attrs.Float("epsilon")
	if err != nil {
		return nil, err
	}
	x := in[0]
	norm := x.shape[axis:]
	width := norm.Size()
	rows := x.shape[:axis].Size()
	expand := func(p *slot) []float32 { // p broadcast to the normalised shape
		e := make([]float32, width)
		ps := p.shape
		for i := range e {
			r, o, st := i, 0, 1
			for a := len(norm) - 1; a >= 0; a-- {
				c := r % norm[a]
				r /= norm[a]
				if pa := a - (len(norm) - len(ps)); pa >= 0 {
					if ps[pa] != 1 {
						o += c * st
					}
					st *= ps[pa]
				}
			}
			e[i] = p.data[o]
		}
		return e
	}
	return func() {
		scale := expand(in[1])
		var bias []float32
		if len(in) > 2 {
			bias = expand(in[2])
		}
		for r := 0; r < rows; r++ {
			xs, ys := x.data[r*width:(r+1)*width], out.data[r*width:(r+1)*width]
			mean := 0.0
			for _, v := range xs {
				mean += float64(v)
			}
			mean /= float64(width)
			variance := 0.0
			for _, v := range xs {
				variance += (float64(v) - mean) * (float64(v) - mean)
			}
			variance /= float64(width)
			inv := 1 / math.Sqrt(variance+float64(eps))
			for i, v := range xs {
				y := (float64(v) - mean) * inv * float64(scale[i])
				if bias != nil {
					y += float64(bias[i])
				}
				ys[i] = float32(y)
			}
		}
	}, nil
}
