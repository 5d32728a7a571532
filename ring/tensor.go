package ring

import (
	"errors"
	"fmt"
)

// Tensor is a row-major tensor of ring elements: a cleartext fixed-point value or one party's
// share of it. Elements are kept reduced in the ring the tensor belongs to (the ring is not stored
// in the tensor; the code that owns the tensor knows it).
type Tensor struct {
	Shape []int
	Data  []uint64
}

// NewTensor returns a zero tensor of the given shape.
func NewTensor(shape []int) Tensor {
	return Tensor{Shape: append([]int(nil), shape...), Data: make([]uint64, Size(shape))}
}

// Size is the number of elements of a tensor of the given shape.
func Size(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// Len is the number of elements.
func (t Tensor) Len() int { return len(t.Data) }

// Check reports an error when the data length does not match the shape.
func (t Tensor) Check() error {
	n := 1
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("tensor shape %v has a negative dimension", t.Shape)
		}
		n *= d
	}
	if n != len(t.Data) {
		return fmt.Errorf("tensor of shape %v has %d elements, want %d", t.Shape, len(t.Data), n)
	}
	return nil
}

// Clone returns a deep copy.
func (t Tensor) Clone() Tensor {
	return Tensor{Shape: append([]int(nil), t.Shape...), Data: append([]uint64(nil), t.Data...)}
}

// EncodeTensor encodes float values at the given scale into a new tensor.
func (r Ring) EncodeTensor(shape []int, x []float32, scale int) (Tensor, error) {
	t := NewTensor(shape)
	if len(x) != len(t.Data) {
		return Tensor{}, fmt.Errorf("encode: %d values for shape %v", len(x), shape)
	}
	for i, v := range x {
		e, err := r.Encode(float64(v), scale)
		if err != nil {
			return Tensor{}, fmt.Errorf("encode element %d: %w", i, err)
		}
		t.Data[i] = e
	}
	return t, nil
}

// DecodeTensor decodes ring elements at the given scale into float32 values.
func (r Ring) DecodeTensor(t Tensor, scale int) []float32 {
	out := make([]float32, len(t.Data))
	for i, v := range t.Data {
		out[i] = float32(r.Decode(v, scale))
	}
	return out
}

// AddVec sets dst[i] = a[i] + b[i] in the ring. The slices must have equal lengths; dst may alias
// a or b.
func (r Ring) AddVec(dst, a, b []uint64) {
	b = b[:len(a)]
	dst = dst[:len(a)]
	if n := r.mod; n != 0 {
		for i, x := range a {
			dst[i] = modAdd(x, b[i], n)
		}
		return
	}
	m := r.mask
	for i, x := range a {
		dst[i] = (x + b[i]) & m
	}
}

// SubVec sets dst[i] = a[i] - b[i] in the ring.
func (r Ring) SubVec(dst, a, b []uint64) {
	b = b[:len(a)]
	dst = dst[:len(a)]
	if n := r.mod; n != 0 {
		for i, x := range a {
			dst[i] = modSub(x, b[i], n)
		}
		return
	}
	m := r.mask
	for i, x := range a {
		dst[i] = (x - b[i]) & m
	}
}

// MulVec sets dst[i] = a[i] * b[i] in the ring.
func (r Ring) MulVec(dst, a, b []uint64) {
	b = b[:len(a)]
	dst = dst[:len(a)]
	if n := r.mod; n != 0 {
		for i, x := range a {
			dst[i] = modMul(x, b[i], n)
		}
		return
	}
	m := r.mask
	for i, x := range a {
		dst[i] = (x * b[i]) & m
	}
}

// ScaleVec sets dst[i] = a[i] * c in the ring.
func (r Ring) ScaleVec(dst, a []uint64, c uint64) {
	dst = dst[:len(a)]
	if n := r.mod; n != 0 {
		c %= n
		for i, x := range a {
			dst[i] = modMul(x, c, n)
		}
		return
	}
	m := r.mask
	for i, x := range a {
		dst[i] = (x * c) & m
	}
}

// ReduceVec reduces every element of x in place.
func (r Ring) ReduceVec(x []uint64) {
	if n := r.mod; n != 0 {
		for i := range x {
			x[i] %= n
		}
		return
	}
	m := r.mask
	for i := range x {
		x[i] &= m
	}
}

// SignedTensor returns a tensor of the given shape holding v (signed integers, reduced into the
// ring) in its first len(v) elements and zeros after them.
func (r Ring) SignedTensor(shape []int, v ...int64) Tensor {
	t := NewTensor(shape)
	r.FromSignedVec(t.Data, v)
	return t
}

// FromSignedVec sets dst[i] to v[i] reduced into the ring, for i < len(v).
func (r Ring) FromSignedVec(dst []uint64, v []int64) {
	dst = dst[:len(v)]
	for i, x := range v {
		dst[i] = r.FromSigned(x)
	}
}

// SignedValues returns the elements of t read as signed integers.
func (r Ring) SignedValues(t Tensor) []int64 {
	out := make([]int64, len(t.Data))
	for i, v := range t.Data {
		out[i] = r.Signed(v)
	}
	return out
}

// CheckProduct validates the operands of a product with party 0's private weights, as the linear
// protocols (OT and HE) take them: party 0 passes nw weights and party 1 none, the shared operand
// has nx elements and the result nd.
func CheckProduct(party int, dst, w, x []uint64, nw, nx, nd int) error {
	switch {
	case party == 0 && len(w) != nw:
		return fmt.Errorf("party 0 passed %d weights, want %d", len(w), nw)
	case party == 1 && w != nil:
		return errors.New("party 1 passed weights; only party 0 holds them")
	case len(x) != nx:
		return fmt.Errorf("operand has %d elements, want %d", len(x), nx)
	case len(dst) != nd:
		return fmt.Errorf("result has %d elements, want %d", len(dst), nd)
	}
	return nil
}
