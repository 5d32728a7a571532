package interp

import "github.com/cryptflow-go/cryptflow/ir"

// loop walks the elements of an output shape together with the matching offsets into operands
// that are broadcast (or permuted) into it. Dimensions of size 1 are dropped and adjacent
// dimensions that are contiguous for every operand are merged, so the innermost row is as long
// as possible; the rows are visited in row-major order of the output.
type loop struct {
	outer   []int   // extents of the outer dimensions
	strides [][]int // strides[k][d]: operand k's element stride along outer dimension d
	inner   int     // length of the innermost row
	istride []int   // operand k's element stride along the innermost row
	idx     []int   // odometer scratch
	offs    []int   // offsets scratch, one per operand
	empty   bool
}

// contiguous returns the row-major element strides of shape s.
func contiguous(s ir.Shape) []int {
	st := make([]int, len(s))
	acc := 1
	for i := len(s) - 1; i >= 0; i-- {
		st[i] = acc
		acc *= s[i]
	}
	return st
}

// broadcastStrides returns, for each dimension of out, the element stride of a row-major tensor
// of shape s when it is broadcast to out (0 along broadcast dimensions).
func broadcastStrides(s, out ir.Shape) []int {
	st := make([]int, len(out))
	off := len(out) - len(s)
	acc := 1
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != 1 {
			st[off+i] = acc
		}
		acc *= s[i]
	}
	return st
}

// newLoop builds a loop over shape out for operands with the given per-dimension strides.
func newLoop(out ir.Shape, strides ...[]int) *loop {
	l := &loop{empty: out.Size() == 0}
	// Keep the dimensions larger than 1, merging each into the previous one when every operand
	// (the output included: it is contiguous) steps through both as through one.
	var dims []int
	var st [][]int // st[d][k]
	ost := contiguous(out)
	for d, n := range out {
		if n == 1 {
			continue
		}
		if last := len(dims) - 1; last >= 0 {
			merge := st[last][0] == ost[d]*n
			for k := range strides {
				if st[last][k+1] != strides[k][d]*n {
					merge = false
				}
			}
			if merge {
				dims[last] *= n
				st[last][0] = ost[d]
				for k := range strides {
					st[last][k+1] = strides[k][d]
				}
				continue
			}
		}
		row := make([]int, len(strides)+1)
		row[0] = ost[d]
		for k := range strides {
			row[k+1] = strides[k][d]
		}
		dims = append(dims, n)
		st = append(st, row)
	}
	l.inner = 1
	l.istride = make([]int, len(strides))
	if len(dims) > 0 {
		last := len(dims) - 1
		l.inner = dims[last]
		for k := range strides {
			l.istride[k] = st[last][k+1]
		}
		dims, st = dims[:last], st[:last]
	}
	l.outer = dims
	l.strides = make([][]int, len(strides))
	for k := range strides {
		l.strides[k] = make([]int, len(dims))
		for d := range dims {
			l.strides[k][d] = st[d][k+1]
		}
	}
	l.idx = make([]int, len(dims))
	l.offs = make([]int, len(strides))
	return l
}

// each calls row once per innermost row with the output offset and the operands' offsets (a
// slice reused between calls).
func (l *loop) each(row func(out int, offs []int)) {
	if l.empty {
		return
	}
	for d := range l.idx {
		l.idx[d] = 0
	}
	for k := range l.offs {
		l.offs[k] = 0
	}
	for o := 0; ; o += l.inner {
		row(o, l.offs)
		d := len(l.outer) - 1
		for ; d >= 0; d-- {
			l.idx[d]++
			for k := range l.offs {
				l.offs[k] += l.strides[k][d]
			}
			if l.idx[d] < l.outer[d] {
				break
			}
			for k := range l.offs {
				l.offs[k] -= l.strides[k][d] * l.outer[d]
			}
			l.idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

type binOp uint8

const (
	opAdd binOp = iota
	opSub
	opMul
	opDiv
)

var binOps = map[ir.Op]binOp{ir.Add: opAdd, ir.Sub: opSub, ir.Mul: opMul, ir.Div: opDiv}

// binaryRow computes dst[i] = a[i*sa] op b[i*sb] for i < len(dst).
func binaryRow(op binOp, dst, a []float32, sa int, b []float32, sb int) {
	n := len(dst)
	if n == 0 {
		return
	}
	if sa == 1 && sb == 1 {
		a, b = a[:n], b[:n]
		switch op {
		case opAdd:
			for i := range dst {
				dst[i] = a[i] + b[i]
			}
		case opSub:
			for i := range dst {
				dst[i] = a[i] - b[i]
			}
		case opMul:
			for i := range dst {
				dst[i] = a[i] * b[i]
			}
		case opDiv:
			for i := range dst {
				dst[i] = a[i] / b[i]
			}
		}
		return
	}
	if sb == 0 && sa == 1 {
		a, y := a[:n], b[0]
		switch op {
		case opAdd:
			for i := range dst {
				dst[i] = a[i] + y
			}
		case opSub:
			for i := range dst {
				dst[i] = a[i] - y
			}
		case opMul:
			for i := range dst {
				dst[i] = a[i] * y
			}
		case opDiv:
			for i := range dst {
				dst[i] = a[i] / y
			}
		}
		return
	}
	if sa == 0 && sb == 1 {
		x, b := a[0], b[:n]
		switch op {
		case opAdd:
			for i := range dst {
				dst[i] = x + b[i]
			}
		case opSub:
			for i := range dst {
				dst[i] = x - b[i]
			}
		case opMul:
			for i := range dst {
				dst[i] = x * b[i]
			}
		case opDiv:
			for i := range dst {
				dst[i] = x / b[i]
			}
		}
		return
	}
	for i := range dst {
		x, y := a[i*sa], b[i*sb]
		switch op {
		case opAdd:
			dst[i] = x + y
		case opSub:
			dst[i] = x - y
		case opMul:
			dst[i] = x * y
		case opDiv:
			dst[i] = x / y
		}
	}
}

// binary is an elementwise operator with multidirectional broadcasting.
func binary(op binOp, a, b, out *slot) func() {
	l := newLoop(out.shape, broadcastStrides(a.shape, out.shape), broadcastStrides(b.shape, out.shape))
	n := l.inner
	return func() {
		ad, bd, dst := a.data, b.data, out.data
		l.each(func(o int, offs []int) {
			binaryRow(op, dst[o:o+n], ad[offs[0]:], l.istride[0], bd[offs[1]:], l.istride[1])
		})
	}
}

// broadcastInto copies src, broadcast to dst's shape, into dst.
func broadcastInto(dstShape ir.Shape, srcShape ir.Shape) func(dst, src []float32) {
	l := newLoop(dstShape, broadcastStrides(srcShape, dstShape))
	n := l.inner
	return func(dst, src []float32) {
		s := l.istride[0]
		l.each(func(o int, offs []int) {
			row := dst[o : o+n]
			if s == 1 {
				copy(row, src[offs[0]:offs[0]+n])
				return
			}
			for i := range row {
				row[i] = src[offs[0]+i*s]
			}
		})
	}
}

// sum adds its inputs, broadcast to the output shape, left to right.
func sum(in []*slot, out *slot) func() {
	first := broadcastInto(out.shape, in[0].shape)
	type term struct {
		src *slot
		l   *loop
	}
	terms := make([]term, 0, len(in)-1)
	ost := contiguous(out.shape)
	for _, s := range in[1:] {
		terms = append(terms, term{s, newLoop(out.shape, ost, broadcastStrides(s.shape, out.shape))})
	}
	return func() {
		dst := out.data
		first(dst, in[0].data)
		for _, t := range terms {
			n, sd := t.l.inner, t.src.data
			t.l.each(func(o int, offs []int) {
				binaryRow(opAdd, dst[o:o+n], dst[offs[0]:], t.l.istride[0], sd[offs[1]:], t.l.istride[1])
			})
		}
	}
}
