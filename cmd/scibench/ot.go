package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/bits"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ferret"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/iknp"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

const defaultOTKinds = "rotw:2:64,cot:1,cot:8,cot:32,cot:64,cotw:16:32,ot:8,ot:32,otn:8:2,otn:16:2,otn:256:1"

func otCommand() command {
	return command{
		name:    "ot",
		summary: "oblivious-transfer throughput and communication (both parties in this process)",
		run:     runOT,
	}
}

// otKind is one OT flavour to measure, parsed from a spec such as "cot:32".
type otKind struct {
	spec     string
	op       string // rot, cot, ot, otn
	w, l, nN int    // words per instance, bits per word, N for otn
}

func parseOTKind(spec string) (otKind, error) {
	parts := strings.Split(spec, ":")
	nums := make([]int, len(parts)-1)
	for i, p := range parts[1:] {
		v, err := strconv.Atoi(p)
		if err != nil {
			return otKind{}, fmt.Errorf("kind %q: %q is not a number", spec, p)
		}
		nums[i] = v
	}
	k := otKind{spec: spec, w: 1}
	want := 1
	switch parts[0] {
	case "rot", "cot", "ot":
		k.op = parts[0]
		if len(nums) == 1 {
			k.l = nums[0]
		}
	case "rotw", "cotw", "otw":
		k.op, want = strings.TrimSuffix(parts[0], "w"), 2
		if len(nums) == 2 {
			k.w, k.l = nums[0], nums[1]
		}
	case "bcot":
		// Raw 128-bit block COTs with a global Δ and random choice bits.
		k.op, k.l, want = "bcot", 64, 0
	case "otn":
		k.op, want = "otn", 2
		if len(nums) == 2 {
			k.nN, k.l = nums[0], nums[1]
		}
	default:
		return otKind{}, fmt.Errorf("kind %q: unknown OT %q (want bcot, rot, cot, ot, rotw, cotw, otw or otn)", spec, parts[0])
	}
	if len(nums) != want {
		return otKind{}, fmt.Errorf("kind %q: want %d numbers after %q", spec, want, parts[0])
	}
	if k.l < 1 || k.l > 64 || k.w < 1 || k.w > ot.MaxWidth {
		return otKind{}, fmt.Errorf("kind %q: need 1 ≤ l ≤ 64 and 1 ≤ w ≤ %d", spec, ot.MaxWidth)
	}
	if k.op == "otn" && (k.nN < 2 || k.nN > ot.MaxN || k.nN&(k.nN-1) != 0) {
		return otKind{}, fmt.Errorf("kind %q: N must be a power of two in 2..%d", spec, ot.MaxN)
	}
	return k, nil
}

func (k otKind) String() string {
	switch k.op {
	case "otn":
		return fmt.Sprintf("(%d 1)-OT_%d", k.nN, k.l)
	case "rot":
		return fmt.Sprintf("ROT_%d", k.w*k.l)
	case "bcot":
		return "block COT"
	}
	name := map[string]string{"cot": "COT", "ot": "OT"}[k.op]
	if k.w > 1 {
		return fmt.Sprintf("%s_%dx%d", name, k.l, k.w)
	}
	return fmt.Sprintf("%s_%d", name, k.l)
}

// bound is CrypTFlow2's per-instance communication in bits (λ = 128).
func (k otKind) bound() int {
	switch k.op {
	case "rot", "bcot":
		return ot.Lambda
	case "cot":
		return ot.Lambda + k.w*k.l
	case "ot":
		return ot.Lambda + 2*k.w*k.l
	default:
		return 2*ot.Lambda + k.nN*k.l
	}
}

// words estimates the memory of one batch in 64-bit words.
func (k otKind) words(n int) int {
	switch k.op {
	case "otn":
		return n*k.nN + 2*n
	case "bcot":
		return 2 * 2 * min(n, bcotChunk) // drawn in chunks
	}
	return 3*n*k.w + n/32
}

// bcotChunk is the number of block COTs drawn per call in a "bcot" batch.
const bcotChunk = 1 << 16

// otSource is one OT source of the benchmark (IKNP or Ferret): both
// parties' ends and their raw block-COT streams (party 0 sends).
type otSource struct {
	name   string
	s0, s1 otEnd
	// bsend, brecv draw raw block COTs; delta is the sender's Δ.
	bsend func(ctx context.Context, k []prg.Block) error
	brecv func(ctx context.Context, b []uint64, m []prg.Block) error
	delta prg.Block
	// cotBits is the analytic refill cost per COT (Ferret), 0 for IKNP.
	cotBits float64
	iters   func() int // main iterations so far (Ferret), nil for IKNP
	// drain empties the block-COT reservoir of the party-0-sends direction
	// (Ferret), so that a batch of k·Output COTs runs exactly k iterations.
	drain func(ctx context.Context) error
	cfg   ferret.Config
	setup time.Duration
	bytes int64 // setup bytes (both directions)
}

// otEnd is what the benchmark calls on one party's end of a source; both
// *ot.Session has these methods.
type otEnd interface {
	SendCOTWide(ctx context.Context, w, l int, x, r []uint64) error
	RecvCOTWide(ctx context.Context, w, l int, b, y []uint64) error
	SendROTWide(ctx context.Context, w, l int, m0, m1 []uint64) error
	RecvROTWide(ctx context.Context, w, l int, b, m []uint64) error
	SendOTWide(ctx context.Context, w, l int, m0, m1 []uint64) error
	RecvOTWide(ctx context.Context, w, l int, b, m []uint64) error
	SendOTN(ctx context.Context, N, l int, msgs []uint64) error
	RecvOTN(ctx context.Context, N, l int, c []uint8, m []uint64) error
}

// otJob holds the inputs and outputs of one batch.
type otJob struct {
	k          otKind
	n          int
	a, b, c, d []uint64
	ch         []uint8
	bk, bm     []prg.Block // bcot: sender's keys, receiver's blocks
	delta      prg.Block   // bcot: the sender's Δ
}

func newOTJob(k otKind, n int, g *prg.PRG) *otJob {
	j := &otJob{k: k, n: n}
	switch k.op {
	case "bcot":
		c := min(n, bcotChunk)
		j.bk, j.bm = make([]prg.Block, c), make([]prg.Block, c)
		j.d = make([]uint64, bitvec.Words(c))
	case "otn":
		j.a = make([]uint64, n*k.nN)
		g.Uint64s(j.a)
		j.ch = make([]uint8, n)
		g.Fill(j.ch)
		for i := range j.ch {
			j.ch[i] &= uint8(k.nN - 1)
		}
		j.c = make([]uint64, n)
	default:
		nw := n * k.w
		j.a, j.b, j.c = make([]uint64, nw), make([]uint64, nw), make([]uint64, nw)
		g.Uint64s(j.a)
		g.Uint64s(j.b)
		j.d = make([]uint64, ot.BitWords(n))
		g.Uint64s(j.d)
	}
	return j
}

// sender and receiver run the two halves of the batch.
func (j *otJob) sender(ctx context.Context, src *otSource) error {
	k, s := j.k, src.s0
	switch k.op {
	case "bcot":
		for off := 0; off < j.n; off += len(j.bk) {
			if err := src.bsend(ctx, j.bk[:min(len(j.bk), j.n-off)]); err != nil {
				return err
			}
		}
		j.delta = src.delta
		return nil
	case "rot":
		return s.SendROTWide(ctx, k.w, k.l, j.a, j.b)
	case "cot":
		return s.SendCOTWide(ctx, k.w, k.l, j.a, j.b)
	case "ot":
		return s.SendOTWide(ctx, k.w, k.l, j.a, j.b)
	default:
		return s.SendOTN(ctx, k.nN, k.l, j.a)
	}
}

func (j *otJob) receiver(ctx context.Context, src *otSource) error {
	k, s := j.k, src.s1
	switch k.op {
	case "bcot":
		for off := 0; off < j.n; off += len(j.bm) {
			if err := src.brecv(ctx, j.d, j.bm[:min(len(j.bm), j.n-off)]); err != nil {
				return err
			}
		}
		return nil
	case "rot":
		return s.RecvROTWide(ctx, k.w, k.l, j.d, j.c)
	case "cot":
		return s.RecvCOTWide(ctx, k.w, k.l, j.d, j.c)
	case "ot":
		return s.RecvOTWide(ctx, k.w, k.l, j.d, j.c)
	default:
		return s.RecvOTN(ctx, k.nN, k.l, j.ch, j.c)
	}
}

// check verifies the batch's outputs (so the benchmark cannot report a
// broken protocol as fast).
func (j *otJob) check() error {
	k := j.k
	if k.op == "bcot" {
		// The last chunk: m_i = k_i ⊕ b_i·Δ.
		last := j.n - (j.n-1)/len(j.bk)*len(j.bk)
		for i := 0; i < last; i++ {
			want := j.bk[i]
			if bitvec.Bit(j.d, i) == 1 {
				want = prg.Block{want[0] ^ j.delta[0], want[1] ^ j.delta[1]}
			}
			if j.bm[i] != want {
				return fmt.Errorf("%v: instance %d of the last chunk wrong", k, i)
			}
		}
		return nil
	}
	mask := ^uint64(0) >> (64 - k.l)
	for i := 0; i < j.n; i++ {
		if k.op == "otn" {
			if j.c[i] != j.a[i*k.nN+int(j.ch[i])]&mask {
				return fmt.Errorf("%v: instance %d wrong", k, i)
			}
			continue
		}
		bit := ot.Bit(j.d, i)
		for w := 0; w < k.w; w++ {
			x := i*k.w + w
			var want uint64
			switch k.op {
			case "rot":
				want = j.a[x]
				if bit == 1 {
					want = j.b[x]
				}
			case "cot":
				want = (j.b[x] + bit*j.a[x]) & mask
			case "ot":
				want = j.a[x] & mask
				if bit == 1 {
					want = j.b[x] & mask
				}
			}
			if j.c[x] != want {
				return fmt.Errorf("%v: instance %d word %d wrong", k, i, w)
			}
		}
	}
	return nil
}

// ferretConfig returns the Ferret parameter set named name.
func ferretConfig(name string) (ferret.Config, error) {
	switch name {
	case "b13":
		return ferret.B13(), nil
	case "small":
		return ferret.Small(), nil
	}
	return ferret.Config{}, fmt.Errorf("-ferret %q: want b13 or small", name)
}

// parseSources parses an -ot list such as "iknp,ferret".
func parseSources(list string) ([]string, error) {
	var names []string
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		if n != "iknp" && n != "ferret" {
			return nil, fmt.Errorf("-ot %q: want iknp, ferret or both, comma-separated", n)
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return names, nil
}

// newSources starts the OT sources named by names over the connections:
// an IKNP session pair, and Ferret over it when asked for.
func newSources(ctx context.Context, names []string, cfg ferret.Config, workers int, c0, c1 *transport.Conn) ([]*otSource, error) {
	bytes := func() int64 { return c0.Stats().BytesSent + c1.Stats().BytesSent }
	start := time.Now()
	var s0, s1 *ot.Session
	if err := inParallel(func() (err error) { s0, err = iknp.NewSession(ctx, c0, 0); return },
		func() (err error) { s1, err = iknp.NewSession(ctx, c1, 1); return }); err != nil {
		return nil, err
	}
	iknp := &otSource{name: "iknp", s0: s0, s1: s1, bsend: s0.SendBlockCOT,
		brecv: s1.RecvBlockCOT, delta: s0.Delta(), setup: time.Since(start), bytes: bytes()}
	var out []*otSource
	for _, n := range names {
		if n == "iknp" {
			out = append(out, iknp)
			continue
		}
		start, b0 := time.Now(), bytes()
		var f0, f1 *ot.Session
		fo := ferret.Options{Workers: workers}
		if err := inParallel(func() (err error) { f0, err = ferret.NewSession(ctx, s0, cfg, fo); return },
			func() (err error) { f1, err = ferret.NewSession(ctx, s1, cfg, fo); return }); err != nil {
			return nil, err
		}
		snd, rcv := ferret.CoreOf(f0).SenderCOT(), ferret.CoreOf(f1).ReceiverCOT()
		drain := func(ctx context.Context) error {
			made := int64(snd.Iterations()) * int64(cfg.Main.Output())
			if cfg.HasPre() {
				made += int64(cfg.Pre.N - cfg.Main.Reserve())
			}
			left := int(made - int64(snd.Used()))
			if left <= 0 {
				return nil
			}
			return inParallel(func() error { return snd.Send(ctx, make([]prg.Block, left)) },
				func() error { return rcv.Recv(ctx, make([]uint64, bitvec.Words(left)), make([]prg.Block, left)) })
		}
		out = append(out, &otSource{drain: drain, name: "ferret-" + cfg.Name, s0: f0, s1: f1, bsend: snd.Send, brecv: rcv.Recv,
			delta: snd.Delta(), cfg: cfg, cotBits: 8 * float64(ferret.IterationBytes(cfg.Main)) / float64(cfg.Main.Output()),
			iters: func() int {
				return ferret.CoreOf(f0).SenderCOT().Iterations() + ferret.CoreOf(f0).ReceiverCOT().Iterations()
			},
			setup: time.Since(start), bytes: bytes() - b0})
	}
	return out, nil
}

func runOT(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("scibench ot", flag.ContinueOnError)
	kinds := fs.String("kinds", defaultOTKinds, "comma-separated OT kinds: bcot rot:l cot:l ot:l rotw:w:l cotw:w:l otw:w:l otn:N:l")
	sources := fs.String("ot", "iknp", "OT sources, comma-separated: iknp, ferret (with two, every batch size alternates them run by run)")
	ferretSet := fs.String("ferret", "b13", "Ferret parameter set: b13 or small")
	workers := fs.Int("workers", 1, "goroutines per Ferret iteration (per party)")
	iters := fs.Int("iters", 2, "with Ferret, block COTs are timed on batches of this many whole main iterations")
	minLog := fs.Int("min", 10, "smallest batch is 2^min instances")
	maxLog := fs.Int("max", 22, "largest batch is 2^max instances")
	reps := fs.Int("reps", 3, "timed repetitions per batch size (the median is reported)")
	netName := fs.String("net", "none", netFlagHelp)
	usePipe := fs.Bool("pipe", false, "use the in-memory pipe instead of loopback TCP")
	maxMem := fs.Int("maxmem", 1024, "skip batches needing more than this many MiB of inputs and outputs")
	verify := fs.Bool("verify", true, "check every batch's outputs (outside the timed region)")
	cpuProf := fs.String("cpuprofile", "", "write a CPU profile to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *minLog < 0 || *maxLog > 30 || *minLog > *maxLog || *reps < 1 || *workers < 1 || *iters < 1 || *iters > 16 {
		return fmt.Errorf("need 0 ≤ min ≤ max ≤ 30, reps ≥ 1, workers ≥ 1 and 1 ≤ iters ≤ 16")
	}
	names, err := parseSources(*sources)
	if err != nil {
		return err
	}
	cfg, err := ferretConfig(*ferretSet)
	if err != nil {
		return err
	}
	var ks []otKind
	for _, spec := range strings.Split(*kinds, ",") {
		k, err := parseOTKind(strings.TrimSpace(spec))
		if err != nil {
			return err
		}
		ks = append(ks, k)
	}
	opt, err := transportOptions(*netName, 2*time.Minute)
	if err != nil {
		return err
	}
	stopProf, err := startCPUProfile(*cpuProf)
	if err != nil {
		return err
	}
	defer stopProf()

	c0, c1, err := connectPair(ctx, *usePipe, opt)
	if err != nil {
		return err
	}
	defer c0.Close()
	defer c1.Close()
	srcs, err := newSources(ctx, names, cfg, *workers, c0, c1)
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "# scibench ot: %s, network model %s, GOMAXPROCS=%d, %s/%s, %s\n",
		transportName(*usePipe), *netName, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(out, "# party 0 = OT sender, party 1 = OT receiver, one goroutine each; median of %d runs", *reps)
	if len(srcs) > 1 {
		fmt.Fprintf(out, "; the sources alternate run by run (A B A B)")
	}
	fmt.Fprintf(out, "\n# CPU ns/OT: user+system CPU of the whole process (both parties, transport goroutines, GC) per instance;\n")
	fmt.Fprintf(out, "# OTs/core-s: instances per CPU-second per party (2·n / process CPU)\n")
	fmt.Fprintf(out, "# bytes and bits/OT: this batch's traffic, Ferret refills included when they fall in it (see the amortised lines)\n")
	for _, src := range srcs {
		fmt.Fprintf(out, "# setup %s: %v, %d bytes", src.name, src.setup.Round(100*time.Microsecond), src.bytes)
		if src.iters != nil {
			fmt.Fprintf(out, " (IKNP bootstrap and pre-iteration, both directions; formula 2·SetupBytes = %d); refills: %d bytes per %d COTs = %.4f bits/COT",
				2*ferret.SetupBytes(src.cfg), ferret.IterationBytes(src.cfg.Main), src.cfg.Main.Output(), src.cotBits)
		} else {
			fmt.Fprintf(out, " (base OTs both ways + KK13 bootstrap)")
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out)
	const rowFmt = "%-14s %-12s %5s %12s %12s %12s %11s %11s %9s %8s %6s\n"
	fmt.Fprintf(out, rowFmt, "kind", "source", "n", "median time", "OTs/s (med)", "OTs/s (best)", "CPU ns/OT", "OTs/core-s", "bytes/OT", "bits/OT", "bound")

	g := prg.New(prg.Seed{42}) // benchmark inputs need not be secret
	// Per source: traffic and instances of all timed runs (for the amortised bits).
	type total struct {
		bytes, n int64
		iters    int
	}
	totals := make([]map[string]*total, len(srcs))
	for i := range totals {
		totals[i] = map[string]*total{}
	}
	for _, k := range ks {
		if k.op == "otn" && k.nN > ot.MaxN {
			continue
		}
		for _, src := range srcs {
			// Warm up the session's buffers (and a Ferret stream's first iteration).
			warm := newOTJob(k, 1<<10, g)
			if err := runBatch(ctx, src, warm); err != nil {
				return fmt.Errorf("%s: %w", src.name, err)
			}
		}
		sizes := []int{}
		for lg := *minLog; lg <= *maxLog; lg++ {
			sizes = append(sizes, 1<<lg)
		}
		if k.op == "bcot" && ferretIn(srcs) {
			// Whole iterations: drain the reservoir, then draw -iters
			// iterations' worth, so time and bytes are amortised exactly.
			sizes = []int{*iters * cfg.Main.Output()}
		}
		for _, n := range sizes {
			lg := bits.Len(uint(n)) - 1
			size := fmt.Sprintf("2^%d", lg)
			if n != 1<<lg {
				size = fmt.Sprintf("%.3gM", float64(n)/1e6)
			}
			if k.words(n)*8 > *maxMem<<20 {
				fmt.Fprintf(out, "%-14v %-12s %5s  (skipped: more than -maxmem MiB)\n", k, "", size)
				continue
			}
			job := newOTJob(k, n, g)
			times := make([][]time.Duration, len(srcs))
			cpus := make([][]time.Duration, len(srcs))
			bytes := make([]int64, len(srcs))
			for r := 0; r < *reps; r++ {
				for si, src := range srcs {
					// Collect the previous run's garbage now, so that its
					// background GC work is not charged to this one.
					runtime.GC()
					before := c0.Stats().BytesSent + c1.Stats().BytesSent
					it0 := 0
					if src.iters != nil {
						it0 = src.iters()
					}
					if k.op == "bcot" && src.drain != nil {
						if err := src.drain(ctx); err != nil {
							return fmt.Errorf("%s: %w", src.name, err)
						}
						before = c0.Stats().BytesSent + c1.Stats().BytesSent
						it0 = src.iters()
					}
					cpu0, _ := processCPU()
					t0 := time.Now()
					if err := runBatch(ctx, src, job); err != nil {
						return fmt.Errorf("%s: %w", src.name, err)
					}
					times[si] = append(times[si], time.Since(t0))
					cpu1, _ := processCPU()
					cpus[si] = append(cpus[si], cpu1-cpu0)
					bytes[si] = c0.Stats().BytesSent + c1.Stats().BytesSent - before
					t := totals[si][k.spec]
					if t == nil {
						t = &total{}
						totals[si][k.spec] = t
					}
					t.bytes += bytes[si]
					t.n += int64(n)
					if src.iters != nil {
						t.iters += src.iters() - it0
					}
					if *verify {
						if err := job.check(); err != nil {
							return fmt.Errorf("%s: %w", src.name, err)
						}
					}
				}
			}
			for si, src := range srcs {
				ts, cs := times[si], cpus[si]
				slices.Sort(ts)
				slices.Sort(cs)
				med, best := ts[len(ts)/2], ts[0]
				cpuCol, coreCol := "n/a", "n/a"
				if _, ok := processCPU(); ok {
					c := cs[len(cs)/2]
					cpuCol = fmt.Sprintf("%.0f", float64(c.Nanoseconds())/float64(n))
					coreCol = fmt.Sprintf("%.2f M", 2*float64(n)/c.Seconds()/1e6)
				}
				fmt.Fprintf(out, rowFmt, k, src.name, size, med.Round(10*time.Microsecond),
					fmt.Sprintf("%.2f M", float64(n)/med.Seconds()/1e6), fmt.Sprintf("%.2f M", float64(n)/best.Seconds()/1e6), cpuCol, coreCol,
					fmt.Sprintf("%.2f", float64(bytes[si])/float64(n)), fmt.Sprintf("%.1f", 8*float64(bytes[si])/float64(n)), strconv.Itoa(k.bound()))
			}
		}
	}
	fmt.Fprintln(out)
	for si, src := range srcs {
		if src.iters == nil {
			continue
		}
		for _, k := range ks {
			t := totals[si][k.spec]
			if t == nil || t.n == 0 {
				continue
			}
			refill := float64(t.iters) * float64(ferret.IterationBytes(src.cfg.Main))
			fmt.Fprintf(out, "# amortised %s %v: %d instances, %d main iterations: %.4f bits/instance in all; %.4f of them its own messages\n",
				src.name, k, t.n, t.iters, 8*float64(t.bytes)/float64(t.n), 8*(float64(t.bytes)-refill)/float64(t.n))
		}
	}
	return nil
}

func ferretIn(srcs []*otSource) bool {
	for _, s := range srcs {
		if s.iters != nil {
			return true
		}
	}
	return false
}

func runBatch(ctx context.Context, src *otSource, j *otJob) error {
	return inParallel(func() error { return j.sender(ctx, src) }, func() error { return j.receiver(ctx, src) })
}
