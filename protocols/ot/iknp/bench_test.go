package iknp

import (
	"context"
	"net"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// tcpSessions connects two sessions over loopback TCP.
func tcpSessions(b *testing.B) (*ot.Session, *ot.Session) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Skip("no loopback TCP:", err)
	}
	defer ln.Close()
	ctx := context.Background()
	var c0, c1 *transport.Conn
	if e0, e1 := testenv.Both(func() (err error) { c0, err = transport.Accept(ctx, ln, transport.Options{}); return },
		func() (err error) { c1, err = transport.Dial(ctx, ln.Addr().String(), transport.Options{}); return }); e0 != nil || e1 != nil {
		b.Fatal(e0, e1)
	}
	b.Cleanup(func() { c0.Close(); c1.Close() })
	var s0, s1 *ot.Session
	e0, e1 := testenv.Both(func() (err error) { s0, err = NewSession(ctx, c0, 0); return },
		func() (err error) { s1, err = NewSession(ctx, c1, 1); return })
	if e0 != nil || e1 != nil {
		b.Fatal(e0, e1)
	}
	return s0, s1
}

// benchBatches runs b.N batches of n instances and reports OTs/s and the
// wire bytes per instance (both directions).
func benchBatches(b *testing.B, n int, s0, s1 *ot.Session, f0, f1 func() error) {
	if e0, e1 := testenv.Both(f0, f1); e0 != nil || e1 != nil { // warm-up
		b.Fatal(e0, e1)
	}
	st0, st1 := s0.Conn().Stats(), s1.Conn().Stats()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if e0, e1 := testenv.Both(f0, f1); e0 != nil || e1 != nil {
			b.Fatal(e0, e1)
		}
	}
	b.StopTimer()
	bytes := s0.Conn().Stats().Sub(st0).BytesSent + s1.Conn().Stats().Sub(st1).BytesSent
	total := float64(b.N) * float64(n)
	b.ReportMetric(total/b.Elapsed().Seconds(), "OTs/s")
	b.ReportMetric(float64(bytes)/total, "B/OT")
}

const benchN = 1 << 16

func BenchmarkCOT32TCP(b *testing.B) {
	s0, s1 := tcpSessions(b)
	ctx := context.Background()
	x, r, y, c := make([]uint64, benchN), make([]uint64, benchN), make([]uint64, benchN), make([]uint64, bitvec.Words(benchN))
	benchBatches(b, benchN, s0, s1, func() error { return s0.SendCOT(ctx, 32, x, r) },
		func() error { return s1.RecvCOT(ctx, 32, c, y) })
}

// BenchmarkCOT37x16TCP: vector COT of 16 words of 37 bits (the linear
// layers' shape; 592 bits per instance, so each instance is cut from its own
// five hash blocks).
func BenchmarkCOT37x16TCP(b *testing.B) {
	s0, s1 := tcpSessions(b)
	ctx := context.Background()
	const w = 16
	x, r, y, c := make([]uint64, w*benchN), make([]uint64, w*benchN), make([]uint64, w*benchN), make([]uint64, bitvec.Words(benchN))
	benchBatches(b, benchN, s0, s1, func() error { return s0.SendCOTWide(ctx, w, 37, x, r) },
		func() error { return s1.RecvCOTWide(ctx, w, 37, c, y) })
}

func BenchmarkOT32TCP(b *testing.B) {
	s0, s1 := tcpSessions(b)
	ctx := context.Background()
	m0, m1, m, c := make([]uint64, benchN), make([]uint64, benchN), make([]uint64, benchN), make([]uint64, bitvec.Words(benchN))
	benchBatches(b, benchN, s0, s1, func() error { return s0.SendOT(ctx, 32, m0, m1) },
		func() error { return s1.RecvOT(ctx, 32, c, m) })
}

func BenchmarkROT128TCP(b *testing.B) {
	s0, s1 := tcpSessions(b)
	ctx := context.Background()
	m0, m1, m, c := make([]uint64, 2*benchN), make([]uint64, 2*benchN), make([]uint64, 2*benchN), make([]uint64, bitvec.Words(benchN))
	benchBatches(b, benchN, s0, s1, func() error { return s0.SendROTWide(ctx, 2, 64, m0, m1) },
		func() error { return s1.RecvROTWide(ctx, 2, 64, c, m) })
}

func BenchmarkROTChosen128TCP(b *testing.B) {
	s0, s1 := tcpSessions(b)
	ctx := context.Background()
	m0, m1, m, c := make([]uint64, 2*benchN), make([]uint64, 2*benchN), make([]uint64, 2*benchN), make([]uint64, bitvec.Words(benchN))
	for i := range c {
		c[i] = 0x5555555555555555
	}
	benchBatches(b, benchN, s0, s1, func() error { return s0.SendROTChosenWide(ctx, 2, 64, m0, m1) },
		func() error { return s1.RecvROTChosenWide(ctx, 2, 64, c, m) })
}

// BenchmarkROTChosen37x8TCP: 8 words of 37 bits per instance (several hash
// blocks cut at an odd width, as the linear layers' pads).
func BenchmarkROTChosen37x8TCP(b *testing.B) {
	s0, s1 := tcpSessions(b)
	ctx := context.Background()
	const w = 8
	m0, m1, m, c := make([]uint64, w*benchN), make([]uint64, w*benchN), make([]uint64, w*benchN), make([]uint64, bitvec.Words(benchN))
	benchBatches(b, benchN, s0, s1, func() error { return s0.SendROTChosenWide(ctx, w, 37, m0, m1) },
		func() error { return s1.RecvROTChosenWide(ctx, w, 37, c, m) })
}

func BenchmarkOTN16x2TCP(b *testing.B) {
	s0, s1 := tcpSessions(b)
	ctx := context.Background()
	msgs, c, m := make([]uint64, 16*benchN), make([]uint8, benchN), make([]uint64, benchN)
	benchBatches(b, benchN, s0, s1, func() error { return s0.SendOTN(ctx, 16, 2, msgs) },
		func() error { return s1.RecvOTN(ctx, 16, 2, c, m) })
}

func BenchmarkBaseOTs(b *testing.B) {
	for i := 0; i < b.N; i++ {
		c0, c1 := transport.Pipe(transport.Options{})
		ctx := context.Background()
		if e0, e1 := testenv.Both(func() error { _, err := NewSession(ctx, c0, 0); return err },
			func() error { _, err := NewSession(ctx, c1, 1); return err }); e0 != nil || e1 != nil {
			b.Fatal(e0, e1)
		}
		c0.Close()
		c1.Close()
	}
}
