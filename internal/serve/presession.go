package serve

import (
	"container/list"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Pre-session limits: what a connection may cost the server before it is a running session.
// Every stage has a deadline, and no stage holds a place that an honest client needs: accepting
// never waits, a connection awaiting its hello (or its TLS handshake, or a stream join) costs
// one goroutine and at most prefixSize+maxBodySize bytes of buffer, and only a client whose
// whole hello has arrived and matches the server's program takes a session slot or a place in
// the queue. See docs/security.md, "Denial of service".
const (
	// DefaultHelloTimeout bounds, when Options.HelloTimeout is zero, the time from accepting a
	// connection to having its whole hello (or stream join), TLS handshake included.
	DefaultHelloTimeout = 10 * time.Second
	// DefaultJoinTimeout bounds, when Options.JoinTimeout is zero, the wait of a multi-stream
	// session for its stream connections after the handshake.
	DefaultJoinTimeout = 10 * time.Second
	// DefaultQueueTimeout bounds, when Options.QueueTimeout is zero, the wait of a client with a
	// valid hello for a free session slot; it is then refused as busy.
	DefaultQueueTimeout = time.Minute
	// DefaultMaxPending is the number of accepted connections that may await their hello at
	// once when Server.MaxPending is zero; beyond it the oldest is dropped.
	DefaultMaxPending = 256
)

// helloTimeout is the pre-session deadline of a server connection (never above Timeout).
func (o *Options) helloTimeout() time.Duration {
	d := DefaultHelloTimeout
	if o.HelloTimeout > 0 {
		d = o.HelloTimeout
	}
	return min(d, o.timeout())
}

// joinTimeout bounds the wait for a session's stream connections (never above Timeout).
func (o *Options) joinTimeout() time.Duration {
	d := DefaultJoinTimeout
	if o.JoinTimeout > 0 {
		d = o.JoinTimeout
	}
	return min(d, o.timeout())
}

// queueTimeout bounds a queued client's wait for a session slot.
func (o *Options) queueTimeout() time.Duration {
	if o.QueueTimeout > 0 {
		return o.QueueTimeout
	}
	return DefaultQueueTimeout
}

// pendingSet holds the accepted connections that are not yet part of a session, oldest first,
// at most max of them: adding one more evicts (closes) the oldest, so that connections that
// never speak cannot keep a newer one (an honest client) from being served. It is safe for
// concurrent use.
type pendingSet struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *pendingConn, oldest first
}

// pendingConn is one accepted connection awaiting its hello.
type pendingConn struct {
	nc      net.Conn
	elem    *list.Element
	evicted bool
}

func newPendingSet(max int) *pendingSet {
	return &pendingSet{max: max, order: list.New()}
}

// add registers nc; when the set was full it evicts the oldest connection and closes it (its
// handler then sees the close and reports the eviction through done).
func (p *pendingSet) add(nc net.Conn) *pendingConn {
	pc := &pendingConn{nc: nc}
	p.mu.Lock()
	var victim *pendingConn
	if p.order.Len() >= p.max {
		victim = p.order.Remove(p.order.Front()).(*pendingConn)
		victim.evicted = true
		victim.elem = nil
	}
	pc.elem = p.order.PushBack(pc)
	p.mu.Unlock()
	if victim != nil {
		_ = victim.nc.Close()
	}
	return pc
}

// readd puts pc back at the newest end of the set (it awaits another message), evicting the
// oldest connection when the set is full.
func (p *pendingSet) readd(pc *pendingConn) {
	p.mu.Lock()
	var victim *pendingConn
	if pc.elem == nil && !pc.evicted {
		if p.order.Len() >= p.max {
			victim = p.order.Remove(p.order.Front()).(*pendingConn)
			victim.evicted = true
			victim.elem = nil
		}
		pc.elem = p.order.PushBack(pc)
	}
	p.mu.Unlock()
	if victim != nil {
		_ = victim.nc.Close()
	}
}

// done removes pc from the set (it became a session, a stream, or failed) and reports whether
// it had been evicted.
func (p *pendingSet) done(pc *pendingConn) (evicted bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pc.elem != nil {
		p.order.Remove(pc.elem)
		pc.elem = nil
	}
	return pc.evicted
}

// readHello reads the rest of a client's hello after its magic (in first): the prefix and the
// body, at most prefixSize+maxBodySize bytes, within nc's read deadline. It returns every byte
// read (for the handshake to replay) and the hello when it parses (nil for a hello of another
// version or a malformed one, which the handshake then reports to the client).
func readHello(nc net.Conn, first []byte) ([]byte, *Hello, error) {
	buf := make([]byte, prefixSize, prefixSize+256)
	copy(buf, first)
	if _, err := io.ReadFull(nc, buf[len(first):]); err != nil {
		return nil, nil, err
	}
	version, party, bodyLen, err := parsePrefix(buf)
	if err != nil {
		return buf, nil, nil // the handshake reports it
	}
	buf = append(buf, make([]byte, bodyLen)...)
	if _, err := io.ReadFull(nc, buf[prefixSize:]); err != nil {
		return nil, nil, err
	}
	if version != HandshakeVersion {
		return buf, nil, nil
	}
	h := &Hello{Version: version, Party: party}
	if h.parseBody(buf[prefixSize:]) != nil {
		return buf, nil, nil
	}
	return buf, h, nil
}

// awaitVerdict sends the server's hello to a client whose hello is acceptable and waits, at most
// HelloTimeout, for the client's verdict on it, before the client may take a session slot or a
// place in the queue: so a connection that sends a valid hello and nothing more holds neither.
// (An honest client answers at once: its verdict needs only the server's hello. The server's
// verdict, which carries the session token or says the server is busy, follows when the client
// has a slot.) The connection stays pending meanwhile (evicted like any other). On success, pc
// replays the client's hello and verdict to the session's handshake, which does not send the
// hello again.
func (s *Server) awaitVerdict(ctx context.Context, c *prefixConn, pending *pendingSet, pc *pendingConn) error {
	wait := s.Options.helloTimeout()
	_ = c.SetDeadline(time.Now().Add(wait))
	defer c.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = c.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	pending.readd(pc)
	defer pending.done(pc)
	if _, err := c.Conn.Write(s.Options.hello(0, 0).marshal()); err != nil {
		return &HandshakeError{Reason: describeIOError("sending the hello", "client", wait, err), Err: err}
	}
	var v [3]byte
	if _, err := io.ReadFull(c.Conn, v[:]); err != nil {
		if pending.done(pc) {
			return errors.New("dropped: too many connections were awaiting their hello or verdict; this was the oldest")
		}
		return &HandshakeError{Reason: describeIOError("waiting for the client's verdict on the server's hello", "client", wait, err), Err: err}
	}
	n := int(binary.LittleEndian.Uint16(v[1:]))
	switch {
	case v[0] == verdictOK && n == 0:
		c.pre = append(c.pre, v[:]...)
		c.helloSent = true
		return nil
	case v[0] == verdictRefus:
		r := make([]byte, min(n, maxReason))
		_, _ = io.ReadFull(c.Conn, r)
		return &HandshakeError{Reason: "the client refused the session: " + string(r), Refused: true}
	}
	return &HandshakeError{Reason: fmt.Sprintf("the client sent an invalid verdict (byte %d, %d-byte payload)", v[0], n)}
}

// acceptable reports whether a client's hello (nil: unreadable) would pass the handshake with
// this server, so that it may wait for a session slot; others are answered at once.
func (s *Server) acceptable(peer *Hello) bool {
	if peer == nil {
		return false
	}
	return Compare(s.Options.hello(0, 0), *peer) == ""
}

// waitForSlot takes a session slot for the client on c, whose hello is complete and acceptable:
// at once if one is free, else after waiting in the queue for at most the queue timeout. It
// returns "" with the slot taken, or the reason the client is turned away (the queue is full, the
// wait timed out, or the server stopped accepting; stopped is then true and no refusal is due),
// or, with gone set, why the client is no longer there: it closed its connection while queued
// (or sent bytes, which no honest client does before the server's verdict), so that a client
// that queues and disconnects does not keep its place.
func (s *Server) waitForSlot(acceptCtx context.Context, st *serveState, c *prefixConn) (reason string, stopped bool, gone error) {
	select {
	case st.running <- struct{}{}:
		return "", false, nil
	default:
	}
	select {
	case st.queued <- struct{}{}:
	default:
		return fmt.Sprintf("the server is busy (%d sessions running and %d clients waiting): try again later",
			cap(st.running), cap(st.queued)), false, nil
	}
	s.Metrics.queue(1)
	defer func() { <-st.queued; s.Metrics.queue(-1) }()
	left, stopWatch := watchQueued(c)
	wait := s.Options.queueTimeout()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case st.running <- struct{}{}:
		if err := stopWatch(); err != nil {
			<-st.running
			return "", false, err
		}
		return "", false, nil
	case <-left:
		return "", false, stopWatch()
	case <-timer.C:
		_ = stopWatch()
		return fmt.Sprintf("the server is busy: no session slot came free within %v (%d sessions running): try again later",
			wait, cap(st.running)), false, nil
	case <-acceptCtx.Done():
		_ = stopWatch()
		return "the server stopped accepting sessions", true, nil
	}
}

// watchQueued reads from a queued client's connection until stop is called: left is closed when
// the read returns first (the client closed the connection, or sent a byte). stop ends the read
// (with a past read deadline, which leaves plain and TLS connections usable) and returns nil if
// the client is still there and silent, else why not.
func watchQueued(c *prefixConn) (left <-chan struct{}, stop func() error) {
	ch := make(chan struct{})
	var (
		n   int
		err error
	)
	go func() {
		defer close(ch)
		var b [1]byte
		n, err = c.Conn.Read(b[:])
	}()
	return ch, func() error {
		_ = c.Conn.SetReadDeadline(time.Unix(1, 0))
		<-ch
		_ = c.Conn.SetReadDeadline(time.Time{})
		var ne net.Error
		switch {
		case n > 0:
			return errors.New("it sent data before the server's verdict")
		case err == nil || errors.As(err, &ne) && ne.Timeout():
			return nil
		case errors.Is(err, io.EOF):
			return errors.New("it closed the connection")
		}
		return err
	}
}
