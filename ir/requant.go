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
	// FixAt and FixAdd (one input only): J correction slots of C values each (slot-major):
	// FixAdd[j·C+c] is added before the clip where x = FixAt[j·C+c] (0 adds nothing).
	FixAt, FixAdd []int
	J             int
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
	p.C = len(p.Add)
	if len(p.FixAt) != len(p.FixAdd) || (p.C > 0 && len(p.FixAt)%p.C != 0) || (len(p.FixAt) > 0 && inputs != 1) {
		return nil, fmt.Errorf("requant: %d correction points and %d corrections for %d parameter sets and %d input(s)", len(p.FixAt), len(p.FixAdd), p.C, inputs)
	}
	if p.C > 0 {
		p.J = len(p.FixAt) / p.C
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
	y := acc >> uint(p.Shift) // floor division by 2^shift
	for j := 0; j < p.J; j++ {
		if x[0] == int64(p.FixAt[j*p.C+c]) {
			y += int64(p.FixAdd[j*p.C+c])
		}
	}
	return min(max(y, int64(p.Min)), int64(p.Max))
}
