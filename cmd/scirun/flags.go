package main

// Command-line flags of scirun and the checks that reject flags outside their mode.

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/atomicfile"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// defaultStreams is the default of --streams: two OT streams (one core each) where there are two
// cores, else one.
func defaultStreams() int { return min(2, runtime.NumCPU()) }

// config is the parsed command line.
type config struct {
	fheBatch               [][]ring.Tensor // the client's encoded inputs, for the fhe backend's lanes
	program, input, output string
	clear, local, raw      bool
	party                  int
	top                    int
	streams                int

	listen, connect          string
	serveMany                bool
	maxSessions              int
	maxBatch                 int
	timeout, connectTimeout  time.Duration
	sessionTimeout           time.Duration
	helloTimeout             time.Duration
	joinTimeout              time.Duration
	queueTimeout             time.Duration
	maxPending               int
	tlsCert, tlsKey          string
	tlsCA, tlsServerName     string
	tlsSelf, tlsPin          string
	report, netName, backend string
	ot                       string
	quiet, strict            bool
	threads                  int
	memLimit                 string
	cpuProfile               string
	helper                   string          // sci3: the helper's address (data parties)
	helperMode               bool            // --helper without an address: run the helper (party 2)
	helperTLS                helperTLSFlags  // sci3: how the data parties authenticate the helper
	offline                  offlineFlags    // --ot ferret: the offline phase
	set                      map[string]bool // flags given explicitly
	empty                    []string        // TLS flags given explicitly with an empty value
	// stop cancels the run (not a --serve server): a signal stops a batch between two
	// inferences as well as within one.
	stop context.CancelFunc
	// A server for production (prod.go).
	tlsClientCA, tlsClientPins  string
	tlsClientPin                stringList
	tlsClientCert, tlsClientKey string
	tlsClientSelf               string
	maxPerClient, perMinute     int
	metrics, logFormat          string
	drainTimeout                time.Duration
}

func parse(args []string) (*config, error) {
	c := &config{}
	fs := newFlagSet(c)
	args, c.helperMode = helperArgs(args)
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return nil, err
	}
	c.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		c.set[f.Name] = true
		if strings.Contains(f.Name, "tls-") && f.Value.String() == "" {
			c.empty = append(c.empty, f.Name)
		}
	})
	if len(pos) != 1 {
		return nil, cli.Usagef("want one program file, got %d arguments", len(pos))
	}
	c.program = pos[0]
	return c, nil
}

// newFlagSet defines scirun's flags on c; its Usage prints them by mode (help.go).
func newFlagSet(c *config) *flag.FlagSet {
	fs := flag.NewFlagSet("scirun", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		printFlags(fs.Output(), fs)
	}
	fs.BoolVar(&c.clear, "clear", false, "run in the clear with the cleartext fixed-point backend")
	fs.IntVar(&c.party, "party", -1, "run as party `P` of a secure run: 0 server (full program), 1 client (client copy)")
	fs.BoolVar(&c.local, "local", false, "run both parties in this process over loopback TCP")
	fs.StringVar(&c.input, "input", "", "input `FILE` (.npy, or .png/.jpg for image programs), or a batch: a folder DIR/ of such files (with an optional labels.txt) or a .npy of shape [B, ...input shape without its leading 1], run in one session")
	fs.StringVar(&c.output, "output", "", "write the output to `FILE` (.npy); with a folder DIR/, write DIR/NAME.npy for each input NAME (required for a batch)")
	fs.BoolVar(&c.raw, "raw", false, "write the output as signed ring values (int64) instead of decoded floats")
	fs.IntVar(&c.top, "top", 5, "print the `K` highest-scoring classes")
	fs.StringVar(&c.listen, "listen", ":7070", "listen on `ADDR` (host:port)")
	fs.BoolVar(&c.serveMany, "serve", false, "keep accepting clients, several sessions at a time")
	fs.IntVar(&c.maxSessions, "max-sessions", runtime.NumCPU(), "with --serve: at most `N` sessions at a time")
	fs.IntVar(&c.maxBatch, "max-batch", serve.DefaultMaxBatch, "refuse a client that asks for more than `N` inferences in one session")
	fs.DurationVar(&c.timeout, "timeout", serve.DefaultTimeout, "end a session when the peer stalls for `D` (any wait: handshake, each message)")
	fs.DurationVar(&c.sessionTimeout, "session-timeout", serve.DefaultSessionTimeout, "server and --local: end a session that runs longer than `D` in all (0: no limit)")
	fs.DurationVar(&c.helloTimeout, "hello-timeout", serve.DefaultHelloTimeout, "drop a connection that has not completed its TLS handshake and hello (or stream join) within `D`")
	fs.DurationVar(&c.joinTimeout, "join-timeout", serve.DefaultJoinTimeout, "end a session whose extra stream connections have not all joined within `D`")
	fs.DurationVar(&c.queueTimeout, "queue-timeout", serve.DefaultQueueTimeout, "with --serve: refuse as busy a client that waited `D` for a free session slot")
	fs.IntVar(&c.maxPending, "max-pending", serve.DefaultMaxPending, "at most `N` connections awaiting their hello; beyond it the oldest is dropped")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "server: TLS certificate `FILE` (PEM); with --tls-key")
	fs.StringVar(&c.tlsKey, "tls-key", "", "server: TLS private key `FILE` (PEM)")
	fs.StringVar(&c.connect, "connect", "", "the server's address, `HOST:PORT`")
	fs.StringVar(&c.helper, "helper", "", "backend sci3: the helper's address `HOST:PORT` (server and client); bare --helper runs the helper itself (with --listen)")
	c.helperTLS.define(fs)
	c.offline.define(fs)
	c.offline.defineDealt(fs)
	fs.DurationVar(&c.connectTimeout, "connect-timeout", serve.DefaultConnectTimeout, "keep retrying a refused connection for `D`")
	fs.StringVar(&c.tlsSelf, "tls-self", "", "server: use TLS with the key and self-signed certificate kept in `FILE` (made on first start; prints the fingerprint clients pin)")
	fs.StringVar(&c.tlsPin, "tls-pin", "", "client: use TLS and accept only the server whose key has this `FINGERPRINT` (sha256:..., as the server printed it)")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "client: use TLS and trust the server certificate signed by (or equal to) the PEM `FILE`")
	fs.StringVar(&c.tlsServerName, "tls-server-name", "", "client: the `NAME` to check the server's certificate against")
	fs.StringVar(&c.tlsClientCA, "tls-client-ca", "", "server: serve only clients whose TLS certificate is signed by a CA in the PEM `FILE` (mutual TLS)")
	fs.Var(&c.tlsClientPin, "tls-client-pin", "server: serve only clients whose TLS key has this `FINGERPRINT` (sha256:..., as --tls-client-self prints it); repeatable")
	fs.StringVar(&c.tlsClientPins, "tls-client-pins", "", "server: like --tls-client-pin, one fingerprint a line in `FILE` (# comments)")
	fs.StringVar(&c.tlsClientCert, "tls-client-cert", "", "client: present this TLS certificate `FILE` (PEM) to a server that admits only allowed clients; with --tls-client-key")
	fs.StringVar(&c.tlsClientKey, "tls-client-key", "", "client: the private key `FILE` (PEM) of --tls-client-cert")
	fs.StringVar(&c.tlsClientSelf, "tls-client-self", "", "client: present the self-made key and certificate kept in `FILE` (made on first use; prints the fingerprint the server pins)")
	fs.IntVar(&c.maxPerClient, "max-sessions-per-client", 0, "with --serve: at most `N` sessions running or waiting per client (its TLS key, else its IP address; 0: no limit)")
	fs.IntVar(&c.perMinute, "sessions-per-minute", 0, "with --serve: refuse a client (its TLS key, else its IP address) that starts more than `N` sessions in a minute (0: no limit)")
	fs.StringVar(&c.metrics, "metrics", "", "with --serve: serve Prometheus metrics on http://`ADDR`/metrics, and the probes /healthz and /readyz")
	fs.StringVar(&c.logFormat, "log-format", "text", "with --serve: the log's `FORMAT` on stderr, text or json")
	fs.DurationVar(&c.drainTimeout, "drain-timeout", DefaultDrainTimeout, "with --serve: on SIGTERM or SIGINT, wait at most `D` for the running sessions, then abort the rest and exit 0 (0: wait however long)")
	fs.StringVar(&c.report, "report", "", "write the per-layer report as JSON to `FILE` (with --serve: one JSON line per session)")
	fs.StringVar(&c.netName, "net", "", "emulate a `LINK` on received messages (shared by the session's streams): "+netmodel.Help)
	fs.StringVar(&c.backend, "backend", "", "backend `NAME`: sciot (linear layers by OT), scihe (by HE), auto (per layer as athosc planned it), sci3 (three parties, with --helper), fhe (non-interactive BGV, for programs compiled with athosc --backend fhe: one upload, one result)")
	fs.StringVar(&c.ot, "ot", "auto", fmt.Sprintf("OT source `NAME` of the OT-based protocols: iknp (IKNP extension: least CPU, 128 bits per OT), ferret (silent OT: ~8x less traffic, more CPU), or auto: ferret for a program planned for a link of at most %g MB/s per direction (athosc --backend auto --net wan, or e.g. --net 500Mbit/s), iknp otherwise; both parties must agree", sci.FerretMaxBandwidth/1e6))
	fs.BoolVar(&c.strict, "strict", false, "refuse an input whose values leave the range the program was validated on (without it: a warning)")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress on stderr (otherwise: a line redrawn in place on a terminal, plain lines every 10 s elsewhere) and no report table")
	fs.StringVar(&c.memLimit, "memory-limit", "", "soft limit of `SIZE` on this process's memory, e.g. 1800MiB or 2GiB: the garbage collector works harder near it (Go's GOMEMLIMIT)")
	fs.StringVar(&c.cpuProfile, "cpuprofile", "", "write a CPU profile of this process to `FILE` (go tool pprof)")
	fs.IntVar(&c.threads, "threads", runtime.NumCPU(), "use at most `N` cores: Go's scheduler and HE ciphertext work; --streams sets the OT streams")
	fs.IntVar(&c.streams, "streams", defaultStreams(), "run each session over `N` connections (OT streams, one core each); both parties must agree")
	return fs
}

// check rejects flags that do not belong to the chosen mode.
func (c *config) check() error {
	modes := 0
	if c.helperMode {
		return c.checkHelper()
	}
	if err := c.checkHelperLink(); err != nil {
		return err
	}
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
		return cli.Usagef("choose a mode: --clear, --party 0 (server), --party 1 (client), --local or --helper (sci3's party 2)")
	case modes > 1:
		return cli.Usagef("--clear, --party and --local exclude each other")
	}
	// An empty security flag (--tls-pin "$PIN" with PIN unset) would silently run the session
	// in plaintext, unauthenticated.
	if len(c.empty) > 0 {
		return cli.Usagef("--%s is empty (an unset variable?): give its value, or leave the flag out to run without TLS", c.empty[0])
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
		only("by the server (--party 0): the client holds the input", !server, "input", "output", "raw", "top", "strict"),
		only("without --party 0", server, "listen", "serve", "tls-cert", "tls-key", "tls-self", "max-batch",
			"hello-timeout", "join-timeout", "max-pending"),
		only("without --party 0 or --local", server || c.local, "session-timeout"),
		only("without --party 0 --serve", server && c.serveMany, "max-sessions", "queue-timeout",
			"max-sessions-per-client", "sessions-per-minute", "metrics", "log-format", "drain-timeout"),
		only("without --party 0", server, "tls-client-ca", "tls-client-pin", "tls-client-pins"),
		only("without --party 1", client, "connect", "connect-timeout", "tls-ca", "tls-server-name", "tls-pin",
			"tls-client-cert", "tls-client-key", "tls-client-self"),
		only("with --clear", !c.clear, "timeout", "report", "net", "backend", "streams", "ot", "offline-mib", "offline-he-mib", "offline-plans", "offline-dealt"),
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
	if c.tlsSelf != "" && c.tlsCert != "" {
		return cli.Usagef("--tls-self and --tls-cert exclude each other: a self-made key, or a certificate of your PKI")
	}
	if c.tlsPin != "" && c.tlsCA != "" {
		return cli.Usagef("--tls-pin and --tls-ca exclude each other: pin the server's key, or trust a CA")
	}
	if c.tlsPin != "" {
		if _, err := serve.ParsePin(c.tlsPin); err != nil {
			return cli.Usagef("--tls-pin: %v", err)
		}
	}
	if err := c.checkProd(); err != nil {
		return err
	}
	if c.maxBatch < 1 {
		return cli.Usagef("--max-batch %d: want at least 1", c.maxBatch)
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
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"hello-timeout", c.helloTimeout}, {"join-timeout", c.joinTimeout}, {"queue-timeout", c.queueTimeout}} {
		if d.v <= 0 {
			return cli.Usagef("--%s %v: want a positive duration", d.flag, d.v)
		}
	}
	if c.maxPending < 1 {
		return cli.Usagef("--max-pending %d: want at least 1", c.maxPending)
	}
	if _, err := parseSize(c.memLimit); err != nil {
		return cli.Usagef("--memory-limit %q: %v", c.memLimit, err)
	}
	if c.threads < 1 {
		return cli.Usagef("--threads %d: want at least 1", c.threads)
	}
	if c.top < 1 {
		return cli.Usagef("--top %d: want at least 1", c.top)
	}
	if c.streams < 1 || c.streams > serve.MaxStreams {
		return cli.Usagef("--streams %d: want 1 to %d", c.streams, serve.MaxStreams)
	}
	if err := c.offline.check(); err != nil {
		return err
	}
	if c.ot != "auto" {
		if _, err := sci.ParseOT(c.ot); err != nil {
			return cli.Usagef("--ot %q: want auto, iknp or ferret", c.ot)
		}
	}
	if _, _, err := netModel(c.netName); err != nil {
		return err
	}
	return c.checkFiles()
}

// checkFiles refuses an --output or --report that would overwrite the program or the input, and
// finds an unwritable one before the session runs rather than after it.
func (c *config) checkFiles() error {
	for _, f := range []struct{ flag, path string }{{"output", c.output}, {"report", c.report}} {
		if f.path == "" {
			continue
		}
		if f.flag == "output" && outputDir(f.path) {
			if err := c.checkOutputDir(); err != nil {
				return cli.Usagef("%v", err)
			}
			continue
		}
		if err := atomicfile.CheckNotInput(f.path, c.program, c.input); err != nil {
			return cli.Usagef("--%s: %v", f.flag, err)
		}
		if err := atomicfile.CheckWritable(f.path); err != nil {
			return fmt.Errorf("--%s: %w", f.flag, err)
		}
	}
	if c.output != "" && c.output == c.report {
		return cli.Usagef("--output and --report name the same file %s", c.output)
	}
	return nil
}

func netModel(name string) (*netmodel.Model, string, error) {
	m, err := netmodel.Parse(name)
	if err != nil {
		return nil, "", cli.Usagef("--net: %v", err)
	}
	if m == nil {
		return nil, "", nil
	}
	return m, m.Spec(), nil
}

// parseSize reads a byte count with an optional unit: B, KiB, MiB, GiB (or KB, MB, GB as powers of
// 1000); "" is 0.
func parseSize(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	mult := int64(1)
	num := s
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSuffix(s, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v <= 0 || v*float64(mult) > 1<<62 {
		return 0, fmt.Errorf("want a positive size such as 1800MiB or 2GiB")
	}
	return int64(v * float64(mult)), nil
}
