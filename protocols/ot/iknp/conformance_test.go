package iknp_test

import (
	"context"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

var conformanceOpt = transport.Options{Timeout: 10 * time.Second}

func iknpPair(t testing.TB) (*ot.Session, *ot.Session) {
	c0, c1 := ottest.Pipes(t, 1, conformanceOpt)
	o0, o1 := ottest.Sessions(t, c0, c1)
	return o0[0], o1[0]
}

// TestConformanceIKNP: IKNP with its native chosen choice bits and KK13.
func TestConformanceIKNP(t *testing.T) { ottest.Conformance(t, iknpPair) }

// TestConformanceIKNPGeneric: the IKNP core through the derived layer's generic paths
// (derandomised choice bits, 1-of-N from log2 N COTs).
func TestConformanceIKNPGeneric(t *testing.T) {
	ottest.Conformance(t, func(t testing.TB) (*ot.Session, *ot.Session) {
		return generic(t, iknpPair)
	})
}

// generic wraps the cores of a pair in ottest.RandomChoice.
func generic(t testing.TB, pair func(testing.TB) (*ot.Session, *ot.Session)) (*ot.Session, *ot.Session) {
	s0, s1 := pair(t)
	g0, err0 := ot.New(ottest.RandomChoice{Core: s0.Core()})
	g1, err1 := ot.New(ottest.RandomChoice{Core: s1.Core()})
	if err0 != nil || err1 != nil {
		t.Fatal(err0, err1)
	}
	return g0, g1
}

func TestNewNilCore(t *testing.T) {
	if _, err := ot.New(nil); err == nil {
		t.Fatal("nil core accepted")
	}
	s0, _ := iknpPair(t)
	if _, err := s0.Carve(1, 1); err == nil {
		t.Fatal("IKNP carved")
	}
	g0, _ := generic(t, iknpPair)
	if _, err := g0.Fork(context.Background(), s0.Conn()); err == nil {
		t.Fatal("a core without Fork forked")
	}
}

// The IKNP core's native chosen COT against the derived layer's derandomised path on the same
// core (λ + w·l bits per instance against λ + 1 + w·l, and a swap pass at the sender).
func BenchmarkIKNPCOT32Native(b *testing.B) { benchCOT(b, iknpPair) }
func BenchmarkIKNPCOT32Generic(b *testing.B) {
	benchCOT(b, func(t testing.TB) (*ot.Session, *ot.Session) { return generic(t, iknpPair) })
}

func benchCOT(b *testing.B, pair func(testing.TB) (*ot.Session, *ot.Session)) {
	const n, l = 1 << 16, 32
	s0, s1 := pair(b)
	ctx := context.Background()
	x, r, y := make([]uint64, n), make([]uint64, n), make([]uint64, n)
	bits := make([]uint64, n/64)
	for i := range bits {
		bits[i] = 0x5555aaaa3333cccc
	}
	st, st0 := s1.Conn().Stats(), s0.Conn().Stats()
	b.ResetTimer()
	for range b.N {
		ottest.MustBoth(b, func() error { return s0.SendCOT(ctx, l, x, r) }, func() error { return s1.RecvCOT(ctx, l, bits, y) })
	}
	b.ReportMetric(float64(8*(s1.Conn().Stats().Sub(st).BytesSent+s0.Conn().Stats().Sub(st0).BytesSent))/float64(b.N*n), "bits/COT")
}
