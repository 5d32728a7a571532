package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/nonlinear"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/ring"
	"github.com/cryptflow-go/cryptflow/protocols/streams"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

const defaultNLProtocols = "relu,mill,trunc,trunc-nonneg,b2a,mux,maxpool,avgpool,argmax"

func nonlinearCommand() command {
	return command{
		name:    "nonlinear",
		summary: "CrypTFlow2 nonlinear protocols: time, bits per element and flights (both parties in this process)",
		run:     runNonlinear,
	}
}

// nlProto is one protocol to benchmark.
type nlProto struct {
	name string
	// unit is what one "element" is (for pools: one output).
	unit string
	// d is the window of pooling protocols.
	d int
	// formula is this package's communication formula (bits per element).
	formula func(l, s, m int) int
	// run runs the protocol at one party on n elements of input x.
	run func(ctx context.Context, s *nonlinear.Session, x []uint64, n int) error
	// in is the number of input shares for n elements.
	in func(n int) int
}

func nlProtocols(s, pool int) map[string]nlProto {
	one := func(n int) int { return n }
	return map[string]nlProto{
		"relu": {name: "ReLU", unit: "elt", formula: func(l, _, m int) int { return nonlinear.ReLUBits(l, m) }, in: one,
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.ReLU(ctx, make([]uint64, n), x)
			}},
		"mill": {name: "millionaires'", unit: "elt", formula: func(l, _, m int) int { return nonlinear.MillionairesBits(l, m) }, in: one,
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.Millionaires(ctx, make([]uint64, (n+63)/64), x, ss.Ring().Bits)
			}},
		"trunc": {name: fmt.Sprintf("Trunc s=%d", s), unit: "elt", formula: func(l, s, m int) int { return nonlinear.TruncBits(l, s, m, false) }, in: one,
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.Trunc(ctx, make([]uint64, n), x, s, false)
			}},
		"trunc-nonneg": {name: fmt.Sprintf("Trunc s=%d, x≥0", s), unit: "elt", formula: func(l, s, m int) int { return nonlinear.TruncBits(l, s, m, true) }, in: one,
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.Trunc(ctx, make([]uint64, n), x, s, true)
			}},
		"b2a": {name: "B2A", unit: "elt", formula: func(l, _, _ int) int { return 128 + l }, in: func(n int) int { return (n + 63) / 64 },
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.B2A(ctx, make([]uint64, n), x)
			}},
		"mux": {name: "MUX", unit: "elt", formula: func(l, _, _ int) int { return 2 * (128 + l) }, in: one,
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.MUX(ctx, make([]uint64, n), x, x[:(n+63)/64])
			}},
		"maxpool": {name: fmt.Sprintf("MaxPool d=%d", pool), unit: "output", d: pool,
			formula: func(l, _, m int) int { return (pool - 1) * nonlinear.ReLUBits(l, m) },
			in:      func(n int) int { return n * pool },
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.MaxRows(ctx, make([]uint64, n), x, n, pool)
			}},
		"argmax": {name: fmt.Sprintf("ArgMax d=%d", pool), unit: "output", d: pool,
			formula: func(l, _, m int) int { return (pool - 1) * (nonlinear.ReLUBits(l, m) + 2*l) },
			in:      func(n int) int { return n * pool },
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.ArgMaxRows(ctx, make([]uint64, n), x, n, pool)
			}},
		"avgpool": {name: "AvgPool d=49", unit: "output", d: 49,
			formula: func(l, _, m int) int { return nonlinear.DivBits(l, 49, m) },
			in:      func(n int) int { return n * 49 },
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.AvgRows(ctx, make([]uint64, n), x, n, 49)
			}},
	}
}

func runNonlinear(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("scibench nonlinear", flag.ContinueOnError)
	protos := fs.String("protocols", defaultNLProtocols, "comma-separated: "+defaultNLProtocols)
	l := fs.Int("l", 32, "ring bit width (Z_2^l)")
	m := fs.Int("m", nonlinear.DefaultM, "millionaires' leaf width m (1..8)")
	s := fs.Int("s", 12, "truncation shift")
	pool := fs.Int("pool", 9, "MaxPool/ArgMax window size d")
	minLog := fs.Int("min", 10, "smallest batch is 2^min elements (outputs for pools)")
	maxLog := fs.Int("max", 20, "largest batch is 2^max elements")
	maxPoolLog := fs.Int("maxpool", 16, "largest batch for the pooling protocols is 2^maxpool outputs (smallest min(2^min, 2^maxpool))")
	streams := fs.Int("streams", 2, "OT streams (connections) per party; batches are split across them")
	reps := fs.Int("reps", 1, "timed repetitions per batch size (the median is reported)")
	netName := fs.String("net", "none", netFlagHelp)
	usePipe := fs.Bool("pipe", false, "use in-memory pipes instead of loopback TCP")
	cpuProf := fs.String("cpuprofile", "", "write a CPU profile to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *minLog < 0 || *maxLog > 26 || *minLog > *maxLog || *maxPoolLog < 0 || *maxPoolLog > 22 || *reps < 1 || *streams < 1 || *streams > 16 {
		return fmt.Errorf("need 0 ≤ min ≤ max ≤ 26, 0 ≤ maxpool ≤ 22, reps ≥ 1 and 1 ≤ streams ≤ 16")
	}
	r, err := ring.New(*l)
	if err != nil {
		return err
	}
	if *s < 1 || *s >= *l {
		return fmt.Errorf("-s %d: need 1 ≤ s < l", *s)
	}
	if *pool < 2 {
		return fmt.Errorf("-pool %d: need at least 2", *pool)
	}
	all := nlProtocols(*s, *pool)
	var list []string
	for _, p := range strings.Split(*protos, ",") {
		p = strings.TrimSpace(p)
		if _, ok := all[p]; !ok {
			return fmt.Errorf("unknown protocol %q (want some of %s)", p, defaultNLProtocols)
		}
		list = append(list, p)
	}
	opt, err := transportOptions(*netName, 5*time.Minute)
	if err != nil {
		return err
	}
	stopProf, err := startCPUProfile(*cpuProf)
	if err != nil {
		return err
	}
	defer stopProf()

	p, err := nlConnect(ctx, r, nonlinear.Options{M: *m}, *streams, *usePipe, opt)
	if err != nil {
		return err
	}
	defer p.close()

	fmt.Fprintf(out, "# scibench nonlinear: Z_2^%d, m=%d, %d stream(s) per party over %s, network model %s\n",
		*l, *m, *streams, transportName(*usePipe), *netName)
	fmt.Fprintf(out, "# GOMAXPROCS=%d, %s/%s, %s; both parties in this process; median of %d run(s)\n",
		runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version(), *reps)
	fmt.Fprintf(out, "# bytes and bits per unit: both directions, all streams, frame headers included (formula: bits, no framing);\n")
	fmt.Fprintf(out, "# flights: maximal runs of sends summed over both parties on stream 0 (its one-way latencies; one\n")
	fmt.Fprintf(out, "# protocol run per chunk); CPU µs: this process (both parties) per unit\n\n")
	const rowFmt = "%-18s %5s %11s %13s %10s %9s %9s %7s %8s\n"
	fmt.Fprintf(out, rowFmt, "protocol", "n", "time", "units/s", "bytes/unit", "bits/unit", "formula", "flights", "CPU µs")

	g := prg.New(prg.Seed{7}) // benchmark inputs need not be secret
	for _, name := range list {
		pr := all[name]
		lo, hi := *minLog, *maxLog
		if pr.d > 0 {
			hi = min(hi, *maxPoolLog)
			lo = min(lo, hi)
		}
		for lg := lo; lg <= hi; lg++ {
			n := 1 << lg
			x0, x1 := make([]uint64, pr.in(n)), make([]uint64, pr.in(n))
			g.Uint64s(x0)
			g.Uint64s(x1)
			if name != "b2a" {
				for i := range x0 {
					x0[i] &= r.Mask()
					x1[i] &= r.Mask()
				}
			}
			if name == "trunc-nonneg" {
				// Shares of non-negative values.
				for i := range x1 {
					v := g.Uint64() & (r.Mask() >> 1)
					x1[i] = r.Sub(v, x0[i])
				}
			}
			var times []time.Duration
			var st transport.Stats
			var flights int64
			var cpu time.Duration
			for rep := 0; rep < *reps; rep++ {
				before := p.stats()
				f0 := p.stream0()
				c0, _ := processCPU()
				t0 := time.Now()
				if err := inParallel(func() error { return pr.run(ctx, p.s0, x0, n) },
					func() error { return pr.run(ctx, p.s1, x1, n) }); err != nil {
					return fmt.Errorf("%s n=%d: %w", pr.name, n, err)
				}
				times = append(times, time.Since(t0))
				c1, _ := processCPU()
				cpu = c1 - c0
				st = p.stats().Sub(before)
				flights = p.stream0() - f0
			}
			slices.Sort(times)
			med := times[len(times)/2]
			fmt.Fprintf(out, rowFmt, pr.name, fmt.Sprintf("2^%d", lg), med.Round(100*time.Microsecond),
				fmt.Sprintf("%.1f k/s", float64(n)/med.Seconds()/1e3),
				fmt.Sprintf("%.1f", float64(st.BytesSent)/float64(n)),
				fmt.Sprintf("%.1f", 8*float64(st.BytesSent)/float64(n)),
				fmt.Sprint(pr.formula(*l, *s, *m)), fmt.Sprint(flights),
				fmt.Sprintf("%.2f", float64(cpu.Microseconds())/float64(n)))
		}
	}
	return nil
}

// nlPair is both parties' sessions and connections.
type nlPair struct {
	s0, s1 *nonlinear.Session
	c0, c1 []*transport.Conn
}

func (p *nlPair) close() {
	for _, c := range append(p.c0, p.c1...) {
		c.Close()
	}
}

func (p *nlPair) stats() transport.Stats {
	var s transport.Stats
	for _, c := range append(p.c0, p.c1...) {
		s = s.Add(c.Stats())
	}
	return s
}

// stream0 is the flight count of stream 0 (both parties).
func (p *nlPair) stream0() int64 { return p.c0[0].Stats().Rounds + p.c1[0].Stats().Rounds }

// nlConnect connects both parties with k streams each and starts the
// sessions.
func nlConnect(ctx context.Context, r ring.Ring, opt nonlinear.Options, k int, pipe bool, topt transport.Options) (*nlPair, error) {
	p := &nlPair{}
	for i := 0; i < k; i++ {
		a, b, err := connectPair(ctx, pipe, topt)
		if err != nil {
			p.close()
			return nil, err
		}
		p.c0, p.c1 = append(p.c0, a), append(p.c1, b)
	}
	var o0, o1 []*ot.Session
	for i := 0; i < k; i++ {
		var a, b *ot.Session
		err := inParallel(func() (err error) {
			if i == 0 {
				a, err = ot.NewSession(ctx, p.c0[0], 0)
			} else {
				a, err = o0[0].Fork(ctx, p.c0[i])
			}
			return
		}, func() (err error) {
			if i == 0 {
				b, err = ot.NewSession(ctx, p.c1[0], 1)
			} else {
				b, err = o1[0].Fork(ctx, p.c1[i])
			}
			return
		})
		if err != nil {
			p.close()
			return nil, err
		}
		o0, o1 = append(o0, a), append(o1, b)
	}
	err := inParallel(func() (err error) { p.s0, err = nonlinear.New(ctx, r, opt, streams.Of(o0)...); return },
		func() (err error) { p.s1, err = nonlinear.New(ctx, r, opt, streams.Of(o1)...); return })
	if err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}
