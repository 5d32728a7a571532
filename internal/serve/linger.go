package serve

import (
	"io"
	"net"
	"sync/atomic"
	"time"
)

// abortLinger and abortLingerBytes bound how long, and how much, a party that aborted a session
// keeps reading (and discarding) of what the peer still sends before it closes the connection:
// enough for an honest peer's flight in progress, too little to be worth a flood.
const (
	abortLinger      = time.Second
	abortLingerBytes = 4 << 20
)

// lingerConn is a session connection that, once its party has aborted the session, closes
// gracefully: it half-closes (the peer reads the abort frame, then EOF) and reads and discards
// until the peer closes too, abortLinger has passed or abortLingerBytes were read, and only then
// closes. Closing at once
// with the peer's bytes unread would make the kernel reset the connection, and a peer still
// writing would then fail with "connection reset" before it ever read the abort and its reason.
type lingerConn struct {
	net.Conn
	until atomic.Int64 // unix nanoseconds; 0: not aborted, close at once
}

// aborted arms the graceful close: the connection lingers until deadline at most.
func (c *lingerConn) aborted(deadline time.Time) { c.until.CompareAndSwap(0, deadline.UnixNano()) }

func (c *lingerConn) Close() error {
	if u := c.until.Load(); u != 0 {
		if closeWrite(c.Conn) {
			_ = c.Conn.SetReadDeadline(time.Unix(0, u))
			_, _ = io.CopyN(io.Discard, c.Conn, abortLingerBytes)
		}
	}
	return c.Conn.Close()
}

// closeWrite half-closes nc (TCP or TLS, possibly with a replayed prefix) and reports whether it
// could.
func closeWrite(nc net.Conn) bool {
	if pc, ok := nc.(*prefixConn); ok {
		nc = pc.Conn
	}
	cw, ok := nc.(interface{ CloseWrite() error })
	return ok && cw.CloseWrite() == nil
}
