package tf

import (
	"errors"
	"fmt"
	"math"

	"github.com/cryptflow-go/cryptflow/ir"
)

// tconst is a tensor whose value the importer knows: a Const node, or a folded result. Values are
// held as float64 whatever the TF type (integers used as shapes and axes are exact far beyond any
// real extent); dtype keeps the TF type for Cast, integer division and error messages. When the
// value reaches HLIL it is rounded to float32.
type tconst struct {
	dtype DataType
	shape ir.Shape
	v     []float64
}

func newConst(dtype DataType, shape ir.Shape) *tconst {
	return &tconst{dtype: dtype, shape: shape.Clone(), v: make([]float64, shape.Size())}
}

func constFromTensor(t *Tensor) (*tconst, error) {
	v, err := t.Float64s()
	if err != nil {
		return nil, err
	}
	shape := make(ir.Shape, len(t.Shape))
	for i, d := range t.Shape {
		shape[i] = int(d)
	}
	return &tconst{dtype: t.DType, shape: shape, v: v}, nil
}

// tensor converts to an HLIL float32 tensor.
func (c *tconst) tensor() *ir.Tensor {
	t := ir.NewTensor(c.shape)
	for i, x := range c.v {
		t.Data[i] = float32(x)
	}
	return t
}

// ints returns the values as ints, failing on a non-integer or out-of-range value.
func (c *tconst) ints() ([]int, error) {
	out := make([]int, len(c.v))
	for i, x := range c.v {
		if x != math.Trunc(x) || math.Abs(x) > 1<<40 {
			return nil, fmt.Errorf("value %v is not an integer index", x)
		}
		out[i] = int(x)
	}
	return out, nil
}

// scalar returns the single value of a one-element constant.
func (c *tconst) scalar() (float64, bool) {
	if len(c.v) != 1 {
		return 0, false
	}
	return c.v[0], true
}

// uniform returns the value of a constant whose elements are all equal.
func (c *tconst) uniform() (float64, bool) {
	if len(c.v) == 0 {
		return 0, false
	}
	for _, x := range c.v[1:] {
		if x != c.v[0] && !(math.IsNaN(x) && math.IsNaN(c.v[0])) {
			return 0, false
		}
	}
	return c.v[0], true
}

// castTo converts values to TF type d the way TF's Cast kernel does (float to integer truncates
// toward zero, to bool tests for non-zero, to float32/half rounds).
func castTo(d DataType, x float64) float64 {
	switch {
	case d == DTBool:
		if x != 0 {
			return 1
		}
		return 0
	case d.IsInt():
		if math.IsNaN(x) {
			return 0
		}
		return wrapInt(d, math.Trunc(x))
	case d == DTFloat:
		return float64(float32(x))
	case d == DTHalf:
		return float64(float32(x)) // approximate: HLIL computes in float32 anyway
	}
	return x
}

// wrapInt keeps an integer result inside the range of its type (saturating, which TF does not
// promise either way; it only matters for malformed graphs).
func wrapInt(d DataType, x float64) float64 {
	lo, hi := math.Inf(-1), math.Inf(1)
	switch d {
	case DTInt32:
		lo, hi = math.MinInt32, math.MaxInt32
	case DTInt8:
		lo, hi = math.MinInt8, math.MaxInt8
	case DTUint8:
		lo, hi = 0, math.MaxUint8
	case DTInt16:
		lo, hi = math.MinInt16, math.MaxInt16
	case DTUint16:
		lo, hi = 0, math.MaxUint16
	case DTUint32:
		lo, hi = 0, math.MaxUint32
	case DTInt64:
		lo, hi = -(1 << 63), 1<<63-1
	case DTUint64:
		lo, hi = 0, 1<<64-1
	}
	return math.Max(lo, math.Min(hi, x))
}

// foldUnary applies a scalar function elementwise.
func foldUnary(c *tconst, f func(float64) float64) *tconst {
	out := newConst(c.dtype, c.shape)
	for i, x := range c.v {
		out.v[i] = f(x)
	}
	return out
}

var unaryFold = map[string]func(float64) float64{
	"Neg":        func(x float64) float64 { return -x },
	"Relu":       func(x float64) float64 { return math.Max(x, 0) },
	"Relu6":      func(x float64) float64 { return math.Min(math.Max(x, 0), 6) },
	"Sigmoid":    func(x float64) float64 { return 1 / (1 + math.Exp(-x)) },
	"Tanh":       math.Tanh,
	"Sqrt":       math.Sqrt,
	"Rsqrt":      func(x float64) float64 { return 1 / math.Sqrt(x) },
	"Reciprocal": func(x float64) float64 { return 1 / x },
	"Square":     func(x float64) float64 { return x * x },
	"Exp":        math.Exp,
	"Log":        math.Log,
	"Abs":        math.Abs,
	"Floor":      math.Floor,
	"Ceil":       math.Ceil,
}

var errDivZero = errors.New("integer division by zero")

// binaryFold returns the elementwise function of a binary op for the operand type d.
func binaryFold(op string, d DataType) func(a, b float64) (float64, error) {
	isInt := d.IsInt()
	switch op {
	case "Add", "AddV2":
		return func(a, b float64) (float64, error) { return a + b, nil }
	case "Sub":
		return func(a, b float64) (float64, error) { return a - b, nil }
	case "Mul":
		return func(a, b float64) (float64, error) { return a * b, nil }
	case "RealDiv", "Div", "FloorDiv", "TruncateDiv":
		return func(a, b float64) (float64, error) {
			if !isInt {
				if op == "FloorDiv" {
					return math.Floor(a / b), nil
				}
				return a / b, nil
			}
			if b == 0 {
				return 0, errDivZero
			}
			if op == "FloorDiv" {
				return math.Floor(a / b), nil
			}
			return math.Trunc(a / b), nil // TF's integer Div and TruncateDiv round toward zero
		}
	case "FloorMod":
		return func(a, b float64) (float64, error) {
			if isInt && b == 0 {
				return 0, errDivZero
			}
			return a - math.Floor(a/b)*b, nil
		}
	case "Maximum":
		return func(a, b float64) (float64, error) { return math.Max(a, b), nil }
	case "Minimum":
		return func(a, b float64) (float64, error) { return math.Min(a, b), nil }
	case "SquaredDifference":
		return func(a, b float64) (float64, error) { return (a - b) * (a - b), nil }
	case "Pow":
		return func(a, b float64) (float64, error) { return math.Pow(a, b), nil }
	}
	return nil
}

// foldBinary applies op with numpy broadcasting.
func foldBinary(op string, a, b *tconst, limit int) (*tconst, error) {
	f := binaryFold(op, a.dtype)
	if f == nil {
		return nil, fmt.Errorf("cannot fold %s", op)
	}
	shape, err := ir.Broadcast(a.shape, b.shape)
	if err != nil {
		return nil, err
	}
	if err := checkLimit(shape, limit); err != nil {
		return nil, err
	}
	out := newConst(a.dtype, shape)
	ai, bi := broadcastIndex(a.shape, shape), broadcastIndex(b.shape, shape)
	for i := range out.v {
		r, err := f(a.v[ai(i)], b.v[bi(i)])
		if err != nil {
			return nil, err
		}
		if a.dtype.IsInt() {
			r = wrapInt(a.dtype, r)
		}
		out.v[i] = r
	}
	return out, nil
}

// broadcastIndex maps a flat index of the broadcast shape out to the flat index of a tensor of
// shape s.
func broadcastIndex(s, out ir.Shape) func(int) int {
	r := len(out)
	strides := make([]int, r) // stride in s for each output axis, 0 where broadcast
	st := 1
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != 1 {
			strides[r-len(s)+i] = st
		}
		st *= s[i]
	}
	return func(flat int) int {
		idx := 0
		for ax := r - 1; ax >= 0; ax-- {
			d := out[ax]
			if d == 0 {
				return 0
			}
			idx += (flat % d) * strides[ax]
			flat /= d
		}
		return idx
	}
}

// transposeConst returns c transposed by perm (out dims[i] = c dims[perm[i]]).
func transposeConst(c *tconst, perm []int) *tconst {
	r := len(perm)
	shape := make(ir.Shape, r)
	for i, p := range perm {
		shape[i] = c.shape[p]
	}
	out := newConst(c.dtype, shape)
	inStr := make([]int, r)
	st := 1
	for i := r - 1; i >= 0; i-- {
		inStr[i] = st
		st *= c.shape[i]
	}
	idx := make([]int, r)
	for flat := range out.v {
		src := 0
		for i := 0; i < r; i++ {
			src += idx[i] * inStr[perm[i]]
		}
		out.v[flat] = c.v[src]
		for i := r - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < shape[i] {
				break
			}
			idx[i] = 0
		}
	}
	return out
}

// reduceConst reduces c over the given (non-negative, distinct) axes.
func reduceConst(op string, c *tconst, axes []int, keep bool) (*tconst, error) {
	red := make([]bool, len(c.shape))
	for _, a := range axes {
		red[a] = true
	}
	var outShape, keptShape ir.Shape
	for i, d := range c.shape {
		if red[i] {
			keptShape = append(keptShape, 1)
			if keep {
				outShape = append(outShape, 1)
			}
		} else {
			keptShape = append(keptShape, d)
			outShape = append(outShape, d)
		}
	}
	if outShape == nil {
		outShape = ir.Shape{}
	}
	n := keptShape.Size()
	acc := make([]float64, n)
	count := make([]int, n)
	first := make([]bool, n)
	idx := broadcastIndexRev(c.shape, keptShape)
	for i, x := range c.v {
		j := idx(i)
		switch {
		case !first[j]:
			acc[j] = x
			first[j] = true
		case op == "Sum" || op == "Mean":
			acc[j] += x
		case op == "Prod":
			acc[j] *= x
		case op == "Max":
			acc[j] = math.Max(acc[j], x)
		case op == "Min":
			acc[j] = math.Min(acc[j], x)
		default:
			return nil, fmt.Errorf("cannot fold %s", op)
		}
		count[j]++
	}
	out := &tconst{dtype: c.dtype, shape: outShape, v: acc}
	for j := range acc {
		if count[j] == 0 {
			switch op {
			case "Prod":
				acc[j] = 1
			case "Max", "Min":
				return nil, fmt.Errorf("%s over an empty axis", op)
			}
		}
		if op == "Mean" && count[j] > 0 {
			acc[j] /= float64(count[j])
			if c.dtype.IsInt() {
				acc[j] = math.Trunc(acc[j])
			}
		}
	}
	return out, nil
}

// broadcastIndexRev maps a flat index of a tensor of shape s to the flat index of the reduced
// shape kept (same rank, 1 on reduced axes).
func broadcastIndexRev(s, kept ir.Shape) func(int) int {
	r := len(s)
	strides := make([]int, r)
	st := 1
	for i := r - 1; i >= 0; i-- {
		if kept[i] != 1 {
			strides[i] = st
		}
		st *= kept[i]
	}
	return func(flat int) int {
		idx := 0
		for ax := r - 1; ax >= 0; ax-- {
			d := s[ax]
			idx += (flat % d) * strides[ax]
			flat /= d
		}
		return idx
	}
}

// slicePlan is a TF StridedSlice resolved against the input's shape: per input axis the first
// element, the step and the count read, and the output shape (shrunk axes removed, new axes of
// size 1 inserted).
type slicePlan struct {
	starts, steps, counts []int
	out                   ir.Shape
}

// stridedSlice folds TF StridedSlice on a constant. It supports begin/end/shrink_axis masks and
// new_axis and ellipsis masks.
func stridedSlice(c *tconst, begin, end, strides []int, beginMask, endMask, ellipsisMask, newAxisMask, shrinkMask int64) (*tconst, error) {
	pl, err := planStridedSlice(c.shape, begin, end, strides, beginMask, endMask, ellipsisMask, newAxisMask, shrinkMask)
	if err != nil {
		return nil, err
	}
	out := newConst(c.dtype, pl.out)
	for k, j := range ir.SelectionIndex(c.shape, ir.StridedSelection(pl.starts, pl.steps, pl.counts)) {
		out.v[k] = c.v[j]
	}
	return out, nil
}

// planStridedSlice resolves a StridedSlice's specification against an input of the given shape.
func planStridedSlice(shape ir.Shape, begin, end, strides []int, beginMask, endMask, ellipsisMask, newAxisMask, shrinkMask int64) (*slicePlan, error) {
	if len(begin) != len(end) || len(begin) != len(strides) {
		return nil, fmt.Errorf("begin %v, end %v and strides %v differ in length", begin, end, strides)
	}
	if ellipsisMask&(ellipsisMask-1) != 0 {
		return nil, errors.New("more than one ellipsis")
	}
	// Expand the sparse specification into one entry per input axis (plus new axes).
	type dimSpec struct {
		begin, end, stride int
		bm, em, shrink     bool
		newAxis            bool
	}
	var dense []dimSpec
	rank := len(shape)
	specAxes := 0 // input axes the spec consumes, not counting the ellipsis
	for i := range begin {
		if ellipsisMask&(1<<i) == 0 && newAxisMask&(1<<i) == 0 {
			specAxes++
		}
	}
	for i := range begin {
		bit := int64(1) << i
		switch {
		case ellipsisMask&bit != 0:
			for k := 0; k < rank-specAxes; k++ {
				dense = append(dense, dimSpec{stride: 1, bm: true, em: true})
			}
		case newAxisMask&bit != 0:
			dense = append(dense, dimSpec{newAxis: true})
		default:
			dense = append(dense, dimSpec{begin: begin[i], end: end[i], stride: strides[i],
				bm: beginMask&bit != 0, em: endMask&bit != 0, shrink: shrinkMask&bit != 0})
		}
	}
	consumed := 0
	for _, d := range dense {
		if !d.newAxis {
			consumed++
		}
	}
	for consumed < rank {
		dense = append(dense, dimSpec{stride: 1, bm: true, em: true})
		consumed++
	}
	if consumed > rank {
		return nil, fmt.Errorf("slice specification has %d axes for a rank-%d tensor", consumed, rank)
	}
	var outShape ir.Shape
	var starts, steps, counts []int // per input axis
	ax := 0
	for _, d := range dense {
		if d.newAxis {
			outShape = append(outShape, 1)
			continue
		}
		n := shape[ax]
		ax++
		if d.stride == 0 {
			return nil, errors.New("slice stride 0")
		}
		if d.shrink {
			b := d.begin
			if b < 0 {
				b += n
			}
			if b < 0 || b >= n {
				return nil, fmt.Errorf("shrink index %d out of range for axis of size %d", d.begin, n)
			}
			starts, steps, counts = append(starts, b), append(steps, 1), append(counts, 1)
			continue
		}
		clamp := func(x int, lo, hi int) int { return max(lo, min(hi, x)) }
		var b, e int
		if d.stride > 0 {
			b, e = 0, n
			if !d.bm {
				b = d.begin
				if b < 0 {
					b += n
				}
				b = clamp(b, 0, n)
			}
			if !d.em {
				e = d.end
				if e < 0 {
					e += n
				}
				e = clamp(e, 0, n)
			}
		} else {
			b, e = n-1, -1
			if !d.bm {
				b = d.begin
				if b < 0 {
					b += n
				}
				b = clamp(b, -1, n-1)
			}
			if !d.em {
				e = d.end
				if e < 0 {
					e += n
				}
				e = clamp(e, -1, n-1)
			}
		}
		cnt := 0
		if d.stride > 0 && e > b {
			cnt = (e - b + d.stride - 1) / d.stride
		} else if d.stride < 0 && b > e {
			cnt = (b - e - d.stride - 1) / -d.stride
		}
		starts, steps, counts = append(starts, b), append(steps, d.stride), append(counts, cnt)
		outShape = append(outShape, cnt)
	}
	if outShape == nil {
		outShape = ir.Shape{}
	}
	return &slicePlan{starts: starts, steps: steps, counts: counts, out: outShape}, nil
}

// concatConst concatenates constants along axis.
func concatConst(cs []*tconst, axis int) (*tconst, error) {
	shape := cs[0].shape.Clone()
	for _, c := range cs[1:] {
		if len(c.shape) != len(shape) {
			return nil, fmt.Errorf("concatenating ranks %d and %d", len(shape), len(c.shape))
		}
		for i := range shape {
			if i != axis && c.shape[i] != shape[i] {
				return nil, fmt.Errorf("concatenating shapes %v and %v along axis %d", cs[0].shape, c.shape, axis)
			}
		}
		shape[axis] += c.shape[axis]
	}
	out := newConst(cs[0].dtype, shape)
	outer := shape[:axis].Size()
	pos := 0
	for o := 0; o < outer; o++ {
		for _, c := range cs {
			inner := c.shape[axis:].Size()
			copy(out.v[pos:], c.v[o*inner:(o+1)*inner])
			pos += inner
		}
	}
	return out, nil
}
