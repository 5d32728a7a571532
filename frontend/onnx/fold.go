package onnx

import (
	"errors"
	"fmt"
	"math"

	"github.com/cryptflow-go/cryptflow/ir"
)

// constant is a tensor whose value the importer knows: an initializer, a Constant node's value, or
// a folded result. Floating-point data is held as float32, integer and boolean data as int64;
// dtype keeps the ONNX element type for Cast and ConstantOfShape. Every constant owns its data.
type constant struct {
	dtype DataType
	shape ir.Shape
	f     []float32 // when dtype.IsFloat()
	i     []int64   // when dtype is an integer or bool type
}

func (c *constant) isInt() bool { return !c.dtype.IsFloat() }

func (c *constant) size() int { return c.shape.Size() }

// constFromTensor converts a decoded tensor.
func constFromTensor(t *Tensor) (*constant, error) {
	switch {
	case t.DataType.IsFloat():
		f, err := t.Float32s()
		if err != nil {
			return nil, err
		}
		return &constant{dtype: t.DataType, shape: t.Shape(), f: f}, nil
	case t.DataType.IsInteger():
		i, err := t.Int64s()
		if err != nil {
			return nil, err
		}
		return &constant{dtype: t.DataType, shape: t.Shape(), i: i}, nil
	}
	return nil, fmt.Errorf("%w: tensor %q of type %s", ErrUnsupported, t.Name, t.DataType)
}

// ints returns the values of an integer constant as ints (shapes, axes, pads).
func (c *constant) ints() ([]int, error) {
	if !c.isInt() {
		return nil, fmt.Errorf("tensor of type %s, want an integer tensor", c.dtype)
	}
	out := make([]int, len(c.i))
	for k, v := range c.i {
		if v > math.MaxInt32 || v < math.MinInt32 {
			// Larger values appear only as "to the end" markers (Slice), which callers clamp.
			if v > 0 {
				v = math.MaxInt32
			} else {
				v = math.MinInt32
			}
		}
		out[k] = int(v)
	}
	return out, nil
}

// scalarFloat returns the single value of a one-element constant as a float.
func (c *constant) scalarFloat() (float32, error) {
	if c.size() != 1 {
		return 0, fmt.Errorf("tensor of shape %v, want a single value", c.shape)
	}
	if c.isInt() {
		return float32(c.i[0]), nil
	}
	return c.f[0], nil
}

// tensor converts a floating-point constant to an ir.Tensor (sharing the data).
func (c *constant) tensor() (*ir.Tensor, error) {
	if c.isInt() {
		return nil, fmt.Errorf("%w: %s tensor used as float data", ErrUnsupported, c.dtype)
	}
	return &ir.Tensor{Shape: c.shape.Clone(), Data: c.f}, nil
}

// withData builds a constant of c's type from per-type data produced by fn.
func (c *constant) mapData(shape ir.Shape, ff func([]float32) []float32, fi func([]int64) []int64) *constant {
	out := &constant{dtype: c.dtype, shape: shape}
	if c.isInt() {
		out.i = fi(c.i)
	} else {
		out.f = ff(c.f)
	}
	return out
}

// reshaped returns a copy of c with a new shape of the same size.
func (c *constant) reshaped(shape ir.Shape) *constant {
	return c.mapData(shape.Clone(),
		func(f []float32) []float32 { return append([]float32{}, f...) },
		func(i []int64) []int64 { return append([]int64{}, i...) })
}

// checkSize rejects a folded result of more than limit elements before it is allocated.
func checkSize(shape ir.Shape, limit int) error {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return fmt.Errorf("negative dimension in %v", shape)
		}
		if d != 0 && n > limit/d {
			return fmt.Errorf("constant of shape %v has more than %d elements", shape, limit)
		}
		n *= d
	}
	return nil
}

// strides returns row-major strides of shape.
func strides(shape ir.Shape) []int {
	s := make([]int, len(shape))
	acc := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= shape[i]
	}
	return s
}

// broadcastStrides returns the strides of a tensor of shape in, read as a tensor of shape out
// (numpy broadcasting: broadcast dimensions get stride 0).
func broadcastStrides(in, out ir.Shape) []int {
	st := strides(in)
	bs := make([]int, len(out))
	off := len(out) - len(in)
	for i := range in {
		if in[i] != 1 {
			bs[off+i] = st[i]
		}
	}
	return bs
}

// binaryData applies fn elementwise with numpy broadcasting.
func binaryData[T float32 | int64](a []T, as ir.Shape, b []T, bs ir.Shape, out ir.Shape, fn func(x, y T) T) []T {
	n := out.Size()
	res := make([]T, n)
	if n == 0 {
		return res
	}
	sa, sb := broadcastStrides(as, out), broadcastStrides(bs, out)
	idx := make([]int, len(out))
	ia, ib := 0, 0
	for k := 0; k < n; k++ {
		res[k] = fn(a[ia], b[ib])
		for d := len(out) - 1; d >= 0; d-- {
			idx[d]++
			ia += sa[d]
			ib += sb[d]
			if idx[d] < out[d] {
				break
			}
			ia -= sa[d] * out[d]
			ib -= sb[d] * out[d]
			idx[d] = 0
		}
	}
	return res
}

var errDivZero = errors.New("integer division by zero")

// foldBinary folds Add, Sub, Mul or Div of two constants of the same kind.
func foldBinary(op string, a, b *constant, limit int) (*constant, error) {
	if a.isInt() != b.isInt() {
		return nil, fmt.Errorf("operands of types %s and %s", a.dtype, b.dtype)
	}
	out, err := ir.Broadcast(a.shape, b.shape)
	if err != nil {
		return nil, err
	}
	if err := checkSize(out, limit); err != nil {
		return nil, err
	}
	res := &constant{dtype: a.dtype, shape: out}
	if a.isInt() {
		var fn func(x, y int64) int64
		divZero := false
		switch op {
		case "Add":
			fn = func(x, y int64) int64 { return x + y }
		case "Sub":
			fn = func(x, y int64) int64 { return x - y }
		case "Mul":
			fn = func(x, y int64) int64 { return x * y }
		case "Div":
			fn = func(x, y int64) int64 {
				if y == 0 {
					divZero = true
					return 0
				}
				return x / y
			}
		default:
			return nil, fmt.Errorf("cannot fold %s", op)
		}
		res.i = binaryData(a.i, a.shape, b.i, b.shape, out, fn)
		if divZero {
			return nil, errDivZero
		}
		return res, nil
	}
	var fn func(x, y float32) float32
	switch op {
	case "Add":
		fn = func(x, y float32) float32 { return x + y }
	case "Sub":
		fn = func(x, y float32) float32 { return x - y }
	case "Mul":
		fn = func(x, y float32) float32 { return x * y }
	case "Div":
		fn = func(x, y float32) float32 { return x / y }
	default:
		return nil, fmt.Errorf("cannot fold %s", op)
	}
	res.f = binaryData(a.f, a.shape, b.f, b.shape, out, fn)
	return res, nil
}

// transposeData permutes the axes of a row-major tensor.
func transposeData[T any](src []T, shape ir.Shape, perm []int) []T {
	out := make(ir.Shape, len(perm))
	for i, p := range perm {
		out[i] = shape[p]
	}
	n := out.Size()
	res := make([]T, n)
	if n == 0 {
		return res
	}
	st := strides(shape)
	ps := make([]int, len(perm)) // source stride of each output axis
	for i, p := range perm {
		ps[i] = st[p]
	}
	idx := make([]int, len(out))
	s := 0
	for k := 0; k < n; k++ {
		res[k] = src[s]
		for d := len(out) - 1; d >= 0; d-- {
			idx[d]++
			s += ps[d]
			if idx[d] < out[d] {
				break
			}
			s -= ps[d] * out[d]
			idx[d] = 0
		}
	}
	return res
}

// concatData concatenates row-major tensors along axis.
func concatData[T any](parts [][]T, shapes []ir.Shape, axis int, out ir.Shape) []T {
	res := make([]T, 0, out.Size())
	outer := out[:axis].Size()
	for o := 0; o < outer; o++ {
		for p, data := range parts {
			chunk := shapes[p][axis:].Size()
			res = append(res, data[o*chunk:(o+1)*chunk]...)
		}
	}
	return res
}

// gatherData implements Gather along axis with already-normalised indices.
func gatherData[T any](src []T, shape ir.Shape, axis int, idx []int, out ir.Shape) []T {
	res := make([]T, 0, out.Size())
	outer := shape[:axis].Size()
	inner := shape[axis+1:].Size()
	for o := 0; o < outer; o++ {
		base := o * shape[axis] * inner
		for _, ix := range idx {
			res = append(res, src[base+ix*inner:base+(ix+1)*inner]...)
		}
	}
	return res
}

// sliceData extracts a strided slice: for each axis, start and step, out[d] elements (the
// reads of ir.SelectionIndex, as HLIL's Slice of a runtime tensor).
func sliceData[T any](src []T, shape ir.Shape, start, step []int, out ir.Shape) []T {
	idx := ir.SelectionIndex(shape, ir.StridedSelection(start, step, out))
	res := make([]T, len(idx))
	for k, j := range idx {
		res[k] = src[j]
	}
	return res
}

// castConst converts a constant to ONNX type to (C-style: float to integer truncates toward
// zero and wraps to the type's width; to bool gives 0 or 1).
func castConst(c *constant, to DataType) (*constant, error) {
	if !to.IsFloat() && !to.IsInteger() {
		return nil, fmt.Errorf("%w: Cast to %s", ErrUnsupported, to)
	}
	out := &constant{dtype: to, shape: c.shape.Clone()}
	n := c.size()
	if to.IsFloat() {
		out.f = make([]float32, n)
		if c.isInt() {
			for k, v := range c.i {
				out.f[k] = float32(v)
			}
		} else {
			copy(out.f, c.f)
		}
		if to == Float16 || to == BFloat16 {
			// Values are kept at float32 precision; HLIL computes in float32 anyway.
			return out, nil
		}
		return out, nil
	}
	out.i = make([]int64, n)
	for k := 0; k < n; k++ {
		var v int64
		if c.isInt() {
			v = c.i[k]
		} else {
			x := float64(c.f[k])
			switch {
			case math.IsNaN(x):
				v = 0
			case to == Bool:
				if x != 0 {
					v = 1
				}
			case x >= math.MaxInt64:
				v = math.MaxInt64
			case x <= math.MinInt64:
				v = math.MinInt64
			default:
				v = int64(x)
			}
		}
		out.i[k] = wrapInt(v, to)
	}
	return out, nil
}

// wrapInt reduces v to the range of integer type t.
func wrapInt(v int64, t DataType) int64 {
	switch t {
	case Bool:
		if v != 0 {
			return 1
		}
		return 0
	case Int8:
		return int64(int8(v))
	case Uint8:
		return int64(uint8(v))
	case Int16:
		return int64(int16(v))
	case Uint16:
		return int64(uint16(v))
	case Int32:
		return int64(int32(v))
	case Uint32:
		return int64(uint32(v))
	}
	return v
}
