package interp

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
	"gonum.org/v1/gonum/blas"
)

// sgemm computes c = alpha*op(a)*op(b) + beta*c for row-major operands, with the degenerate
// sizes that BLAS rejects handled here.
func sgemm(impl blas.Float32Level3, ta, tb bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 {
		for i := 0; i < m; i++ {
			row := c[i*ldc : i*ldc+n]
			for j := range row {
				if beta == 0 {
					row[j] = 0
				} else {
					row[j] *= beta
				}
			}
		}
		return
	}
	tA, tB := blas.NoTrans, blas.NoTrans
	if ta {
		tA = blas.Trans
	}
	if tb {
		tB = blas.Trans
	}
	impl.Sgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// gemmNode is ONNX Gemm: Y = alpha*op(A)*op(B) + beta*C, with C broadcast to [M, N].
func (c *compiler) gemmNode(a ir.Attrs, in []*slot, out *slot) (func(), error) {
	alpha, err := a.Float("alpha")
	if err != nil {
		return nil, err
	}
	beta, err := a.Float("beta")
	if err != nil {
		return nil, err
	}
	ta, err := a.Int("transA")
	if err != nil {
		return nil, err
	}
	tb, err := a.Int("transB")
	if err != nil {
		return nil, err
	}
	A, B := in[0], in[1]
	m, n := out.shape[0], out.shape[1]
	k := A.shape[1]
	if ta != 0 {
		k = A.shape[0]
	}
	lda, ldb := A.shape[1], B.shape[1]
	impl := c.it.gemm
	var fillC func(dst, src []float32)
	var C *slot
	if len(in) == 3 && beta != 0 {
		C = in[2]
		fillC = broadcastInto(out.shape, C.shape)
	} else {
		beta = 0
	}
	return func() {
		if fillC != nil {
			fillC(out.data, C.data)
		}
		sgemm(impl, ta != 0, tb != 0, m, n, k, alpha, A.data, max(lda, 1), B.data, max(ldb, 1), beta, out.data, max(n, 1))
	}, nil
}

// matmul is numpy matmul: 1-D operands are promoted to matrices and batch dimensions broadcast.
func (c *compiler) matmul(in []*slot, out *slot) (func(), error) {
	A, B := in[0], in[1]
	as, bs := A.shape, B.shape
	if len(as) == 1 {
		as = ir.Shape{1, as[0]}
	}
	if len(bs) == 1 {
		bs = ir.Shape{bs[0], 1}
	}
	m, k := as[len(as)-2], as[len(as)-1]
	n := bs[len(bs)-1]
	abatch, bbatch := as[:len(as)-2], bs[:len(bs)-2]
	batch, err := ir.Broadcast(abatch, bbatch)
	if err != nil {
		return nil, err
	}
	if batch.Size()*m*n != out.shape.Size() {
		return nil, fmt.Errorf("matmul output %v does not match operands %v x %v", out.shape, A.shape, B.shape)
	}
	impl := c.it.gemm
	if bbatch.Size() == 1 {
		// B is one matrix: fold A's batch into its rows (they are contiguous, as are Y's).
		rows := abatch.Size() * m
		return func() {
			sgemm(impl, false, false, rows, n, k, 1, A.data, max(k, 1), B.data, max(n, 1), 0, out.data, max(n, 1))
		}, nil
	}
	// One product per batch element; the loop visits the batch index space with the matrix
	// offsets of A and B broadcast into it.
	sa := broadcastStrides(abatch, batch)
	sb := broadcastStrides(bbatch, batch)
	for i := range sa {
		sa[i] *= m * k
		sb[i] *= k * n
	}
	l := newLoop(batch, sa, sb)
	return func() {
		ad, bd, yd := A.data, B.data, out.data
		l.each(func(o int, offs []int) {
			for j := 0; j < l.inner; j++ {
				ao := offs[0] + j*l.istride[0]
				bo := offs[1] + j*l.istride[1]
				yo := (o + j) * m * n
				sgemm(impl, false, false, m, n, k, 1, ad[ao:], max(k, 1), bd[bo:], max(n, 1), 0, yd[yo:yo+m*n], max(n, 1))
			}
		})
	}, nil
}

// convGeom is the geometry of a convolution or pooling window over k spatial dimensions.
type convGeom struct {
	in, out   []int // spatial extents
	kernel    []int
	strides   []int
	padBegin  []int
	padEnd    []int
	dilations []int

	inStride []int // row-major strides of the spatial input
	tap      []int // im2col scratch: the kernel tap of the current row
	oidx     []int // im2col scratch: odometer over the outer output dimensions
}

func newGeom(w ir.Window, in, out ir.Shape) convGeom {
	k := len(w.Kernel)
	return convGeom{
		in: in[2:], out: out[2:], kernel: w.Kernel, strides: w.Strides,
		padBegin: w.Pads[:k], padEnd: w.Pads[k:], dilations: w.Dilations,
		inStride: contiguous(in[2:]), tap: make([]int, k), oidx: make([]int, k),
	}
}

// validRange returns the output indices o in [lo, hi) along dimension d for which the kernel
// tap t reads inside the input.
func (g *convGeom) validRange(d, t int) (lo, hi int) {
	off := t*g.dilations[d] - g.padBegin[d] // input coordinate for o = 0
	s := g.strides[d]
	// o*s + off >= 0  and  o*s + off <= in-1
	lo = 0
	if off < 0 {
		lo = (-off + s - 1) / s
	}
	hi = 0
	if g.in[d]-1-off >= 0 {
		hi = (g.in[d]-1-off)/s + 1
	}
	hi = min(hi, g.out[d])
	lo = min(lo, hi)
	return lo, hi
}

// im2col writes the columns matrix of one image group: row (c, t_0..t_{k-1}) holds, for every
// output position, the input value that kernel tap t of channel c reads there (0 in padding).
// x holds channels planes of prod(in) elements; col has channels*prod(kernel) rows of prod(out).
func (g *convGeom) im2col(col, x []float32, channels int) {
	k := len(g.kernel)
	last := k - 1
	inPlane, outPlane, taps := 1, 1, 1
	for d := 0; d < k; d++ {
		inPlane *= g.in[d]
		outPlane *= g.out[d]
		taps *= g.kernel[d]
	}
	inStride, tap, oidx := g.inStride, g.tap, g.oidx
	rowLen := g.out[last]
	r := 0
	for c := 0; c < channels; c++ {
		plane := x[c*inPlane : (c+1)*inPlane]
		for t := 0; t < taps; t++ {
			// Decode tap index t into per-dimension taps.
			rem := t
			for d := last; d >= 0; d-- {
				tap[d] = rem % g.kernel[d]
				rem /= g.kernel[d]
			}
			row := col[r*outPlane : (r+1)*outPlane]
			r++
			lo, hi := g.validRange(last, tap[last])
			s := g.strides[last]
			first := tap[last]*g.dilations[last] - g.padBegin[last] // input coordinate at o = 0
			for d := range oidx {
				oidx[d] = 0
			}
			for seg := 0; seg < outPlane; seg += rowLen {
				dst := row[seg : seg+rowLen]
				base, ok := 0, true
				for d := 0; d < last; d++ {
					xi := oidx[d]*g.strides[d] - g.padBegin[d] + tap[d]*g.dilations[d]
					if xi < 0 || xi >= g.in[d] {
						ok = false
						break
					}
					base += xi * inStride[d]
				}
				if !ok {
					clear(dst)
				} else {
					clear(dst[:lo])
					clear(dst[hi:])
					src := base + lo*s + first
					if s == 1 {
						copy(dst[lo:hi], plane[src:src+hi-lo])
					} else {
						for o := lo; o < hi; o++ {
							dst[o] = plane[src]
							src += s
						}
					}
				}
				for d := last - 1; d >= 0; d-- {
					oidx[d]++
					if oidx[d] < g.out[d] {
						break
					}
					oidx[d] = 0
				}
			}
		}
	}
}

// identity reports whether the window reads each input element once in place (a 1x1 kernel
// with unit strides and no padding), so that the input itself is the columns matrix.
func (g *convGeom) identity() bool {
	for d := range g.kernel {
		if g.kernel[d] != 1 || g.strides[d] != 1 || g.padBegin[d] != 0 || g.padEnd[d] != 0 {
			return false
		}
	}
	return true
}

// conv is ONNX Conv over any number of spatial dimensions, by im2col and one Sgemm per image
// and group.
func (c *compiler) conv(a ir.Attrs, in []*slot, out *slot) (func(), error) {
	X, W := in[0], in[1]
	k := len(X.shape) - 2
	w, err := ir.WindowAttrs(a, k)
	if err != nil {
		return nil, err
	}
	group, err := a.Int("group")
	if err != nil {
		return nil, err
	}
	g := newGeom(w, X.shape, out.shape)
	batch, cin, m := X.shape[0], X.shape[1], W.shape[0]
	cg, mg := cin/group, m/group
	inPlane, outPlane, taps := ir.Shape(g.in).Size(), ir.Shape(g.out).Size(), ir.Shape(g.kernel).Size()
	kdim := cg * taps // GEMM inner dimension
	direct := g.identity()
	if !direct {
		c.scratch = max(c.scratch, kdim*outPlane)
	}
	var B *slot
	if len(in) == 3 {
		B = in[2]
	}
	impl, it := c.it.gemm, c.it
	return func() {
		xd, wd, yd := X.data, W.data, out.data
		for nb := 0; nb < batch; nb++ {
			for gi := 0; gi < group; gi++ {
				xs := xd[(nb*cin+gi*cg)*inPlane : (nb*cin+(gi+1)*cg)*inPlane]
				ys := yd[(nb*m+gi*mg)*outPlane : (nb*m+(gi+1)*mg)*outPlane]
				ws := wd[gi*mg*kdim : (gi+1)*mg*kdim]
				col := xs
				if !direct {
					col = it.scratch[:kdim*outPlane]
					g.im2col(col, xs, cg)
				}
				sgemm(impl, false, false, mg, outPlane, kdim, 1, ws, max(kdim, 1), col, max(outPlane, 1), 0, ys, max(outPlane, 1))
			}
			if B != nil {
				for oc := 0; oc < m; oc++ {
					b := B.data[oc]
					row := yd[(nb*m+oc)*outPlane : (nb*m+oc+1)*outPlane]
					for i := range row {
						row[i] += b
					}
				}
			}
		}
	}, nil
}
