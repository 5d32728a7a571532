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

	"github.com/cryptflow-go/cryptflow/protocols/ferret"
	"github.com/cryptflow-go/cryptflow/protocols/nonlinear"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/iknp"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
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
	// cost is the exact communication per element under a plan.
	cost func(p nonlinear.Plan, l, s int) nonlinear.Cost
	// run runs the protocol at one party on n elements of input x.
	run func(ctx context.Context, s *nonlinear.Session, x []uint64, n int) error
	// in is the number of input shares for n elements.
	in func(n int) int
}

func nlProtocols(s, pool int) map[string]nlProto {
	one := func(n int) int { return n }
	return map[string]nlProto{
		"relu": {name: "ReLU", unit: "elt", cost: func(p nonlinear.Plan, l, _ int) nonlinear.Cost { return p.ReLU(l) }, in: one,
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.ReLU(ctx, make([]uint64, n), x)
			}},
		"mill": {name: "millionaires'", unit: "elt", cost: func(p nonlinear.Plan, l, _ int) nonlinear.Cost { return p.Millionaires(l) }, in: one,
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.Millionaires(ctx, make([]uint64, (n+63)/64), x, ss.Ring().Bits)
			}},
		"trunc": {name: fmt.Sprintf("Trunc s=%d", s), unit: "elt", cost: func(p nonlinear.Plan, l, s int) nonlinear.Cost { return p.Trunc(l, s, false) }, in: one,
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.Trunc(ctx, make([]uint64, n), x, s, false)
			}},
		"trunc-nonneg": {name: fmt.Sprintf("Trunc s=%d, x≥0", s), unit: "elt", cost: func(p nonlinear.Plan, l, s int) nonlinear.Cost { return p.Trunc(l, s, true) }, in: one,
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.Trunc(ctx, make([]uint64, n), x, s, true)
			}},
		"b2a": {name: "B2A", unit: "elt", cost: func(p nonlinear.Plan, l, _ int) nonlinear.Cost { return p.B2A(l) }, in: func(n int) int { return (n + 63) / 64 },
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.B2A(ctx, make([]uint64, n), x)
			}},
		"mux": {name: "MUX", unit: "elt", cost: func(p nonlinear.Plan, l, _ int) nonlinear.Cost { return p.MUX(l) }, in: one,
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.MUX(ctx, make([]uint64, n), x, x[:(n+63)/64])
			}},
		"maxpool": {name: fmt.Sprintf("MaxPool d=%d", pool), unit: "output", d: pool,
			cost: func(p nonlinear.Plan, l, _ int) nonlinear.Cost { return p.MaxRows(l, pool) },
			in:   func(n int) int { return n * pool },
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.MaxRows(ctx, make([]uint64, n), x, n, pool)
			}},
		"argmax": {name: fmt.Sprintf("ArgMax d=%d", pool), unit: "output", d: pool,
			cost: func(p nonlinear.Plan, l, _ int) nonlinear.Cost { return p.ArgMaxRows(l, pool) },
			in:   func(n int) int { return n * pool },
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.ArgMaxRows(ctx, make([]uint64, n), x, n, pool)
			}},
		"avgpool": {name: "AvgPool d=49", unit: "output", d: 49,
			cost: func(p nonlinear.Plan, l, _ int) nonlinear.Cost { return p.Div(l, 49) },
			in:   func(n int) int { return n * 49 },
			run: func(ctx context.Context, ss *nonlinear.Session, x []uint64, n int) error {
				return ss.AvgRows(ctx, make([]uint64, n), x, n, 49)
			}},
	}
}

func runNonlinear(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("scibench nonlinear", flag.ContinueOnError)
	protos := fs.String("protocols", defaultNLProtocols, "comma-separated: "+defaultNLProtocols)
	l := fs.Int("l", 32, "ring bit width (Z_2^l)")
	m := fs.Int("m", 0, "millionaires' leaf width m (1..8); 0: the plan's for the OT source (IKNP: 4)")
	triples := fs.String("triples", "auto", "bit triples: auto (the plan's for the OT source), otn (1-out-of-N OT) or rot (random OT)")
	sources := fs.String("ot", "iknp", "OT sources, comma-separated: iknp, ferret, ferret-cf2 (Ferret with CrypTFlow2's plan: m=4, "+
		"1-out-of-N triples); with several, every batch size alternates them run by run")
	ferretSet := fs.String("ferret", "b13", "Ferret parameter set: b13 or small")
	s := fs.Int("s", 12, "truncation shift")
	pool := fs.Int("pool", 9, "MaxPool/ArgMax window size d")
	minLog := fs.Int("min", 10, "smallest batch is 2^min elements (outputs for pools)")
	maxLog := fs.Int("max", 20, "largest batch is 2^max elements")
	maxPoolLog := fs.Int("maxpool", 16, "largest batch for the pooling protocols is 2^maxpool outputs (smallest min(2^min, 2^maxpool))")
	nstreams := fs.Int("streams", 2, "OT streams (connections) per party; batches are split across them")
	reps := fs.Int("reps", 1, "timed repetitions per batch size (the median is reported)")
	netName := fs.String("net", "none", netFlagHelp)
	usePipe := fs.Bool("pipe", false, "use in-memory pipes instead of loopback TCP")
	sequential := fs.Bool("sequential", false, "run the chunks of a large batch one after another instead of interleaving them (more flights; for comparison)")
	cpuProf := fs.String("cpuprofile", "", "write a CPU profile to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *minLog < 0 || *maxLog > 26 || *minLog > *maxLog || *maxPoolLog < 0 || *maxPoolLog > 22 || *reps < 1 || *nstreams < 1 || *nstreams > 16 {
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
	tm, ok := map[string]nonlinear.TripleMode{"auto": nonlinear.TriplesAuto, "otn": nonlinear.TriplesOTN, "rot": nonlinear.TriplesROT}[*triples]
	if !ok {
		return fmt.Errorf("-triples %q: want auto, otn or rot", *triples)
	}
	cfg, err := ferretConfig(*ferretSet)
	if err != nil {
		return err
	}
	var srcNames []string
	for _, n := range strings.Split(*sources, ",") {
		n = strings.TrimSpace(n)
		if n != "iknp" && n != "ferret" && n != "ferret-cf2" {
			return fmt.Errorf("-ot %q: want iknp, ferret or ferret-cf2, comma-separated", n)
		}
		srcNames = append(srcNames, n)
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

	var pairs []*nlPair
	defer func() {
		for _, p := range pairs {
			p.close()
		}
	}()
	for _, name := range srcNames {
		o := nonlinear.Options{M: *m, Triples: tm}
		if name == "ferret-cf2" {
			o = nonlinear.Options{M: nonlinear.DefaultM, Triples: nonlinear.TriplesOTN}
		}
		o.Sequential = *sequential
		p, err := nlConnect(ctx, r, o, *nstreams, *usePipe, opt, name, cfg)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		pairs = append(pairs, p)
	}

	fmt.Fprintf(out, "# scibench nonlinear: Z_2^%d, %d stream(s) per party over %s, network model %s\n",
		*l, *nstreams, transportName(*usePipe), *netName)
	fmt.Fprintf(out, "# GOMAXPROCS=%d, %s/%s, %s; both parties in this process; median of %d run(s)", runtime.GOMAXPROCS(0), runtime.GOOS,
		runtime.GOARCH, runtime.Version(), *reps)
	if len(pairs) > 1 {
		fmt.Fprintf(out, "; the sources alternate run by run (A B A B)")
	}
	fmt.Fprintf(out, "\n# bytes and bits per unit: both directions, all streams, frame headers and any Ferret refills that fell in the run included;\n")
	fmt.Fprintf(out, "# amortised: Ferret only, the run's own bytes (refills taken out) + COTs drawn × refill bits per COT, per unit;\n")
	fmt.Fprintf(out, "# formula: the plan's exact bits per unit (no framing; Ferret: + COTs × refill bits per COT);\n")
	fmt.Fprintf(out, "# flights: maximal runs of sends summed over both parties on stream 0 (its one-way latencies; one\n")
	fmt.Fprintf(out, "# protocol run per chunk); CPU µs: this process (both parties) per unit\n")
	for _, p := range pairs {
		fmt.Fprintf(out, "# %s: plan %v; setup %v, %d bytes", p.name, p.s0.Plan(), p.setup.Round(100*time.Microsecond), p.setupBytes)
		if p.f0 != nil {
			fmt.Fprintf(out, " (IKNP base OTs, then per stream Ferret's bootstrap both ways; refills: %.4f bits/COT)", p.s0.Plan().OT.COTBits)
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out)
	const rowFmt = "%-18s %-11s %5s %11s %13s %10s %9s %9s %9s %7s %8s\n"
	fmt.Fprintf(out, rowFmt, "protocol", "source", "n", "time", "units/s", "bytes/unit", "bits/unit", "amortised", "formula", "flights", "CPU µs")

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
			type result struct {
				times      []time.Duration
				st         transport.Stats
				flights    int64
				cpu        time.Duration
				cots       uint64
				iterations int
			}
			res := make([]result, len(pairs))
			for rep := 0; rep < *reps; rep++ {
				for pi, p := range pairs {
					runtime.GC()
					before := p.stats()
					f0 := p.stream0()
					cots0, it0 := p.cots()
					c0, _ := processCPU()
					t0 := time.Now()
					if err := inParallel(func() error { return pr.run(ctx, p.s0, x0, n) },
						func() error { return pr.run(ctx, p.s1, x1, n) }); err != nil {
						return fmt.Errorf("%s %s n=%d: %w", p.name, pr.name, n, err)
					}
					rs := &res[pi]
					rs.times = append(rs.times, time.Since(t0))
					c1, _ := processCPU()
					rs.cpu = c1 - c0
					rs.st = p.stats().Sub(before)
					rs.flights = p.stream0() - f0
					cots1, it1 := p.cots()
					rs.cots, rs.iterations = cots1-cots0, it1-it0
				}
			}
			for pi, p := range pairs {
				rs := res[pi]
				slices.Sort(rs.times)
				med := rs.times[len(rs.times)/2]
				plan := p.s0.Plan()
				amort := "-"
				if p.f0 != nil {
					own := float64(rs.st.BytesSent) - float64(rs.iterations)*float64(ferret.IterationBytes(p.cfg.Main))
					amort = fmt.Sprintf("%.1f", (8*own+float64(rs.cots)*plan.OT.COTBits)/float64(n))
				}
				fmt.Fprintf(out, rowFmt, pr.name, p.name, fmt.Sprintf("2^%d", lg), med.Round(100*time.Microsecond),
					fmt.Sprintf("%.1f k/s", float64(n)/med.Seconds()/1e3),
					fmt.Sprintf("%.1f", float64(rs.st.BytesSent)/float64(n)),
					fmt.Sprintf("%.1f", 8*float64(rs.st.BytesSent)/float64(n)), amort,
					fmt.Sprintf("%.1f", pr.cost(plan, *l, *s).Total(plan.OT)), fmt.Sprint(rs.flights),
					fmt.Sprintf("%.2f", float64(rs.cpu.Microseconds())/float64(n)))
			}
		}
	}
	return nil
}

// nlPair is both parties' sessions and connections on one OT source.
type nlPair struct {
	name       string
	s0, s1     *nonlinear.Session
	c0, c1     []*transport.Conn
	f0, f1     []*ot.Session // nil on IKNP
	cfg        ferret.Config
	setup      time.Duration
	setupBytes int64
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

// cots returns the COTs drawn and the main iterations run so far on the
// Ferret streams (each direction counted once, at its sender).
func (p *nlPair) cots() (n uint64, iters int) {
	for _, f := range append(append([]*ot.Session(nil), p.f0...), p.f1...) {
		n += ferret.CoreOf(f).SenderCOT().Used()
		iters += ferret.CoreOf(f).SenderCOT().Iterations()
	}
	return n, iters
}

// stream0 is the flight count of stream 0 (both parties).
func (p *nlPair) stream0() int64 { return p.c0[0].Stats().Rounds + p.c1[0].Stats().Rounds }

// nlConnect connects both parties with k streams each on the OT source
// src ("iknp", or "ferret"/"ferret-cf2" with parameter set cfg) and starts
// the sessions.
func nlConnect(ctx context.Context, r ring.Ring, opt nonlinear.Options, k int, pipe bool, topt pairOptions,
	src string, cfg ferret.Config) (*nlPair, error) {
	p := &nlPair{name: src, cfg: cfg}
	for i := 0; i < k; i++ {
		a, b, err := connectPair(ctx, pipe, topt)
		if err != nil {
			p.close()
			return nil, err
		}
		p.c0, p.c1 = append(p.c0, a), append(p.c1, b)
	}
	start := time.Now()
	var o0, o1 []*ot.Session
	for i := 0; i < k; i++ {
		var a, b *ot.Session
		err := inParallel(func() (err error) {
			if i == 0 {
				a, err = iknp.NewSession(ctx, p.c0[0], 0)
			} else {
				a, err = o0[0].Fork(ctx, p.c0[i])
			}
			return
		}, func() (err error) {
			if i == 0 {
				b, err = iknp.NewSession(ctx, p.c1[0], 1)
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
	ots0, ots1 := o0, o1
	if src != "iknp" {
		for i := 0; i < k; i++ {
			var a, b *ot.Session
			if err := inParallel(func() (err error) { a, err = ferret.NewSession(ctx, o0[i], cfg, ferret.Options{Workers: 1}); return },
				func() (err error) { b, err = ferret.NewSession(ctx, o1[i], cfg, ferret.Options{Workers: 1}); return }); err != nil {
				p.close()
				return nil, err
			}
			p.f0, p.f1 = append(p.f0, a), append(p.f1, b)
		}
		ots0, ots1 = p.f0, p.f1
	}
	err := inParallel(func() (err error) { p.s0, err = nonlinear.New(ctx, r, opt, ots0...); return },
		func() (err error) { p.s1, err = nonlinear.New(ctx, r, opt, ots1...); return })
	if err != nil {
		p.close()
		return nil, err
	}
	p.setup, p.setupBytes = time.Since(start), p.stats().BytesSent
	return p, nil
}
