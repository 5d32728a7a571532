package main

// The three-party backend (sci3): the helper party and the data parties' links to it.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"

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

// checkHelper checks the flags of helper mode: --listen and the program (the client copy
// suffices), nothing that belongs to a data party.
func (c *config) checkHelper() error {
	for _, f := range []string{"party", "local", "clear", "connect", "input", "output", "serve", "tls-cert", "tls-key", "tls-self", "tls-ca", "tls-pin"} {
		if c.set[f] {
			return cli.Usagef("--%s is not used by the helper (--helper)", f)
		}
	}
	if c.helper != "" {
		return cli.Usagef("--helper=%s: the helper listens (--listen ADDR); --helper ADDR is for the data parties", c.helper)
	}
	return nil
}

// runHelper runs the helper (party 2) of sci3 sessions until interrupted.
func runHelper(ctx context.Context, c *config, f *sciir.File, e *env) error {
	m, _, err := netModel(c.netName)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return listenError(c.listen, err)
	}
	defer ln.Close()
	if !c.quiet {
		fmt.Fprintf(e.stderr, "helper (party 2, backend sci3) listening on %s: program %s…, %s; it holds no weights and sees no data\n",
			ln.Addr(), f.IDString()[:8], ringName(f))
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
		HelloTimeout: c.helloTimeout, JoinTimeout: c.joinTimeout, Net: m, Log: log})
}

// sci3Backend returns the constructor of a data party's sci3 backend: with --local, on a
// helper in this process; otherwise on the helper at --helper, to which both data parties
// present the session token party 0 draws (sent to party 1 first thing after the handshake).
func (c *config) sci3Backend(f *sciir.File, m *netmodel.Model, e *env) (serve.BackendFunc, error) {
	topt := transport.Options{Timeout: c.timeout, Net: m}
	if c.timeout == 0 {
		topt.Timeout = serve.DefaultTimeout
	}
	perRun := sci3.LinearCalls(f.Program)
	var newLink func(ctx context.Context, conn *transport.Conn, party int) (*dealer.Link, error)
	if c.local {
		lt := &localTrio{}
		newLink = func(ctx context.Context, _ *transport.Conn, party int) (*dealer.Link, error) {
			t, err := lt.get(ctx, topt)
			if err != nil {
				return nil, err
			}
			return t.Links[party], nil
		}
	} else {
		if c.helper == "" {
			return nil, cli.Usagef("backend sci3 needs the helper: --helper HOST:PORT (start it with scirun --helper --listen ADDR PROGRAM)")
		}
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
			return serve.DialHelper(ctx, c.helper, party, f, sci3.Name, tok, topt)
		}
	}
	return func(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		link, err := newLink(ctx, conn, party)
		if err != nil {
			return nil, err
		}
		b, err := sci3.New(ctx, conn, link, r, sci3.Options{Streams: streams, LinearPerRun: perRun})
		if err != nil {
			return nil, err
		}
		return &sci3Party{Backend: b, quiet: c.quiet, out: e.stderr}, nil
	}, nil
}

// sci3Party prints the traffic with the helper when the session ends (the session report
// counts the traffic between the data parties only).
type sci3Party struct {
	*sci3.Backend
	quiet bool
	out   io.Writer
}

func (b *sci3Party) Close() error {
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
