package serve

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// MaxStreams bounds the connections (OT streams) of one session.
const MaxStreams = 16

// Token identifies a session's extra stream connections: 128 random bits from crypto/rand that
// the server issues in its accepting verdict. A connection that presents another token is
// refused, so that no third party can attach itself to a session.
type Token [16]byte

// String returns the first bytes of the token in hex (for logs; not enough to join).
func (t Token) String() string { return hex.EncodeToString(t[:4]) + "…" }

// ID names the session in logs and reports at both parties: 16 hex digits of a hash of the
// token, which do not help to join the session.
func (t Token) ID() string {
	sum := sha256.Sum256(append([]byte("scirun session id\x00"), t[:]...))
	return hex.EncodeToString(sum[:8])
}

func newToken() (Token, error) {
	var t Token
	if _, err := rand.Read(t[:]); err != nil {
		return Token{}, fmt.Errorf("session token: %w", err)
	}
	return t, nil
}

// Stream-join wire format (docs/usage.md, "Stream connections"): the client opens each extra
// connection with magic "SCIJON", version u16, stream index u8 (1..streams-1), token [16]; the
// server answers with a verdict (status u8, reason length u16, reason) once the session has all
// its streams, or refuses the connection.
const (
	joinMagic = "SCIJON"
	joinSize  = len(joinMagic) + 2 + 1 + len(Token{})
)

func joinMessage(t Token, idx int) []byte {
	b := make([]byte, 0, joinSize)
	b = append(b, joinMagic...)
	b = binary.LittleEndian.AppendUint16(b, HandshakeVersion)
	b = append(b, byte(idx))
	return append(b, t[:]...)
}

// verdict encodes an acceptance (reason "") or a refusal.
func verdict(reason string) []byte {
	if reason == "" {
		return []byte{verdictOK, 0, 0}
	}
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	v := binary.LittleEndian.AppendUint16([]byte{verdictRefus}, uint16(len(reason)))
	return append(v, reason...)
}

// openStreams is the client's side of the extra connections: it opens n-1 connections with dial,
// sends each its join message and waits until the server has accepted them all (within
// timeout). It closes every connection it opened when it fails.
func openStreams(ctx context.Context, dial func(context.Context) (net.Conn, error), t Token, n int, timeout time.Duration) (out []net.Conn, err error) {
	defer func() {
		if err != nil {
			for _, c := range out {
				_ = c.Close()
			}
			out = nil
		}
	}()
	deadline := time.Now().Add(timeout)
	for i := 1; i < n; i++ {
		nc, err := dial(ctx)
		if err != nil {
			return out, fmt.Errorf("stream connection %d: %w", i, err)
		}
		out = append(out, nc)
		_ = nc.SetDeadline(deadline)
		if _, err := nc.Write(joinMessage(t, i)); err != nil {
			return out, fmt.Errorf("stream connection %d: sending the join: %w", i, err)
		}
	}
	stop := context.AfterFunc(ctx, func() {
		for _, c := range out {
			_ = c.SetDeadline(time.Unix(1, 0))
		}
	})
	defer stop()
	for i, nc := range out {
		if err := readVerdict(nc); err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return out, fmt.Errorf("stream connection %d: %w", i+1, err)
		}
		_ = nc.SetDeadline(time.Time{})
	}
	return out, nil
}

// readVerdict reads the server's answer to a join.
func readVerdict(nc net.Conn) error {
	var vh [3]byte
	if _, err := io.ReadFull(nc, vh[:]); err != nil {
		return fmt.Errorf("waiting for the server to accept it: %s", describeIOError("reading", "server", 0, err))
	}
	n := int(binary.LittleEndian.Uint16(vh[1:]))
	switch {
	case vh[0] == verdictOK && n == 0:
		return nil
	case vh[0] == verdictRefus && n <= maxReason:
		r := make([]byte, n)
		if _, err := io.ReadFull(nc, r); err != nil {
			return fmt.Errorf("reading the server's refusal: %w", err)
		}
		return fmt.Errorf("%w: the server refused it: %s", ErrHandshake, r)
	}
	return fmt.Errorf("%w: invalid answer % x from the server", ErrHandshake, vh)
}

// registry matches the extra connections a server accepts to the sessions waiting for them, by
// session token. It is safe for concurrent use.
type registry struct {
	mu sync.Mutex
	m  map[Token]*pendingStreams
}

// pendingStreams are the extra connections of one session as they arrive.
type pendingStreams struct {
	conns []net.Conn // stream i at conns[i-1]
	got   int
	full  chan struct{} // closed when every stream has arrived
	gone  bool          // the session stopped waiting
}

func newRegistry() *registry { return &registry{m: make(map[Token]*pendingStreams)} }

// open makes the registry accept n-1 connections presenting t.
func (r *registry) open(t Token, n int) *pendingStreams {
	p := &pendingStreams{conns: make([]net.Conn, n-1), full: make(chan struct{})}
	r.mu.Lock()
	r.m[t] = p
	r.mu.Unlock()
	return p
}

// deliver hands nc, presenting token t as stream idx, to its session. A non-empty result is the
// reason the connection is refused (the caller tells the peer and closes it).
func (r *registry) deliver(t Token, idx int, nc net.Conn) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.m[t]
	switch {
	case p == nil || p.gone:
		return "unknown or expired session token"
	case idx < 1 || idx > len(p.conns):
		return fmt.Sprintf("stream index %d: the session has streams 1 to %d", idx, len(p.conns))
	case p.conns[idx-1] != nil:
		return fmt.Sprintf("stream %d of the session is already connected", idx)
	}
	p.conns[idx-1] = nc
	p.got++
	if p.got == len(p.conns) {
		delete(r.m, t)
		close(p.full)
	}
	return ""
}

// wait returns the session's extra connections (stream 1 first) once they have all arrived, and
// acknowledges them to the client. When they do not arrive within timeout or ctx ends first,
// it refuses and closes those that did and fails; the token is then no longer accepted.
//
// Meanwhile it watches primary, the session's first connection: a client sends nothing there
// until its streams are accepted, so data or a close on it ends the wait at once.
func (r *registry) wait(ctx context.Context, t Token, p *pendingStreams, primary net.Conn, timeout time.Duration) ([]net.Conn, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	watched := make(chan error, 1)
	go func() {
		var b [1]byte
		n, err := primary.Read(b[:])
		if n > 0 {
			err = errors.New("the client sent protocol data before its stream connections were accepted")
		}
		watched <- err
	}()
	var why error
	select {
	case err := <-watched:
		watched <- err // for stopWatch
		why = fmt.Errorf("waiting for the client's stream connections: %s", describeIOError("watching the first connection", "client", timeout, err))
	case <-p.full:
	case <-timer.C:
		why = fmt.Errorf("the client's stream connections did not all arrive within %v", timeout)
	case <-ctx.Done():
		why = fmt.Errorf("waiting for the client's stream connections: %w", context.Cause(ctx))
	}
	// Stop watching before the acknowledgements, after which the client may send.
	_ = primary.SetReadDeadline(time.Unix(1, 0))
	if err := <-watched; why == nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		why = fmt.Errorf("waiting for the client's stream connections: %s", describeIOError("watching the first connection", "client", timeout, err))
	}
	_ = primary.SetReadDeadline(time.Time{})
	if why != nil {
		if r.expireWith(t, p, why.Error()) {
			for _, c := range p.conns {
				_ = c.Close()
			}
		}
		return nil, why
	}
	for i, c := range p.conns {
		_ = c.SetWriteDeadline(time.Now().Add(timeout))
		_, err := c.Write(verdict(""))
		_ = c.SetWriteDeadline(time.Time{})
		if err != nil {
			for _, c := range p.conns {
				_ = c.Close()
			}
			return nil, fmt.Errorf("accepting stream connection %d: %w", i+1, err)
		}
	}
	return p.conns, nil
}

// expire stops accepting connections for t (a session that failed before waiting for them) and
// refuses those that came.
func (r *registry) expire(t Token, p *pendingStreams) {
	if r.expireWith(t, p, "the session ended") {
		for _, c := range p.conns {
			_ = c.Close()
		}
	}
}

// expireWith stops accepting connections for t unless they have all arrived (then it reports
// true); the connections that came are refused with reason and closed.
func (r *registry) expireWith(t Token, p *pendingStreams, reason string) (complete bool) {
	r.mu.Lock()
	complete = p.got == len(p.conns)
	if !complete {
		p.gone = true
		delete(r.m, t)
	}
	r.mu.Unlock()
	if complete {
		return true
	}
	for _, c := range p.conns {
		if c != nil {
			_ = c.SetWriteDeadline(time.Now().Add(time.Second))
			_, _ = c.Write(verdict(reason))
			_ = c.Close()
		}
	}
	return false
}

// prefixConn replays bytes already read from a connection before reading on.
type prefixConn struct {
	net.Conn
	pre []byte
	// helloSent: the server's hello was sent already (awaitVerdict), and pre holds the
	// client's verdict after its hello.
	helloSent bool
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.pre) > 0 {
		n := copy(b, c.pre)
		c.pre = c.pre[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// isTLS reports whether nc (possibly with a replayed prefix) is a TLS connection.
func isTLS(nc net.Conn) bool {
	if pc, ok := nc.(*prefixConn); ok {
		nc = pc.Conn
	}
	_, ok := nc.(*tls.Conn)
	return ok
}

// classify performs the TLS handshake of an accepted connection if configured and reads its
// first bytes, all before deadline. A stream join is delivered to its session through reg (or
// refused); classify then returns (nil, nil, nil). A hello is read whole (at most
// prefixSize+maxBodySize bytes) and returned parsed (nil when it does not parse), with the
// connection replaying the bytes read, for the session's handshake; so is garbage, which the
// handshake reports. On failure the connection is closed.
func (s *Server) classify(ctx context.Context, nc net.Conn, reg *registry, deadline time.Time) (net.Conn, *Hello, error) {
	wait := time.Until(deadline).Round(time.Millisecond)
	_ = nc.SetDeadline(deadline)
	nc, err := s.wrapTLS(ctx, nc, deadline)
	if err != nil {
		return nil, nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	first := make([]byte, len(joinMagic))
	n, err := io.ReadFull(nc, first)
	if n == 0 && err != nil {
		_ = nc.Close()
		return nil, nil, &HandshakeError{Reason: describeIOError("waiting for the client's hello", "client", wait, err), Err: err}
	}
	if string(first[:n]) == helloMagic {
		pre, h, err := readHello(nc, first)
		if err != nil {
			_ = nc.Close()
			return nil, nil, &HandshakeError{Reason: describeIOError("reading the client's hello", "client", wait, err), Err: err}
		}
		_ = nc.SetDeadline(time.Time{})
		return &prefixConn{Conn: nc, pre: pre}, h, nil
	}
	if string(first[:n]) != joinMagic {
		// Garbage, which the handshake reports.
		_ = nc.SetDeadline(time.Time{})
		return &prefixConn{Conn: nc, pre: first[:n]}, nil, nil
	}
	rest := make([]byte, joinSize-len(joinMagic))
	if err == nil {
		_, err = io.ReadFull(nc, rest)
	}
	if err != nil {
		_ = nc.Close()
		return nil, nil, fmt.Errorf("stream connection: reading the join: %w", err)
	}
	var t Token
	copy(t[:], rest[3:])
	reason := ""
	if v := binary.LittleEndian.Uint16(rest); v != HandshakeVersion {
		reason = fmt.Sprintf("stream join of version %d, server speaks %d", v, HandshakeVersion)
	} else {
		_ = nc.SetDeadline(time.Time{})
		reason = reg.deliver(t, int(rest[2]), nc)
	}
	if reason != "" {
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write(verdict(reason))
		_ = nc.Close()
		return nil, nil, fmt.Errorf("stream connection refused: %s", reason)
	}
	return nil, nil, nil
}
