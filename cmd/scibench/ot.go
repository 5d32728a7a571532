package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
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
	case "otn":
		k.op, want = "otn", 2
		if len(nums) == 2 {
			k.nN, k.l = nums[0], nums[1]
		}
	default:
		return otKind{}, fmt.Errorf("kind %q: unknown OT %q (want rot, cot, ot, rotw, cotw, otw or otn)", spec, parts[0])
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
	case "rot":
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
	if k.op == "otn" {
		return n*k.nN + 2*n
	}
	return 3*n*k.w + n/32
}

// otJob holds the inputs and outputs of one batch.
type otJob struct {
	k          otKind
	n          int
	a, b, c, d []uint64
	ch         []uint8
}

func newOTJob(k otKind, n int, g *prg.PRG) *otJob {
	j := &otJob{k: k, n: n}
	switch k.op {
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
func (j *otJob) sender(ctx context.Context, s *ot.Session) error {
	k := j.k
	switch k.op {
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

func (j *otJob) receiver(ctx context.Context, s *ot.Session) error {
	k := j.k
	switch k.op {
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

func runOT(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("scibench ot", flag.ContinueOnError)
	kinds := fs.String("kinds", defaultOTKinds, "comma-separated OT kinds: rot:l cot:l ot:l rotw:w:l cotw:w:l otw:w:l otn:N:l")
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
	if *minLog < 0 || *maxLog > 30 || *minLog > *maxLog || *reps < 1 {
		return fmt.Errorf("need 0 ≤ min ≤ max ≤ 30 and reps ≥ 1")
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
	start := time.Now()
	var s0, s1 *ot.Session
	if err := inParallel(func() (err error) { s0, err = ot.NewSession(ctx, c0, 0); return },
		func() (err error) { s1, err = ot.NewSession(ctx, c1, 1); return }); err != nil {
		return err
	}
	setup := time.Since(start)
	setupBytes := c0.Stats().BytesSent + c1.Stats().BytesSent

	fmt.Fprintf(out, "# scibench ot: %s, network model %s, GOMAXPROCS=%d, %s/%s, %s\n",
		transportName(*usePipe), *netName, runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(out, "# party 0 = OT sender, party 1 = OT receiver, one goroutine each; median of %d runs\n", *reps)
	fmt.Fprintf(out, "# CPU ns/OT: user+system CPU of the whole process (both parties, transport goroutines, GC) per instance\n")
	fmt.Fprintf(out, "# session setup (base OTs both ways + KK13 bootstrap): %v, %d bytes\n\n",
		setup.Round(100*time.Microsecond), setupBytes)
	const rowFmt = "%-14s %5s %12s %12s %12s %11s %9s %8s %6s\n"
	fmt.Fprintf(out, rowFmt, "kind", "n", "median time", "OTs/s (med)", "OTs/s (best)", "CPU ns/OT", "bytes/OT", "bits/OT", "bound")

	g := prg.New(prg.Seed{42}) // benchmark inputs need not be secret
	for _, k := range ks {
		// Warm up the session's buffers for this kind.
		warm := newOTJob(k, 1<<10, g)
		if err := runBatch(ctx, s0, s1, warm); err != nil {
			return err
		}
		for lg := *minLog; lg <= *maxLog; lg++ {
			n := 1 << lg
			if k.words(n)*8 > *maxMem<<20 {
				fmt.Fprintf(out, "%-14v %5s  (skipped: more than -maxmem MiB)\n", k, fmt.Sprintf("2^%d", lg))
				continue
			}
			job := newOTJob(k, n, g)
			// Collect the previous batch size's garbage now, so that its
			// background GC work is not charged to this one.
			runtime.GC()
			var times, cpus []time.Duration
			var bytes int64
			for r := 0; r < *reps; r++ {
				before := c0.Stats().BytesSent + c1.Stats().BytesSent
				cpu0, _ := processCPU()
				t0 := time.Now()
				if err := runBatch(ctx, s0, s1, job); err != nil {
					return err
				}
				times = append(times, time.Since(t0))
				cpu1, _ := processCPU()
				cpus = append(cpus, cpu1-cpu0)
				bytes = c0.Stats().BytesSent + c1.Stats().BytesSent - before
				if *verify {
					if err := job.check(); err != nil {
						return err
					}
				}
			}
			slices.Sort(times)
			slices.Sort(cpus)
			med, best := times[len(times)/2], times[0]
			cpuCol := "n/a"
			if _, ok := processCPU(); ok {
				cpuCol = fmt.Sprintf("%.0f", float64(cpus[len(cpus)/2].Nanoseconds())/float64(n))
			}
			fmt.Fprintf(out, rowFmt, k, fmt.Sprintf("2^%d", lg), med.Round(10*time.Microsecond),
				fmt.Sprintf("%.2f M", float64(n)/med.Seconds()/1e6), fmt.Sprintf("%.2f M", float64(n)/best.Seconds()/1e6), cpuCol,
				fmt.Sprintf("%.2f", float64(bytes)/float64(n)), fmt.Sprintf("%.1f", 8*float64(bytes)/float64(n)), strconv.Itoa(k.bound()))
		}
	}
	return nil
}

func runBatch(ctx context.Context, s0, s1 *ot.Session, j *otJob) error {
	return inParallel(func() error { return j.sender(ctx, s0) }, func() error { return j.receiver(ctx, s1) })
}
