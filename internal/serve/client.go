package serve

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/cryptflow-go/cryptflow/ring"
)

// DefaultConnectTimeout bounds Dial when its timeout is zero.
const DefaultConnectTimeout = 10 * time.Second

// Dial connects to the server at addr (host:port). A refused connection is retried every 50 ms
// until timeout (so a client may start before its server); other errors end the attempt at once.
// With tlsConf set it then performs the TLS handshake (within the same timeout).
func Dial(ctx context.Context, addr string, tlsConf *tls.Config, timeout time.Duration) (net.Conn, error) {
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	var nc net.Conn
	var refusedErr error // the last refusal: the deadline that ends the retries reports it
	for {
		var err error
		nc, err = d.DialContext(dctx, "tcp", addr)
		if err == nil {
			break
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			refusedErr = err
		} else if refusedErr != nil && dctx.Err() != nil {
			err = refusedErr // an attempt cut by the deadline after refusals: the server is not there
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || dctx.Err() != nil {
			return nil, dialError(ctx, addr, timeout, err)
		}
		select {
		case <-dctx.Done():
			return nil, dialError(ctx, addr, timeout, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
	if tlsConf == nil {
		return nc, nil
	}
	return tlsHandshake(dctx, nc, tlsConf, addr, handshakeHints{
		at:        " with " + addr,
		plaintext: "the server does not use TLS? drop --tls-ca and --tls-pin",
		unknownCA: "is --tls-ca the certificate that signed the server's? a --tls-self server has no CA: pass --tls-pin with the fingerprint it printed at start instead",
		hostname:  "connect by a name in the certificate, or set --tls-server-name",
	})
}

// handshakeHints are the hints a failed TLS handshake adds to its error, per cause, for the peer
// being reached (a server or a helper); at names the peer in the message (may be empty).
type handshakeHints struct {
	at, plaintext, unknownCA, hostname, other string
}

// tlsHandshake runs the client side of a TLS handshake on nc with conf (ServerName defaulting to
// addr's host) within ctx; on failure it closes nc and says why, with the hint for the cause.
func tlsHandshake(ctx context.Context, nc net.Conn, conf *tls.Config, addr string, h handshakeHints) (net.Conn, error) {
	if conf.ServerName == "" {
		conf = conf.Clone()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			conf.ServerName = host
		}
	}
	tc := tls.Client(nc, conf)
	err := tc.HandshakeContext(ctx)
	if err == nil {
		return tc, nil
	}
	_ = nc.Close()
	var rh tls.RecordHeaderError
	var ua x509.UnknownAuthorityError
	var hn x509.HostnameError
	hint := h.other
	switch {
	case errors.As(err, &rh):
		hint = h.plaintext
	case errors.As(err, &ua):
		hint = h.unknownCA
	case errors.As(err, &hn):
		hint = h.hostname
	}
	if hint == "" {
		return nil, fmt.Errorf("TLS handshake%s: %w", h.at, err)
	}
	return nil, fmt.Errorf("TLS handshake%s: %w (%s)", h.at, err, hint)
}

func dialError(ctx context.Context, addr string, timeout time.Duration, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("connecting to %s: %w", addr, ctx.Err())
	case errors.Is(err, syscall.ECONNREFUSED):
		return fmt.Errorf("cannot reach the server at %s: connection refused for %v (is 'scirun --party 0 ... --listen' running there?)", addr, timeout)
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("cannot reach the server at %s: no answer within %v (wrong address, or a firewall?)", addr, timeout)
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return fmt.Errorf("cannot reach the server at %s: unknown host %q", addr, dns.Name)
	}
	return fmt.Errorf("cannot reach the server at %s: %w", addr, err)
}

// LoadServerTLS reads a PEM certificate (chain) and key for a TLS server.
func LoadServerTLS(certFile, keyFile string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, nil
}

// LoadClientTLS returns a TLS client configuration that trusts only the PEM certificates in
// caFile (a CA, or the server's self-signed certificate). serverName overrides the name checked
// against the server's certificate (default: the host of the address dialled).
func LoadClientTLS(caFile, serverName string) (*tls.Config, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("TLS CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("TLS CA: %s holds no PEM certificate", caFile)
	}
	return &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS13}, nil
}

// RunLocal runs both parties in this process over loopback TCP (127.0.0.1, an ephemeral port):
// the server with server's options and the client with client's and inputs. It returns both
// results; the error is the client's if it failed, else the server's.
func RunLocal(ctx context.Context, server, client *Options, inputs []ring.Tensor) (cres, sres *Result, err error) {
	return RunLocalBatch(ctx, server, client, [][]ring.Tensor{inputs})
}

// RunLocalBatch is RunLocal for a batch of inferences in one session (see RunBatch); the
// server's Options.MaxBatch must allow it.
func RunLocalBatch(ctx context.Context, server, client *Options, batch [][]ring.Tensor) (cres, sres *Result, err error) {
	if err := server.Check(0); err != nil {
		return nil, nil, fmt.Errorf("server: %w", err)
	}
	if err := client.Check(1); err != nil {
		return nil, nil, fmt.Errorf("client: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("listen on loopback: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type outcome struct {
		res *Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		s := &Server{Options: server}
		res, err := s.ServeOne(ctx, ln)
		done <- outcome{res, err}
	}()
	addr := ln.Addr().String()
	nc, err := Dial(ctx, addr, nil, client.timeout())
	if err != nil {
		cancel()
		<-done
		return nil, nil, err
	}
	if client.streams() > 1 && client.DialStream == nil {
		c := *client
		c.DialStream = func(ctx context.Context) (net.Conn, error) { return Dial(ctx, addr, nil, c.timeout()) }
		client = &c
	}
	// When the client fails, Run closes (and if it can, aborts) the connection, so the server
	// fails at once too.
	cres, cerr := RunBatch(ctx, nc, 1, client, batch)
	so := <-done
	switch {
	case so.err != nil && errors.Is(so.err, ErrSessionTimeout):
		// The server's time limit is the cause; the client then only sees a closed connection.
		return cres, so.res, fmt.Errorf("server: %w", so.err)
	case cerr != nil:
		return cres, so.res, cerr
	case so.err != nil:
		return cres, so.res, fmt.Errorf("server: %w", so.err)
	}
	return cres, so.res, nil
}
