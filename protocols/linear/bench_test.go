package linear

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// tcpConns connects k stream pairs over loopback TCP.
func tcpConns(b *testing.B, k int) (c0, c1 []*transport.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	ctx := context.Background()
	for i := 0; i < k; i++ {
		var a, d *transport.Conn
		testenv.MustBoth(b, func() (err error) { a, err = transport.Accept(ctx, ln, testOpt); return },
			func() (err error) { d, err = transport.Dial(ctx, ln.Addr().String(), testOpt); return })
		b.Cleanup(func() { a.Close(); d.Close() })
		c0, c1 = append(c0, a), append(c1, d)
	}
	return
}

// BenchmarkMatMul64 is EzPC SCI's OT matmul benchmark shape: 64×64 times 64×64 over Z_2^32, one
// thread (stream) per party. SCI: 211 ms and 37,888 bits per output element on this kind of
// machine.
func BenchmarkMatMul64(b *testing.B) {
	for _, tc := range []struct {
		net     string
		streams int
		one     bool
	}{{"pipe", 1, false}, {"tcp", 1, false}, {"tcp", 2, false}, {"pipe", 1, true}, {"tcp", 1, true}} {
		name := fmt.Sprintf("%s_streams%d", tc.net, tc.streams)
		if tc.one {
			name += "_onebatch"
		}
		b.Run(name, func(b *testing.B) {
			var c0, c1 []*transport.Conn
			if tc.net == "tcp" {
				c0, c1 = tcpConns(b, tc.streams)
			} else {
				c0, c1 = ottest.Pipes(b, tc.streams, testOpt)
			}
			o0, o1 := ottest.Sessions(b, c0, c1)
			r := ring.Must(32)
			ctx := context.Background()
			var s0, s1 *Session
			opt := Options{OneBatch: tc.one}
			testenv.MustBoth(b, func() (err error) { s0, err = New(ctx, r, opt, o0...); return },
				func() (err error) { s1, err = New(ctx, r, opt, o1...); return })
			const m, k, n = 64, 64, 64
			rng := rand.New(rand.NewPCG(1, 2))
			w := ringtest.Values(r, rng, m*k)
			x0, x1 := ringtest.Share(r, rng, ringtest.Values(r, rng, k*n))
			d0, d1 := make([]uint64, m*n), make([]uint64, m*n)
			var before transport.Stats
			for _, c := range append(append([]*transport.Conn(nil), c0...), c1...) {
				before = before.Add(c.Stats())
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				testenv.MustBoth(b, func() error { return s0.MatMul(ctx, d0, w, m, k, n, x0) },
					func() error { return s1.MatMul(ctx, d1, nil, m, k, n, x1) })
			}
			b.StopTimer()
			var after transport.Stats
			for _, c := range append(append([]*transport.Conn(nil), c0...), c1...) {
				after = after.Add(c.Stats())
			}
			d := after.Sub(before)
			b.ReportMetric(float64(8*d.BytesSent)/float64(b.N*m*n), "bits/elt")
			b.ReportMetric(float64(d.BytesSent)/float64(b.N)/1e6, "MB/op")
			b.ReportMetric(float64(d.Rounds)/float64(b.N), "flights/op")
		})
	}
}

// BenchmarkConv is one convolution by Conv2D and, for comparison, by MatMul on its im2col matrix
// (the VM's lowering; the gather itself is not timed), over the in-memory pipe: mnist-8's second
// layer at l = 28 and a MiniONN layer (64→64 channels, 16×16, 3×3) at l = 41.
func BenchmarkConv(b *testing.B) {
	for _, tc := range []struct {
		name    string
		c       ring.ConvGeom
		l       int
		streams int
	}{
		{"mnist8-conv2", ring.ConvGeom{N: 1, C: 8, H: 14, W: 14, M: 16, OH: 14, OW: 14, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1, Groups: 1}, 28, 1},
		{"mnist8-conv2", ring.ConvGeom{N: 1, C: 8, H: 14, W: 14, M: 16, OH: 14, OW: 14, KH: 5, KW: 5, SH: 1, SW: 1, PH: 2, PW: 2, DH: 1, DW: 1, Groups: 1}, 28, 2},
		{"minionn-16x16", ring.ConvGeom{N: 1, C: 64, H: 16, W: 16, M: 64, OH: 16, OW: 16, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}, 41, 1},
	} {
		for _, method := range []string{"direct", "im2col"} {
			b.Run(fmt.Sprintf("%s_streams%d_%s", tc.name, tc.streams, method), func(b *testing.B) {
				c0, c1 := ottest.Pipes(b, tc.streams, testOpt)
				o0, o1 := ottest.Sessions(b, c0, c1)
				r := ring.Must(tc.l)
				ctx := context.Background()
				var s0, s1 *Session
				testenv.MustBoth(b, func() (err error) { s0, err = New(ctx, r, Options{}, o0...); return },
					func() (err error) { s1, err = New(ctx, r, Options{}, o1...); return })
				c := tc.c
				rng := rand.New(rand.NewPCG(1, 2))
				w, x := convOperands(r, rng, c)
				x0, x1 := ringtest.Share(r, rng, x)
				n := c.N * c.M * c.OH * c.OW
				d0, d1 := make([]uint64, n), make([]uint64, n)
				// The im2col matrix of each share (one group).
				kg, cols := c.C*c.KH*c.KW, c.OH*c.OW
				col := func(x []uint64) []uint64 {
					m := make([]uint64, kg*cols)
					for ci := 0; ci < c.C; ci++ {
						for ky := 0; ky < c.KH; ky++ {
							for kx := 0; kx < c.KW; kx++ {
								row := (ci*c.KH+ky)*c.KW + kx
								for oy := 0; oy < c.OH; oy++ {
									for ox := 0; ox < c.OW; ox++ {
										iy, ix := oy*c.SH-c.PH+ky*c.DH, ox*c.SW-c.PW+kx*c.DW
										if iy >= 0 && iy < c.H && ix >= 0 && ix < c.W {
											m[row*cols+oy*c.OW+ox] = x[(ci*c.H+iy)*c.W+ix]
										}
									}
								}
							}
						}
					}
					return m
				}
				m0, m1 := col(x0), col(x1)
				var before transport.Stats
				for _, cn := range append(append([]*transport.Conn(nil), c0...), c1...) {
					before = before.Add(cn.Stats())
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if method == "direct" {
						testenv.MustBoth(b, func() error { return s0.Conv2D(ctx, d0, w, c, x0) },
							func() error { return s1.Conv2D(ctx, d1, nil, c, x1) })
					} else {
						testenv.MustBoth(b, func() error { return s0.MatMul(ctx, d0, w, c.M, kg, cols, m0) },
							func() error { return s1.MatMul(ctx, d1, nil, c.M, kg, cols, m1) })
					}
				}
				b.StopTimer()
				var after transport.Stats
				for _, cn := range append(append([]*transport.Conn(nil), c0...), c1...) {
					after = after.Add(cn.Stats())
				}
				d := after.Sub(before)
				b.ReportMetric(float64(d.BytesSent)/float64(b.N)/1e6, "MB/op")
				b.ReportMetric(float64(d.Rounds)/float64(b.N), "flights/op")
			})
		}
	}
}
