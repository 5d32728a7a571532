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
