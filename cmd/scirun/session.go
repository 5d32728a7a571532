package main

// The run modes: cleartext, client, server, and both parties in one process.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	fhevm "github.com/cryptflow-go/cryptflow/vm/fhe"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/he"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/sci"
	"github.com/cryptflow-go/cryptflow/vm/sci3"
)

// sciBackend returns the constructor of an SCI backend (sciot, scihe or auto) on the OT source
// ot, over the session's connections (one OT stream each).
// options builds the session options; a server with the client copy fails here, before
// listening.
func (c *config) options(f *sciir.File, e *env) (*serve.Options, error) {
	m, name, err := netModel(c.netName)
	if err != nil {
		return nil, err
	}
	be := c.backend
	if be == "" {
		be = f.Backend
	}
	opt := &serve.Options{File: f, Backend: be, Timeout: c.timeout, Net: m, NetName: name, Software: softwareName, Streams: c.streams,
		MaxBatch: c.maxBatch}
	if c.party == 0 {
		opt.HelloTimeout, opt.JoinTimeout, opt.QueueTimeout = c.helloTimeout, c.joinTimeout, c.queueTimeout
	}
	if c.party == 0 || c.local {
		// --local bounds its in-process server's session alike (runLocal clears it for the
		// client, which the server tells).
		opt.SessionTimeout = c.sessionTimeout
		if opt.SessionTimeout == 0 {
			opt.SessionTimeout = -1 // no limit
		}
	}
	if c.offline.dealt && (be == fhevm.BackendName || be == sci3.Name) {
		// sci3's helper deals these correlations itself; the fhe mode has none.
		return nil, cli.Usagef("--offline-dealt is for the two-party backends (sciot, scihe, auto), not %s", be)
	}
	opt.NewBackend = e.backends[be]
	if be == fhevm.BackendName && opt.NewBackend == nil {
		opt.NewBackend = fheBackend(f, e, &c.fheBatch)
	}
	if mode, err := sci.ParseMode(be); err == nil && opt.NewBackend == nil {
		src, err := otSource(c.ot, f)
		if err != nil {
			return nil, cli.Usagef("--ot: %v", err)
		}
		so := sci.Options{Mode: mode, OT: src, HE: he.Options{Workers: c.threads}}
		if src == sci.OTFerret {
			so.Ferret = sci.FerretFor(f.Program)
		}
		opt.NewBackend = sciBackend(so, c, f, e.stderr)
		// The handshake carries the whole configuration (mode, OT source and its parameters, HE
		// parameters), so two parties that would not interoperate stop there, naming both.
		opt.Backend = so.Describe(ring.Must(f.Program.Bits))
	}
	if be == sci3.Name && opt.NewBackend == nil {
		if opt.NewBackend, err = c.sci3Backend(f, m, e); err != nil {
			return nil, err
		}
	}
	if opt.NewBackend == nil {
		names := []string{"auto", "sciot", "scihe", "fhe"}
		for n := range e.backends {
			names = append(names, n)
		}
		sort.Strings(names[4:])
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

func runClear(ctx context.Context, c *config, f *sciir.File, e *env) error {
	p := f.Program
	if !p.HasWeights() {
		return fmt.Errorf("%s has no weights (it is a client copy): --clear runs the whole model in the clear and needs the full program file (%s, the one athosc -o wrote)",
			c.program, strings.Replace(c.program, ".client.sciir", ".sciir", 1))
	}
	r, err := p.Ring() // Z_2^l, or the fhe mode's Z_n
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
	b, err := c.loadInputs(ctx, f, e)
	if err != nil {
		return err
	}
	em, err := c.newEmitter(b, f, e)
	if err != nil {
		return err
	}
	if b.batch {
		em.bar = c.progress(e, "clear run")
		defer em.bar.Done()
		em.bar.Items(0, len(b.encoded))
	}
	start := time.Now()
	for k, in := range b.encoded {
		em.bar.Update(k, len(b.encoded), b.items[k].name)
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted after %d of %d inferences: %w", k, len(b.encoded), context.Cause(ctx))
			break
		}
		var outs []vm.Output
		if outs, err = m.Run(ctx, in); err != nil {
			if b.batch {
				err = fmt.Errorf("input %s: %w", b.items[k].name, err)
				if ctx.Err() != nil {
					err = fmt.Errorf("interrupted after %d of %d inferences: %w", k, len(b.encoded), err)
				}
			}
			break
		}
		if err = em.keep(k, outs); err != nil {
			break
		}
	}
	em.summary(nil, time.Since(start))
	return em.stopped(err)
}

func runClient(ctx context.Context, c *config, f *sciir.File, opt *serve.Options, e *env) error {
	b, err := c.loadInputs(ctx, f, e)
	if err != nil {
		return err
	}
	c.fheBatch = b.encoded
	tlsConf, err := c.clientTLS()
	if err != nil {
		return err
	}
	if tlsConf, err = c.withClientCert(tlsConf, e); err != nil {
		return err
	}
	bar := c.progress(e, "secure run")
	defer bar.Done()
	watch(bar, opt, fmt.Sprintf("waiting for the server at %s… (a busy server queues its clients)", c.connect))
	bar.Status(fmt.Sprintf("connecting to %s…", c.connect))
	nc, err := serve.Dial(ctx, c.connect, tlsConf, c.connectTimeout)
	if err != nil {
		return err
	}
	opt.DialStream = func(ctx context.Context) (net.Conn, error) {
		return serve.Dial(ctx, c.connect, tlsConf, c.connectTimeout)
	}
	em, err := c.newEmitter(b, f, e)
	if err != nil {
		return err
	}
	em.bar = bar
	opt.OnResult = em.keep
	res, err := serve.RunBatch(ctx, nc, 1, opt, b.encoded)
	bar.Done()
	return c.finishClient(em, res, err)
}

func runLocal(ctx context.Context, c *config, f *sciir.File, opt *serve.Options, e *env) error {
	b, err := c.loadInputs(ctx, f, e)
	if err != nil {
		return err
	}
	c.fheBatch = b.encoded
	sopt := *opt
	copt := *opt
	copt.SessionTimeout = 0
	sopt.MaxBatch = max(len(b.encoded), sopt.MaxBatch)
	bar := c.progress(e, "secure run")
	defer bar.Done()
	watch(bar, &copt, "handshake…")
	em, err := c.newEmitter(b, f, e)
	if err != nil {
		return err
	}
	em.bar = bar
	copt.OnResult = em.keep
	res, sres, err := serve.RunLocalBatch(ctx, &sopt, &copt, b.encoded)
	bar.Done()
	mergeServerFHE(res, sres)
	return c.finishClient(em, res, err)
}

// finishClient ends a client run whose results em kept as they came: the batch summary and the
// reports, also after a failure or an interruption (the error is then the run's, saying where
// the finished outputs are).
func (c *config) finishClient(em *emitter, res *serve.Result, err error) error {
	var rep *serve.Report
	if res != nil {
		rep = res.Report
	}
	em.summary(rep, 0)
	if err != nil {
		c.writeReports(res, em.e)
		return em.stopped(err)
	}
	return c.writeReports(res, em.e)
}

func (c *config) clientTLS() (*tls.Config, error) {
	if c.tlsPin != "" {
		if c.tlsServerName != "" {
			return nil, cli.Usagef("--tls-server-name is not used with --tls-pin: the pin names the server")
		}
		return serve.PinnedClientTLS(c.tlsPin)
	}
	if c.tlsCA == "" {
		if c.tlsServerName != "" {
			return nil, cli.Usagef("--tls-server-name needs --tls-ca")
		}
		return nil, nil
	}
	return serve.LoadClientTLS(c.tlsCA, c.tlsServerName)
}

// serverTLS loads the TLS configuration of a server or a helper (--tls-cert and --tls-key, or
// --tls-self, which prints the fingerprint to pin with pinFlag); nil without TLS flags.
func (c *config) serverTLS(e *env, pinFlag string) (*tls.Config, error) {
	switch {
	case c.tlsCert != "":
		return serve.LoadServerTLS(c.tlsCert, c.tlsKey)
	case c.tlsSelf != "":
		conf, fp, created, err := serve.LoadOrCreateServerKey(c.tlsSelf)
		if err != nil {
			return nil, err
		}
		how := "kept in"
		if created {
			how = "made and saved to"
		}
		who := "clients connect"
		if pinFlag != "--tls-pin" {
			who = "the data parties connect"
		}
		fmt.Fprintf(e.stderr, "scirun: TLS key %s %s; %s with %s %s\n", how, c.tlsSelf, who, pinFlag, fp)
		return conf, nil
	}
	return nil, nil
}

func runServer(ctx context.Context, c *config, opt *serve.Options, e *env) error {
	tlsConf, err := c.serverTLS(e, "--tls-pin")
	if err != nil {
		return err
	}
	tlsConf, err = c.serverClientAuth(tlsConf)
	if err != nil {
		return err
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
		bar := c.progress(e, "secure run")
		defer bar.Done()
		watch(bar, opt, "handshake with a client…")
		bar.Status(fmt.Sprintf("waiting for a client on %s…", addr))
		s := &serve.Server{Options: opt, TLS: tlsConf, MaxPending: c.maxPending}
		res, err := s.ServeOne(ctx, ln)
		bar.Done()
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
	e.serving.Store(true)
	s := &serve.Server{
		Options:     opt,
		MaxSessions: c.maxSessions,
		MaxPending:  c.maxPending,
		TLS:         tlsConf,
		Log:         c.logger(e),
		Drain:       e.drain,
	}
	stopMetrics, err := c.production(s, e)
	if err != nil {
		ln.Close()
		return err
	}
	defer stopMetrics()
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

func ringName(f *sciir.File) string {
	if r, err := f.Program.Ring(); err == nil {
		return r.String()
	}
	return fmt.Sprintf("Z_2^%d", f.Program.Bits)
}

func tlsNote(t *tls.Config) string {
	if t != nil {
		return ", TLS"
	}
	return ""
}

// otSource resolves --ot for program f: auto follows sci.AutoOT on the link the program's linear
// layers were planned for (athosc --backend auto --net LINK): Ferret on slow links, where its ~8x
// smaller traffic outweighs its CPU, IKNP otherwise and for programs that record no link. Both
// parties hold the same metadata (it is part of the program ID the handshake compares), so they
// resolve alike.
func otSource(name string, f *sciir.File) (sci.OTSource, error) {
	if name != "auto" {
		return sci.ParseOT(name)
	}
	net, err := netmodel.Parse(f.Meta.Net)
	if err != nil {
		return 0, fmt.Errorf("--ot auto: the program's planned link: %w", err)
	}
	return sci.AutoOT(net), nil
}

// mergeServerFHE completes the fhe account of a --local run's (client) report with the server's
// evaluation: both parties ran here, so the one report shows both sides.
func mergeServerFHE(cres, sres *serve.Result) {
	if cres == nil || sres == nil || cres.Report == nil || sres.Report == nil {
		return
	}
	c, s := cres.Report.FHE, sres.Report.FHE
	if c == nil || s == nil {
		return
	}
	c.EvalMS, c.Ops, c.Layers = s.EvalMS, s.Ops, s.Layers
}
