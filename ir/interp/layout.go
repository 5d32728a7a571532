package interp

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
)

// transpose permutes the axes: out dimension i is input dimension perm[i].
func transpose(attrs ir.Attrs, x, out *slot) (func(), error) {
	perm, err := attrs.Ints("perm")
	if err != nil {
		return nil, err
	}
	ist := contiguous(x.shape)
	st := make([]int, len(perm))
	for i, p := range perm {
		st[i] = ist[p]
	}
	l := newLoop(out.shape, st)
	return func() {
		xd, yd := x.data, out.data
		s, n := l.istride[0], l.inner
		l.each(func(o int, offs []int) {
			row := yd[o : o+n]
			if s == 1 {
				copy(row, xd[offs[0]:offs[0]+n])
				return
			}
			src := offs[0]
			for i := range row {
				row[i] = xd[src]
				src += s
			}
		})
	}, nil
}

// concat joins its inputs along one axis.
func concat(attrs ir.Attrs, in []*slot, out *slot) (func(), error) {
	axis, err := attrs.Int("axis")
	if err != nil {
		return nil, err
	}
	outer, n, inner := axisSplit(out.shape, axis)
	orow := n * inner
	return func() {
		yd := out.data
		off := 0
		for _, s := range in {
			block := s.shape[axis] * inner
			for o := 0; o < outer; o++ {
				copy(yd[o*orow+off:o*orow+off+block], s.data[o*block:(o+1)*block])
			}
			off += block
		}
	}, nil
}

// pad is ONNX Pad in constant, reflect, edge and wrap modes. Negative pads crop first (as
// onnxruntime does); the modes then extend what is left.
func pad(attrs ir.Attrs, x, out *slot) (func(), error) {
	mode, err := attrs.Str("mode")
	if err != nil {
		return nil, err
	}
	value, err := attrs.Float("value")
	if err != nil {
		return nil, err
	}
	pads, err := attrs.Ints("pads")
	if err != nil {
		return nil, err
	}
	r := len(x.shape)
	// maps[d][o] is the input index along dimension d read by output index o, or -1 for the
	// constant value.
	maps := make([][]int, r)
	for d := 0; d < r; d++ {
		m, err := padMap(mode, x.shape[d], pads[d], pads[r+d], out.shape[d])
		if err != nil {
			return nil, fmt.Errorf("axis %d: %w", d, err)
		}
		maps[d] = m
	}
	if r == 0 {
		return func() { copy(out.data, x.data) }, nil
	}
	ist := contiguous(x.shape)
	last := r - 1
	idx := make([]int, last)
	inner := out.shape[last]
	rows := out.shape[:last].Size()
	lastMap := maps[last]
	return func() {
		xd, yd := x.data, out.data
		if out.shape.Size() == 0 {
			return
		}
		clear(idx)
		for row := 0; row < rows; row++ {
			dst := yd[row*inner : (row+1)*inner]
			base, constant := 0, false
			for d := 0; d < last; d++ {
				i := maps[d][idx[d]]
				if i < 0 {
					constant = true
					break
				}
				base += i * ist[d]
			}
			if constant {
				for j := range dst {
					dst[j] = value
				}
			} else {
				src := xd[base:]
				for j, i := range lastMap {
					if i < 0 {
						dst[j] = value
					} else {
						dst[j] = src[i]
					}
				}
			}
			for d := last - 1; d >= 0; d-- {
				idx[d]++
				if idx[d] < out.shape[d] {
					break
				}
				idx[d] = 0
			}
		}
	}, nil
}

// padMap maps each output index along one axis of extent n padded by (before, after) to the
// input index it copies, or -1 where the constant value goes.
func padMap(mode string, n, before, after, outLen int) ([]int, error) {
	// What is left of the axis after negative pads crop it: input indices [lo, hi).
	lo, hi := max(0, -before), n-max(0, -after)
	kept := hi - lo
	if outLen != max(0, kept)+max(0, before)+max(0, after) {
		return nil, fmt.Errorf("pads (%d, %d) of an axis of %d give %d elements, not %d", before, after, n, kept+max(0, before)+max(0, after), outLen)
	}
	extends := before > 0 || after > 0
	if extends && mode != "constant" && kept <= 0 {
		return nil, fmt.Errorf("%s padding of an axis cropped to nothing", mode)
	}
	if extends && mode == "reflect" && kept == 1 {
		return nil, fmt.Errorf("reflect padding of an axis of one element")
	}
	m := make([]int, outLen)
	for o := range m {
		v := o - max(0, before) // position relative to the kept part
		if v >= 0 && v < kept {
			m[o] = lo + v
			continue
		}
		switch mode {
		case "constant":
			m[o] = -1
		case "edge":
			m[o] = lo + min(max(v, 0), kept-1)
		case "wrap":
			m[o] = lo + ((v%kept)+kept)%kept
		case "reflect":
			period := 2 * (kept - 1)
			p := ((v % period) + period) % period
			if p >= kept {
				p = period - p
			}
			m[o] = lo + p
		default:
			return nil, fmt.Errorf("unknown pad mode %q", mode)
		}
	}
	return m, nil
}

// selection is Slice and Gather of a runtime tensor: a gather by ir.SelectionIndex.
func selection(op ir.Op, attrs ir.Attrs, x, out *slot) (func(), error) {
	sel, _, err := ir.Selection(op, attrs, x.shape)
	if err != nil {
		return nil, err
	}
	idx := ir.SelectionIndex(x.shape, sel)
	return func() {
		xd, yd := x.data, out.data
		for i, j := range idx {
			yd[i] = xd[j]
		}
	}, nil
}
