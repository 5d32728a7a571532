package linear

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/ring"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
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
		mustBoth(b, func() (err error) { a, err = transport.Accept(ctx, ln, testOpt); return },
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
				c0, c1 = newConns(b, tc.streams)
			}
			o0, o1 := newOT(b, c0, c1)
			r := ring.Must(32)
			ctx := context.Background()
			var s0, s1 *Session
			opt := Options{OneBatch: tc.one}
			mustBoth(b, func() (err error) { s0, err = New(ctx, r, opt, o0...); return },
				func() (err error) { s1, err = New(ctx, r, opt, o1...); return })
			const m, k, n = 64, 64, 64
			rng := rand.New(rand.NewPCG(1, 2))
			w := values(r, rng, m*k)
			x0, x1 := share(r, rng, values(r, rng, k*n))
			d0, d1 := make([]uint64, m*n), make([]uint64, m*n)
			var before transport.Stats
			for _, c := range append(append([]*transport.Conn(nil), c0...), c1...) {
				before = before.Add(c.Stats())
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				mustBoth(b, func() error { return s0.MatMul(ctx, d0, w, m, k, n, x0) },
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
