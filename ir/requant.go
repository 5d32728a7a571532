package ir

import "fmt"

// RequantParams are the attributes of a Requant node, read and checked.
type RequantParams struct {
	Axis     int
	C        int     // parameter sets (1, or the size of the axis)
	Mult     [][]int // per input, C multipliers
	Add      []int   // C offsets
	Shift    int
	Min, Max int
	// RNE rounds V/2^shift half to even (V = Σ x·mult + add) instead of flooring it.
	RNE bool
	// FixAt and FixAdd: J correction slots of C values each (slot-major): FixAdd[j·C+c] is added
	// before the clip where the inputs equal FixAt[(j·C+c)·n + i] (n inputs; 0 adds nothing).
	FixAt, FixAdd []int
	J             int
	// FixV keys the corrections on V itself (C = 1): FixAt[j] is a value of V, and FixAdd[j]·2^shift
	// is added to V before the rounding.
	FixV bool
}

// ReadRequant reads and checks the attributes of a Requant node whose inputs have shape s.
func ReadRequant(a Attrs, inputs int, s Shape) (*RequantParams, error) {
	p := &RequantParams{}
	var err error
	if p.Axis, err = a.Int("axis"); err != nil {
		return nil, err
	}
	mult, err := a.Ints("mult")
	if err != nil {
		return nil, err
	}
	if p.Add, err = a.Ints("add"); err != nil {
		return nil, err
	}
	if p.Shift, err = a.Int("shift"); err != nil {
		return nil, err
	}
	if p.Min, err = a.Int("min"); err != nil {
		return nil, err
	}
	if p.Max, err = a.Int("max"); err != nil {
		return nil, err
	}
	p.FixAt, _ = a.Ints("fix_at")
	p.FixAdd, _ = a.Ints("fix_add")
	if r, err := a.Int("rne"); err == nil {
		p.RNE = r != 0
	}
	if r, err := a.Int("fix_v"); err == nil {
		p.FixV = r != 0
	}
	p.C = len(p.Add)
	keys := inputs
	if p.FixV {
		keys = 1
	}
	if len(p.FixAt) != keys*len(p.FixAdd) || (p.C > 0 && len(p.FixAdd)%p.C != 0) || (p.FixV && p.C != 1) {
		return nil, fmt.Errorf("requant: %d correction points and %d corrections for %d parameter sets and %d input(s)", len(p.FixAt), len(p.FixAdd), p.C, inputs)
	}
	if p.C > 0 {
		p.J = len(p.FixAdd) / p.C
	}
	switch {
	case p.C == 0 || len(mult) != inputs*p.C:
		return nil, fmt.Errorf("requant: %d multipliers and %d offsets for %d input(s)", len(mult), p.C, inputs)
	case p.Shift < 0 || p.Shift > 62:
		return nil, fmt.Errorf("requant: shift %d not in 0..62", p.Shift)
	case p.Min > p.Max:
		return nil, fmt.Errorf("requant: min %d > max %d", p.Min, p.Max)
	case p.C > 1 && (p.Axis < 0 || p.Axis >= len(s) || s[p.Axis] != p.C):
		return nil, fmt.Errorf("requant: %d parameter sets do not match axis %d of %v", p.C, p.Axis, s)
	}
	for i := 0; i < inputs; i++ {
		p.Mult = append(p.Mult, mult[i*p.C:(i+1)*p.C])
	}
	return p, nil
}

func inferRequant(a Attrs, in []Shape) (Shape, DType, error) {
	if len(in) == 2 && !in[0].Equal(in[1]) {
		return nil, 0, fmt.Errorf("requant: input shapes %v and %v differ", in[0], in[1])
	}
	if _, err := ReadRequant(a, len(in), in[0]); err != nil {
		return nil, 0, err
	}
	return in[0].Clone(), Float32, nil
}

// Channel returns the parameter index of flat element i of a tensor of shape s.
func (p *RequantParams) Channel(s Shape, i int) int {
	if p.C == 1 {
		return 0
	}
	inner := 1
	for _, d := range s[p.Axis+1:] {
		inner *= d
	}
	return (i / inner) % p.C
}

// Apply computes one output element from the integer inputs x (one per input) and channel c.
func (p *RequantParams) Apply(x []int64, c int) int64 {
	var acc int64
	for i, v := range x {
		acc += v * int64(p.Mult[i][c])
	}
	acc += int64(p.Add[c])
	if p.FixV {
		a0 := acc
		for j := 0; j < p.J; j++ {
			if a0 == int64(p.FixAt[j]) {
				acc += int64(p.FixAdd[j]) << uint(p.Shift)
			}
		}
	}
	var y int64
	if p.RNE && p.Shift > 0 {
		h := acc + int64(1)<<uint(p.Shift-1)
		y = h >> uint(p.Shift)
		if (h-1)>>uint(p.Shift) != y && y&1 != 0 { // an exact half, rounded up to an odd value
			y--
		}
	} else {
		y = acc >> uint(p.Shift) // floor division by 2^shift
	}
	for j := 0; j < p.J && !p.FixV; j++ {
		s := j*p.C + c
		hit := true
		for i, v := range x {
			hit = hit && v == int64(p.FixAt[s*len(x)+i])
		}
		if hit {
			y += int64(p.FixAdd[s])
		}
	}
	return min(max(y, int64(p.Min)), int64(p.Max))
}
