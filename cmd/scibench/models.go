package main

// scibench models: end-to-end secure inference of whole networks (SqueezeNet, ResNet50,
// DenseNet121, MiniONN) with the project's own tools, athosc and scirun, the server and the
// client as two processes over loopback TCP, for every backend × OT source × emulated link asked
// for. Before a run it estimates the combination's traffic from the exact communication formulas
// and skips what would exceed the budget.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/benchplot"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/protocols/he"
	"github.com/cryptflow-go/cryptflow/protocols/linear"
	"github.com/cryptflow-go/cryptflow/protocols/nonlinear"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
)

func modelsCommand() command {
	return command{name: "models", summary: "secure inference of whole networks (SqueezeNet, ResNet50, DenseNet121, MiniONN) as two processes", run: runModels}
}

// benchModel is one network of the harness with the ring CrypTFlow2 used for it.
type benchModel struct {
	Name  string `json:"name"`
	Path  string `json:"path"` // the ONNX file; "" for minionn until mkmodel wrote it
	Bits  int    `json:"bits"`
	Scale int    `json:"scale"`
}

// knownModels are the harness's default networks: CrypTFlow2's ImageNet benchmarks at the
// bitwidths and scales of its §7.3 / Appendix I, and MiniONN (Table 5) at l = 41, s = 12.
func knownModels(onnxDir string) map[string]benchModel {
	light := func(n string) string { return filepath.Join(onnxDir, "light_"+n, "model.onnx") }
	return map[string]benchModel{
		"squeezenet":  {Name: "squeezenet", Path: light("squeezenet"), Bits: 32, Scale: 9},
		"resnet50":    {Name: "resnet50", Path: light("resnet50"), Bits: 37, Scale: 12},
		"densenet121": {Name: "densenet121", Path: light("densenet121"), Bits: 32, Scale: 11},
		"minionn":     {Name: "minionn", Bits: 41, Scale: 12},
	}
}

// parseModelSpec reads NAME (a known model) or NAME=PATH:BITS:SCALE.
func parseModelSpec(s string, known map[string]benchModel) (benchModel, error) {
	name, rest, custom := strings.Cut(s, "=")
	if !custom {
		m, ok := known[s]
		if !ok {
			return m, fmt.Errorf("-models: unknown model %q (known: squeezenet, resnet50, densenet121, minionn; or NAME=FILE.onnx:BITS:SCALE)", s)
		}
		return m, nil
	}
	parts := strings.Split(rest, ":")
	if name == "" || len(parts) != 3 || parts[0] == "" {
		return benchModel{}, fmt.Errorf("-models: %q: want NAME=FILE.onnx:BITS:SCALE", s)
	}
	l, err1 := strconv.Atoi(parts[1])
	sc, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || l < 2 || l > 64 || sc < 0 || sc >= l {
		return benchModel{}, fmt.Errorf("-models: %q: want BITS in 2..64 and 0 <= SCALE < BITS", s)
	}
	return benchModel{Name: name, Path: parts[0], Bits: l, Scale: sc}, nil
}

// parseSize reads a byte count such as 8GiB, 500MiB, 1.5GB or 123456.
func parseSize(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1}}
	mult := 1.0
	num := strings.TrimSpace(s)
	for _, u := range units {
		if strings.HasSuffix(num, u.suffix) {
			mult, num = u.mult, strings.TrimSpace(strings.TrimSuffix(num, u.suffix))
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || math.IsInf(v*mult, 0) || v*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("-budget %q: want a positive size such as 8GiB or 500MiB", s)
	}
	return int64(v * mult), nil
}

// modelsList splits a comma-separated flag and checks every item against allowed.
func modelsList(flagName, s string, allowed ...string) ([]string, error) {
	var out []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		if len(allowed) > 0 && !hasString(allowed, f) {
			return nil, fmt.Errorf("-%s: %q: want one of %s", flagName, f, strings.Join(allowed, ", "))
		}
		if !hasString(out, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-%s: empty list", flagName)
	}
	return out, nil
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// PartyUsage is what the operating system measured of one party's process.
type PartyUsage struct {
	MaxRSS   int64   `json:"max_rss_bytes"`
	UserS    float64 `json:"user_s"`
	SysS     float64 `json:"sys_s"`
	Measured bool    `json:"measured"`
}

// Estimate is the harness's traffic forecast of one combination, both directions summed.
type Estimate struct {
	LinearBytes    int64 `json:"linear_bytes"`    // exact: linear.ConvBits/MatMulBits or heplan.ConvCost/MatMulCost per layer
	NonlinearBytes int64 `json:"nonlinear_bytes"` // per-element formulas of protocols/nonlinear on IKNP (Ferret sends less per element but pays its set-up; for sci3 an upper bound: dealt COTs send 1 bit where IKNP sends 128)
	HELayers       int   `json:"he_layers"`
	OTLayers       int   `json:"ot_layers"`
}

// Total is the forecast of the whole run.
func (e Estimate) Total() int64 { return e.LinearBytes + e.NonlinearBytes }

// ModelResult is one model × backend × OT source × link of the harness.
type ModelResult struct {
	Model    string   `json:"model"`
	Bits     int      `json:"bits"`
	Scale    int      `json:"scale"`
	Backend  string   `json:"backend"`
	OT       string   `json:"ot"`
	Net      string   `json:"net"`
	Status   string   `json:"status"` // ok, skipped, failed, timeout
	Reason   string   `json:"reason,omitempty"`
	Estimate Estimate `json:"estimate"`

	LoadAvg     float64    `json:"load_avg,omitempty"`  // the machine's 1-minute load average as the run started (Linux)
	WallS       float64    `json:"wall_s,omitempty"`    // the client process, start to exit
	SessionS    float64    `json:"session_s,omitempty"` // the client's report: handshake + setup + program
	BytesToSrv  int64      `json:"bytes_client_to_server,omitempty"`
	BytesToCli  int64      `json:"bytes_server_to_client,omitempty"`
	Rounds      int64      `json:"rounds,omitempty"`
	Server      PartyUsage `json:"server"`
	Client      PartyUsage `json:"client"`
	Helper      PartyUsage `json:"helper,omitzero"`        // sci3: the third process
	HelperBytes int64      `json:"bytes_helper,omitempty"` // sci3: both data parties' links to the helper, both directions
	OfflineS    float64    `json:"offline_s,omitempty"`    // sci3: the client's offline phase (waits at inference starts for what is dealt before the input is used); two-party (ferret): the Ferret iterations run before the input is used
	OnlineS     float64    `json:"online_s,omitempty"`     // sci3 and two-party: the client's run without it: from input to output
	// OfflineBytes and OnlineBytes (two-party on ferret): the client's traffic, both ways, in
	// the offline phase and in the rest of the run; AheadIters and OnlineIters the Ferret
	// iterations run ahead and on the critical path (the client's report).
	OfflineBytes int64 `json:"offline_bytes,omitempty"`
	OnlineBytes  int64 `json:"online_bytes,omitempty"`
	AheadIters   int   `json:"ahead_iterations,omitempty"`
	// DealtAhead and DealtOnDemand (two-party, -offline-dealt): the client's nonlinear
	// correlations (OTs and triples) made before the inputs and made during the inferences.
	DealtAhead    uint64 `json:"dealt_ahead,omitempty"`
	DealtOnDemand uint64 `json:"dealt_on_demand,omitempty"`
	OnlineIters   int    `json:"online_iterations,omitempty"`
	// HEAhead and HECapped (two-party with HE layers): the HE linear layers made ahead (their HE
	// protocol run on a random mask before the input) and those the bound left online.
	HEAhead     int     `json:"he_layers_ahead,omitempty"`
	HECapped    int     `json:"he_layers_capped,omitempty"`
	HelperWaitS float64 `json:"helper_wait_s,omitempty"` // sci3: the part of OnlineS the client waited on the helper (dealt on demand)
	// FirstAhead and FirstRequests (sci3, -helper-traces): the client's first-inference requests
	// dealt before its input, of those its trace holds.
	FirstAhead    int    `json:"first_ahead_requests,omitempty"`
	FirstRequests int    `json:"first_requests,omitempty"`
	EqualClear    *bool  `json:"equal_to_clear,omitempty"` // the secure output bitwise equal to scirun --clear
	HERan         int    `json:"he_layers_run,omitempty"`  // linear layers the report shows ran by HE
	OTRan         int    `json:"ot_layers_run,omitempty"`
	ClientReport  string `json:"client_report,omitempty"`
	ServerReport  string `json:"server_report,omitempty"`
	LayerPlot     string `json:"layer_plot,omitempty"`
}

// TotalBytes is the traffic of the run, both directions.
func (r ModelResult) TotalBytes() int64 { return r.BytesToSrv + r.BytesToCli }

type modelsConfig struct {
	models   []benchModel
	backends []string
	ots      []string
	nets     []string
	budget   int64
	timeout  time.Duration
	out      string
	docs     string
	scirun   string
	athosc   string
	mkmodel  string
	check    bool
	plots    bool
	progress io.Writer
	dryRun   bool
	only     []string
	maxTotal time.Duration
	started  time.Time
	traces   string // sci3: --helper-traces DIR for both data parties ("": none)
	plans    string // two-party: --offline-plans DIR for both parties ("": none)
	heMiB    int    // two-party: --offline-he-mib for both parties (negative: scirun's default)
	dealt    bool   // two-party: --offline-dealt for both parties
	offMiB   int    // two-party: --offline-mib for both parties (0: scirun's default)
}

func runModels(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("scibench models", flag.ContinueOnError)
	modelsF := fs.String("models", "squeezenet,resnet50,densenet121,minionn", "comma-separated `MODELS`: squeezenet, resnet50, densenet121, minionn, or NAME=FILE.onnx:BITS:SCALE")
	onnxDir := fs.String("onnx-dir", "../shared/testdata/models/onnx-light", "`DIR` holding light_squeezenet/, light_resnet50/, light_densenet121/")
	backendsF := fs.String("backends", "sciot,scihe,auto", "comma-separated `BACKENDS`: sciot, scihe, auto, sci3 (three processes: server, client and the helper)")
	otF := fs.String("ot", "iknp,ferret", "comma-separated OT `SOURCES`: iknp, ferret")
	netF := fs.String("net", "lan,wan", "comma-separated emulated `LINKS`: lan, wan")
	budgetF := fs.String("budget", "8GiB", "skip a combination whose estimated traffic exceeds `SIZE`")
	timeout := fs.Duration("timeout", 15*time.Minute, "end a run (both processes) after `D`")
	outDir := fs.String("out", "bench-models", "write results.json, results.md, the reports and the plots to `DIR`")
	docs := fs.String("docs-prefix", "", "paths of the PNGs in results.md are relative to the docs page: `PREFIX` (e.g. the docs dir as seen from the page)")
	scirun := fs.String("scirun", "", "scirun `BINARY` (default: go build it into a temporary directory)")
	athosc := fs.String("athosc", "", "athosc `BINARY` (default: go build it)")
	mkmodel := fs.String("mkmodel", "", "mkmodel `BINARY` for minionn (default: go build it)")
	check := fs.Bool("check", true, "compare every secure output with scirun --clear, bitwise")
	plots := fs.Bool("plots", true, "draw the comparison plot and a per-layer plot per model (scirun plot)")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	only := fs.String("only", "", "comma-separated `PATTERNS` MODEL/BACKEND/OT/NET (path.Match globs, e.g. squeezenet/*/*/lan): run only the combinations that match one")
	dryRun := fs.Bool("dry-run", false, "compile and estimate only; run nothing")
	offMiB := fs.Int("offline-mib", 0, "two-party runs: give both parties --offline-mib `MIB` (0: scirun's default)")
	dealt := fs.Bool("offline-dealt", false, "two-party runs: give both parties --offline-dealt (the nonlinear layers' correlations made before each inference's input)")
	plans := fs.String("offline-plans", "", "two-party runs on ferret: give both parties --offline-plans `DIR` (a run whose program has a plan there from an earlier run runs its first inference's Ferret iterations before the input is used; a run without one writes it)")
	heMiB := fs.Int("offline-he-mib", -1, "two-party runs with HE layers: give both parties --offline-he-mib `MIB` (0: the HE linear layers run their HE protocol online; negative: scirun's default)")
	traces := fs.String("helper-traces", "", "sci3: give both data parties --helper-traces `DIR` (a run whose program has a trace there from an earlier run deals its first inference before the input is used; a run without one writes it)")
	maxTotal := fs.Duration("max-total", 0, "start no run after the harness has been running for `D` (0: no limit); later combinations are reported as skipped")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg := modelsConfig{timeout: *timeout, out: *outDir, docs: *docs, scirun: *scirun, athosc: *athosc,
		mkmodel: *mkmodel, check: *check, plots: *plots, progress: os.Stderr, dryRun: *dryRun, maxTotal: *maxTotal, traces: *traces, plans: *plans, heMiB: *heMiB, dealt: *dealt, offMiB: *offMiB}
	if *quiet {
		cfg.progress = io.Discard
	}
	known := knownModels(*onnxDir)
	specs, err := modelsList("models", *modelsF)
	if err != nil {
		return err
	}
	for _, s := range specs {
		m, err := parseModelSpec(s, known)
		if err != nil {
			return err
		}
		cfg.models = append(cfg.models, m)
	}
	if cfg.backends, err = modelsList("backends", *backendsF, "sciot", "scihe", "auto", "sci3"); err != nil {
		return err
	}
	if cfg.ots, err = modelsList("ot", *otF, "iknp", "ferret"); err != nil {
		return err
	}
	if cfg.nets, err = modelsList("net", *netF, "lan", "wan"); err != nil {
		return err
	}
	if cfg.budget, err = parseSize(*budgetF); err != nil {
		return err
	}
	if *only != "" {
		if cfg.only, err = modelsList("only", *only); err != nil {
			return err
		}
		for _, pat := range cfg.only {
			if _, err := path.Match(pat, ""); err != nil || strings.Count(pat, "/") != 3 {
				return fmt.Errorf("-only %q: want MODEL/BACKEND/OT/NET globs", pat)
			}
		}
	}
	if cfg.timeout <= 0 {
		return fmt.Errorf("-timeout %v: want a positive duration", cfg.timeout)
	}
	results, err := benchModels(ctx, cfg)
	if err != nil {
		return err
	}
	var md bytes.Buffer
	writeModelsMarkdown(&md, cfg, results)
	if err := os.WriteFile(filepath.Join(cfg.out, "results.md"), md.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write results.md: %w", err)
	}
	js, err := json.MarshalIndent(struct {
		Budget  int64         `json:"budget_bytes"`
		Results []ModelResult `json:"results"`
		Papers  []paperFigure `json:"papers"`
	}{cfg.budget, results, paperFigures}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, "results.json"), append(js, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results.json: %w", err)
	}
	if cfg.plots {
		if err := comparePlot(cfg, results); err != nil {
			return err
		}
	}
	_, err = out.Write(md.Bytes())
	return err
}

// tools builds (or takes) the binaries the harness runs.
func (cfg *modelsConfig) tools(ctx context.Context) error {
	need := map[string]*string{"scirun": &cfg.scirun, "athosc": &cfg.athosc}
	for _, m := range cfg.models {
		if m.Path == "" {
			need["mkmodel"] = &cfg.mkmodel
		}
	}
	return buildCommands(ctx, cfg.out, need)
}

// buildCommands builds each command of need (name → its binary's path) whose path is empty into
// out/bin with one go build, and sets the path.
func buildCommands(ctx context.Context, out string, need map[string]*string) error {
	var pkgs []string
	for name, p := range need {
		if *p == "" {
			pkgs = append(pkgs, "./cmd/"+name)
		}
	}
	if len(pkgs) == 0 {
		return nil
	}
	dir := filepath.Join(out, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-o", abs + string(filepath.Separator)}, pkgs...)...)
	cmd.Dir = moduleRoot()
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", strings.Join(pkgs, " "), err, b)
	}
	for name, p := range need {
		if *p == "" {
			*p = filepath.Join(abs, name)
		}
	}
	return nil
}

// moduleRoot is the directory of the go.mod above the working directory ("." if none).
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

func (cfg *modelsConfig) logf(format string, args ...any) {
	fmt.Fprintf(cfg.progress, "%s "+format+"\n", append([]any{time.Now().UTC().Format("15:04:05")}, args...)...)
}

func benchModels(ctx context.Context, cfg modelsConfig) ([]ModelResult, error) {
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return nil, fmt.Errorf("-out: %w", err)
	}
	if err := cfg.tools(ctx); err != nil {
		return nil, err
	}
	cfg.started = time.Now()
	var results []ModelResult
	for _, m := range cfg.models {
		rs, err := benchOneModel(ctx, cfg, m)
		if err != nil {
			return nil, err
		}
		results = append(results, rs...)
		if ctx.Err() != nil {
			return results, nil
		}
	}
	return results, nil
}

// selected reports whether -only lets the combination run (no -only: all do).
func (cfg *modelsConfig) selected(model, backend, ot, net string) bool {
	if len(cfg.only) == 0 {
		return true
	}
	key := model + "/" + backend + "/" + ot + "/" + net
	for _, pat := range cfg.only {
		if ok, _ := path.Match(pat, key); ok {
			return true
		}
	}
	return false
}

// otsFor is the OT sources a backend runs on: sci3 draws its OTs from the helper ("dealer"),
// whatever -ot says.
func (cfg *modelsConfig) otsFor(backend string) []string {
	if backend == "sci3" {
		return []string{"dealer"}
	}
	return cfg.ots
}

// wanted reports whether any OT source of model × backend × net is selected.
func (cfg *modelsConfig) wanted(model, backend, net string) bool {
	for _, o := range cfg.otsFor(backend) {
		if cfg.selected(model, backend, o, net) {
			return true
		}
	}
	return false
}

// compiled is one athosc output the runs share.
type compiled struct {
	server, client string
	prog           *fixed.Program
	clearOut       string // scirun --clear's raw output, once computed
	clearErr       error
}

func benchOneModel(ctx context.Context, cfg modelsConfig, m benchModel) ([]ModelResult, error) {
	work := filepath.Join(cfg.out, m.Name)
	if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, err
	}
	fail := func(err error) []ModelResult {
		var rs []ModelResult
		for _, b := range cfg.backends {
			for _, o := range cfg.otsFor(b) {
				for _, n := range cfg.nets {
					if !cfg.selected(m.Name, b, o, n) {
						continue
					}
					rs = append(rs, ModelResult{Model: m.Name, Bits: m.Bits, Scale: m.Scale, Backend: b, OT: o, Net: n, Status: "failed", Reason: err.Error()})
				}
			}
		}
		cfg.logf("%s: %v", m.Name, err)
		return rs
	}
	if m.Path == "" { // minionn: the project's synthetic MiniONN
		dir := filepath.Join(work, "onnx")
		cmd := exec.CommandContext(ctx, cfg.mkmodel, "minionn", "--out", dir, "--inputs", "1")
		if b, err := cmd.CombinedOutput(); err != nil {
			return fail(fmt.Errorf("mkmodel minionn: %w: %s", err, lastLines(b, 3))), nil
		}
		m.Path = filepath.Join(dir, "model.onnx")
	}
	if _, err := os.Stat(m.Path); err != nil {
		return fail(fmt.Errorf("model file: %w", err)), nil
	}
	progs := map[string]*compiled{}
	input := filepath.Join(work, "input.npy")
	var results []ModelResult
	for _, b := range cfg.backends {
		for _, n := range cfg.nets {
			if !cfg.wanted(m.Name, b, n) {
				continue
			}
			// athosc plans engines for its --net only under auto: the other backends compile once.
			key := b
			if b == "auto" {
				key = b + "-" + n
			}
			c := progs[key]
			if c == nil {
				var err error
				c, err = compileModel(ctx, cfg, m, b, n, filepath.Join(work, key+".sciir"))
				if err != nil {
					for _, o := range cfg.otsFor(b) {
						if !cfg.selected(m.Name, b, o, n) {
							continue
						}
						results = append(results, ModelResult{Model: m.Name, Bits: m.Bits, Scale: m.Scale, Backend: b, OT: o, Net: n, Status: "failed", Reason: err.Error()})
					}
					cfg.logf("%s %s: %v", m.Name, b, err)
					continue
				}
				progs[key] = c
				if _, err := os.Stat(input); err != nil {
					if err := writeRampInput(c.prog, input); err != nil {
						return fail(err), nil
					}
				}
			}
			est, err := estimateTraffic(c.prog, b, n)
			for _, o := range cfg.otsFor(b) {
				if !cfg.selected(m.Name, b, o, n) {
					continue
				}
				r := ModelResult{Model: m.Name, Bits: m.Bits, Scale: m.Scale, Backend: b, OT: o, Net: n, Estimate: est}
				switch {
				case err != nil:
					r.Status, r.Reason = "failed", fmt.Sprintf("estimate: %v", err)
				case est.Total() > cfg.budget:
					r.Status = "skipped"
					r.Reason = fmt.Sprintf("%s %s would move ~%s (budget %s)", m.Name, b, gib(est.Total()), gib(cfg.budget))
					cfg.logf("skipped: %s", r.Reason)
				case ctx.Err() != nil:
					r.Status, r.Reason = "skipped", "interrupted"
				case cfg.dryRun:
					r.Status, r.Reason = "estimated", "-dry-run"
				case cfg.maxTotal > 0 && time.Since(cfg.started) > cfg.maxTotal:
					r.Status, r.Reason = "skipped", fmt.Sprintf("the harness's time budget (-max-total %v) was spent", cfg.maxTotal)
				default:
					runPair(ctx, cfg, c, input, filepath.Join(work, fmt.Sprintf("%s-%s-%s", b, o, n)), &r)
				}
				results = append(results, r)
			}
		}
	}
	return results, nil
}

func gib(n int64) string {
	g := float64(n) / (1 << 30)
	switch {
	case g >= 100:
		return fmt.Sprintf("%.0f GiB", g)
	case g >= 1:
		return fmt.Sprintf("%.1f GiB", g)
	}
	return fmt.Sprintf("%.2f GiB", g)
}

func compileModel(ctx context.Context, cfg modelsConfig, m benchModel, backend, net, out string) (*compiled, error) {
	cfg.logf("compile %s (l=%d s=%d) for %s/%s", m.Name, m.Bits, m.Scale, backend, net)
	cmd := exec.CommandContext(ctx, cfg.athosc, m.Path, "--bitwidth", strconv.Itoa(m.Bits), "--scale", strconv.Itoa(m.Scale),
		"--backend", backend, "--net", net, "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("athosc: %w: %s", err, lastLines(b, 3))
	}
	f, err := sciir.ReadFile(out)
	if err != nil {
		return nil, err
	}
	client := strings.TrimSuffix(out, ".sciir") + ".client.sciir"
	if _, err := os.Stat(client); err != nil {
		return nil, fmt.Errorf("athosc wrote no client program: %w", err)
	}
	return &compiled{server: out, client: client, prog: f.Program}, nil
}

// writeRampInput writes the ONNX light models' test input rule, arange(n)/n as float32 in the
// program input's shape, to path.
func writeRampInput(p *fixed.Program, path string) error {
	var shape []int
	for _, in := range p.Inputs {
		if in.Party == 1 {
			if shape != nil {
				return errors.New("the program has more than one client input; the harness feeds one")
			}
			shape = p.Tensors[in.Tensor].Shape
		}
	}
	if shape == nil {
		return errors.New("the program has no client input")
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i) / float32(n)
	}
	return npy.WriteFileFloat32(path, shape, x)
}

// estimateTraffic forecasts a run's traffic: every linear layer by the engine the backend gives
// it (exact formulas, from passes.PlanEngines), every nonlinear element by the per-element
// formulas of protocols/nonlinear with m = nonlinear.DefaultM: on IKNP for two parties (Ferret
// sends less per element but adds its set-up, a few MiB), on dealt correlations for sci3 (the
// traffic between the data parties; the helper's links are not counted). Base OTs and message
// headers are left out.
func estimateTraffic(p *fixed.Program, backend, netName string) (Estimate, error) {
	var e Estimate
	nm, err := passes.NetModelNamed(netName)
	if err != nil {
		return e, err
	}
	q := p.Clone()
	plan, err := passes.PlanEngines(q, nm)
	if err != nil {
		return e, err
	}
	if backend == "sci3" {
		plan = nil // linear layers by the helper's corrections: |W|·l once, |X|·l per call
		for _, in := range p.Instrs {
			var w int64
			switch in.Op {
			case fixed.OpMatMul, fixed.OpConv:
				w = int64(len(p.Weights[in.Weight].Data))
			case fixed.OpMulConst:
				w = int64(p.Tensors[in.In[0]].Shape.Size())
			default:
				continue
			}
			e.LinearBytes += (w + int64(p.Tensors[in.In[0]].Shape.Size())) * int64(p.Bits) / 8
			e.OTLayers++
		}
	}
	for _, le := range plan {
		useHE := false
		switch backend {
		case "scihe":
			useHE = le.HEBytes != math.MaxInt64
		case "auto":
			useHE = p.Instrs[le.Instr].Engine == fixed.EngineHE ||
				(p.Instrs[le.Instr].Engine == fixed.EngineDefault && le.Chosen == fixed.EngineHE)
		}
		if useHE {
			e.LinearBytes += le.HEBytes
			e.HELayers++
		} else {
			e.LinearBytes += le.OTBytes
			e.OTLayers++
		}
	}
	if e.HELayers > 0 {
		if hb, err := he.HelloBytes(p.Bits); err == nil {
			e.LinearBytes += hb
		}
	}
	// The nonlinear layers' bits per element, from the exact formulas of protocols/nonlinear: on
	// IKNP for two parties, on dealt correlations (nothing for the COTs and triples between the
	// data parties) for sci3.
	l := p.Bits
	pl := nonlinear.Plan{OT: nonlinear.IKNPCost(), M: nonlinear.DefaultM}
	if backend == "sci3" {
		pl.OT = nonlinear.DealtCost()
	}
	relu := int64(pl.ReLU(l).Bits)
	var nbits int64
	// The VM runs a ReLU and the truncation of its result as one protocol (vm.ReLUTruncBackend).
	fused := map[int]bool{}
	for _, i := range vm.ReLUTruncPairs(p, func(b, s int) bool { return s >= 1 && s < b-1 }) {
		fused[i], fused[i+1] = true, true
	}
	for i, in := range p.Instrs {
		size := func(t int) int64 { return int64(p.Tensors[t].Shape.Size()) }
		switch in.Op {
		case fixed.OpInput:
			nbits += size(in.Out) * int64(l)
		case fixed.OpReLU:
			b := in.Bits // compared on the low bits of the operand's bound, when recorded
			if b <= 0 {
				b = l
			}
			switch {
			case fused[i]:
				nbits += size(in.Out) * int64(pl.ReLUTrunc(b, l, p.Instrs[i+1].Shift).Bits)
			case b < l:
				nbits += size(in.Out) * int64(pl.ReLULow(b, l).Bits)
			default:
				nbits += size(in.Out) * relu
			}
		case fixed.OpTrunc:
			if fused[i] {
				break
			}
			nbits += size(in.Out) * int64(pl.Trunc(l, in.Shift, in.NonNeg).Bits)
		case fixed.OpMaxPool:
			k := 1
			for _, d := range in.Win.Kernel {
				k *= d
			}
			nbits += size(in.Out) * int64(pl.MaxRows(l, k).Bits)
		case fixed.OpArgMax:
			rows := size(in.Out)
			if rows > 0 {
				nbits += rows * int64(pl.ArgMaxRows(l, int(size(in.In[0])/rows)).Bits)
			}
		case fixed.OpDiv:
			n := size(in.Out)
			var per int64
			for _, d := range in.Divisors {
				switch {
				case d <= 1:
				case d&(d-1) == 0:
					per += int64(pl.Trunc(l, bits.TrailingZeros(uint(d)), false).Bits)
				default:
					per += int64(pl.Div(l, uint64(d)).Bits)
				}
			}
			if len(in.Divisors) > 0 {
				nbits += n * per / int64(len(in.Divisors))
			}
		case fixed.OpMul:
			nbits += linear.MulBits(int(size(in.Out)), l)
		case fixed.OpBatchMatMul:
			b, m, k, n := fixed.BatchMatMulDims(p.Tensors[in.In[0]].Shape, p.Tensors[in.In[1]].Shape)
			nbits += linear.SharedMatMulBits(b, m, k, n, l)
		}
	}
	e.NonlinearBytes = nbits / 8
	return e, nil
}

var listenRE = regexp.MustCompile(`listening on ([^\s,]+)`)

// runPair runs one secure inference: scirun --party 0 and --party 1 as two processes.
// listener is a scirun process that listens (the server, or the sci3 helper) and prints its
// address (and, with --tls-self, the fingerprint to pin) on stderr.
type listener struct {
	cmd  *exec.Cmd
	addr string
	pin  string
	mu   sync.Mutex
	log  bytes.Buffer
	done chan error // the process's exit, once
}

var pinRE = regexp.MustCompile(`with --\S*tls-pin (\S+)`)

// startListener starts bin args and waits (up to a minute) for the address it listens on.
func startListener(ctx context.Context, what, bin string, args []string) (*listener, error) {
	l := &listener{cmd: exec.CommandContext(ctx, bin, args...), done: make(chan error, 1)}
	stderr, err := l.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := l.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", what, err)
	}
	addrc := make(chan string, 1)
	scanDone := make(chan struct{})
	go func() {
		defer close(scanDone)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			l.mu.Lock()
			l.log.WriteString(line + "\n")
			if mt := pinRE.FindStringSubmatch(line); mt != nil {
				l.pin = mt[1]
			}
			l.mu.Unlock()
			if mt := listenRE.FindStringSubmatch(line); mt != nil && !sent {
				addrc <- mt[1]
				sent = true
			}
		}
		if !sent {
			close(addrc)
		}
	}()
	go func() { <-scanDone; l.done <- l.cmd.Wait() }()
	select {
	case a, ok := <-addrc:
		if !ok {
			<-l.done
			return nil, fmt.Errorf("%s did not start: %s", what, l.tail(3))
		}
		l.mu.Lock()
		l.addr = a
		l.mu.Unlock()
		return l, nil
	case <-time.After(time.Minute):
		l.cmd.Process.Kill()
		<-l.done
		return nil, fmt.Errorf("%s did not print its address within a minute", what)
	}
}

// tail is the last n lines the process printed.
func (l *listener) tail(n int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return lastLines(l.log.Bytes(), n)
}

// stop interrupts a process that serves until told (the helper) and waits for it.
func (l *listener) stop() error {
	l.cmd.Process.Signal(os.Interrupt)
	select {
	case err := <-l.done:
		return err
	case <-time.After(30 * time.Second):
		l.cmd.Process.Kill()
		return <-l.done
	}
}

func runPair(ctx context.Context, cfg modelsConfig, c *compiled, input, base string, r *ModelResult) {
	cfg.logf("run %s %s/%s/%s (estimate %s)", r.Model, r.Backend, r.OT, r.Net, gib(r.Estimate.Total()))
	r.LoadAvg = loadAverage()
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	common := []string{"--backend", r.Backend, "--net", r.Net, "--quiet", "--timeout", cfg.timeout.String()}
	if r.Backend == "sci3" {
		// The helper: a third process serving the data parties over TLS (its key made here,
		// pinned by both).
		h, err := startListener(ctx, "helper", cfg.scirun, []string{"--helper", "--listen", "127.0.0.1:0", c.client,
			"--tls-self", base + ".helper.key", "--net", r.Net, "--timeout", cfg.timeout.String()})
		if err != nil {
			r.Status, r.Reason = "failed", err.Error()
			return
		}
		defer func() {
			if err := h.stop(); err != nil && r.Status == "ok" && !isInterrupt(err) {
				r.Reason = fmt.Sprintf("helper: %v: %s", err, h.tail(3))
			}
			r.Helper = usageOf(h.cmd.ProcessState)
		}()
		if h.pin == "" {
			r.Status, r.Reason = "failed", "the helper printed no TLS fingerprint: "+h.tail(3)
			return
		}
		common = append(common, "--helper", h.addr, "--helper-tls-pin", h.pin)
		if cfg.traces != "" {
			common = append(common, "--helper-traces", cfg.traces)
		}
	} else {
		common = append(common, "--ot", r.OT)
		if cfg.plans != "" {
			common = append(common, "--offline-plans", cfg.plans)
		}
		if cfg.heMiB >= 0 {
			common = append(common, "--offline-he-mib", strconv.Itoa(cfg.heMiB))
		}
		if cfg.dealt {
			common = append(common, "--offline-dealt")
		}
		if cfg.offMiB > 0 {
			common = append(common, "--offline-mib", strconv.Itoa(cfg.offMiB))
		}
	}
	srvReport, cliReport := base+".server.json", base+".client.json"
	secureOut := base + ".out.npy"
	for _, f := range []string{srvReport, cliReport, secureOut} {
		os.Remove(f)
	}
	srv, err := startListener(ctx, "server", cfg.scirun, append([]string{"--party", "0", c.server, "--listen", "127.0.0.1:0",
		"--report", srvReport}, common...))
	if err != nil {
		r.Status, r.Reason = "failed", err.Error()
		return
	}
	addr := srv.addr

	cli := exec.CommandContext(ctx, cfg.scirun, append([]string{"--party", "1", c.client, "--connect", addr, "--input", input,
		"--output", secureOut, "--raw", "--report", cliReport}, common...)...)
	var cliLog bytes.Buffer
	cli.Stderr = &cliLog
	cli.Stdout = io.Discard
	start := time.Now()
	cliErr := cli.Run()
	r.WallS = time.Since(start).Seconds()
	var srvWaitErr error
	select {
	case srvWaitErr = <-srv.done:
	case <-time.After(30 * time.Second):
		cancel()
		srvWaitErr = <-srv.done
	}
	r.Client = usageOf(cli.ProcessState)
	r.Server = usageOf(srv.cmd.ProcessState)
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		r.Status, r.Reason = "timeout", fmt.Sprintf("killed after %v", cfg.timeout)
		return
	case cliErr != nil:
		r.Status, r.Reason = "failed", fmt.Sprintf("client: %v: %s", cliErr, lastLines(cliLog.Bytes(), 3))
		return
	case srvWaitErr != nil:
		r.Status, r.Reason = "failed", fmt.Sprintf("server: %v: %s", srvWaitErr, srv.tail(3))
		return
	}
	rep, err := readReport(cliReport)
	if err != nil {
		r.Status, r.Reason = "failed", err.Error()
		return
	}
	r.Status = "ok"
	r.ClientReport, r.ServerReport = cliReport, srvReport
	r.SessionS = rep.TotalMS / 1000
	r.BytesToSrv, r.BytesToCli, r.Rounds = rep.Total.BytesSent, rep.Total.BytesRecv, rep.Total.Rounds
	if rep.Helper != nil {
		// Each data party sees its own link to the helper.
		r.HelperBytes = rep.Helper.BytesSent + rep.Helper.BytesRecv
		r.OnlineS, r.OfflineS, r.HelperWaitS = rep.Helper.OnlineMS/1000, rep.Helper.OfflineMS/1000, rep.Helper.HelperWaitMS/1000
		r.FirstAhead, r.FirstRequests = rep.Helper.FirstAheadRequests, rep.Helper.FirstRequests
		if srep, err := readReport(srvReport); err == nil && srep.Helper != nil {
			r.HelperBytes += srep.Helper.BytesSent + srep.Helper.BytesRecv
		}
	}
	if o := rep.Offline; o != nil {
		r.OnlineS, r.OfflineS = o.OnlineMS/1000, o.OfflineMS/1000
		r.OfflineBytes, r.OnlineBytes = o.OfflineBytes, o.OnlineBytes
		r.AheadIters, r.OnlineIters = o.AheadIterations, o.OnlineIterations
		r.HEAhead, r.HECapped = o.HELayersAhead, o.HELayersCapped
		if d := o.Dealt; d != nil {
			r.DealtAhead, r.DealtOnDemand = d.AheadOTs+d.AheadTriples, d.OnDemandOTs+d.OnDemandTriples
		}
	}
	for _, l := range rep.Layers {
		switch l.Engine {
		case "he":
			r.HERan++
		case "ot":
			r.OTRan++
		}
	}
	if cfg.check {
		if eq, err := compareClear(ctx, cfg, c, input, secureOut); err != nil {
			r.Reason = fmt.Sprintf("clear check: %v", err)
		} else {
			r.EqualClear = &eq
		}
	}
	if cfg.plots {
		png := base + ".layers.png"
		cmd := exec.CommandContext(ctx, cfg.scirun, "plot", cliReport, "-o", png)
		if b, err := cmd.CombinedOutput(); err != nil {
			cfg.logf("scirun plot: %v: %s", err, lastLines(b, 2))
		} else {
			r.LayerPlot = png
		}
	}
	eq := "-"
	if r.EqualClear != nil {
		eq = strconv.FormatBool(*r.EqualClear)
	}
	cfg.logf("  %.1f s, %s (estimate %s), %d rounds, RSS server %s client %s, equal to clear: %s",
		r.SessionS, gib(r.TotalBytes()), gib(r.Estimate.Total()), r.Rounds, mib(r.Server.MaxRSS), mib(r.Client.MaxRSS), eq)
}

// loadAverage returns the 1-minute load average from /proc/loadavg, or 0 where there is none.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return 0
	}
	return v
}

func usageOf(ps *os.ProcessState) PartyUsage {
	rss, u, s, ok := processUsage(ps)
	return PartyUsage{MaxRSS: rss, UserS: u.Seconds(), SysS: s.Seconds(), Measured: ok}
}

func mib(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }

func readReport(path string) (*serve.Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client report: %w", err)
	}
	var rep serve.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, fmt.Errorf("client report %s: %w", path, err)
	}
	if rep.Error != "" {
		return nil, fmt.Errorf("client report: %s", rep.Error)
	}
	return &rep, nil
}

// compareClear runs scirun --clear once per compiled program and compares its raw output with the
// secure run's, byte for byte.
func compareClear(ctx context.Context, cfg modelsConfig, c *compiled, input, secureOut string) (bool, error) {
	if c.clearOut == "" && c.clearErr == nil {
		out := strings.TrimSuffix(c.server, ".sciir") + ".clear.npy"
		cmd := exec.CommandContext(ctx, cfg.scirun, "--clear", c.server, "--input", input, "--output", out, "--raw")
		if b, err := cmd.CombinedOutput(); err != nil {
			c.clearErr = fmt.Errorf("scirun --clear: %w: %s", err, lastLines(b, 2))
		} else {
			c.clearOut = out
		}
	}
	if c.clearErr != nil {
		return false, c.clearErr
	}
	a, err := os.ReadFile(c.clearOut)
	if err != nil {
		return false, err
	}
	b, err := os.ReadFile(secureOut)
	if err != nil {
		return false, err
	}
	return bytes.Equal(a, b), nil
}

// lastLines returns the last n non-empty lines of b, joined by " | ".
func lastLines(b []byte, n int) string {
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// paperFigure is one published result the harness sets its runs beside.
type paperFigure struct {
	Source  string  `json:"source"`
	Model   string  `json:"model"`
	Backend string  `json:"backend"` // SCI_OT, SCI_HE, Cheetah
	Net     string  `json:"net"`
	Seconds float64 `json:"seconds"`
	GiB     float64 `json:"gib"` // communication; Cheetah's figure is in GB as published
	Bound   bool    `json:"bound,omitempty"`
}

// paperFigures: CrypTFlow2 (Rathee et al., CCS 2020) Table 7 — seconds and GiB, LAN 377 MB/s
// 0.3 ms RTT, WAN 40 MB/s 80 ms RTT, 4-core 3.7 GHz Xeon; Cheetah (Huang et al., USENIX Security
// 2022) abstract: ResNet50 end to end over WAN in less than 2.5 minutes and 2.3 GB.
var paperFigures = []paperFigure{
	{"CrypTFlow2 Table 7", "squeezenet", "SCI_OT", "lan", 44.3, 26.07, false},
	{"CrypTFlow2 Table 7", "squeezenet", "SCI_OT", "wan", 293.6, 26.07, false},
	{"CrypTFlow2 Table 7", "squeezenet", "SCI_HE", "lan", 59.2, 5.27, false},
	{"CrypTFlow2 Table 7", "squeezenet", "SCI_HE", "wan", 156.6, 5.27, false},
	{"CrypTFlow2 Table 7", "resnet50", "SCI_OT", "lan", 619.4, 370.84, false},
	{"CrypTFlow2 Table 7", "resnet50", "SCI_OT", "wan", 3611.6, 370.84, false},
	{"CrypTFlow2 Table 7", "resnet50", "SCI_HE", "lan", 545.8, 32.43, false},
	{"CrypTFlow2 Table 7", "resnet50", "SCI_HE", "wan", 936.0, 32.43, false},
	{"CrypTFlow2 Table 7", "densenet121", "SCI_OT", "lan", 371.4, 217.19, false},
	{"CrypTFlow2 Table 7", "densenet121", "SCI_OT", "wan", 2257.7, 217.19, false},
	{"CrypTFlow2 Table 7", "densenet121", "SCI_HE", "lan", 463.2, 35.56, false},
	{"CrypTFlow2 Table 7", "densenet121", "SCI_HE", "wan", 1124.7, 35.56, false},
	{"Cheetah abstract", "resnet50", "Cheetah", "wan", 150, 2.3e9 / (1 << 30), true},
}

// paperFor returns the CrypTFlow2 figure matching a run (sciot ↔ SCI_OT, scihe ↔ SCI_HE).
func paperFor(model, backend, net string) (paperFigure, bool) {
	want := map[string]string{"sciot": "SCI_OT", "scihe": "SCI_HE"}[backend]
	for _, f := range paperFigures {
		if f.Model == model && f.Backend == want && f.Net == net {
			return f, true
		}
	}
	return paperFigure{}, false
}

func writeModelsMarkdown(w io.Writer, cfg modelsConfig, results []ModelResult) {
	fmt.Fprintf(w, "Measured by `scibench models` (server and client as two `scirun` processes over loopback TCP, the link emulated by `--net`; for sci3 a third, the helper, on the same links), %s",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	lo, hi := math.Inf(1), 0.0
	for _, r := range results {
		if r.LoadAvg > 0 {
			lo, hi = min(lo, r.LoadAvg), max(hi, r.LoadAvg)
		}
	}
	if hi > 0 {
		fmt.Fprintf(w, "; the machine's load average as the runs started: %.1f–%.1f", lo, hi)
	}
	fmt.Fprint(w, ".\n\n")
	fmt.Fprintln(w, "| model | l/s | backend | OT | net | status | time (s) | wall (s) | GiB | C→S / S→C GiB | rounds | estimate GiB | linear HE/OT | RSS server / client (MiB) | CPU server / client (s) | = clear | CrypTFlow2 Table 7 |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---|---|")
	var notes []string
	for _, r := range results {
		paper := "–"
		if f, ok := paperFor(r.Model, r.Backend, r.Net); ok {
			paper = fmt.Sprintf("%s %.1f s, %.2f GiB", f.Backend, f.Seconds, f.GiB)
		}
		est := gibNum(r.Estimate.Total())
		if r.Estimate.Total() == 0 {
			est = "–"
		}
		if r.Status != "ok" {
			fmt.Fprintf(w, "| %s | %d/%d | %s | %s | %s | %s | | | | | | %s | %d/%d | | | | %s |\n", r.Model, r.Bits, r.Scale,
				r.Backend, r.OT, r.Net, r.Status, est, r.Estimate.HELayers, r.Estimate.OTLayers, paper)
			notes = append(notes, fmt.Sprintf("- %s %s/%s/%s %s: %s", r.Model, r.Backend, r.OT, r.Net, r.Status, r.Reason))
			continue
		}
		eq := "–"
		if r.EqualClear != nil {
			eq = map[bool]string{true: "yes", false: "**no**"}[*r.EqualClear]
		}
		fmt.Fprintf(w, "| %s | %d/%d | %s | %s | %s | ok | %.1f | %.1f | %s | %s / %s | %d | %s | %d/%d | %.0f / %.0f | %.1f / %.1f | %s | %s |\n",
			r.Model, r.Bits, r.Scale, r.Backend, r.OT, r.Net, r.SessionS, r.WallS,
			gibNum(r.TotalBytes()), gibNum(r.BytesToSrv), gibNum(r.BytesToCli), r.Rounds, est,
			r.HERan, r.OTRan, float64(r.Server.MaxRSS)/(1<<20), float64(r.Client.MaxRSS)/(1<<20),
			r.Server.UserS+r.Server.SysS, r.Client.UserS+r.Client.SysS, eq, paper)
		if r.Backend == "sci3" {
			notes = append(notes, fmt.Sprintf("- %s %s/%s/%s: the helper's links (both data parties, both directions) %s GiB; helper RSS %.0f MiB, CPU %.1f s; client offline (dealt before the input) %.1f s, online %.1f s (waiting on the helper %.1f s); first inference: %d of %d requests dealt before the input",
				r.Model, r.Backend, r.OT, r.Net, gibNum(r.HelperBytes), float64(r.Helper.MaxRSS)/(1<<20), r.Helper.UserS+r.Helper.SysS, r.OfflineS, r.OnlineS, r.HelperWaitS, r.FirstAhead, r.FirstRequests))
		}
		if r.AheadIters+r.OnlineIters+r.HEAhead+r.HECapped > 0 || r.DealtAhead+r.DealtOnDemand > 0 {
			notes = append(notes, fmt.Sprintf("- %s %s/%s/%s: client offline (before the input is used) %.1f s, %s GiB; online %.1f s, %s GiB; Ferret iterations %d run ahead, %d online; HE linear layers %d made ahead, %d online (beyond the bound); nonlinear correlations %d made ahead, %d on demand",
				r.Model, r.Backend, r.OT, r.Net, r.OfflineS, gibNum(r.OfflineBytes), r.OnlineS, gibNum(r.OnlineBytes), r.AheadIters, r.OnlineIters, r.HEAhead, r.HECapped, r.DealtAhead, r.DealtOnDemand))
		}
		if r.Reason != "" {
			notes = append(notes, fmt.Sprintf("- %s %s/%s/%s: %s", r.Model, r.Backend, r.OT, r.Net, r.Reason))
		}
	}
	if len(notes) > 0 {
		fmt.Fprintf(w, "\nNotes: the three-party runs, the two-party offline/online splits, and what did not run or complete (budget %s, timeout %v):\n\n%s\n", gib(cfg.budget), cfg.timeout, strings.Join(notes, "\n"))
	}
	fmt.Fprintln(w, "\nPublished figures (other hardware: CrypTFlow2 on 4-core 3.7 GHz Xeons, LAN 377 MB/s 0.3 ms RTT, WAN 40 MB/s 80 ms RTT — the links `--net` emulates):")
	fmt.Fprintln(w, "\n| source | model | protocol | net | time (s) | comm |")
	fmt.Fprintln(w, "|---|---|---|---|---:|---:|")
	for _, f := range paperFigures {
		if !ranModel(results, f.Model) {
			continue
		}
		if f.Bound {
			fmt.Fprintf(w, "| %s | %s | %s | %s | < %.0f | %.1f GB |\n", f.Source, f.Model, f.Backend, f.Net, f.Seconds, f.GiB*(1<<30)/1e9)
		} else {
			fmt.Fprintf(w, "| %s | %s | %s | %s | %.1f | %.2f GiB |\n", f.Source, f.Model, f.Backend, f.Net, f.Seconds, f.GiB)
		}
	}
	if cfg.plots {
		pre := cfg.docs
		fmt.Fprintf(w, "\n![models × backends against the papers](%s)\n", pre+"models-compare.png")
		for _, r := range results {
			if r.LayerPlot != "" {
				name := layerPlotName(r)
				fmt.Fprintf(w, "\n%s %s/%s/%s, per layer (client side):\n\n![%s](%s)\n", r.Model, r.Backend, r.OT, r.Net, name, pre+name)
			}
		}
	}
}

// gibNum formats a byte count in GiB with the precision small counts need.
func gibNum(n int64) string {
	g := float64(n) / (1 << 30)
	if g < 0.1 {
		return fmt.Sprintf("%.3f", g)
	}
	return fmt.Sprintf("%.2f", g)
}

func ranModel(results []ModelResult, model string) bool {
	for _, r := range results {
		if r.Model == model {
			return true
		}
	}
	return false
}

// layerPlotName is the file name a per-layer plot gets in -out (and in docs/).
func layerPlotName(r ModelResult) string {
	return fmt.Sprintf("models-%s-%s-%s-%s.png", r.Model, r.Backend, r.OT, r.Net)
}

// comparePlot draws models × backends (ours and the papers') and copies the per-layer plots
// under their final names into -out.
func comparePlot(cfg modelsConfig, results []ModelResult) error {
	var pts []benchplot.Point
	var models []string
	for _, r := range results {
		if !hasString(models, r.Model) {
			models = append(models, r.Model)
		}
		if r.Status != "ok" {
			continue
		}
		pts = append(pts, benchplot.Point{Series: fmt.Sprintf("ours %s/%s/%s", r.Backend, r.OT, r.Net), Model: r.Model,
			Seconds: r.SessionS, GiB: float64(r.TotalBytes()) / (1 << 30)})
		if r.LayerPlot != "" {
			b, err := os.ReadFile(r.LayerPlot)
			if err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(cfg.out, layerPlotName(r)), b, 0o644); err != nil {
				return err
			}
		}
	}
	for _, f := range paperFigures {
		if !hasString(models, f.Model) {
			continue
		}
		name := "CrypTFlow2 " + f.Backend + " " + strings.ToUpper(f.Net)
		if f.Bound {
			name = "Cheetah " + strings.ToUpper(f.Net) + " (bound)"
		}
		pts = append(pts, benchplot.Point{Series: name, Model: f.Model, Seconds: f.Seconds, GiB: f.GiB, Paper: true})
	}
	if len(pts) == 0 {
		return nil
	}
	return benchplot.Compare(filepath.Join(cfg.out, "models-compare.png"), "Secure inference: this project vs CrypTFlow2 Table 7 and Cheetah", models, pts)
}

// isInterrupt reports whether a process ended by the interrupt stop sends (the helper serves
// until told).
func isInterrupt(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(interface{ Signaled() bool })
	return ok && ws.Signaled() || ee.ExitCode() == 130
}
