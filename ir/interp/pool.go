package interp

import (
	"math"

	"github.com/cryptflow-go/cryptflow/ir"
)

// poolTables describes, for one spatial dimension, every output position's window: where it
// starts in input coordinates, which of its taps fall inside the input ([lo, hi)), and how many
// fall inside the input or its explicit padding (the count_include_pad divisor). Taps that a
// ceil_mode window puts past the end padding count as neither, as in onnxruntime.
type poolTables struct {
	start, lo, hi, padded []int
}

func newPoolTables(in, out, kernel, stride, padBegin, padEnd, dil int) poolTables {
	t := poolTables{
		start: make([]int, out), lo: make([]int, out), hi: make([]int, out), padded: make([]int, out),
	}
	for o := 0; o < out; o++ {
		s := o*stride - padBegin
		lo := 0
		if s < 0 {
			lo = (-s + dil - 1) / dil
		}
		hi := 0
		if in-1-s >= 0 {
			hi = (in-1-s)/dil + 1
		}
		hi = min(hi, kernel)
		lo = min(lo, hi)
		p := 0 // taps with s + t*dil < in + padEnd (all taps are at or after -padBegin)
		if in+padEnd-s > 0 {
			p = min(kernel, (in+padEnd-s+dil-1)/dil)
		}
		t.start[o], t.lo[o], t.hi[o], t.padded[o] = s, lo, hi, p
	}
	return t
}

// pool is ONNX MaxPool / AveragePool over any number of spatial dimensions.
func pool(op ir.Op, a ir.Attrs, x, out *slot) (func(), error) {
	k := len(x.shape) - 2
	w, err := ir.WindowAttrs(a, k)
	if err != nil {
		return nil, err
	}
	isMax := op == ir.MaxPool
	includePad := false
	if !isMax {
		cip, err := a.Int("count_include_pad")
		if err != nil {
			return nil, err
		}
		includePad = cip != 0
	}
	p := &pooler{isMax: isMax, includePad: includePad, planes: x.shape[0] * x.shape[1]}
	if k <= 2 {
		// One spatial dimension is pooled as two with a unit leading dimension.
		in, outS := x.shape[2:], out.shape[2:]
		if k == 1 {
			p.dims = append(p.dims, newPoolTables(1, 1, 1, 1, 0, 0, 1))
			p.in, p.out = []int{1, in[0]}, []int{1, outS[0]}
			p.dil = []int{1, w.Dilations[0]}
		} else {
			p.in, p.out = []int(in), []int(outS)
			p.dil = w.Dilations
		}
		for d := 0; d < k; d++ {
			p.dims = append(p.dims, newPoolTables(in[d], outS[d], w.Kernel[d], w.Strides[d], w.Pads[d], w.Pads[k+d], w.Dilations[d]))
		}
		return func() { p.run2D(x.data, out.data) }, nil
	}
	p.in, p.out, p.dil = x.shape[2:], out.shape[2:], w.Dilations
	for d := 0; d < k; d++ {
		p.dims = append(p.dims, newPoolTables(p.in[d], p.out[d], w.Kernel[d], w.Strides[d], w.Pads[d], w.Pads[k+d], w.Dilations[d]))
	}
	p.inStride = contiguous(p.in)
	p.oidx, p.tidx = make([]int, k), make([]int, k)
	return func() { p.runND(x.data, out.data) }, nil
}

type pooler struct {
	isMax, includePad bool
	planes            int // batch * channels
	in, out, dil      []int
	dims              []poolTables

	inStride   []int
	oidx, tidx []int // N-d odometers over outputs and over a window's taps
}

// lowest is onnxruntime's MaxPool starting value (a window of padding only yields it).
const lowest = -math.MaxFloat32

func (p *pooler) finish(acc float32, count int) float32 {
	if p.isMax {
		return acc
	}
	return acc / float32(count)
}

func (p *pooler) count(d, o int) int {
	if p.includePad {
		return p.dims[d].padded[o]
	}
	return p.dims[d].hi[o] - p.dims[d].lo[o]
}

func (p *pooler) run2D(x, y []float32) {
	H, W := p.in[0], p.in[1]
	OH, OW := p.out[0], p.out[1]
	dh, dw := p.dil[0], p.dil[1]
	th, tw := p.dims[0], p.dims[1]
	for pl := 0; pl < p.planes; pl++ {
		xp := x[pl*H*W : (pl+1)*H*W]
		yp := y[pl*OH*OW : (pl+1)*OH*OW]
		for oh := 0; oh < OH; oh++ {
			sh, hlo, hhi := th.start[oh], th.lo[oh], th.hi[oh]
			ch := p.count(0, oh)
			for ow := 0; ow < OW; ow++ {
				sw, wlo, whi := tw.start[ow], tw.lo[ow], tw.hi[ow]
				var acc float32
				if p.isMax {
					acc = lowest
					for i := hlo; i < hhi; i++ {
						row := xp[(sh+i*dh)*W:]
						for j := wlo; j < whi; j++ {
							if v := row[sw+j*dw]; v > acc {
								acc = v
							}
						}
					}
				} else {
					for i := hlo; i < hhi; i++ {
						row := xp[(sh+i*dh)*W:]
						for j := wlo; j < whi; j++ {
							acc += row[sw+j*dw]
						}
					}
				}
				yp[oh*OW+ow] = p.finish(acc, ch*p.count(1, ow))
			}
		}
	}
}

func (p *pooler) runND(x, y []float32) {
	k := len(p.in)
	inPlane, outPlane := ir.Shape(p.in).Size(), ir.Shape(p.out).Size()
	oidx, tidx := p.oidx, p.tidx
	for pl := 0; pl < p.planes; pl++ {
		xp := x[pl*inPlane : (pl+1)*inPlane]
		clear(oidx)
		for o := 0; o < outPlane; o++ {
			count, empty := 1, false
			for d := 0; d < k; d++ {
				count *= p.count(d, oidx[d])
				tidx[d] = p.dims[d].lo[oidx[d]]
				if tidx[d] >= p.dims[d].hi[oidx[d]] {
					empty = true
				}
			}
			var acc float32
			if p.isMax {
				acc = lowest
			}
			for !empty {
				off := 0
				for d := 0; d < k; d++ {
					off += (p.dims[d].start[oidx[d]] + tidx[d]*p.dil[d]) * p.inStride[d]
				}
				if v := xp[off]; !p.isMax {
					acc += v
				} else if v > acc {
					acc = v
				}
				d := k - 1
				for ; d >= 0; d-- {
					tidx[d]++
					if tidx[d] < p.dims[d].hi[oidx[d]] {
						break
					}
					tidx[d] = p.dims[d].lo[oidx[d]]
				}
				empty = d < 0
			}
			y[pl*outPlane+o] = p.finish(acc, count)
			for d := k - 1; d >= 0; d-- {
				oidx[d]++
				if oidx[d] < p.out[d] {
					break
				}
				oidx[d] = 0
			}
		}
	}
}

// globalPool averages or takes the maximum of each [n, c] plane.
func globalPool(op ir.Op, x, out *slot) func() {
	planes := x.shape[0] * x.shape[1]
	size := x.shape[2:].Size()
	isMax := op == ir.GlobalMaxPool
	return func() {
		xd, yd := x.data, out.data
		for pl := 0; pl < planes; pl++ {
			plane := xd[pl*size : (pl+1)*size]
			if isMax {
				acc := float32(lowest)
				for _, v := range plane {
					if v > acc {
						acc = v
					}
				}
				yd[pl] = acc
				continue
			}
			var acc float32
			for _, v := range plane {
				acc += v
			}
			yd[pl] = acc / float32(size)
		}
	}
}
