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

	"github.com/cryptflow-go/cryptflow/protocols/he"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	lring "github.com/tuneinsight/lattigo/v6/ring"
)

func heCommand() command {
	return command{
		name:    "he",
		summary: "HE linear layers (package he): ct×pt, per-ciphertext cost, the 56×56×64 conv and the 1001×512 FC, with EzPC SCI_HE's figures",
		run:     runHE,
	}
}

// ezpc holds EzPC SCI_HE's figures measured on this kind of machine, for the side-by-side
// columns, each beside the layer of the same shape: issue 12's figures were taken at stride 2,
// and issue 25's review measured the stride-1 layer (40.7 s). The FC keys are its Galois keys
// for the FC layer, the conv's for the conv layer.
var ezpc = map[string]string{
	"conv":    "40.7 s (1 thread)",
	"conv-s2": "9.9 s (1 thread), 7.1 s (2); 16.8 MB + 420 MB keys",
	"fc":      "0.74 s; 0.52 MB + 38 MB keys",
}

// heLayer is one linear layer to measure: a convolution (geom set) or a matrix product.
type heLayer struct {
	key, name string
	geom      *ring.ConvGeom
	m, k, n   int
}

func (h heLayer) inputs() int {
	if h.geom != nil {
		return h.geom.N * h.geom.C * h.geom.H * h.geom.W
	}
	return h.k * h.n
}

func (h heLayer) outputs() int {
	if h.geom != nil {
		return h.geom.N * h.geom.M * h.geom.OH * h.geom.OW
	}
	return h.m * h.n
}

func (h heLayer) weights() int {
	if h.geom != nil {
		g := h.geom
		return g.M * g.C / g.Groups * g.KH * g.KW
	}
	return h.m * h.k
}

func (h heLayer) cost(l int) (heplan.Cost, error) {
	if h.geom != nil {
		return heplan.ConvCost(*h.geom, l)
	}
	return heplan.MatMulCost(h.m, h.k, h.n, l)
}

func (h heLayer) run(ctx context.Context, s *he.Session, dst, w, x []uint64) error {
	if h.geom != nil {
		return s.Conv2D(ctx, dst, w, *h.geom, x)
	}
	return s.MatMul(ctx, dst, w, h.m, h.k, h.n, x)
}

// reference computes the layer in the clear (N = 1, one group for convolutions).
func (h heLayer) reference(r ring.Ring, w, x []uint64) []uint64 {
	out := make([]uint64, h.outputs())
	if h.geom == nil {
		r.MatMul(out, w, h.m, h.k, h.n, x)
		return out
	}
	g := h.geom
	for m := 0; m < g.M; m++ {
		for c := 0; c < g.C; c++ {
			for ky := 0; ky < g.KH; ky++ {
				for kx := 0; kx < g.KW; kx++ {
					wv := w[((m*g.C+c)*g.KH+ky)*g.KW+kx]
					for oy := 0; oy < g.OH; oy++ {
						iy := oy*g.SH - g.PH + ky*g.DH
						if iy < 0 || iy >= g.H {
							continue
						}
						row := x[(c*g.H+iy)*g.W:]
						o := out[(m*g.OH+oy)*g.OW:]
						for ox := 0; ox < g.OW; ox++ {
							ix := ox*g.SW - g.PW + kx*g.DW
							if ix >= 0 && ix < g.W {
								o[ox] += wv * row[ix]
							}
						}
					}
				}
			}
		}
	}
	for i := range out {
		out[i] &= r.Mask()
	}
	return out
}

// heLayers are the layers of the comparison with EzPC SCI_HE: the 56×56×64 convolution at stride
// 1 and at stride 2 (the shape of issue 12's SCI_HE figures), and the FC.
func heLayers() []heLayer {
	return []heLayer{
		{key: "conv", name: "conv 56×56×64→64 3×3 pad 1",
			geom: &ring.ConvGeom{N: 1, C: 64, H: 56, W: 56, M: 64, OH: 56, OW: 56, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}},
		{key: "conv-s2", name: "conv 56×56×64→64 3×3 pad 1 stride 2",
			geom: &ring.ConvGeom{N: 1, C: 64, H: 56, W: 56, M: 64, OH: 28, OW: 28, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 1}},
		{key: "fc", name: "FC 1001×512 · 512", m: 1001, k: 512, n: 1},
	}
}

// measure is the time and traffic of one timed operation.
type measure struct {
	wall, cpu time.Duration
	bytes     int64 // both directions, frame headers included
}

func runHE(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("scibench he", flag.ContinueOnError)
	l := fs.Int("l", 37, "ring bit width (Z_2^l), 1..64")
	reps := fs.Int("reps", 3, "timed repetitions of each layer call after the first (the median is reported)")
	ctReps := fs.Int("ctpt", 2000, "ciphertext × plaintext products timed")
	workers := fs.Int("workers", 0, "goroutines for ciphertext work per party (0: GOMAXPROCS)")
	layers := fs.String("layers", "conv,conv-s2,fc", "layers to run, comma-separated: conv (stride 1), conv-s2 (stride 2), fc")
	netName := fs.String("net", "none", netFlagHelp)
	usePipe := fs.Bool("pipe", false, "use in-memory pipes instead of loopback TCP")
	cpuProf := fs.String("cpuprofile", "", "write a CPU profile to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *reps < 1 || *ctReps < 1 || *workers < 0 {
		return fmt.Errorf("need reps ≥ 1, ctpt ≥ 1 and workers ≥ 0")
	}
	r, err := ring.New(*l)
	if err != nil {
		return err
	}
	p, err := heplan.ParamsFor(*l)
	if err != nil {
		return err
	}
	var list []heLayer
	for _, h := range heLayers() {
		if slices.Contains(splitList(*layers), h.key) {
			list = append(list, h)
		}
	}
	for _, k := range splitList(*layers) {
		if _, ok := ezpc[k]; !ok {
			return fmt.Errorf("-layers: unknown layer %q (conv, conv-s2, fc)", k)
		}
	}
	topt, err := transportOptions(*netName, 10*time.Minute)
	if err != nil {
		return err
	}
	stopProf, err := startCPUProfile(*cpuProf)
	if err != nil {
		return err
	}
	defer stopProf()

	nw := *workers
	if nw == 0 {
		nw = runtime.GOMAXPROCS(0)
	}
	fmt.Fprintf(out, "# scibench he: Z_2^%d, %s; %d worker(s) per party, GOMAXPROCS=%d, %s/%s, %s\n",
		*l, p, nw, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(out, "# both parties in this process over %s, network model %s; CPU: this process (both parties)\n",
		transportName(*usePipe), *netName)
	fmt.Fprintf(out, "# bytes: both directions, frame headers included (formula: heplan.ConvBytes / heplan.MatMulBytes)\n\n")

	// Keys and sizes.
	hello, err := he.HelloBytes(*l)
	if err != nil {
		return err
	}
	c0w, c1w := p.W0, p.W1
	fmt.Fprintf(out, "parameters: N = %d, log2 Q = %d, %d primes; upload %d B per ciphertext, reply %d B + %d bits per needed coefficient (c1 at %d bits, c0 at %d)\n",
		p.N(), p.LogQ(), len(p.Q), p.UploadBytes(), p.ReplyBytes(0), c0w, c1w, c0w)
	fmt.Fprintf(out, "keys: party 1's public key %d B; session setup (hellos + key) %d B, once per session; no Galois or evaluation keys\n\n",
		p.KeyBytes(), hello)

	// ct×pt: the product party 0 accumulates per input ciphertext and weight polynomial (both
	// components, every prime of Q, NTT and Montgomery form), on lattigo's ring at he's modulus.
	ct, err := benchCtPt(p, *ctReps)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ct×pt (NTT domain, both components, %d primes, accumulate): %.1f µs wall, %.1f µs CPU per product (%d products)\n",
		len(p.Q), us(ct.wall, *ctReps), us(ct.cpu, *ctReps), *ctReps)

	s0, s1, closeConns, err := heConnect(ctx, r, nw, *usePipe, topt)
	if err != nil {
		return err
	}
	defer closeConns()
	stats := func() int64 { return s0.conn.Stats().BytesSent + s1.conn.Stats().BytesSent }

	// Per input ciphertext: a warm 1×(u·N) matrix-vector product has u uploads and one reply;
	// the difference between u = 9 and u = 1 over 8 is one more ciphertext: party 1's encryption,
	// its transfer, party 0's encoding of its share and one ct×pt (the weights are cached).
	perUp, err := perUpload(ctx, s0.s, s1.s, r, p.N(), *reps)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "one more input ciphertext (encrypt, send, add party 0's share, one ct×pt; warm weights): %.2f ms wall, %.2f ms CPU, %d B\n\n",
		ms(perUp.wall), ms(perUp.cpu), perUp.bytes)

	const rowFmt = "%-28s %-6s %9s %9s %10s %10s %7s %7s %8s   %s\n"
	fmt.Fprintf(out, rowFmt, "layer", "call", "wall s", "CPU s", "MB", "formula", "uploads", "replies", "ct×pt", "EzPC SCI_HE (this machine)")
	g := prg.New(prg.Seed{9}) // benchmark data need not be secret
	for _, h := range list {
		c, err := h.cost(*l)
		if err != nil {
			return err
		}
		w, x, x0, x1 := make([]uint64, h.weights()), make([]uint64, h.inputs()), make([]uint64, h.inputs()), make([]uint64, h.inputs())
		g.Uint64s(w)
		g.Uint64s(x0)
		g.Uint64s(x1)
		for i := range w {
			w[i] &= r.Mask()
		}
		for i := range x {
			x0[i] &= r.Mask()
			x1[i] &= r.Mask()
			x[i] = r.Add(x0[i], x1[i])
		}
		want := h.reference(r, w, x)
		d0, d1 := make([]uint64, h.outputs()), make([]uint64, h.outputs())
		call := func() (measure, error) {
			before := stats()
			c0, _ := processCPU()
			t0 := time.Now()
			if err := inParallel(func() error { return h.run(ctx, s0.s, d0, w, x0) },
				func() error { return h.run(ctx, s1.s, d1, nil, x1) }); err != nil {
				return measure{}, fmt.Errorf("%s: %w", h.name, err)
			}
			m := measure{wall: time.Since(t0), bytes: stats() - before}
			c1, _ := processCPU()
			m.cpu = c1 - c0
			for i := range want {
				if r.Add(d0[i], d1[i]) != want[i] {
					return m, fmt.Errorf("%s: output %d is %d, want %d", h.name, i, r.Add(d0[i], d1[i]), want[i])
				}
			}
			if m.bytes != c.Bytes {
				return m, fmt.Errorf("%s: %d bytes, formula %d", h.name, m.bytes, c.Bytes)
			}
			return m, nil
		}
		first, err := call()
		if err != nil {
			return err
		}
		var warm []measure
		for i := 0; i < *reps; i++ {
			m, err := call()
			if err != nil {
				return err
			}
			warm = append(warm, m)
		}
		slices.SortFunc(warm, func(a, b measure) int { return int(a.wall - b.wall) })
		med := warm[len(warm)/2]
		for i, m := range []measure{first, med} {
			name, kind := h.name, "first"
			if i == 1 {
				name, kind = "", fmt.Sprintf("again/%d", *reps)
			}
			ez := ""
			if i == 0 {
				ez = ezpc[h.key]
			}
			fmt.Fprintf(out, rowFmt, name, kind, fmt.Sprintf("%.3f", m.wall.Seconds()), fmt.Sprintf("%.3f", m.cpu.Seconds()),
				fmt.Sprintf("%.3f", float64(m.bytes)/1e6), fmt.Sprintf("%.3f", float64(c.Bytes)/1e6),
				fmt.Sprint(c.Uploads), fmt.Sprint(c.Replies), fmt.Sprint(c.Products), ez)
		}
	}
	fmt.Fprintf(out, "\n# first: the first call, which transforms the layer's weight polynomials (NTT); again: median of the\n")
	fmt.Fprintf(out, "# next calls, which reuse them if the layer's NTT-form weights fit party 0's cache (%d MiB):\n", he.DefaultCacheBytes>>20)
	for _, h := range list {
		c, _ := h.cost(*l)
		fmt.Fprintf(out, "#   %s: %d weight polynomials, %.0f MB in NTT form\n", h.name, c.Weights, float64(c.Weights)*float64(p.N()*len(p.Q)*8)/1e6)
	}
	fmt.Fprintf(out, "# Every output is checked against the product in the clear; bytes against the formula.\n")
	return nil
}

// hePair is one party's end of the benchmark session.
type hePair struct {
	s    *he.Session
	conn *transport.Conn
}

// heConnect connects two HE sessions (party 0 and 1) in this process.
func heConnect(ctx context.Context, r ring.Ring, workers int, pipe bool, opt pairOptions) (hePair, hePair, func(), error) {
	c0, c1, err := connectPair(ctx, pipe, opt)
	if err != nil {
		return hePair{}, hePair{}, nil, err
	}
	closeConns := func() { c0.Close(); c1.Close() }
	var s0, s1 *he.Session
	o := he.Options{Workers: workers}
	if err := inParallel(func() (err error) { s0, err = he.New(ctx, r, 0, c0, o); return },
		func() (err error) { s1, err = he.New(ctx, r, 1, c1, o); return }); err != nil {
		closeConns()
		return hePair{}, hePair{}, nil, fmt.Errorf("he session: %w", err)
	}
	return hePair{s0, c0}, hePair{s1, c1}, closeConns, nil
}

// benchCtPt times n accumulated ciphertext × plaintext products on the ring of Q.
func benchCtPt(p *heplan.Params, n int) (measure, error) {
	rq, err := lring.NewRing(p.N(), p.Q)
	if err != nil {
		return measure{}, fmt.Errorf("ct×pt: %w", err)
	}
	c0, c1, w, a0, a1 := rq.NewPoly(), rq.NewPoly(), rq.NewPoly(), rq.NewPoly(), rq.NewPoly()
	g := prg.New(prg.Seed{3})
	for i, q := range p.Q {
		for _, poly := range []lring.Poly{c0, c1, w} {
			g.Uint64s(poly.Coeffs[i])
			for j := range poly.Coeffs[i] {
				poly.Coeffs[i][j] %= q
			}
		}
	}
	cpu0, _ := processCPU()
	t0 := time.Now()
	for i := 0; i < n; i++ {
		rq.MulCoeffsMontgomeryThenAdd(c0, w, a0)
		rq.MulCoeffsMontgomeryThenAdd(c1, w, a1)
	}
	wall := time.Since(t0)
	cpu1, _ := processCPU()
	return measure{wall: wall, cpu: cpu1 - cpu0}, nil
}

// perUpload is the marginal cost of one input ciphertext: warm 1×(9N) and 1×N products, the
// difference over 8 (median of reps pairs).
func perUpload(ctx context.Context, s0, s1 *he.Session, r ring.Ring, n, reps int) (measure, error) {
	g := prg.New(prg.Seed{5})
	run := func(k int, w, x0, x1 []uint64) (measure, error) {
		d0, d1 := make([]uint64, 1), make([]uint64, 1)
		c0, _ := processCPU()
		t0 := time.Now()
		err := inParallel(func() error { return s0.MatMul(ctx, d0, w, 1, k, 1, x0) },
			func() error { return s1.MatMul(ctx, d1, nil, 1, k, 1, x1) })
		m := measure{wall: time.Since(t0)}
		c1, _ := processCPU()
		m.cpu = c1 - c0
		if err != nil {
			return m, fmt.Errorf("1×%d product: %w", k, err)
		}
		var want uint64
		for i := range w {
			want = r.Add(want, r.Mul(w[i], r.Add(x0[i], x1[i])))
		}
		if got := r.Add(d0[0], d1[0]); got != want {
			return m, fmt.Errorf("1×%d product: %d, want %d", k, got, want)
		}
		m.bytes, _ = heplan.MatMulBytes(1, k, 1, r.Bits)
		return m, nil
	}
	data := func(k int) (w, x0, x1 []uint64) {
		w, x0, x1 = make([]uint64, k), make([]uint64, k), make([]uint64, k)
		for _, v := range [][]uint64{w, x0, x1} {
			g.Uint64s(v)
			for i := range v {
				v[i] &= r.Mask()
			}
		}
		return
	}
	wS, xS0, xS1 := data(n)
	wL, xL0, xL1 := data(9 * n)
	if c, err := heplan.MatMulCost(1, 9*n, 1, r.Bits); err != nil || c.Uploads != 9 || c.Replies != 1 {
		return measure{}, fmt.Errorf("1×%d product: cost %+v (%v), want 9 uploads and 1 reply", 9*n, c, err)
	}
	var diffs []measure
	for i := 0; i <= reps; i++ {
		small, err := run(n, wS, xS0, xS1)
		if err != nil {
			return measure{}, err
		}
		large, err := run(9*n, wL, xL0, xL1)
		if err != nil {
			return measure{}, err
		}
		if i == 0 {
			continue // first calls transform the weights
		}
		diffs = append(diffs, measure{wall: (large.wall - small.wall) / 8, cpu: (large.cpu - small.cpu) / 8, bytes: (large.bytes - small.bytes) / 8})
	}
	slices.SortFunc(diffs, func(a, b measure) int { return int(a.cpu - b.cpu) })
	return diffs[len(diffs)/2], nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func us(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
