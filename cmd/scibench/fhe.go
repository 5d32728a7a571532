package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

func fheCommand() command {
	return command{name: "fhe", summary: "the non-interactive fhe mode on its networks (LoLa MNIST dense and block-circulant, a polynomial CNN, LoLa CIFAR-10): keys, bytes, server CPU and operations per inference, per layer", run: runFHE}
}

// fheModel is one network of the fhe harness: an ONNX file and the folder of inputs it is
// validated on and run with; MaxN, when set, caps the batch (a network whose ciphertext holds
// few inferences and whose round trip is long); Blocks, when set, is athosc's --fhe-bcirc (how
// block-circulant layers are evaluated: auto, frequency, dense); a synthetic network is written
// by mkmodel with the arguments Make.
type fheModel struct {
	Name   string
	Model  string
	Inputs string
	MaxN   int
	Blocks string
	Make   []string // without Model: the mkmodel command that writes it
}

// FHEResult is one network's run: a batch of N inferences in one session of scirun --local.
type FHEResult struct {
	Model      string            `json:"model"`
	N          int               `json:"inferences"`
	Status     string            `json:"status"` // ok, failed
	Reason     string            `json:"reason,omitempty"`
	WallS      float64           `json:"wall_s,omitempty"`
	CPUS       float64           `json:"cpu_s,omitempty"`        // both parties (one process, or both processes), user + sys
	ServerCPUS float64           `json:"server_cpu_s,omitempty"` // the server process (-processes 2), user + sys, set-up included
	MaxRSS     int64             `json:"max_rss_bytes,omitempty"`
	EqualClear *bool             `json:"equal_to_clear,omitempty"`
	Account    *serve.FHEAccount `json:"fhe,omitempty"`
}

type fheConfig struct {
	models  []fheModel
	n       int
	procs   int
	out     string
	scirun  string
	athosc  string
	mkmodel string
	timeout time.Duration
	log     io.Writer
}

func runFHE(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("scibench fhe", flag.ContinueOnError)
	modelsF := fs.String("models", "lola,polycnn", "comma-separated `MODELS`: lola (testdata/lola-mnist), lola-bc8 and lola-bc16 (testdata/lola-mnist-bc8, -bc16: the big layer block-circulant), bcmlp (mkmodel bcirc-mlp --seed 7: a 256×256 block-circulant layer), bcirc (lola, then lola-bc8, lola-bc16 and bcmlp each by the dense method and in the frequency domain), polycnn (mkmodel poly-cnn --seed 5), cifar (testdata/lola-cifar, at most 2 inferences: one ciphertext, minutes), or NAME=FILE.onnx:INPUTDIR; NAME@MODE compiles with athosc --fhe-bcirc MODE (auto, frequency, dense)")
	n := fs.Int("n", 32, "inferences per session (one batch; the client packs as many per ciphertext as its lanes hold)")
	procs := fs.Int("processes", 2, "run the session as `P` processes: 2 (scirun --party 0 and --party 1 over loopback: the server's CPU is its process's) or 1 (scirun --local)")
	outDir := fs.String("out", "bench-fhe", "write results.json, results.md, the programs and the reports to `DIR`")
	scirun := fs.String("scirun", "", "scirun `BINARY` (default: go build it)")
	athosc := fs.String("athosc", "", "athosc `BINARY` (default: go build it)")
	mkmodel := fs.String("mkmodel", "", "mkmodel `BINARY` for polycnn (default: go build it)")
	timeout := fs.Duration("timeout", 20*time.Minute, "end a run after `D`")
	quiet := fs.Bool("quiet", false, "no progress lines on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 {
		return fmt.Errorf("-n %d: want at least one inference", *n)
	}
	if *procs != 1 && *procs != 2 {
		return fmt.Errorf("-processes %d: want 1 or 2", *procs)
	}
	cfg := fheConfig{n: *n, procs: *procs, out: *outDir, scirun: *scirun, athosc: *athosc, mkmodel: *mkmodel, timeout: *timeout, log: os.Stderr}
	if *quiet {
		cfg.log = io.Discard
	}
	root := moduleRoot()
	testdata := func(name, dir string) fheModel {
		return fheModel{Name: name, Model: filepath.Join(root, "testdata", dir, "model.onnx"), Inputs: filepath.Join(root, "testdata", dir, "inputs")}
	}
	var specs []string
	for _, s := range strings.Split(*modelsF, ",") {
		if s = strings.TrimSpace(s); s == "bcirc" {
			specs = append(specs, "lola", "lola-bc8@dense", "lola-bc8@frequency", "lola-bc16@dense", "lola-bc16@frequency", "bcmlp@dense", "bcmlp@frequency")
		} else {
			specs = append(specs, s)
		}
	}
	for _, s := range specs {
		var mode string
		if !strings.Contains(s, "=") {
			if i := strings.LastIndex(s, "@"); i >= 0 {
				s, mode = s[:i], s[i+1:]
				if _, err := fixed.ParseBlockMode(mode); err != nil || mode == "" {
					return fmt.Errorf("-models %s@%s: want MODEL@auto, @frequency or @dense", s, mode)
				}
			}
		}
		var m fheModel
		switch {
		case s == "lola":
			m = testdata("lola", "lola-mnist")
		case s == "lola-bc8" || s == "lola-bc16":
			m = testdata(s, "lola-mnist-"+strings.TrimPrefix(s, "lola-"))
		case s == "cifar":
			m = testdata("cifar", "lola-cifar")
			m.MaxN = 2
		case s == "polycnn":
			m = fheModel{Name: "polycnn", Make: []string{"poly-cnn", "--seed", "5", "--inputs", "8"}}
		case s == "bcmlp":
			m = fheModel{Name: "bcmlp", Make: []string{"bcirc-mlp", "--seed", "7", "--inputs", "8"}}
		case strings.Contains(s, "="):
			name, spec, _ := strings.Cut(s, "=")
			file, dir, ok := strings.Cut(spec, ":")
			if !ok || name == "" || file == "" || dir == "" {
				return fmt.Errorf("-models %q: want NAME=FILE.onnx:INPUTDIR", s)
			}
			m = fheModel{Name: name, Model: file, Inputs: dir}
		default:
			return fmt.Errorf("-models: unknown model %q (lola, lola-bc8, lola-bc16, bcmlp, bcirc, polycnn, cifar, or NAME=FILE.onnx:INPUTDIR)", s)
		}
		if mode != "" {
			m.Name, m.Blocks = m.Name+"@"+mode, mode
		}
		cfg.models = append(cfg.models, m)
	}
	if err := os.MkdirAll(cfg.out, 0o755); err != nil {
		return err
	}
	if err := buildCommands(ctx, cfg.out, map[string]*string{"scirun": &cfg.scirun, "athosc": &cfg.athosc, "mkmodel": &cfg.mkmodel}); err != nil {
		return err
	}
	var results []FHEResult
	for _, m := range cfg.models {
		results = append(results, benchFHE(ctx, cfg, m))
	}
	var md bytes.Buffer
	writeFHEMarkdown(&md, results)
	if err := os.WriteFile(filepath.Join(cfg.out, "results.md"), md.Bytes(), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.out, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	_, err = out.Write(md.Bytes())
	return err
}

// benchFHE compiles m for the fhe mode, runs a batch of cfg.n inferences (at most m.MaxN) through scirun --local
// and --clear, and reads the fhe account from the report.
func benchFHE(ctx context.Context, cfg fheConfig, m fheModel) FHEResult {
	n := cfg.n
	if m.MaxN > 0 {
		n = min(n, m.MaxN)
	}
	r := FHEResult{Model: m.Name, N: n, Status: "failed"}
	work := filepath.Join(cfg.out, m.Name)
	fail := func(err error) FHEResult {
		r.Reason = err.Error()
		fmt.Fprintf(cfg.log, "%s: %v\n", m.Name, err)
		return r
	}
	if err := os.MkdirAll(work, 0o755); err != nil {
		return fail(err)
	}
	if m.Model == "" { // polycnn, bcmlp: the project's synthetic networks
		dir := filepath.Join(work, "onnx")
		cmd := exec.CommandContext(ctx, cfg.mkmodel, append(slices.Clone(m.Make), "--out", dir)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fail(fmt.Errorf("mkmodel %s: %w: %s", m.Make[0], err, lastLines(b, 3)))
		}
		m.Model, m.Inputs = filepath.Join(dir, "model.onnx"), filepath.Join(dir, "inputs")
	}
	prog := filepath.Join(work, "model.sciir")
	fmt.Fprintf(cfg.log, "compile %s for fhe (validate on %s)\n", m.Name, m.Inputs)
	compile := []string{m.Model, "--backend", "fhe", "--validate", m.Inputs, "-q", "-o", prog}
	if m.Blocks != "" {
		compile = append(compile, "--fhe-bcirc", m.Blocks)
	}
	if b, err := exec.CommandContext(ctx, cfg.athosc, compile...).CombinedOutput(); err != nil {
		return fail(fmt.Errorf("athosc: %w: %s", err, lastLines(b, 3)))
	}
	in := filepath.Join(work, "in")
	if err := batchInputs(m.Inputs, in, n); err != nil {
		return fail(err)
	}
	sec, clr, rep := filepath.Join(work, "secure")+"/", filepath.Join(work, "clear")+"/", filepath.Join(work, "report.json")
	for _, d := range []string{sec, clr} {
		os.RemoveAll(d)
	}
	rctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if cfg.procs == 2 {
		if err := runFHEPair(rctx, cfg, prog, in, sec, rep, &r); err != nil {
			return fail(err)
		}
	} else {
		fmt.Fprintf(cfg.log, "run %s: %d inferences, scirun --local\n", m.Name, n)
		// The harness's -timeout bounds the run; scirun's own per-inference session limit (10 min)
		// would end a LoLa CIFAR ciphertext on a loaded machine.
		cmd := exec.CommandContext(rctx, cfg.scirun, "--local", prog, "--input", in+"/", "--output", sec, "--raw", "--report", rep, "--quiet", "--session-timeout", "0")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return fail(fmt.Errorf("scirun --local: %w: %s", err, lastLines(stderr.Bytes(), 3)))
		}
		r.WallS = time.Since(start).Seconds()
		u := usageOf(cmd.ProcessState)
		r.CPUS, r.MaxRSS = u.UserS+u.SysS, u.MaxRSS
	}
	if b, err := exec.CommandContext(rctx, cfg.scirun, "--clear", prog, "--input", in+"/", "--output", clr, "--raw", "--quiet").CombinedOutput(); err != nil {
		return fail(fmt.Errorf("scirun --clear: %w: %s", err, lastLines(b, 3)))
	}
	eq, err := sameFiles(sec, clr)
	if err != nil {
		return fail(err)
	}
	r.EqualClear = &eq
	report, err := readReport(rep)
	if err != nil {
		return fail(err)
	}
	if report.FHE == nil {
		return fail(fmt.Errorf("%s: the report has no fhe account", rep))
	}
	r.Account, r.Status = report.FHE, "ok"
	a := r.Account
	fmt.Fprintf(cfg.log, "  %d round trip(s), %.1f s, keys %.1f MB, %.1f KB up and %.1f KB down per inference, server %.0f ms per inference, equal to clear: %v\n",
		a.RoundTrips, r.WallS, float64(a.KeyBytes)/1e6, perInf(a.UploadBytes, r.N)/1e3, perInf(a.DownloadBytes, r.N)/1e3, a.EvalMS/float64(r.N), eq)
	return r
}

// runFHEPair runs the batch as two processes over loopback: scirun --party 0 (the server, with
// the program's weights) and --party 1 (the client, with the client copy), writing the client's
// outputs to sec and one fhe account to rep: the client's (keys, encryption, decryption, bytes)
// with the server's evaluation (time, operations, layers). r gets the wall time, both processes'
// CPU and the server process's alone (key reception and set-up included).
func runFHEPair(ctx context.Context, cfg fheConfig, prog, in, sec, rep string, r *FHEResult) error {
	fmt.Fprintf(cfg.log, "run %s: %d inferences, scirun --party 0 and --party 1\n", r.Model, r.N)
	srvRep, cliRep := rep+".server.json", rep+".client.json"
	client := strings.TrimSuffix(prog, ".sciir") + ".client.sciir"
	srv, err := startListener(ctx, "server", cfg.scirun, []string{"--party", "0", prog, "--listen", "127.0.0.1:0",
		"--report", srvRep, "--quiet", "--session-timeout", "0"})
	if err != nil {
		return err
	}
	cli := exec.CommandContext(ctx, cfg.scirun, "--party", "1", client, "--connect", srv.addr, "--input", in+"/",
		"--output", sec, "--raw", "--report", cliRep, "--quiet")
	var cliLog bytes.Buffer
	cli.Stderr, cli.Stdout = &cliLog, io.Discard
	start := time.Now()
	cliErr := cli.Run()
	r.WallS = time.Since(start).Seconds()
	var srvErr error
	select {
	case srvErr = <-srv.done:
	case <-time.After(30 * time.Second):
		srvErr = srv.stop()
	}
	if cliErr != nil {
		return fmt.Errorf("client: %w: %s", cliErr, lastLines(cliLog.Bytes(), 3))
	}
	if srvErr != nil {
		return fmt.Errorf("server: %w: %s", srvErr, srv.tail(3))
	}
	su, cu := usageOf(srv.cmd.ProcessState), usageOf(cli.ProcessState)
	r.ServerCPUS, r.CPUS, r.MaxRSS = su.UserS+su.SysS, su.UserS+su.SysS+cu.UserS+cu.SysS, max(su.MaxRSS, cu.MaxRSS)
	sr, err := readReport(srvRep)
	if err != nil {
		return err
	}
	cr, err := readReport(cliRep)
	if err != nil {
		return err
	}
	if sr.FHE == nil || cr.FHE == nil {
		return fmt.Errorf("%s or %s has no fhe account", srvRep, cliRep)
	}
	a := *cr.FHE
	a.EvalMS, a.Ops, a.Layers = sr.FHE.EvalMS, sr.FHE.Ops, sr.FHE.Layers
	cr.FHE = &a
	b, err := json.MarshalIndent(cr, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(rep, append(b, '\n'), 0o644)
}

func perInf(b int64, n int) float64 { return float64(b) / float64(n) }

// batchInputs fills dst with n inputs named 00000.npy… taken in turn from the .npy files of src.
func batchInputs(src, dst string, n int) error {
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	var files []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".npy") && e.Type().IsRegular() {
			files = append(files, filepath.Join(src, e.Name()))
		}
	}
	if len(files) == 0 {
		return fmt.Errorf("%s: no .npy inputs", src)
	}
	os.RemoveAll(dst)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return err
	}
	for i := range n {
		b, err := os.ReadFile(files[i%len(files)])
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dst, fmt.Sprintf("%05d.npy", i)), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// sameFiles reports whether every file of dir a has an identical namesake in dir b (and b no
// other file).
func sameFiles(a, b string) (bool, error) {
	ea, err := os.ReadDir(a)
	if err != nil {
		return false, err
	}
	eb, err := os.ReadDir(b)
	if err != nil {
		return false, err
	}
	if len(ea) != len(eb) || len(ea) == 0 {
		return false, nil
	}
	for _, e := range ea {
		x, err := os.ReadFile(filepath.Join(a, e.Name()))
		if err != nil {
			return false, err
		}
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil || !bytes.Equal(x, y) {
			return false, nil
		}
	}
	return true, nil
}

func writeFHEMarkdown(w io.Writer, results []FHEResult) {
	fmt.Fprintf(w, "Measured by `scibench fhe` (one session per network, a batch of inferences: two processes over loopback with -processes 2, the default, where the server CPU is its process's user + system time, key reception and set-up included; one `scirun --local` process with -processes 1), %s.\n\n",
		time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintln(w, "| network | inferences | status | N, log QP | lanes × elements | round trips | keys (MB, once) | up / down per inference (KB) | keygen (s) | encrypt / decrypt per inference (ms) | server per inference (ms) | server CPU per inference (s) | rotations / pt products / ct products | CPU (s) | wall (s) | = clear |")
	fmt.Fprintln(w, "|---|---:|---|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---|")
	for _, r := range results {
		if r.Status != "ok" {
			fmt.Fprintf(w, "| %s | %d | %s: %s | | | | | | | | | | | | | |\n", r.Model, r.N, r.Status, strings.ReplaceAll(r.Reason, "|", "/"))
			continue
		}
		srvCPU := "–" // one process: the server's CPU is not separable
		if r.ServerCPUS > 0 {
			srvCPU = fmt.Sprintf("%.3f", r.ServerCPUS/float64(r.N))
		}
		a := r.Account
		eq := "**no**"
		if r.EqualClear != nil && *r.EqualClear {
			eq = "yes"
		}
		n := float64(r.N)
		fmt.Fprintf(w, "| %s | %d | ok | %s | %d × %d | %d | %.1f | %.1f / %.1f | %.2f | %.1f / %.1f | %.0f | %s | %d / %d / %d | %.1f | %.1f | %s |\n",
			r.Model, r.N, a.Params, a.Lanes, a.Period, a.RoundTrips, float64(a.KeyBytes)/1e6,
			perInf(a.UploadBytes, r.N)/1e3, perInf(a.DownloadBytes, r.N)/1e3, a.KeygenMS/1e3,
			a.EncryptMS/n, a.DecryptMS/n, a.EvalMS/n, srvCPU, a.Ops.Rotations, a.Ops.PlainMuls, a.Ops.CtMuls, r.CPUS, r.WallS, eq)
	}
	for _, r := range results {
		if r.Status != "ok" || len(r.Account.Layers) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s, the server's last round trip per instruction (%s inferences in it):\n\n", r.Model, strconv.Itoa(min(r.N, r.Account.Group)))
		fmt.Fprintln(w, "| op | source | ms | rotations | plaintext products | ciphertext products |")
		fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|")
		for _, l := range r.Account.Layers {
			if l.MS < 1 && l.Ops == (serve.FHEOps{}) {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %.0f | %d | %d | %d |\n", l.Op, l.Source, l.MS, l.Ops.Rotations, l.Ops.PlainMuls, l.Ops.CtMuls)
		}
	}
}
