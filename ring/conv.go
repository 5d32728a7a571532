package ring

import "fmt"

// ConvGeom is the public geometry of a 2-D convolution: input X [N, C, H, W] (NCHW, shared),
// weights W [M, C/Groups, KH, KW] (party 0's), output [N, M, OH, OW]. Output position (oy, ox)
// and kernel offset (ky, kx) read input row oy·SH − PH + ky·DH and column ox·SW − PW + kx·DW;
// positions outside the input read zero. Output channel m belongs to group m/(M/Groups) and reads
// that group's C/Groups input channels. A 1-D convolution has H = OH = KH = SH = DH = 1, PH = 0.
type ConvGeom struct {
	N, C, H, W int // input: batch, channels, height, width
	M, OH, OW  int // output channels, height, width
	KH, KW     int // kernel
	SH, SW     int // strides
	PH, PW     int // padding before the first row and column
	DH, DW     int // dilations
	Groups     int
}

// maxConvElems bounds every tensor and index table of a convolution (elements), so that the
// int32 tables and the int64 formulas cannot overflow.
const maxConvElems = 1 << 30

// Validate checks that the geometry is consistent: positive sizes, non-negative padding, channels
// divisible by the groups, tensors of at most 2^30 elements.
func (c ConvGeom) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"N", c.N}, {"C", c.C}, {"H", c.H}, {"W", c.W}, {"M", c.M}, {"OH", c.OH}, {"OW", c.OW},
		{"KH", c.KH}, {"KW", c.KW}, {"SH", c.SH}, {"SW", c.SW}, {"DH", c.DH}, {"DW", c.DW}, {"Groups", c.Groups}} {
		if f.v < 1 || f.v > maxConvElems {
			return fmt.Errorf("conv geometry: %s = %d outside 1..2^30", f.name, f.v)
		}
	}
	if c.PH < 0 || c.PW < 0 || c.PH > maxConvElems || c.PW > maxConvElems {
		return fmt.Errorf("conv geometry: padding %d, %d outside 0..2^30", c.PH, c.PW)
	}
	if c.C%c.Groups != 0 || c.M%c.Groups != 0 {
		return fmt.Errorf("conv geometry: %d input and %d output channels are not divisible by %d groups", c.C, c.M, c.Groups)
	}
	for _, t := range []struct {
		name string
		dims []int
	}{{"input", []int{c.N, c.C, c.H, c.W}}, {"output", []int{c.N, c.M, c.OH, c.OW}},
		{"weights", []int{c.M, c.C / c.Groups, c.KH, c.KW}}, {"window table", []int{c.N, c.OH, c.OW, c.KH, c.KW}},
		{"im2col matrix", []int{c.N, c.C, c.OH, c.OW, c.KH, c.KW}}} {
		n := 1
		for _, d := range t.dims {
			n *= d
			if n > maxConvElems {
				return fmt.Errorf("conv geometry: the %s %v has more than 2^30 elements", t.name, t.dims)
			}
		}
	}
	return nil
}
