package main

// The three-party backend (sci3): the helper party and the data parties' links to it.

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/sci3"
)

// localTrio is the helper of a --local sci3 run: started by the first party's backend set-up,
// in this process, over in-memory pipes (with the --net link emulated on them).
type localTrio struct {
	once sync.Once
	trio *dealer.Trio
	err  error
}

func (l *localTrio) get(ctx context.Context, opt transport.Options) (*dealer.Trio, error) {
	l.once.Do(func() { l.trio, l.err = dealer.Local(context.WithoutCancel(ctx), opt) })
	return l.trio, l.err
}

// helperArgs rewrites "--helper ADDR" as "--helper=ADDR" and reports a bare --helper (followed
// by another flag or nothing), which selects helper mode.
func helperArgs(args []string) (out []string, mode bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a != "--helper" && a != "-helper" {
			out = append(out, a)
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && !strings.HasSuffix(args[i+1], ".sciir") {
			out = append(out, "--helper="+args[i+1])
			i++
			continue
		}
		mode = true
	}
	return out, mode
}

// helperTLSFlags are the data parties' flags for their link to the helper, which carries their
// pairwise seed: it must be TLS with a verified helper unless --helper-insecure says otherwise.
type helperTLSFlags struct {
	pin, ca  string
	insecure bool
	prefetch int    // COTs per OT stream fetched ahead from the helper (0: on demand)
	aheadMiB int    // MiB of the helper's replies dealt ahead at most (0: off)
	traces   string // directory of the first inferences' traces (--helper-traces), or ""
}

// defaultAheadMiB is --helper-ahead's default: more than a ResNet50 inference's replies to
// party 1 (153 MiB).
const defaultAheadMiB = 256

func (h *helperTLSFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&h.pin, "helper-tls-pin", "", "backend sci3 (server and client): reach the helper over TLS and accept only the one whose key has this `FINGERPRINT` (sha256:..., as the helper printed it)")
	fs.StringVar(&h.ca, "helper-tls-ca", "", "backend sci3 (server and client): reach the helper over TLS and trust its certificate if signed by (or equal to) the PEM `FILE`")
	fs.IntVar(&h.prefetch, "helper-prefetch", 0, fmt.Sprintf("backend sci3 (server, client, --local): fetch the next `N` dealt OTs of each shape (message count and width) of each OT stream from the helper in the background, so that a draw finds them ready (N words of memory per shape and stream for one-word messages; the last fetch of each shape goes unused: up to N·l bits more from the helper); e.g. %d; 0: on demand", 1<<14))
	fs.IntVar(&h.aheadMiB, "helper-ahead", defaultAheadMiB, "backend sci3 (server, client, --local): in a session of several inferences, record the first one's requests to the helper and have each next inference's correlations dealt ahead, in the background during the one before, so that it runs without waiting on the helper; at most `MIB` MiB of the helper's replies held in memory (an inference needing more is dealt on demand); 0: off (everything dealt on demand)")
	fs.StringVar(&h.traces, "helper-traces", "", "backend sci3 (server, client, --local): keep the requests each program's first inference makes to the helper in `DIR` (one file per program, party and stream count), and in a later session deal the first inference's correlations from that file at its start, before the input is used, so that it runs with no request to the helper on its critical path (within --helper-ahead's cap); a session without a matching file deals the first inference on demand and writes the file")
	fs.BoolVar(&h.insecure, "helper-insecure", false, "backend sci3: allow a plaintext link to the helper (data parties), or serve without TLS (the helper): the pairwise seeds then travel in the clear; on a trusted network only")
}

// config returns the TLS configuration of the link to the helper (nil with --helper-insecure).
func (h *helperTLSFlags) config() (*tls.Config, error) {
	switch {
	case h.pin != "":
		return serve.PinnedClientTLS(h.pin)
	case h.ca != "":
		return serve.LoadClientTLS(h.ca, "")
	}
	return nil, nil
}

// insecureWarning is printed by every party that runs a helper link without TLS.
const insecureWarning = "scirun: WARNING: --helper-insecure: the link to the helper is plaintext and unauthenticated: " +
	"the pairwise seed on it travels in the clear, and anyone who reads it can strip this party's masks (see docs/security.md). " +
	"Use it on a trusted network only; otherwise start the helper with --tls-self FILE and pass --helper-tls-pin.\n"

// checkHelper checks the flags of helper mode: --listen, the program (the client copy
// suffices), TLS (--tls-self, or --tls-cert and --tls-key) or --helper-insecure, nothing that
// belongs to a data party.
func (c *config) checkHelper() error {
	for _, f := range []string{"party", "local", "clear", "connect", "input", "output", "serve", "tls-ca", "tls-pin", "helper-tls-pin", "helper-tls-ca", "helper-prefetch", "helper-ahead", "helper-traces"} {
		if c.set[f] {
			return cli.Usagef("--%s is not used by the helper (--helper)", f)
		}
	}
	if c.helper != "" {
		return cli.Usagef("--helper=%s: the helper listens (--listen ADDR); --helper ADDR is for the data parties", c.helper)
	}
	if len(c.empty) > 0 {
		return cli.Usagef("--%s is empty (an unset variable?): give its value", c.empty[0])
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		return cli.Usagef("--tls-cert and --tls-key go together")
	}
	if c.tlsSelf != "" && c.tlsCert != "" {
		return cli.Usagef("--tls-self and --tls-cert exclude each other: a self-made key, or a certificate of your PKI")
	}
	useTLS := c.tlsSelf != "" || c.tlsCert != ""
	switch {
	case useTLS && c.helperTLS.insecure:
		return cli.Usagef("--helper-insecure excludes --tls-self, --tls-cert and --tls-key: serve TLS, or plaintext")
	case !useTLS && !c.helperTLS.insecure:
		return cli.Usagef("the helper receives the data parties' pairwise seeds: serve TLS (--tls-self FILE, or --tls-cert and --tls-key), or pass --helper-insecure to serve them in plaintext on a trusted network")
	}
	return nil
}

// checkHelperLink checks a data party's flags of its link to the helper: --helper ADDR with
// --helper-tls-pin or --helper-tls-ca, or an explicit --helper-insecure.
func (c *config) checkHelperLink() error {
	h := c.helperTLS
	if h.prefetch < 0 || h.prefetch > 1<<24 {
		return cli.Usagef("--helper-prefetch %d: want 0 (on demand) to %d COTs", h.prefetch, 1<<24)
	}
	if h.aheadMiB < 0 || h.aheadMiB > 1<<20 {
		return cli.Usagef("--helper-ahead %d: want 0 (off) to %d MiB", h.aheadMiB, 1<<20)
	}
	if h.traces != "" && (h.aheadMiB == 0 || h.prefetch > 0) {
		return cli.Usagef("--helper-traces deals the first inference ahead: it needs --helper-ahead (not 0) and no --helper-prefetch")
	}
	if h.prefetch > 0 && h.aheadMiB > 0 && c.set["helper-ahead"] {
		return cli.Usagef("--helper-prefetch and --helper-ahead exclude each other (a prefetch's requests depend on the draws' timing, so they cannot be dealt ahead): give --helper-ahead 0 with --helper-prefetch")
	}
	if c.helper == "" {
		for _, f := range []string{"helper-prefetch", "helper-ahead", "helper-traces"} {
			if c.set[f] && !c.local {
				return cli.Usagef("--%s goes with --helper HOST:PORT or --local (backend sci3)", f)
			}
		}
		for _, f := range []string{"helper-tls-pin", "helper-tls-ca", "helper-insecure"} {
			if c.set[f] {
				if c.local {
					return cli.Usagef("--%s is not used with --local: the helper runs in this process", f)
				}
				return cli.Usagef("--%s goes with --helper HOST:PORT (backend sci3)", f)
			}
		}
		return nil
	}
	if c.local {
		return cli.Usagef("--helper %s is not used with --local: the helper runs in this process", c.helper)
	}
	n := 0
	for _, on := range []bool{h.pin != "", h.ca != "", h.insecure} {
		if on {
			n++
		}
	}
	switch {
	case n > 1:
		return cli.Usagef("--helper-tls-pin, --helper-tls-ca and --helper-insecure exclude each other")
	case n == 0:
		return cli.Usagef("--helper %s: %v", c.helper, serve.ErrHelperPlaintext)
	}
	if h.pin != "" {
		if _, err := serve.ParsePin(h.pin); err != nil {
			return cli.Usagef("--helper-tls-pin: %v", err)
		}
	}
	return nil
}

// runHelper runs the helper (party 2) of sci3 sessions until interrupted: the first signal
// stops it (it does not drain; the data parties of a running session fail naming the helper).
func runHelper(ctx context.Context, c *config, f *sciir.File, e *env) error {
	m, _, err := netModel(c.netName)
	if err != nil {
		return err
	}
	tlsConf, err := c.serverTLS(e, "--helper-tls-pin")
	if err != nil {
		return err
	}
	if tlsConf == nil {
		fmt.Fprint(e.stderr, strings.Replace(insecureWarning, "the link to the helper is", "the helper serves", 1))
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return listenError(c.listen, err)
	}
	defer ln.Close()
	if !c.quiet {
		fmt.Fprintf(e.stderr, "helper (party 2, backend sci3) listening on %s%s: program %s…, %s; it holds no weights and sees no data\n",
			ln.Addr(), tlsNote(tlsConf), f.IDString()[:8], ringName(f))
	}
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-e.drain:
			cancel()
		case <-hctx.Done():
		}
	}()
	log := slog.New(slog.NewTextHandler(e.stderr, nil))
	if c.quiet {
		log = nil
	}
	return serve.ServeHelper(hctx, ln, &serve.HelperOptions{File: f, Backend: sci3.Name, Timeout: c.timeout,
		HelloTimeout: c.helloTimeout, JoinTimeout: c.joinTimeout, Net: m, Log: log, TLS: tlsConf})
}

// sci3Backend returns the constructor of a data party's sci3 backend: with --local, on a
// helper in this process; otherwise on the helper at --helper, to which both data parties
// present the session token party 0 draws (sent to party 1 first thing after the handshake).
func (c *config) sci3Backend(f *sciir.File, m *netmodel.Model, e *env) (serve.BackendFunc, error) {
	topt := transport.Options{Timeout: c.timeout, Net: m}
	if c.timeout == 0 {
		topt.Timeout = serve.DefaultTimeout
	}
	// A stalled helper is detected a quarter of --timeout before a stalled peer, so that the
	// data party waiting on the helper aborts the session naming it before the other data
	// party, waiting on this one, would blame it.
	topt.Timeout -= topt.Timeout / 4
	perRun := sci3.LinearCalls(f.Program)
	var newLink func(ctx context.Context, conn *transport.Conn, party int) (*dealer.Link, error)
	var other func(party int) *transport.Stats // the other data party's link traffic (--local)
	var otherLink func(party int) *dealer.Link
	if c.local {
		lt := &localTrio{}
		newLink = func(ctx context.Context, _ *transport.Conn, party int) (*dealer.Link, error) {
			t, err := lt.get(ctx, topt)
			if err != nil {
				return nil, err
			}
			return t.Links[party], nil
		}
		other = func(party int) *transport.Stats {
			s := lt.trio.Conns[1-party].Stats()
			return &s
		}
		otherLink = func(party int) *dealer.Link { return lt.trio.Links[1-party] }
	} else {
		if c.helper == "" {
			return nil, cli.Usagef("backend sci3 needs the helper: --helper HOST:PORT with --helper-tls-pin FINGERPRINT (start it with scirun --helper --listen ADDR --tls-self FILE PROGRAM)")
		}
		tlsConf, err := c.helperTLS.config()
		if err != nil {
			return nil, err
		}
		if tlsConf == nil {
			fmt.Fprint(e.stderr, insecureWarning)
		}
		dial := serve.HelperDial{Addr: c.helper, TLS: tlsConf, Insecure: c.helperTLS.insecure}
		newLink = func(ctx context.Context, conn *transport.Conn, party int) (*dealer.Link, error) {
			var tok serve.HelperToken
			var err error
			if party == 0 {
				if tok, err = serve.NewHelperToken(); err == nil {
					if err = conn.Send(ctx, tok[:]); err == nil {
						err = conn.Flush(ctx)
					}
				}
			} else {
				err = conn.Recv(ctx, tok[:])
			}
			if err != nil {
				return nil, fmt.Errorf("sci3 session token: %w", err)
			}
			return serve.DialHelper(ctx, dial, party, f, sci3.Name, tok, topt)
		}
	}
	return func(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		start := time.Now()
		link, err := newLink(ctx, conn, party)
		if err != nil {
			return nil, err
		}
		setup, setupStats := time.Since(start), link.Conn().Stats()
		link.SetPrefetch(c.helperTLS.prefetch)
		if c.helperTLS.prefetch == 0 {
			link.SetAhead(int64(c.helperTLS.aheadMiB) << 20)
		}
		var tf *traceFile
		if c.helperTLS.traces != "" {
			tf = newTraceFile(c.helperTLS.traces, f, party, len(streams))
			if err := tf.load(link); err != nil {
				return nil, err
			}
			if tf.note != "" && !c.quiet {
				fmt.Fprintf(e.stderr, "scirun: party %d: %s\n", party, tf.note)
			}
		}
		// Party 1 computes its linear shares before each inference whose corrections were dealt
		// ahead, within the same cap as the replies held; F crosses at set-up so that the first
		// inference's can be computed too (both parties always share the weights: no flag to
		// disagree on).
		var precompute int64
		if c.helperTLS.prefetch == 0 {
			precompute = int64(c.helperTLS.aheadMiB) << 20
		}
		b, err := sci3.New(ctx, conn, link, r, sci3.Options{Streams: streams, LinearPerRun: perRun,
			Precompute: precompute, Workers: runtime.GOMAXPROCS(0)})
		if err != nil {
			return nil, err
		}
		if err := b.ShareWeights(ctx, f.Program); err != nil {
			return nil, err
		}
		return &sci3Party{Backend: b, quiet: c.quiet, out: e.stderr, setup: setup, setupStats: setupStats, other: other, otherLink: otherLink, trace: tf}, nil
	}, nil
}

// sci3Party prints the traffic with the helper when the session ends (the session report
// counts the traffic between the data parties only).
type sci3Party struct {
	*sci3.Backend
	quiet      bool
	out        io.Writer
	setup      time.Duration   // reaching the helper
	setupStats transport.Stats // the link's traffic then
	other      func(party int) *transport.Stats
	otherLink  func(party int) *dealer.Link
	trace      *traceFile // --helper-traces, or nil
}

// HelperAccount splits the session into set-up, offline and online for the report.
func (b *sci3Party) HelperAccount() serve.HelperAccount {
	l := b.Link()
	a := serve.HelperAccount{Setup: b.setup, SetupStats: b.setupStats, Wait: l.Wait(), Demand: l.Demand(), Ahead: l.AheadStats()}
	a.Precompute, a.PrecomputeN = b.PrecomputeTime()
	ls := b.LinearStats()
	a.LinearOnline = ls.Online
	if b.other != nil {
		o := b.otherLink(b.Party())
		a.Other, a.OtherAhead, a.OtherWait = b.other(b.Party()), o.AheadStats(), o.Wait()
	}
	return a
}

func (b *sci3Party) Close() error {
	if b.trace != nil {
		if err := b.trace.save(b.Link()); err != nil {
			fmt.Fprintf(b.out, "scirun: party %d: %v\n", b.Party(), err)
		}
	}
	err := b.Backend.Close()
	defer b.Link().Conn().Close()
	if !b.quiet {
		s := b.Link().Conn().Stats()
		fmt.Fprintf(b.out, "sci3: party %d ↔ helper: %s sent, %s received (%d frames received)\n",
			b.Party(), byteSize(s.BytesSent), byteSize(s.BytesRecv), s.FramesRecv)
	}
	return err
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.3f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d B", n)
}
