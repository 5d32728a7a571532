package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cryptflow-go/cryptflow/compile"
	"github.com/cryptflow-go/cryptflow/internal/atomicfile"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/sciir"
)

const compileUsage = `usage: athosc [compile] MODEL.onnx|MODEL.pb [flags]
       athosc compile --list-passes

Compiles an ONNX or TensorFlow classifier to a fixed-point secure-inference program (.sciir). With --validate,
the ring bitwidth l and scale s are chosen by running the cleartext fixed-point VM on the
validation inputs. -o FILE.sciir also writes FILE.client.sciir, the client's copy without weights.
The compiler runs one table of named passes (--list-passes prints it with its ordering rules);
--dump-after PASS prints the IR after a pass, --time-passes each pass's time.

Validation folders: (a) NNNNN.npy inputs plus an optional labels.txt ("file label" per line);
(b) one subfolder per class of PNG/JPEG images, preprocessed as the image flags say (recorded in
the program so that the client preprocesses the same way); class k is the k-th subfolder in
sorted name order, so renaming or adding a folder renumbers the classes. Class names (printed by
scirun with every prediction) come from --classes FILE, a classes.txt beside labels.txt, or the
subfolder names; labels.txt may give names instead of indices when they are known. ImageNet-style preprocessing is
--resize-shorter 256 --center-crop 224x224: resize the shorter side, cut out the centre, then
resize to --image-size (a no-op when the crop already has the input's size).

` + modelHelp + `
Flags:
`

// compileConfig is the parsed command line of athosc compile.
type compileConfig struct {
	model, out, validate, backend string
	classes                       string
	net                           string
	bits, scale, headroom, jobs   int
	fheBlocks                     string
	batch, limit                  int
	scales                        []int
	noPeephole, keepSoftmax       bool
	quiet                         bool
	listPasses, timePasses, check bool
	dumpAfter                     string
	imageFlags                    imageFlags
	modelFlags                    modelFlags
}

type imageFlags struct {
	size, layout, mean, std, resize string
	pixelScale                      float64
	resizeShorter                   int
	centerCrop                      string
}

// runCompile implements `athosc compile MODEL.onnx ...` and `athosc MODEL.onnx ...`.
func runCompile(args []string) error {
	cfg, err := parseCompile(args)
	if err != nil {
		return err
	}
	if cfg.listPasses {
		return listPasses(os.Stdout)
	}
	return compileModel(cfg, os.Stdout, os.Stderr)
}

func parseCompile(args []string) (*compileConfig, error) {
	return parseCompileOutput(args, nil)
}

// parseCompileOutput is parseCompile with the --help text written to w (nil: where cli.Parse puts it).
func parseCompileOutput(args []string, w io.Writer) (*compileConfig, error) {
	fs := flag.NewFlagSet("athosc compile", flag.ContinueOnError)
	fs.Usage = func() {
		if w != nil {
			fs.SetOutput(w)
		}
		fmt.Fprint(fs.Output(), compileUsage)
		fs.PrintDefaults()
	}
	c := &compileConfig{}
	c.modelFlags.register(fs)
	fs.StringVar(&c.out, "o", "", "output program `FILE` (default: the model's base name + .sciir in the current directory)")
	fs.StringVar(&c.validate, "validate", "", "validation `DIR` for autotuning l and s")
	fs.StringVar(&c.classes, "classes", "", "class names `FILE`: one per line, line k (from 0) naming class k; recorded in the program so scirun prints them (default: the validation folder's classes.txt, or its class subfolders in sorted order)")
	fs.IntVar(&c.bits, "bitwidth", 0, fmt.Sprintf("pin the ring bitwidth `l` (%d..%d; 0 = choose)", passes.MinBits, passes.MaxBits))
	fs.IntVar(&c.scale, "scale", -1, "pin the fixed-point scale `s` (-1 = choose)")
	fs.IntVar(&c.headroom, "headroom", 1, "bits kept free above the largest magnitude seen in validation")
	scales := fs.String("scales", "6-16", "scales to sweep: a range `A-B` or a comma list")
	fs.IntVar(&c.jobs, "jobs", runtime.NumCPU(), "validation inputs run in parallel (same as --threads)")
	fs.IntVar(&c.jobs, "threads", runtime.NumCPU(), "use at most `N` cores for autotuning (default: all cores)")
	fs.IntVar(&c.batch, "batch", 1, "batch size fixed for a symbolic batch dimension")
	fs.IntVar(&c.limit, "limit", 0, "use only the first `N` validation inputs (0 = all)")
	fs.BoolVar(&c.noPeephole, "no-peephole", false, "skip the peephole optimisations")
	fs.BoolVar(&c.keepSoftmax, "keep-softmax", false, "compute a Softmax or LogSoftmax that produces the output securely (probabilities or log-probabilities out) instead of dropping it (by default it is dropped: a classifier's argmax is the same, and the output is the logits)")
	fs.StringVar(&c.backend, "backend", "auto", "two-party backend recorded in the program: auto (OT or HE per linear layer, whichever the planner expects to be faster on --net), sciot (every linear layer by OT), scihe (every one by HE), sci3 (three parties: a helper deals correlations), fhe (non-interactive BGV: polynomial networks only, no truncation, Z_n for a CRT product n; default scales 1-8); the compile output lists each linear layer's engine and expected traffic; scirun --backend overrides it, and any program also runs with scirun --clear")
	fs.StringVar(&c.net, "net", "lan", "the `LINK` --backend auto plans for (and the traffic estimate assumes), "+netmodel.Help+"; recorded in the program; scirun --ot auto takes silent OT (Ferret) when the link is slow enough for its smaller traffic to pay (docs/usage.md)")
	fs.BoolVar(&c.quiet, "q", false, "print only errors and the output file names")
	fs.BoolVar(&c.listPasses, "list-passes", false, "print the compiler's pass table and ordering rules, then exit")
	fs.StringVar(&c.dumpAfter, "dump-after", "", "print the IR after pass `PASS` (HLIL text or the fixed-point program)")
	fs.BoolVar(&c.timePasses, "time-passes", false, "print each pass's time")
	fs.StringVar(&c.fheBlocks, "fhe-bcirc", "auto", "fhe: evaluate fully-connected layers with block-circulant weights in the frequency domain when it needs fewer rotations by the shape rule (auto), always (frequency) or by the dense diagonal method (dense); docs/fhe.md")
	fs.BoolVar(&c.check, "check", false, "check the IR after every pass (graph checks / program validation)")
	fs.StringVar(&c.imageFlags.size, "image-size", "", "images: resize to `WxH` (default: the model input's size)")
	fs.IntVar(&c.imageFlags.resizeShorter, "resize-shorter", 0, "images: first resize so the shorter side is `N` pixels, aspect ratio kept (torchvision Resize(N); ImageNet: 256; 0 = no)")
	fs.StringVar(&c.imageFlags.centerCrop, "center-crop", "", "images: then cut out the centre `WxH` (torchvision CenterCrop; ImageNet: 224x224), before resizing to --image-size")
	fs.StringVar(&c.imageFlags.layout, "layout", "NCHW", "images: input layout NCHW or NHWC")
	fs.Float64Var(&c.imageFlags.pixelScale, "pixel-scale", 1.0/255, "images: multiply pixel values (0..255) by this first")
	fs.StringVar(&c.imageFlags.mean, "mean", "", "images: per-channel `means` to subtract, comma-separated (default 0)")
	fs.StringVar(&c.imageFlags.std, "std", "", "images: per-channel `stds` to divide by, comma-separated (default 1)")
	fs.StringVar(&c.imageFlags.resize, "resize", "bilinear", "images: resize filter bilinear or nearest")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return nil, err
	}
	scalesSet := false
	fs.Visit(func(f *flag.Flag) { scalesSet = scalesSet || f.Name == "scales" })
	if c.listPasses {
		if len(pos) != 0 {
			return nil, cli.Usagef("--list-passes takes no model file")
		}
		return c, nil
	}
	if len(pos) != 1 {
		return nil, cli.Usagef("compile takes one model file, got %d arguments", len(pos))
	}
	c.model = pos[0]
	if c.scales, err = parseScales(*scales); err != nil {
		return nil, cli.Usagef("--scales: %v", err)
	}
	switch {
	case c.bits != 0 && (c.bits < passes.MinBits || c.bits > passes.MaxBits):
		return nil, cli.Usagef("--bitwidth %d is not in %d..%d", c.bits, passes.MinBits, passes.MaxBits)
	case c.scale < -1 || c.scale > fixed.MaxScale/2:
		return nil, cli.Usagef("--scale %d is not in 0..%d", c.scale, fixed.MaxScale/2)
	case c.headroom < 0 || c.headroom > 32:
		return nil, cli.Usagef("--headroom %d is not in 0..32", c.headroom)
	case c.jobs < 1:
		return nil, cli.Usagef("--threads (--jobs) must be at least 1")
	case c.batch < 1:
		return nil, cli.Usagef("--batch must be at least 1")
	case c.limit < 0:
		return nil, cli.Usagef("--limit must not be negative")
	}
	switch c.backend {
	case "sciot", "scihe", "auto", "sci3":
	case passes.BackendFHE:
		if !scalesSet {
			c.scales = passes.DefaultFHEScales // scales add up in the fhe mode: small ones
		}
	case "clear":
		// The recorded backend is the default of a two-party run, and the cleartext backend is
		// not one: scirun --clear runs any program in the clear, whatever it records.
		return nil, cli.Usagef("--backend clear: the cleartext backend is not a two-party backend; every program runs in the clear with 'scirun --clear'. Two-party backends: sciot, scihe, auto, fhe")
	default:
		return nil, cli.Usagef("--backend %q: unknown; two-party backends: sciot, scihe, auto, fhe", c.backend)
	}
	nm, err := passes.NetModelNamed(c.net)
	if err != nil {
		return nil, cli.Usagef("--net: %v", err)
	}
	c.net = nm.Spec() // canonical: what the program records
	if c.dumpAfter != "" && !slices.ContainsFunc(passes.PassTable(), func(p passes.PassInfo) bool { return p.Name == c.dumpAfter }) {
		return nil, cli.Usagef("--dump-after %q: no such pass (athosc compile --list-passes lists them)", c.dumpAfter)
	}
	if c.out == "" {
		c.out = strings.TrimSuffix(filepath.Base(c.model), filepath.Ext(c.model)) + ".sciir"
	}
	if strings.HasSuffix(strings.ToLower(c.out), ".client.sciir") {
		return nil, cli.Usagef("-o %s: that is the name of a client copy, but -o names the server's program with the weights (the client copy is written beside it as NAME.client.sciir); use -o %s",
			c.out, strings.TrimSuffix(c.out[:len(c.out)-len(".client.sciir")], ".")+".sciir")
	}
	for _, out := range []string{c.out, clientPath(c.out)} {
		if err := atomicfile.CheckNotInput(out, c.model); err != nil {
			return nil, cli.Usagef("-o: %v", err)
		}
		if err := atomicfile.CheckNotInside(out, c.validate); err != nil {
			return nil, cli.Usagef("-o: %v (--validate)", err)
		}
	}
	return c, nil
}

func parseScales(s string) ([]int, error) {
	if a, b, ok := strings.Cut(s, "-"); ok {
		lo, err1 := strconv.Atoi(strings.TrimSpace(a))
		hi, err2 := strconv.Atoi(strings.TrimSpace(b))
		if err1 != nil || err2 != nil || lo < 0 || hi < lo || hi > fixed.MaxScale/2 {
			return nil, fmt.Errorf("bad range %q (want A-B with 0 <= A <= B <= %d)", s, fixed.MaxScale/2)
		}
		var out []int
		for v := lo; v <= hi; v++ {
			out = append(out, v)
		}
		return out, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || v < 0 || v > fixed.MaxScale/2 {
			return nil, fmt.Errorf("bad scale %q", f)
		}
		out = append(out, v)
	}
	return out, nil
}

func parseFloats(s string, n int, def float64) ([]float64, error) {
	out := make([]float64, n)
	if s == "" {
		for i := range out {
			out[i] = def
		}
		return out, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) == 1 {
		v, err := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
		if err != nil {
			return nil, err
		}
		for i := range out {
			out[i] = v
		}
		return out, nil
	}
	if len(parts) != n {
		return nil, fmt.Errorf("%d values for %d channels", len(parts), n)
	}
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// preprocessFor builds the image preprocessing from the flags and the model input's shape.
func (c *compileConfig) preprocessFor(in ir.Value) (*sciir.Preprocess, error) {
	f := c.imageFlags
	p, err := input.DefaultPreprocess(in.Shape, f.layout)
	if err != nil {
		return nil, err
	}
	if f.size != "" {
		w, h, ok := strings.Cut(strings.ToLower(f.size), "x")
		wi, err1 := strconv.Atoi(w)
		hi, err2 := strconv.Atoi(h)
		if !ok || err1 != nil || err2 != nil {
			return nil, cli.Usagef("--image-size %q (want WxH)", f.size)
		}
		p.Width, p.Height = wi, hi
	}
	p.Scale = f.pixelScale
	p.Resize = f.resize
	p.ResizeShorter = f.resizeShorter
	if f.centerCrop != "" {
		w, h, ok := strings.Cut(strings.ToLower(f.centerCrop), "x")
		wi, err1 := strconv.Atoi(w)
		hi, err2 := strconv.Atoi(h)
		if !ok || err1 != nil || err2 != nil || wi < 1 || hi < 1 {
			return nil, cli.Usagef("--center-crop %q (want WxH, e.g. 224x224)", f.centerCrop)
		}
		p.CropWidth, p.CropHeight = wi, hi
	}
	if p.Mean, err = parseFloats(f.mean, p.Channels, 0); err != nil {
		return nil, cli.Usagef("--mean: %v", err)
	}
	if p.Std, err = parseFloats(f.std, p.Channels, 1); err != nil {
		return nil, cli.Usagef("--std: %v", err)
	}
	if err := p.Check(); err != nil {
		return nil, cli.Usagef("%v", err)
	}
	return p, nil
}

// clientPath derives the client copy's name: model.sciir -> model.client.sciir.
func clientPath(out string) string {
	return strings.TrimSuffix(out, ".sciir") + ".client.sciir"
}

func compileModel(c *compileConfig, stdout, stderr io.Writer) error {
	start := time.Now()
	// Find an unwritable output before the autotuning, not after it.
	for _, out := range []string{c.out, clientPath(c.out)} {
		if err := atomicfile.CheckWritable(out); err != nil {
			return err
		}
	}
	say := func(format string, args ...any) {
		if !c.quiet {
			fmt.Fprintf(stdout, format, args...)
		}
	}
	fo, err := c.modelFlags.options(c.batch)
	if err != nil {
		return err
	}
	m, err := compile.Load(c.model, fo)
	if err != nil {
		return err
	}
	g := m.Graph
	say("model %s (sha256 %s): %d nodes, %d constants\n", c.model, m.SHA256[:16], len(g.Nodes), len(g.Consts))
	for _, in := range g.Inputs {
		say("  input  %s %v\n", in.Name, in.Shape)
	}
	for _, o := range g.Outputs {
		s, _ := g.ShapeOf(o)
		say("  output %s %v\n", o, s)
	}
	nm, err := passes.NetModelNamed(c.net)
	if err != nil {
		return fmt.Errorf("--net: %w", err)
	}
	opts := compile.Options{Passes: passes.DefaultOptions(), Backend: c.backend, Compiler: "athosc (cryptflow-go)",
		Name: strings.TrimSuffix(filepath.Base(c.out), ".sciir"), Validate: c.validate, Limit: c.limit,
		ClassesFrom: "--classes " + c.classes, Log: stdout, Warn: prefixed{stderr, "athosc: "}}
	if c.quiet {
		opts.Log = nil
	}
	po := &opts.Passes
	po.Bits, po.Scale, po.Check, po.KeepSoftmax = c.bits, c.scale, c.check, c.keepSoftmax
	po.Net = c.net
	if po.FHEBlocks, err = fixed.ParseBlockMode(c.fheBlocks); err != nil {
		return cli.Usagef("--fhe-bcirc: %v", err)
	}
	po.Scales, po.Headroom, po.Workers = c.scales, c.headroom, c.jobs
	if c.noPeephole {
		po.Disable = []string{"peephole-*"}
	}
	if c.dumpAfter != "" {
		po.DumpAfter, po.Dump = c.dumpAfter, stdout
	}
	if c.classes != "" {
		if opts.Classes, err = input.ReadClasses(c.classes); err != nil {
			return fmt.Errorf("--classes: %w", err)
		}
	}
	if c.validate != "" && len(g.Inputs) == 1 && len(g.Inputs[0].Shape) == 4 {
		if opts.Preprocess, err = c.preprocessFor(g.Inputs[0]); err != nil {
			return err
		}
	}
	bar := cli.NewProgress(stderr, "autotune", cli.IsTerminal(stderr) && !c.quiet && c.dumpAfter == "")
	po.Progress = func(done, total int) { bar.Update(done, total, "") }
	res, err := compile.Program(m, opts)
	bar.Done()
	if err != nil {
		return err
	}
	f, rep := res.File, res.Report
	prog := f.Program
	bits, scale := prog.Bits, prog.Scale
	say("clean-up:\n")
	cleaned := false
	for _, r := range rep.Passes {
		if r.IR == passes.OnHLIL {
			for _, l := range r.Log {
				say("  %s\n", l)
				cleaned = true
			}
		}
	}
	if !cleaned {
		say("  nothing to do\n")
	}
	switch {
	case rep.Tune != nil:
		printTune(stdout, rep.Tune, c.quiet)
	case passes.Quantized(g):
		say("quantized model: l=%d s=%d follow from the quantization parameters (integer tensors; int32 accumulators and requantization as ONNX Runtime computes them); no autotuning\n", bits, scale)
	default:
		say("no --validate: using l=%d s=%d without checking for overflow\n", bits, scale)
	}
	if rep.Peephole != nil {
		say("peepholes:\n")
		for _, l := range rep.Peephole.Lines() {
			say("  %s\n", l)
		}
	}
	if err := printEngines(stdout, prog, rep.Engines, c, nm); err != nil {
		return err
	}
	mem := rep.Memory
	say("memory: tensor storage %s without reuse, %s with slot reuse (%d slots for %d tensors); peak live %s; weights %s as ring elements\n",
		human(mem.NoReuse), human(mem.WithReuse), mem.Slots, mem.Tensors, human(mem.PeakLive), human(mem.WeightBytes))
	if c.timePasses {
		fmt.Fprintf(stdout, "pass times:\n")
		if err := rep.WriteTimes(stdout); err != nil {
			return err
		}
	}
	cp := clientPath(c.out)
	if err := cli.WriteProgram(c.out, f, true); err != nil {
		return err
	}
	if err := cli.WriteProgram(cp, f, false); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%s) and %s (%s, no weights); program id %s\n",
		c.out, fileSize(c.out), cp, fileSize(cp), f.IDString())
	if prog.FHE != nil {
		say("fhe: ring Z_%d (%d bits), scale %d; %s\n", prog.Modulus, bits, scale, prog.FHE)
	}
	if prog.FHE == nil {
		say("ring Z_2^%d, scale %d; compiled in %.1fs\n", bits, scale, time.Since(start).Seconds())
	}
	return nil
}

// prefixed writes to w with a prefix before each write (the warnings are single lines).
type prefixed struct {
	w      io.Writer
	prefix string
}

func (p prefixed) Write(b []byte) (int, error) {
	if _, err := io.WriteString(p.w, p.prefix); err != nil {
		return 0, err
	}
	return p.w.Write(b)
}

// printEngines writes, for every linear layer, the engine the backend will use and the traffic
// the planner expects (passes.PlanEngines's exact byte counts), with the total; for a pinned
// backend it adds what backend auto would move on the same link, so that a costly choice shows
// before any secure run. planned are the compilation's own estimates (backend auto), or nil.
func printEngines(w io.Writer, prog *fixed.Program, planned []passes.EngineEstimate, c *compileConfig, net netmodel.Model) error {
	if c.quiet || c.backend == passes.BackendFHE {
		return nil // the fhe mode has no two-party engines (scirun prints its own account)
	}
	est := planned
	if est == nil {
		backend := c.backend
		if backend == "sci3" {
			backend = "sciot" // for the OT and HE columns beside the dealt traffic
		}
		var err error
		if est, err = passes.EstimateEngines(prog, net, backend); err != nil {
			return fmt.Errorf("traffic estimate: %w", err)
		}
	}
	if len(est) == 0 {
		fmt.Fprintf(w, "linear layers: none\n")
		return nil
	}
	if c.backend == "sci3" {
		printDealt(w, prog, est, c)
		return nil
	}
	how := map[string]string{"auto": "planned for " + c.net, "sciot": "every one by OT", "scihe": "every one by HE"}[c.backend]
	fmt.Fprintf(w, "linear layers, backend %s (%s): engine and expected traffic (both parties, %s link model)\n", c.backend, how, c.net)
	fmt.Fprintf(w, "  %4s  %-6s  %-28s  %-6s  %10s  %10s  %10s\n", "#", "op", "source", "engine", "expected", "by OT", "by HE")
	var total, autoTotal int64
	byEngine := map[fixed.Engine]int{}
	unsupported := 0
	for _, e := range est {
		in := prog.Instrs[e.Instr]
		b := e.Bytes()
		he := "-"
		if e.HEBytes >= 0 && e.HEBytes < 1<<62 {
			he = human(e.HEBytes)
		}
		exp := human(b)
		if b < 0 {
			exp, unsupported = "unsupported", unsupported+1
		} else {
			total += b
		}
		byEngine[e.Chosen]++
		if e.HETime < e.OTTime {
			autoTotal += e.HEBytes
		} else {
			autoTotal += e.OTBytes
		}
		fmt.Fprintf(w, "  %4d  %-6s  %-28s  %-6s  %10s  %10s  %10s\n", e.Instr, in.Op, clipLeft(in.Source, 28), e.Chosen, exp, human(e.OTBytes), he)
	}
	fmt.Fprintf(w, "  total: %d linear layers, %d by OT and %d by HE; %s expected for them (ReLU, truncation and pooling come on top)\n",
		len(est), byEngine[fixed.EngineOT], byEngine[fixed.EngineHE], human(total))
	if unsupported > 0 {
		fmt.Fprintf(w, "  WARNING: %d layer(s) cannot run by HE; use --backend auto or sciot\n", unsupported)
	}
	if c.backend != "auto" && (unsupported > 0 || autoTotal < total) {
		fmt.Fprintf(w, "  backend auto would expect %s for the linear layers on %s (--backend auto)\n", human(autoTotal), c.net)
	}
	return nil
}

// printDealt is printEngines for backend sci3: every linear layer runs on the helper's
// corrections (docs/protocols.md, "Linear layers without OT or HE"): between the data parties
// the client's masked input share, |X|·l bits per inference, and the server's masked weights,
// |W|·l bits once per session; from the helper to the client |Z|·l bits, which need no input.
func printDealt(w io.Writer, prog *fixed.Program, est []passes.EngineEstimate, c *compileConfig) {
	bytesOf := func(n int) int64 { return (int64(n)*int64(prog.Bits) + 7) / 8 }
	fmt.Fprintf(w, "linear layers, backend sci3 (every one on the helper's corrections, no OT or HE): expected traffic between the data parties (per inference; the weights once per session) and from the helper\n")
	fmt.Fprintf(w, "  %4s  %-6s  %-28s  %10s  %10s  %10s  %10s\n", "#", "op", "source", "per run", "weights", "helper", "2-party OT")
	var run, once, helper int64
	for _, e := range est {
		in := prog.Instrs[e.Instr]
		x, z := bytesOf(prog.Tensors[in.In[0]].Shape.Size()), bytesOf(prog.Tensors[in.Out].Shape.Size())
		var wb int64
		switch in.Op {
		case fixed.OpMatMul, fixed.OpConv:
			wb = bytesOf(len(prog.Weights[in.Weight].Data))
		case fixed.OpBatchMatMul:
			// A dealt matrix triple: each data party opens its masked shares of both factors to
			// the other, and the helper sends the client its share of the triple's product.
			x = 2 * (x + bytesOf(prog.Tensors[in.In[1]].Shape.Size()))
		}
		run, once, helper = run+x, once+wb, helper+z
		fmt.Fprintf(w, "  %4d  %-6s  %-28s  %10s  %10s  %10s  %10s\n", e.Instr, in.Op, clipLeft(in.Source, 28), human(x), human(wb), human(z), human(e.OTBytes))
	}
	fmt.Fprintf(w, "  total: %d linear layers; %s per inference and %s of weights once between the data parties, %s from the helper (ReLU, truncation and pooling come on top, on dealt OTs)\n",
		len(est), human(run), human(once), human(helper))
}

// clipLeft keeps the last n runes of s (the distinctive end of a node path).
func clipLeft(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

func pct(v float64) string {
	if v < 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*v)
}

func printTune(w io.Writer, res *passes.TuneResult, quiet bool) {
	if quiet {
		return
	}
	fmt.Fprintf(w, "autotune (headroom %d bit(s)); float model accuracy %s\n", res.Headroom, pct(res.FloatAccuracy))
	fmt.Fprintf(w, "  %8s %6s %9s %10s %8s %10s  %s\n", "bitwidth", "scale", "accuracy", "agreement", "+/- ref", "bits used", "widest tensor")
	for _, r := range res.Rows {
		mark := " "
		if r.Scale == res.Scale {
			mark = "*"
		}
		note := r.Widest
		if r.Overflow {
			note = "OVERFLOW  " + note
		}
		gl := "-"
		if res.Labelled && len(res.Rows) > 1 {
			gl = fmt.Sprintf("+%d -%d", r.Gained, r.Lost)
		}
		fmt.Fprintf(w, "%s %8d %6d %9s %10s %8s %10d  %s\n", mark, r.Bits, r.Scale, pct(r.Accuracy), pct(r.Agreement), gl, r.BitsUsed, note)
	}
	if len(res.Rows) > 1 {
		fmt.Fprintf(w, "rule: %s; +/- ref: images right here and wrong at the best-agreeing scale, and the reverse\n", passes.SelectionRule)
	}
	if res.Reason != "" {
		fmt.Fprintf(w, "why: %s\n", res.Reason)
	}
	if res.Program != nil && res.Program.Modulus != 0 { // the fhe mode: bits needed, ring Z_n
		fmt.Fprintf(w, "chose s=%d (values need %d bits): accuracy %s, agreement %s; outputs in Z_%d identical to the 64-bit run\n",
			res.Scale, res.Bits, pct(res.Chosen.Accuracy), pct(res.Chosen.Agreement), res.Program.Modulus)
		return
	}
	verified := "outputs in Z_2^%d identical to the 64-bit run"
	if !res.Verified {
		verified = "WARNING: outputs in Z_2^%d differ from the 64-bit run (overflow)"
	}
	fmt.Fprintf(w, "chose l=%d s=%d: accuracy %s, agreement %s; "+verified+"\n", res.Bits, res.Scale,
		pct(res.Chosen.Accuracy), pct(res.Chosen.Agreement), res.Bits)
}

func fileSize(path string) string {
	st, err := os.Stat(path)
	if err != nil {
		return "?"
	}
	return human(st.Size())
}

func human(b int64) string {
	switch {
	case b >= 10<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 10<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 10<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}
