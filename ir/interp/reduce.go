package interp

import (
	"math"

	"github.com/cryptflow-go/cryptflow/ir"
)

// batchNorm is inference-mode BatchNormalization: y = (x - mean) / sqrt(var + eps) * scale + B,
// computed as x * a + b with per-channel a and b.
func batchNorm(attrs ir.Attrs, in []*slot, out *slot) (func(), error) {
	eps, err := attrs.Float("epsilon")
	if err != nil {
		return nil, err
	}
	X, scale, bias, mean, variance := in[0], in[1], in[2], in[3], in[4]
	n, c := X.shape[0], X.shape[1]
	inner := X.shape[2:].Size()
	a, b := make([]float32, c), make([]float32, c)
	return func() {
		for ch := 0; ch < c; ch++ {
			a[ch] = scale.data[ch] / float32(math.Sqrt(float64(variance.data[ch]+eps)))
			b[ch] = bias.data[ch] - mean.data[ch]*a[ch]
		}
		xd, yd := X.data, out.data
		for i := 0; i < n*c; i++ {
			ac, bc := a[i%c], b[i%c]
			xs, ys := xd[i*inner:(i+1)*inner], yd[i*inner:(i+1)*inner]
			for j, v := range xs {
				ys[j] = v*ac + bc
			}
		}
	}, nil
}

// lrn is ONNX LRN: y = x / (bias + alpha/size * square_sum)^beta, where square_sum runs over the
// channels c-floor((size-1)/2) .. c+ceil((size-1)/2) that exist.
func lrn(attrs ir.Attrs, x, out *slot) (func(), error) {
	size, err := attrs.Int("size")
	if err != nil {
		return nil, err
	}
	alpha, err := attrs.Float("alpha")
	if err != nil {
		return nil, err
	}
	beta, err := attrs.Float("beta")
	if err != nil {
		return nil, err
	}
	bias, err := attrs.Float("bias")
	if err != nil {
		return nil, err
	}
	n, c := x.shape[0], x.shape[1]
	inner := x.shape[2:].Size()
	before, after := (size-1)/2, size/2 // floor((size-1)/2), ceil((size-1)/2)
	scale := alpha / float32(size)
	return func() {
		xd, yd := x.data, out.data
		for b := 0; b < n; b++ {
			img := xd[b*c*inner : (b+1)*c*inner]
			res := yd[b*c*inner : (b+1)*c*inner]
			for ch := 0; ch < c; ch++ {
				lo, hi := max(0, ch-before), min(c-1, ch+after)
				for i := 0; i < inner; i++ {
					var sq float32
					for cc := lo; cc <= hi; cc++ {
						v := img[cc*inner+i]
						sq += v * v
					}
					den := math.Pow(float64(bias+scale*sq), float64(beta))
					res[ch*inner+i] = float32(float64(img[ch*inner+i]) / den)
				}
			}
		}
	}, nil
}

// axisSplit returns the products of the dimensions before, at and after axis.
func axisSplit(s ir.Shape, axis int) (outer, n, inner int) {
	return s[:axis].Size(), s[axis], s[axis+1:].Size()
}

// softmax is numerically stable softmax along one axis, or its log (log softmax) when log is set.
func softmax(attrs ir.Attrs, x, out *slot, log bool) (func(), error) {
	axis, err := attrs.Int("axis")
	if err != nil {
		return nil, err
	}
	outer, n, inner := axisSplit(x.shape, axis)
	return func() {
		xd, yd := x.data, out.data
		for o := 0; o < outer; o++ {
			for i := 0; i < inner; i++ {
				base := o*n*inner + i
				m := float32(math.Inf(-1))
				for j := 0; j < n; j++ {
					m = max(m, xd[base+j*inner])
				}
				var s float32
				for j := 0; j < n; j++ {
					e := float32(math.Exp(float64(xd[base+j*inner] - m)))
					yd[base+j*inner] = e
					s += e
				}
				if log {
					// log softmax = (x − m) − log Σ exp(x − m).
					ls := float32(math.Log(float64(s)))
					for j := 0; j < n; j++ {
						yd[base+j*inner] = xd[base+j*inner] - m - ls
					}
					continue
				}
				for j := 0; j < n; j++ {
					yd[base+j*inner] /= s
				}
			}
		}
	}, nil
}

// argMax writes, as float32, the index of the largest element along one axis: the first one on
// ties, or the last one when select_last_index is set.
func argMax(attrs ir.Attrs, x, out *slot) (func(), error) {
	axis, err := attrs.Int("axis")
	if err != nil {
		return nil, err
	}
	last, err := attrs.Int("select_last_index")
	if err != nil {
		return nil, err
	}
	outer, n, inner := axisSplit(x.shape, axis)
	return func() {
		xd, yd := x.data, out.data
		for o := 0; o < outer; o++ {
			for i := 0; i < inner; i++ {
				base := o*n*inner + i
				best, arg := xd[base], 0
				for j := 1; j < n; j++ {
					v := xd[base+j*inner]
					if v > best || (last != 0 && v == best) {
						best, arg = v, j
					}
				}
				yd[o*inner+i] = float32(arg)
			}
		}
	}, nil
}
