package main

// The run modes: cleartext, client, server, and both parties in one process.

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	fhevm "github.com/cryptflow-go/cryptflow/vm/fhe"
	"log/slog"
	"net"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/he"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// sciBackend returns the constructor of an SCI backend (sciot, scihe or auto) on the OT source
// ot, over the session's connections (one OT stream each).
func sciBackend(o sci.Options) serve.BackendFunc {
	return func(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		o := o
		o.Streams = streams
		return sci.New(ctx, conn, party, r, o)
	}
}

// options builds the session options; a server with the client copy fails here, before
// listening.
func (c *config) options(f *sciir.File, e *env) (*serve.Options, error) {
	m, name, _ := netModel(c.netName)
	be := c.backend
	if be == "" {
		be = f.Backend
	}
	opt := &serve.Options{File: f, Backend: be, Timeout: c.timeout, Net: m, NetName: name, Software: softwareName, Streams: c.streams,
		MaxBatch: c.maxBatch}
	if c.party == 0 {
		opt.HelloTimeout, opt.JoinTimeout, opt.QueueTimeout = c.helloTimeout, c.joinTimeout, c.queueTimeout
		opt.SessionTimeout = c.sessionTimeout
		if opt.SessionTimeout == 0 {
			opt.SessionTimeout = -1 // no limit
		}
	}
	opt.NewBackend = e.backends[be]
	if be == fhevm.BackendName && opt.NewBackend == nil {
		opt.NewBackend = fheBackend(f, e)
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
		opt.NewBackend = sciBackend(so)
		// The handshake carries the whole configuration (mode, OT source and its parameters, HE
		// parameters), so two parties that would not interoperate stop there, naming both.
		opt.Backend = so.Describe(ring.Must(f.Program.Bits))
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
	r, err := p.Ring()
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
	b, err := c.loadInputs(f, e)
	if err != nil {
		return err
	}
	start := time.Now()
	outs := make([][]vm.Output, len(b.encoded))
	for k, in := range b.encoded {
		if outs[k], err = m.Run(ctx, in); err != nil {
			if b.batch {
				return fmt.Errorf("input %s: %w", b.items[k].name, err)
			}
			return err
		}
	}
	return c.emitAll(b, outs, f, e, nil, time.Since(start))
}

func runClient(ctx context.Context, c *config, f *sciir.File, opt *serve.Options, e *env) error {
	b, err := c.loadInputs(f, e)
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
	res, err := serve.RunBatch(ctx, nc, 1, opt, b.encoded)
	bar.Done()
	return c.finishClient(b, f, e, res, err)
}

func runLocal(ctx context.Context, c *config, f *sciir.File, opt *serve.Options, e *env) error {
	b, err := c.loadInputs(f, e)
	if err != nil {
		return err
	}
	sopt := *opt
	copt := *opt
	sopt.MaxBatch = max(len(b.encoded), sopt.MaxBatch)
	bar := c.progress(e, &copt)
	res, _, err := serve.RunLocalBatch(ctx, &sopt, &copt, b.encoded)
	bar.Done()
	return c.finishClient(b, f, e, res, err)
}

// finishClient writes a client run's outputs and reports; after a failure, the reports of what
// ran (the error is the run's).
func (c *config) finishClient(b *batchRun, f *sciir.File, e *env, res *serve.Result, err error) error {
	if err != nil {
		c.writeReports(res, e)
		return err
	}
	if err := c.emitAll(b, res.Batch, f, e, res.Report, 0); err != nil {
		return err
	}
	return c.writeReports(res, e)
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

func runServer(ctx context.Context, c *config, opt *serve.Options, e *env) error {
	var tlsConf *tls.Config
	switch {
	case c.tlsCert != "":
		var err error
		if tlsConf, err = serve.LoadServerTLS(c.tlsCert, c.tlsKey); err != nil {
			return err
		}
	case c.tlsSelf != "":
		conf, fp, created, err := serve.LoadOrCreateServerKey(c.tlsSelf)
		if err != nil {
			return err
		}
		tlsConf = conf
		how := "kept in"
		if created {
			how = "made and saved to"
		}
		fmt.Fprintf(e.stderr, "scirun: TLS key %s %s; clients connect with --tls-pin %s\n", how, c.tlsSelf, fp)
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
	s := &serve.Server{
		Options:     opt,
		MaxSessions: c.maxSessions,
		MaxPending:  c.maxPending,
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
