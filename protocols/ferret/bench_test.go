package ferret

import (
	"context"
	"fmt"
	"net"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/iknp"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// tcpOTPair returns two OT sessions over loopback TCP.
func tcpOTPair(b *testing.B) (*ot.Session, *ot.Session) {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Skip("no loopback TCP:", err)
	}
	defer ln.Close()
	ctx := context.Background()
	var c0, c1 *transport.Conn
	testenv.MustBoth(b, func() (err error) { c0, err = transport.Accept(ctx, ln, testOpt); return },
		func() (err error) { c1, err = transport.Dial(ctx, ln.Addr().String(), testOpt); return })
	b.Cleanup(func() { c0.Close(); c1.Close() })
	var s0, s1 *ot.Session
	testenv.MustBoth(b, func() (err error) { s0, err = iknp.NewSession(ctx, c0, 0); return },
		func() (err error) { s1, err = iknp.NewSession(ctx, c1, 1); return })
	return s0, s1
}

// report runs f b.N times (each op = n COTs at both parties) and reports
// COTs per second (wall clock), COTs per core-second per party (process
// CPU time, which a shared machine does not distort as much) and wire bits
// per COT.
func report(b *testing.B, n int, c0, c1 *transport.Conn, f0, f1 func() error) {
	b.Helper()
	// One op first, so that first-touch page faults of the buffers are not
	// timed.
	if e0, e1 := testenv.Both(f0, f1); e0 != nil || e1 != nil {
		b.Fatal(e0, e1)
	}
	st0, st1 := c0.Stats(), c1.Stats()
	cpu0 := cpuSeconds()
	b.ResetTimer()
	for range b.N {
		if e0, e1 := testenv.Both(f0, f1); e0 != nil || e1 != nil {
			b.Fatal(e0, e1)
		}
	}
	b.StopTimer()
	cpu := cpuSeconds() - cpu0
	bytes := c0.Stats().Sub(st0).BytesSent + c1.Stats().Sub(st1).BytesSent
	total := float64(b.N) * float64(n)
	b.ReportMetric(total/b.Elapsed().Seconds(), "COTs/s")
	b.ReportMetric(float64(8*bytes)/total, "bits/COT")
	if cpu > 0 {
		// Both parties run in this process: CPU time per COT per party,
		// i.e. the rate one party sustains on one core.
		b.ReportMetric(2*total/cpu, "COTs/core-s")
	}
	b.ReportMetric(0, "ns/op")
}

// benchFerret: each op draws one main iteration's output (so every op runs
// exactly one iteration).
func benchFerret(b *testing.B, cfg Config, workers int, tcp bool) {
	var s0, s1 *ot.Session
	if tcp {
		s0, s1 = tcpOTPair(b)
	} else {
		s0, s1 = otPair(b)
	}
	ctx := context.Background()
	var snd, rcv *COT
	testenv.MustBoth(b, func() (err error) { snd, err = New(ctx, s0, Sender, cfg, Options{Workers: workers}); return },
		func() (err error) { rcv, err = New(ctx, s1, Receiver, cfg, Options{Workers: workers}); return })
	// Drain the pre-iteration's leftovers so that each op is one iteration.
	left := snd.Available()
	testenv.MustBoth(b, func() error { return snd.Send(ctx, make([]prg.Block, left)) },
		func() error { return rcv.Recv(ctx, make([]uint64, bitvec.Words(left)), make([]prg.Block, left)) })
	n := cfg.Main.Output()
	k, m, bits := make([]prg.Block, n), make([]prg.Block, n), make([]uint64, bitvec.Words(n))
	report(b, n, s0.Conn(), s1.Conn(), func() error { return snd.Send(ctx, k) }, func() error { return rcv.Recv(ctx, bits, m) })
}

func BenchmarkFerretSmallPipe(b *testing.B)   { benchFerret(b, Small(), 1, false) }
func BenchmarkFerretSmallPipeW2(b *testing.B) { benchFerret(b, Small(), 2, false) }
func BenchmarkFerretB13Pipe(b *testing.B)     { benchFerret(b, B13(), 1, false) }
func BenchmarkFerretB13PipeW2(b *testing.B)   { benchFerret(b, B13(), 2, false) }
func BenchmarkFerretB13TCP(b *testing.B)      { benchFerret(b, B13(), 1, true) }

const iknpN = 1 << 20

// BenchmarkIKNPBlockCOT: the raw IKNP block COTs the bootstrap uses.
func BenchmarkIKNPBlockCOTPipe(b *testing.B) {
	s0, s1 := otPair(b)
	ctx := context.Background()
	k, m, bits := make([]prg.Block, iknpN), make([]prg.Block, iknpN), make([]uint64, bitvec.Words(iknpN))
	report(b, iknpN, s0.Conn(), s1.Conn(), func() error { return s0.SendBlockCOT(ctx, k) },
		func() error { return s1.RecvBlockCOT(ctx, bits, m) })
}

func BenchmarkIKNPBlockCOTTCP(b *testing.B) {
	s0, s1 := tcpOTPair(b)
	ctx := context.Background()
	k, m, bits := make([]prg.Block, iknpN), make([]prg.Block, iknpN), make([]uint64, bitvec.Words(iknpN))
	report(b, iknpN, s0.Conn(), s1.Conn(), func() error { return s0.SendBlockCOT(ctx, k) },
		func() error { return s1.RecvBlockCOT(ctx, bits, m) })
}

func BenchmarkFerretSmallTCP(b *testing.B) { benchFerret(b, Small(), 1, true) }

// The derived COT_32 of each source, chosen choice bits (ot.Session's RecvCOT shape).
func BenchmarkIKNPCOT32Pipe(b *testing.B) {
	s0, s1 := otPair(b)
	ctx := context.Background()
	x, r, y, c := make([]uint64, iknpN), make([]uint64, iknpN), make([]uint64, iknpN), make([]uint64, bitvec.Words(iknpN))
	report(b, iknpN, s0.Conn(), s1.Conn(), func() error { return s0.SendCOT(ctx, 32, x, r) },
		func() error { return s1.RecvCOT(ctx, 32, c, y) })
}

func BenchmarkFerretCOT32Pipe(b *testing.B) {
	f0, f1 := sessionPair(b, Small())
	ctx := context.Background()
	x, r, y, c := make([]uint64, iknpN), make([]uint64, iknpN), make([]uint64, iknpN), make([]uint64, bitvec.Words(iknpN))
	report(b, iknpN, f0.Conn(), f1.Conn(), func() error { return f0.SendCOT(ctx, 32, x, r) },
		func() error { return f1.RecvCOT(ctx, 32, c, y) })
}

// otPairNet is otPair over a pipe with a network model.
func otPairNet(b *testing.B, m netmodel.Model) (*ot.Session, *ot.Session) {
	b.Helper()
	opt := testOpt
	opt.Net = &m
	c0, c1 := transport.Pipe(opt)
	b.Cleanup(func() { c0.Close(); c1.Close() })
	ctx := context.Background()
	var s0, s1 *ot.Session
	testenv.MustBoth(b, func() (err error) { s0, err = iknp.NewSession(ctx, c0, 0); return },
		func() (err error) { s1, err = iknp.NewSession(ctx, c1, 1); return })
	return s0, s1
}

// COT_32 with chosen choice bits over the WAN model (80 ms RTT, 40 MB/s):
// IKNP against Ferret (Small()), 2^20 instances per op.
func BenchmarkWANIKNPCOT32(b *testing.B) {
	s0, s1 := otPairNet(b, netmodel.WAN())
	ctx := context.Background()
	x, r, y, c := make([]uint64, iknpN), make([]uint64, iknpN), make([]uint64, iknpN), make([]uint64, bitvec.Words(iknpN))
	report(b, iknpN, s0.Conn(), s1.Conn(), func() error { return s0.SendCOT(ctx, 32, x, r) },
		func() error { return s1.RecvCOT(ctx, 32, c, y) })
}

func BenchmarkWANFerretCOT32(b *testing.B) {
	s0, s1 := otPairNet(b, netmodel.WAN())
	ctx := context.Background()
	var f0, f1 *ot.Session
	testenv.MustBoth(b, func() (err error) { f0, err = NewSession(ctx, s0, Small(), Options{}); return },
		func() (err error) { f1, err = NewSession(ctx, s1, Small(), Options{}); return })
	x, r, y, c := make([]uint64, iknpN), make([]uint64, iknpN), make([]uint64, iknpN), make([]uint64, bitvec.Words(iknpN))
	report(b, iknpN, f0.Conn(), f1.Conn(), func() error { return f0.SendCOT(ctx, 32, x, r) },
		func() error { return f1.RecvCOT(ctx, 32, c, y) })
}

// 1-out-of-16 OT of 2-bit messages (the millionaires' shape), 2^16 per op.
const otnN = 1 << 16

func BenchmarkKK13OTN16Pipe(b *testing.B) {
	s0, s1 := otPair(b)
	ctx := context.Background()
	msgs, c, out := make([]uint64, 16*otnN), make([]uint8, otnN), make([]uint64, otnN)
	report(b, otnN, s0.Conn(), s1.Conn(), func() error { return s0.SendOTN(ctx, 16, 2, msgs) },
		func() error { return s1.RecvOTN(ctx, 16, 2, c, out) })
}

func BenchmarkFerretOTN16Pipe(b *testing.B) {
	f0, f1 := sessionPair(b, Small())
	ctx := context.Background()
	msgs, c, out := make([]uint64, 16*otnN), make([]uint8, otnN), make([]uint64, otnN)
	report(b, otnN, f0.Conn(), f1.Conn(), func() error { return f0.SendOTN(ctx, 16, 2, msgs) },
		func() error { return f1.RecvOTN(ctx, 16, 2, c, out) })
}

// 1-out-of-8 OT of 2-bit messages on B13, 2^20 per op: the millionaires'
// leaves of the B13 plan (m = 3), against KK13 on IKNP.
func BenchmarkOTN8(b *testing.B) {
	const n = 1 << 20
	msgs, c, out := make([]uint64, 8*n), make([]uint8, n), make([]uint64, n)
	for i := range c {
		c[i] = uint8(i * 5 % 8)
	}
	ctx := context.Background()
	b.Run("kk13", func(b *testing.B) {
		s0, s1 := otPair(b)
		report(b, n, s0.Conn(), s1.Conn(), func() error { return s0.SendOTN(ctx, 8, 2, msgs) },
			func() error { return s1.RecvOTN(ctx, 8, 2, c, out) })
	})
	b.Run("ferret-b13", func(b *testing.B) {
		f0, f1 := sessionPair(b, B13())
		report(b, n, f0.Conn(), f1.Conn(), func() error { return f0.SendOTN(ctx, 8, 2, msgs) },
			func() error { return f1.RecvOTN(ctx, 8, 2, c, out) })
	})
}

// BenchmarkSenderCompute is one party's computation of one B13 main
// iteration (no network), with one and two workers: every GGM tree
// expanded with its messages, as when the iteration is sent, then every
// unit of outputs built as when it is drawn (the trees again and the LPN
// step) — the per-party rate a party with cores of its own would see.
func BenchmarkSenderCompute(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			cfg := B13()
			p := cfg.Main
			rng := prg.New(prg.Seed{7})
			c := &COT{role: Sender, cfg: cfg, workers: workers, hash: prg.NewHash(), main: newCode(prg.Seed{1}, p.K)}
			rng.Blocks([]prg.Block{c.delta})
			for range workers {
				c.exp = append(c.exp, newExpander(p.LogBin, treesPerFrame))
				c.lsc = append(c.lsc, new(lpnScratch))
				c.wrng = append(c.wrng, rng.Split())
			}
			bin, per := p.Bin(), 2*p.LogBin+1
			c.it = &iteration{p: p, cd: c.main, base: make([]prg.Block, p.Reserve()), roots: make([]prg.Block, p.T), unit: bin}
			rng.Blocks(c.it.base)
			rng.Blocks(c.it.roots)
			groups := (p.T + treesPerFrame - 1) / treesPerFrame
			msg := make([]prg.Block, groups*treesPerFrame*per)
			c.hbuf = make([]prg.Block, 2*workers*treesPerFrame*p.LogBin)
			scratch := make([][]prg.Block, workers)
			for w := range scratch {
				scratch[w] = make([]prg.Block, treesPerFrame*bin)
			}
			// Worker w takes every workers-th group, then every workers-th
			// unit (no network, so no waves: two barriers per iteration).
			run := func() {
				c.parallel(workers, func(w int) {
					for g := w; g < groups; g += workers {
						j0 := g * treesPerFrame
						var tb [treesPerFrame][]prg.Block
						trees := splitTrees(&tb, scratch[w], bin, min(p.T, j0+treesPerFrame)-j0)
						c.expandSender(c.it, j0, trees, w, msg[g*treesPerFrame*per:])
					}
				})
				c.parallel(workers, func(w int) {
					for j := w; j < p.T; j += workers {
						c.build(j*bin, scratch[w][:bin], nil, w)
					}
				})
			}
			run()
			c0 := cpuSeconds()
			b.ResetTimer()
			for range b.N {
				run()
			}
			b.StopTimer()
			n := float64(b.N) * float64(p.Output())
			b.ReportMetric(n/b.Elapsed().Seconds(), "COTs/s")
			b.ReportMetric(n/(cpuSeconds()-c0), "COTs/cpu-s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
