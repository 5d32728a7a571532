package transport

// Pipelined receivers.
//
// A protocol that runs many independent chunks of one batch can interleave them round by round
// (every chunk's first flight, then every chunk's second, …) so that the batch costs the
// protocol's depth in round trips rather than the depth times the number of chunks. The chunks
// run as coroutines on one goroutine at a time; each gives way when it is about to wait for the
// peer. SetYield installs the hook that makes a chunk give way, and EndFlight marks where one
// round of the interleaving ends in the accounting.

// SetYield installs y and returns the hook it replaces (nil: none). While a hook is installed, a
// receive that follows a frame sent since the hook last ran calls y first, on the receiving
// goroutine, before it flushes or reads; if y returns an error, the receive returns it without
// touching the connection. A receive that continues an incoming flight (nothing sent since the
// last yield) does not call y. Receives also stop ending the sender's flight in the accounting
// (see Stats.Rounds); the caller ends each flight with EndFlight instead.
//
// SetYield forgets the frames sent so far: a coroutine scheduler calls it
// before it resumes each coroutine, so that one coroutine's sends never make
// another give way. It must be called from the receiving goroutine, or while
// that is idle.
func (c *Conn) SetYield(y func() error) (prev func() error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, c.yield = c.yield, y
	c.yieldArmed.Store(false)
	return prev
}

// EndFlight ends this party's current flight in the accounting: the next frame sent starts a new
// round. Receives do this themselves unless a yield hook is installed (see SetYield).
func (c *Conn) EndFlight() {
	c.mu.Lock()
	c.sending = false
	c.mu.Unlock()
}

// WouldYield reports whether the next receive would call the yield hook: one
// is installed and a frame was sent since it last ran (or since SetYield).
func (c *Conn) WouldYield() bool {
	if !c.yieldArmed.Load() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.yield != nil
}

// SetReadAhead raises the read-ahead bound (Options.MaxReadAhead) to n bytes, at most
// Options.MaxQueued, until it is called again; n ≤ 0 restores the configured bound. It returns
// the bound now in force. Interleaved chunks need it: the peer may send a whole round of every
// chunk's frames before this party has read the previous round's, so a party holds up to a
// round of the peer's traffic, and the caller sizes its rounds to fit.
func (c *Conn) SetReadAhead(n int64) int64 {
	n = min(max(n, 0), c.maxQ)
	c.raised.Store(n)
	c.signal()
	return max(c.ahead, n)
}
