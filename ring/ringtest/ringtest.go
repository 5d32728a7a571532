// Package ringtest holds what the protocol tests share about ring values: edge and random values,
// additive sharings with edge patterns, reconstruction, random convolution geometries, and the
// plain definition of a convolution in the ring. It is test scaffolding (tests use seeded
// math/rand/v2); protocol code never imports it.
package ringtest

import (
	"math/rand/v2"

	"github.com/cryptflow-go/cryptflow/ring"
)

// Values returns n ring elements: the edge values first (0, 1, −1, the most negative and most
// positive, 2, −2), then random ones of random magnitude and sign.
func Values(r ring.Ring, rng *rand.Rand, n int) []uint64 {
	v := []uint64{0, 1, r.Mask(), uint64(1) << (r.Bits - 1), r.Mask() >> 1, 2, r.Mask() - 1}
	for len(v) < n {
		sh := rng.IntN(r.Bits + 1)
		x := rng.Uint64() >> (64 - max(sh, 1))
		if rng.IntN(2) == 0 {
			x = -x
		}
		v = append(v, r.Reduce(x))
	}
	return v[:n]
}

// Share splits v into additive shares x0 + x1 = v, with ring-edge patterns in party 0's share
// (0, the most negative, the most positive, −1, the value itself) among random ones.
func Share(r ring.Ring, rng *rand.Rand, v []uint64) (x0, x1 []uint64) {
	x0, x1 = make([]uint64, len(v)), make([]uint64, len(v))
	half := uint64(1) << (r.Bits - 1)
	for i, a := range v {
		var s uint64
		switch i % 7 {
		case 1:
			s = 0
		case 2:
			s = half
		case 3:
			s = half - 1
		case 4:
			s = r.Mask()
		case 5:
			s = a
		default:
			s = r.Reduce(rng.Uint64())
		}
		x0[i] = s
		x1[i] = r.Sub(a, s)
	}
	return
}

// Reconstruct returns a + b elementwise in the ring.
func Reconstruct(r ring.Ring, a, b []uint64) []uint64 {
	out := make([]uint64, len(a))
	for i := range a {
		out[i] = r.Add(a[i], b[i])
	}
	return out
}

// OutSize is the output length of one axis: n inputs, kernel k, stride s, total padding pads,
// dilation d.
func OutSize(n, k, s, pads, d int) int { return (n+pads-(k-1)*d-1)/s + 1 }

// RandomConvGeom draws a convolution with random batch (1–2), groups (including depthwise),
// kernel, strides, dilations and asymmetric padding, spatial sizes up to maxSide; 1-D (H = 1) one
// time in four.
func RandomConvGeom(rng *rand.Rand, maxSide int) ring.ConvGeom {
	g := 1 + rng.IntN(3)
	c := ring.ConvGeom{N: 1 + rng.IntN(2), C: g * (1 + rng.IntN(3)), M: g * (1 + rng.IntN(4)), Groups: g}
	axis := func() (n, o, k, s, p, d int) {
		n = 1 + rng.IntN(maxSide)
		k = 1 + rng.IntN(min(4, n+1))
		s, d = 1+rng.IntN(3), 1
		if k > 1 && rng.IntN(3) == 0 {
			d = 2
		}
		p = rng.IntN(k + 1)
		end := rng.IntN(k + 1)
		if span := (k-1)*d + 1; n+p+end < span {
			end = span - n - p
		}
		return n, OutSize(n, k, s, p+end, d), k, s, p, d
	}
	c.W, c.OW, c.KW, c.SW, c.PW, c.DW = axis()
	if rng.IntN(4) == 0 {
		c.H, c.OH, c.KH, c.SH, c.PH, c.DH = 1, 1, 1, 1, 0, 1
	} else {
		c.H, c.OH, c.KH, c.SH, c.PH, c.DH = axis()
	}
	return c
}

// Conv is the plain definition of ring.ConvGeom's convolution in the ring: for every output
// position the sum over the group's input channels and kernel taps, padding reading zero.
func Conv(r ring.Ring, w []uint64, c ring.ConvGeom, x []uint64) []uint64 {
	cg, mg := c.C/c.Groups, c.M/c.Groups
	out := make([]uint64, c.N*c.M*c.OH*c.OW)
	for n := 0; n < c.N; n++ {
		for m := 0; m < c.M; m++ {
			g := m / mg
			for oy := 0; oy < c.OH; oy++ {
				for ox := 0; ox < c.OW; ox++ {
					var s uint64
					for ci := 0; ci < cg; ci++ {
						for ky := 0; ky < c.KH; ky++ {
							for kx := 0; kx < c.KW; kx++ {
								iy, ix := oy*c.SH-c.PH+ky*c.DH, ox*c.SW-c.PW+kx*c.DW
								if iy < 0 || iy >= c.H || ix < 0 || ix >= c.W {
									continue
								}
								s += w[((m*cg+ci)*c.KH+ky)*c.KW+kx] * x[((n*c.C+g*cg+ci)*c.H+iy)*c.W+ix]
							}
						}
					}
					out[((n*c.M+m)*c.OH+oy)*c.OW+ox] = r.Reduce(s)
				}
			}
		}
	}
	return out
}
