package nonlinear

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// Benchmarks over the in-memory pipe, both parties in this process. Use
// cmd/scibench nonlinear for loopback TCP and larger batches.

func benchProtocol(b *testing.B, streams, n int, f func(s *Session, x []uint64) error) {
	p := newPair(b, 32, Options{}, streams)
	rng := rand.New(rand.NewPCG(1, 1))
	x0, x1 := make([]uint64, n), make([]uint64, n)
	for i := range x0 {
		x0[i], x1[i] = rng.Uint64()&0xffffffff, rng.Uint64()&0x7fffffff
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		testenv.MustBoth(b, func() error { return f(p.s0, x0) }, func() error { return f(p.s1, x1) })
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/elt")
}

func BenchmarkReLU(b *testing.B) {
	const n = 1 << 16
	benchProtocol(b, 2, n, func(s *Session, x []uint64) error {
		return s.ReLU(context.Background(), make([]uint64, n), x)
	})
}

func BenchmarkTrunc(b *testing.B) {
	const n = 1 << 16
	benchProtocol(b, 2, n, func(s *Session, x []uint64) error {
		return s.Trunc(context.Background(), make([]uint64, n), x, 12, false)
	})
}

func BenchmarkMaxPool9(b *testing.B) {
	const rows = 1 << 13
	benchProtocol(b, 2, rows*9, func(s *Session, x []uint64) error {
		return s.MaxRows(context.Background(), make([]uint64, rows), x, rows, 9)
	})
}
