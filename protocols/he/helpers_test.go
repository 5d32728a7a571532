package he

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/ring"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

var testOpt = transport.Options{Timeout: 60 * time.Second}

type pair struct {
	r      ring.Ring
	s0, s1 *Session
	c0, c1 *transport.Conn
	calls  int
}

func newPair(t testing.TB, l int, opt Options) *pair {
	t.Helper()
	p := &pair{r: ring.Must(l)}
	p.c0, p.c1 = transport.Pipe(testOpt)
	t.Cleanup(func() { p.c0.Close(); p.c1.Close() })
	ctx := context.Background()
	testenv.MustBoth(t, func() (err error) { p.s0, err = New(ctx, p.r, 0, p.c0, opt); return },
		func() (err error) { p.s1, err = New(ctx, p.r, 1, p.c1, opt); return })
	return p
}

func (p *pair) bytes() int64 { return p.c0.Stats().BytesSent + p.c1.Stats().BytesSent }

func (p *pair) rounds() int64 { return p.c0.Stats().Rounds + p.c1.Stats().Rounds }

// wantRounds is the number of flights of the next call: party 1's upload and party 0's reply, but
// the first call's upload follows party 1's public key in the same flight.
func (p *pair) wantRounds() int64 {
	p.calls++
	if p.calls == 1 {
		return 1
	}
	return 2
}

// share splits v into random additive shares, with ring-edge patterns at party 1.
func share(r ring.Ring, rng *rand.Rand, v []uint64) (x0, x1 []uint64) {
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

// values returns n ring elements: edge values first, then random ones of random magnitude.
func values(r ring.Ring, rng *rand.Rand, n int) []uint64 {
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

func reconstruct(r ring.Ring, a, b []uint64) []uint64 {
	out := make([]uint64, len(a))
	for i := range a {
		out[i] = r.Add(a[i], b[i])
	}
	return out
}

// refConv is the plain definition of ring.ConvGeom's convolution in the ring.
func refConv(r ring.Ring, w []uint64, c ring.ConvGeom, x []uint64) []uint64 {
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

func outSize(n, k, s, pads, d int) int { return (n+pads-(k-1)*d-1)/s + 1 }
