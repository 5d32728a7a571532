// Command scirun runs a .sciir fixed-point program: in the clear, or as one of the two parties of
// a secure inference (CrypTFlow2's SCI_OT protocols), or as both parties in one process.
//
//	scirun --clear model.sciir --input x.npy [--output y.npy] [--raw]
//	scirun --party 0 model.sciir [--listen :7070] [--serve] [--tls-cert c.pem --tls-key k.pem]
//	scirun --party 1 model.client.sciir --connect host:7070 --input x.npy [--tls-ca c.pem]
//	scirun --local model.sciir --input x.npy
//
// The client prints the top classes with their decoded scores; --output writes the decoded float32
// outputs, or with --raw the signed ring values (int64) for bitwise comparisons. Inputs are .npy
// arrays of the model input's shape or, for programs compiled with an image validation folder,
// PNG/JPEG images preprocessed as the program records. See docs/usage.md.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cryptflow-go/cryptflow/codegen"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/ring"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/sciot"
)

const usage = `usage:
  scirun --clear   PROGRAM.sciir --input X [--output Y.npy] [--raw]
  scirun --party 0 PROGRAM.sciir [--listen ADDR] [--serve] [--tls-cert F --tls-key F]
  scirun --party 1 PROGRAM.client.sciir --connect HOST:PORT --input X [--output Y.npy] [--tls-ca F]
  scirun --local   PROGRAM.sciir --input X [--output Y.npy]

--clear runs the program in the clear (the bitwise reference for the secure runs). --party 0 is
the server: it holds the weights (the full program file), listens, and learns nothing about the
input. --party 1 is the client: it holds the input and the client copy of the program (no
weights), connects, and learns the output. --local runs both parties in this process over
loopback TCP. A secure session runs over --streams N connections (default 2 on a machine with two
or more cores), one OT stream and one core each; both parties must pass the same N. The input X is
a .npy array of the model input's shape, or a PNG/JPEG image when the program records image
preprocessing. A per-layer report goes to stderr (and with --report FILE to a JSON file).

Flags:
`

// softwareName is announced in the handshake.
const softwareName = "scirun (cryptflow-go)"

func main() {
	// The first SIGINT/SIGTERM drains a --serve server (or cancels a single run); the second
	// cancels everything.
	ctx, cancel := context.WithCancel(context.Background())
	drain := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "scirun: %v: stopping (a --serve server finishes its running sessions; again to abort them)\n", s)
		close(drain)
		<-sig
		cancel()
	}()
	e := &env{
		stdout:   os.Stdout,
		stderr:   os.Stderr,
		terminal: isTerminal(os.Stderr),
		drain:    drain,
		backends: map[string]serve.BackendFunc{"sciot": newSCIOT},
	}
	err := run(ctx, os.Args[1:], e)
	cancel()
	cli.Exit("scirun", err)
}

// newSCIOT starts the SCI_OT backend on the session's connections (one OT stream each).
func newSCIOT(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
	return sciot.New(ctx, conn, party, r, sciot.Options{Streams: streams})
}

// defaultStreams is the default of --streams: two OT streams (one core each) where there are two
// cores, else one.
func defaultStreams() int { return min(2, runtime.NumCPU()) }

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// env is what run needs from the process: its streams, the available backends, whether stderr
// is a terminal (progress bars), and the drain signal for --serve.
type env struct {
	stdout, stderr io.Writer
	terminal       bool
	drain          <-chan struct{}
	backends       map[string]serve.BackendFunc
	// listening, when set, is told the address a server listens on (tests use port 0).
	listening func(addr string)
}

// config is the parsed command line.
type config struct {
	program, input, output string
	clear, local, raw      bool
	party                  int
	top                    int
	streams                int

	listen, connect          string
	serveMany                bool
	maxSessions              int
	timeout, connectTimeout  time.Duration
	sessionTimeout           time.Duration
	tlsCert, tlsKey          string
	tlsCA, tlsServerName     string
	report, netName, backend string
	quiet                    bool
	set                      map[string]bool // flags given explicitly
}

func parse(args []string) (*config, error) {
	fs := flag.NewFlagSet("scirun", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	c := &config{}
	fs.BoolVar(&c.clear, "clear", false, "run in the clear with the cleartext fixed-point backend")
	fs.IntVar(&c.party, "party", -1, "run as party `P` of a secure run: 0 server (full program), 1 client (client copy)")
	fs.BoolVar(&c.local, "local", false, "run both parties in this process over loopback TCP")
	fs.StringVar(&c.input, "input", "", "input `FILE` (.npy, or .png/.jpg for image programs); client, --local, --clear")
	fs.StringVar(&c.output, "output", "", "write the output to `FILE` (.npy)")
	fs.BoolVar(&c.raw, "raw", false, "write the output as signed ring values (int64) instead of decoded floats")
	fs.IntVar(&c.top, "top", 5, "print the `K` highest-scoring classes")
	fs.StringVar(&c.listen, "listen", ":7070", "server: listen on `ADDR` (host:port)")
	fs.BoolVar(&c.serveMany, "serve", false, "server: keep accepting clients, several sessions at a time")
	fs.IntVar(&c.maxSessions, "max-sessions", runtime.NumCPU(), "server with --serve: at most `N` sessions at a time")
	fs.DurationVar(&c.timeout, "timeout", serve.DefaultTimeout, "end a session when the peer stalls for `D` (any wait: handshake, each message)")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", serve.DefaultSessionTimeout, "server: end a session that runs longer than `D` in all (0: no limit)")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "server: TLS certificate `FILE` (PEM); with --tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "server: TLS private key `FILE` (PEM)")
	fs.StringVar(&c.connect, "connect", "", "client: the server's `HOST:PORT`")
	fs.DurationVar(&c.connectTimeout, "connect-timeout", serve.DefaultConnectTimeout, "client: keep retrying a refused connection for `D`")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "client: use TLS and trust the server certificate signed by (or equal to) the PEM `FILE`")
	fs.StringVar(&c.tlsServerName, "tls-server-name", "", "client: the `NAME` to check the server's certificate against (default: the host of --connect)")
	fs.StringVar(&c.report, "report", "", "write the per-layer report as JSON to `FILE` (with --serve: one JSON line per session)")
	fs.StringVar(&c.netName, "net", "", "emulate a `LINK` on received messages: lan (377 MB/s, 0.3 ms RTT) or wan (40 MB/s, 80 ms RTT)")
	fs.StringVar(&c.backend, "backend", "", "two-party backend `NAME` (default: the program's, sciot)")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress bar and no report table on stderr")
	fs.IntVar(&c.streams, "streams", defaultStreams(), "run each session over `N` connections (OT streams, one core each); both parties must agree (default min(2, CPUs))")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return nil, err
	}
	c.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { c.set[f.Name] = true })
	if len(pos) != 1 {
		return nil, cli.Usagef("want one program file, got %d arguments", len(pos))
	}
	c.program = pos[0]
	return c, nil
}

// check rejects flags that do not belong to the chosen mode.
func (c *config) check() error {
	modes := 0
	for _, on := range []bool{c.clear, c.local, c.party >= 0} {
		if on {
			modes++
		}
	}
	if c.set["party"] && (c.party < 0 || c.party > 1) {
		return cli.Usagef("--party %d: want 0 (the server, with the full program) or 1 (the client, with the client copy)", c.party)
	}
	switch {
	case modes == 0:
		return cli.Usagef("choose a mode: --clear, --party 0 (server), --party 1 (client) or --local")
	case modes > 1:
		return cli.Usagef("--clear, --party and --local exclude each other")
	}
	only := func(mode string, ok bool, flags ...string) error {
		for _, f := range flags {
			if c.set[f] && !ok {
				return cli.Usagef("--%s is not used %s", f, mode)
			}
		}
		return nil
	}
	server, client := c.party == 0, c.party == 1
	for _, err := range []error{
		only("by the server (--party 0): the client holds the input", !server, "input", "output", "raw", "top"),
		only("without --party 0", server, "listen", "serve", "tls-cert", "tls-key", "session-timeout"),
		only("without --party 0 --serve", server && c.serveMany, "max-sessions"),
		only("without --party 1", client, "connect", "connect-timeout", "tls-ca", "tls-server-name"),
		only("with --clear", !c.clear, "timeout", "report", "net", "backend", "quiet", "streams"),
	} {
		if err != nil {
			return err
		}
	}
	if !server && c.input == "" {
		return cli.Usagef("--input is required")
	}
	if client && c.connect == "" {
		return cli.Usagef("--connect HOST:PORT is required for the client (the address the server listens on)")
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return cli.Usagef("--tls-cert and --tls-key go together")
	}
	if c.set["max-sessions"] && c.maxSessions < 1 {
		return cli.Usagef("--max-sessions %d: want at least 1", c.maxSessions)
	}
	if c.timeout <= 0 {
		return cli.Usagef("--timeout %v: want a positive duration", c.timeout)
	}
	if c.sessionTimeout < 0 {
		return cli.Usagef("--session-timeout %v: want a positive duration, or 0 for no limit", c.sessionTimeout)
	}
	if c.top < 1 {
		return cli.Usagef("--top %d: want at least 1", c.top)
	}
	if c.streams < 1 || c.streams > serve.MaxStreams {
		return cli.Usagef("--streams %d: want 1 to %d", c.streams, serve.MaxStreams)
	}
	if _, _, err := netModel(c.netName); err != nil {
		return err
	}
	return nil
}

func netModel(name string) (*transport.NetModel, string, error) {
	switch strings.ToLower(name) {
	case "", "none":
		return nil, "", nil
	case "lan":
		m := transport.LAN()
		return &m, "lan", nil
	case "wan":
		m := transport.WAN()
		return &m, "wan", nil
	}
	return nil, "", cli.Usagef("--net %q: want lan or wan", name)
}

func run(ctx context.Context, args []string, e *env) error {
	err := runMode(ctx, args, e)
	if err != nil && errors.Is(err, context.Canceled) {
		select {
		case <-e.drain:
			return fmt.Errorf("interrupted: %w", err)
		default:
		}
	}
	return err
}

func runMode(ctx context.Context, args []string, e *env) error {
	c, err := parse(args)
	if err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	if !(c.party == 0 && c.serveMany) {
		// Only a --serve server drains; anything else stops at the first signal.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-e.drain:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	f, err := codegen.ReadFile(c.program)
	if err != nil {
		return err
	}
	if c.clear {
		return runClear(ctx, c, f, e)
	}
	opt, err := c.options(f, e)
	if err != nil {
		return err
	}
	switch {
	case c.local:
		return runLocal(ctx, c, f, opt, e)
	case c.party == 0:
		return runServer(ctx, c, opt, e)
	}
	return runClient(ctx, c, f, opt, e)
}

// options builds the session options; a server with the client copy fails here, before
// listening.
func (c *config) options(f *codegen.File, e *env) (*serve.Options, error) {
	m, name, _ := netModel(c.netName)
	be := c.backend
	if be == "" {
		be = f.Backend
	}
	opt := &serve.Options{File: f, Backend: be, Timeout: c.timeout, Net: m, NetName: name, Software: softwareName, Streams: c.streams}
	if c.party == 0 {
		opt.SessionTimeout = c.sessionTimeout
		if opt.SessionTimeout == 0 {
			opt.SessionTimeout = -1 // no limit
		}
	}
	opt.NewBackend = e.backends[be]
	if opt.NewBackend == nil {
		names := make([]string, 0, len(e.backends))
		for n := range e.backends {
			names = append(names, n)
		}
		sort.Strings(names)
		return nil, fmt.Errorf("backend %q is not available in this build (available: %s)", be, strings.Join(names, ", "))
	}
	party := c.party
	if c.local {
		party = 0
	}
	if err := opt.Check(party); err != nil {
		if errors.Is(err, vm.ErrNoWeights) {
			who := "the server (--party 0)"
			if c.local {
				who = "--local (which also runs the server)"
			}
			return nil, fmt.Errorf("%s has no weights (it is a client copy): %s needs the full program file", c.program, who)
		}
		return nil, fmt.Errorf("%s: %w", c.program, err)
	}
	return opt, nil
}

func runClear(ctx context.Context, c *config, f *codegen.File, e *env) error {
	p := f.Program
	r, err := ring.New(p.Bits)
	if err != nil {
		return err
	}
	be, err := cleartext.New(r)
	if err != nil {
		return err
	}
	m, err := vm.New(p, be)
	if err != nil {
		return fmt.Errorf("%s: %w", c.program, err)
	}
	in, err := encodeInput(c.input, f)
	if err != nil {
		return err
	}
	outs, err := m.Run(ctx, in)
	if err != nil {
		return err
	}
	return c.emit(outs, f, e)
}

func runClient(ctx context.Context, c *config, f *codegen.File, opt *serve.Options, e *env) error {
	in, err := encodeInput(c.input, f)
	if err != nil {
		return err
	}
	tlsConf, err := c.clientTLS()
	if err != nil {
		return err
	}
	bar := c.progress(e, opt)
	nc, err := serve.Dial(ctx, c.connect, tlsConf, c.connectTimeout)
	if err != nil {
		return err
	}
	opt.DialStream = func(ctx context.Context) (net.Conn, error) {
		return serve.Dial(ctx, c.connect, tlsConf, c.connectTimeout)
	}
	res, err := serve.Run(ctx, nc, 1, opt, in)
	bar.done()
	if err != nil {
		c.writeReports(res, e)
		return err
	}
	if err := c.emit(res.Outputs, f, e); err != nil {
		return err
	}
	return c.writeReports(res, e)
}

func runLocal(ctx context.Context, c *config, f *codegen.File, opt *serve.Options, e *env) error {
	in, err := encodeInput(c.input, f)
	if err != nil {
		return err
	}
	sopt := *opt
	copt := *opt
	bar := c.progress(e, &copt)
	res, _, err := serve.RunLocal(ctx, &sopt, &copt, in)
	bar.done()
	if err != nil {
		c.writeReports(res, e)
		return err
	}
	if err := c.emit(res.Outputs, f, e); err != nil {
		return err
	}
	return c.writeReports(res, e)
}

func (c *config) clientTLS() (*tls.Config, error) {
	if c.tlsCA == "" {
		if c.tlsServerName != "" {
			return nil, cli.Usagef("--tls-server-name needs --tls-ca")
		}
		return nil, nil
	}
	return serve.LoadClientTLS(c.tlsCA, c.tlsServerName)
}

func runServer(ctx context.Context, c *config, opt *serve.Options, e *env) error {
	var tlsConf *tls.Config
	if c.tlsCert != "" {
		var err error
		if tlsConf, err = serve.LoadServerTLS(c.tlsCert, c.tlsKey); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return listenError(c.listen, err)
	}
	addr := ln.Addr().String()
	f := opt.File
	fmt.Fprintf(e.stderr, "scirun: server for program %s (%s, %s scale %d, backend %s%s) listening on %s\n",
		f.IDString()[:16], orDash(f.Meta.Source), ringName(f), f.Program.Scale, opt.Backend, tlsNote(tlsConf), addr)
	if e.listening != nil {
		e.listening(addr)
	}
	if !c.serveMany {
		bar := c.progress(e, opt)
		s := &serve.Server{Options: opt, TLS: tlsConf}
		res, err := s.ServeOne(ctx, ln)
		bar.done()
		if err != nil {
			c.writeReports(res, e)
			return err
		}
		return c.writeReports(res, e)
	}

	var jsonl *os.File
	if c.report != "" {
		if jsonl, err = os.Create(c.report); err != nil {
			ln.Close()
			return fmt.Errorf("report: %w", err)
		}
		defer jsonl.Close()
	}
	s := &serve.Server{
		Options:     opt,
		MaxSessions: c.maxSessions,
		TLS:         tlsConf,
		Log:         slog.New(slog.NewTextHandler(e.stderr, nil)),
		Drain:       e.drain,
	}
	if jsonl != nil {
		enc := json.NewEncoder(jsonl)
		s.OnReport = func(r *serve.Report) {
			if err := enc.Encode(r); err != nil {
				s.Log.Warn("writing the report failed", "err", err)
			}
		}
	}
	return s.Serve(ctx, ln)
}

// listenError explains a failed listen.
func listenError(addr string, err error) error {
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("listen on %s: the address is already in use (another scirun server?): choose another port with --listen", addr)
	case errors.Is(err, syscall.EACCES):
		return fmt.Errorf("listen on %s: permission denied (ports below 1024 need privileges): choose another port with --listen", addr)
	}
	return fmt.Errorf("listen on %s: %w", addr, err)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func ringName(f *codegen.File) string { return fmt.Sprintf("Z_2^%d", f.Program.Bits) }

func tlsNote(t *tls.Config) string {
	if t != nil {
		return ", TLS"
	}
	return ""
}

// progress returns the progress bar for a single session (a no-op unless stderr is a terminal)
// and installs it in opt.
func (c *config) progress(e *env, opt *serve.Options) *progressBar {
	if !e.terminal || c.quiet {
		return nil
	}
	b := &progressBar{w: e.stderr}
	opt.Progress = b.update
	return b
}

// writeReports prints the table on stderr and writes the JSON report.
func (c *config) writeReports(res *serve.Result, e *env) error {
	if res == nil || res.Report == nil {
		return nil
	}
	if !c.quiet && len(res.Report.Layers) > 0 {
		if err := res.Report.WriteTable(e.stderr); err != nil {
			return err
		}
	}
	if c.report == "" {
		return nil
	}
	var b bytes.Buffer
	if err := res.Report.WriteJSON(&b); err != nil {
		return err
	}
	if err := os.WriteFile(c.report, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// encodeInput reads the input file and encodes it at the program input's scale.
func encodeInput(path string, f *codegen.File) ([]ring.Tensor, error) {
	p := f.Program
	if len(p.Inputs) != 1 {
		return nil, fmt.Errorf("the program has %d inputs; scirun takes one --input", len(p.Inputs))
	}
	r, err := ring.New(p.Bits)
	if err != nil {
		return nil, err
	}
	in := p.Tensors[p.Inputs[0].Tensor]
	x, err := input.Read(path, in.Shape, f.Meta.Preprocess)
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	enc, err := r.EncodeTensor(in.Shape, x, in.Scale)
	if err != nil {
		return nil, fmt.Errorf("input %s: %w", path, err)
	}
	return []ring.Tensor{enc}, nil
}

// emit prints the revealed outputs and writes --output.
func (c *config) emit(outs []vm.Output, f *codegen.File, e *env) error {
	r := ring.Must(f.Program.Bits)
	var classes []string
	if f.Meta.Preprocess != nil {
		classes = f.Meta.Preprocess.ClassDirs
	}
	var revealed []vm.Output
	for _, o := range outs {
		if o.Revealed {
			revealed = append(revealed, o)
			printTop(e.stdout, r, o, c.top, classes)
		}
	}
	if c.output == "" {
		return nil
	}
	if len(revealed) != 1 {
		return fmt.Errorf("--output: %d outputs are revealed to this party, want 1", len(revealed))
	}
	o := revealed[0]
	var err error
	if c.raw {
		signed := make([]int64, len(o.Value.Data))
		for i, v := range o.Value.Data {
			signed[i] = r.Signed(v)
		}
		err = npy.WriteFileInt64(c.output, o.Value.Shape, signed)
	} else {
		err = npy.WriteFileFloat32(c.output, o.Value.Shape, r.DecodeTensor(o.Value, o.Scale))
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// printTop prints an output's top class and its k highest scores (per row of the last axis).
func printTop(w io.Writer, r ring.Ring, o vm.Output, k int, classes []string) {
	vals := r.DecodeTensor(o.Value, o.Scale)
	shape := o.Value.Shape
	d := len(vals)
	if len(shape) > 0 && shape[len(shape)-1] > 0 {
		d = shape[len(shape)-1]
	}
	rows := len(vals) / max(d, 1)
	name := func(j int) string {
		if len(classes) == d {
			return fmt.Sprintf("%d (%s)", j, classes[j])
		}
		return fmt.Sprint(j)
	}
	for row := range rows {
		data := o.Value.Data[row*d : (row+1)*d]
		v := vals[row*d : (row+1)*d]
		top := r.ArgMax(data)
		prefix := o.Name
		if rows > 1 {
			prefix = fmt.Sprintf("%s[%d]", o.Name, row)
		}
		fmt.Fprintf(w, "%s %v (Z_2^%d, scale %d): top class %s (%.4g)\n", prefix, shape, r.Bits, o.Scale, name(top), v[top])
		if d < 2 {
			continue
		}
		idx := make([]int, d)
		for j := range idx {
			idx[j] = j
		}
		sort.SliceStable(idx, func(a, b int) bool { return r.Signed(data[idx[a]]) > r.Signed(data[idx[b]]) })
		parts := make([]string, 0, k)
		for _, j := range idx[:min(k, d)] {
			parts = append(parts, fmt.Sprintf("%s %.4g", name(j), v[j]))
		}
		fmt.Fprintf(w, "  top %d: %s\n", min(k, d), strings.Join(parts, ", "))
	}
}

// progressBar draws one line on a terminal, redrawn at most every 50 ms.
type progressBar struct {
	mu   sync.Mutex
	w    io.Writer
	last time.Time
	drew bool
}

func (b *progressBar) update(done, total int, in *fixed.Instr) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if done < total && now.Sub(b.last) < 50*time.Millisecond {
		return
	}
	b.last = now
	const width = 30
	fill := width * done / max(total, 1)
	label := in.Op.String()
	if in.Source != "" {
		label += " " + in.Source
	}
	if len(label) > 40 {
		label = label[:39] + "…"
	}
	fmt.Fprintf(b.w, "\r\033[K[%s%s] %d/%d %s", strings.Repeat("#", fill), strings.Repeat(".", width-fill), done, total, label)
	b.drew = true
}

// done erases the bar.
func (b *progressBar) done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drew {
		fmt.Fprint(b.w, "\r\033[K")
	}
}
