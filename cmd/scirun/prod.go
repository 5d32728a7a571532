package main

// A server for production: only allowed clients (mutual TLS, pinned client keys), per-client
// limits, metrics and probes, structured logs, and a bounded drain (docs/usage.md, "Running a
// server in production").

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/serve"
)

// DefaultDrainTimeout is the default of --drain-timeout.
const DefaultDrainTimeout = 30 * time.Second

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

// checkProd checks the production flags (called by check).
func (c *config) checkProd() error {
	if c.logFormat != "text" && c.logFormat != "json" {
		return cli.Usagef("--log-format %q: want text or json", c.logFormat)
	}
	if c.maxPerClient < 0 || c.perMinute < 0 {
		return cli.Usagef("--max-sessions-per-client and --sessions-per-minute: want 0 (no limit) or more")
	}
	if c.drainTimeout < 0 {
		return cli.Usagef("--drain-timeout %v: want a positive duration, or 0 to wait for the sessions however long they run", c.drainTimeout)
	}
	for _, p := range c.tlsClientPin {
		if _, err := serve.ParsePin(p); err != nil {
			return cli.Usagef("--tls-client-pin: %v", err)
		}
	}
	if (c.tlsClientCert == "") != (c.tlsClientKey == "") {
		return cli.Usagef("--tls-client-cert and --tls-client-key go together")
	}
	if c.tlsClientSelf != "" && c.tlsClientCert != "" {
		return cli.Usagef("--tls-client-self and --tls-client-cert exclude each other")
	}
	if c.party == 0 && c.clientAuth() && c.tlsCert == "" && c.tlsSelf == "" {
		return cli.Usagef("--tls-client-ca and --tls-client-pin(s) need the server's TLS: --tls-self or --tls-cert and --tls-key")
	}
	if c.party == 1 && (c.tlsClientCert != "" || c.tlsClientSelf != "") && c.tlsPin == "" && c.tlsCA == "" {
		return cli.Usagef("a client certificate needs TLS: --tls-pin or --tls-ca")
	}
	if c.metrics != "" {
		if _, _, err := net.SplitHostPort(c.metrics); err != nil {
			return cli.Usagef("--metrics %q: want an address host:port (e.g. :9090)", c.metrics)
		}
	}
	return nil
}

// clientAuth reports whether the server admits only clients with an allowed certificate.
func (c *config) clientAuth() bool {
	return c.tlsClientCA != "" || len(c.tlsClientPin) > 0 || c.tlsClientPins != ""
}

// serverClientAuth makes the server's TLS configuration require an allowed client certificate
// when the flags ask for one.
func (c *config) serverClientAuth(conf *tls.Config) (*tls.Config, error) {
	if !c.clientAuth() {
		return conf, nil
	}
	a, err := serve.LoadClientAuth(c.tlsClientCA, c.tlsClientPin, c.tlsClientPins)
	if err != nil {
		return nil, err
	}
	return a.Apply(conf), nil
}

// withClientCert adds the client's own certificate to its TLS configuration.
func (c *config) withClientCert(conf *tls.Config, e *env) (*tls.Config, error) {
	var cert tls.Certificate
	switch {
	case c.tlsClientCert != "":
		var err error
		if cert, err = serve.LoadClientCert(c.tlsClientCert, c.tlsClientKey); err != nil {
			return nil, err
		}
	case c.tlsClientSelf != "":
		var (
			fp      string
			created bool
			err     error
		)
		if cert, fp, created, err = serve.LoadOrCreateClientKey(c.tlsClientSelf); err != nil {
			return nil, err
		}
		how := "kept in"
		if created {
			how = "made and saved to"
		}
		fmt.Fprintf(e.stderr, "scirun: TLS client key %s %s; the server admits it with --tls-client-pin %s\n", how, c.tlsClientSelf, fp)
	default:
		return conf, nil
	}
	conf = conf.Clone()
	conf.Certificates = []tls.Certificate{cert}
	return conf, nil
}

// logger is the --serve server's structured log on stderr (--log-format).
func (c *config) logger(e *env) *slog.Logger {
	if c.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(e.stderr, nil))
	}
	return slog.New(slog.NewTextHandler(e.stderr, nil))
}

// production configures the --serve server's limits, drain and metrics, and starts the metrics
// endpoint; stop shuts it down.
func (c *config) production(s *serve.Server, e *env) (stop func(), err error) {
	s.DrainTimeout = c.drainTimeout
	s.MaxSessionsPerClient, s.SessionsPerMinute = c.maxPerClient, c.perMinute
	if c.metrics == "" {
		return func() {}, nil
	}
	s.Metrics = serve.NewMetrics()
	ln, err := net.Listen("tcp", c.metrics)
	if err != nil {
		return nil, fmt.Errorf("--metrics: %w", listenError(c.metrics, err))
	}
	hs := &http.Server{Handler: s.Metrics.Handler(s.Accepting), ReadHeaderTimeout: 5 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.Log.Warn("metrics endpoint failed", "err", err)
		}
	}()
	s.Log.Info("metrics, /healthz and /readyz", "addr", ln.Addr().String())
	if e.metricsListening != nil {
		e.metricsListening(ln.Addr().String())
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		<-done
	}, nil
}
