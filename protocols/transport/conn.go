package transport

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cryptflow-go/cryptflow/netmodel"
)

// HeaderSize is the number of bytes a frame adds to its payload on the wire.
const HeaderSize = 4

// DefaultTimeout bounds every read and write when Options.Timeout is zero.
// It is long because a peer may compute for a while (e.g. a large linear
// layer) between messages.
const DefaultTimeout = 5 * time.Minute

// DefaultMaxFrame is the largest frame accepted (and sent) when
// Options.MaxFrame is zero: 64 MiB, twice the largest frame the protocols
// send with their default budgets (the nonlinear OT messages of one stream,
// 2^22 words = 32 MiB).
const DefaultMaxFrame = 64 << 20

// DefaultMaxQueued bounds the received but not yet consumed payload bytes
// when Options.MaxQueued is zero.
const DefaultMaxQueued = 128 << 20

// DefaultMaxReadAhead bounds the payload bytes read ahead of the receives
// while this party neither receives nor sends, when Options.MaxReadAhead is
// zero.
const DefaultMaxReadAhead = 4 << 20

// QueueFrames is the number of incoming frames a Conn holds ahead of the
// receives, whatever their size: a protocol that lets the peer run ahead by
// more frames than this blocks the peer's writes.
const QueueFrames = 1 << 14

const (
	abortMarker = 0xFFFFFFFF
	maxReason   = 1 << 10
	bufSize     = 256 << 10
	freeLen     = 16
	// growStart is the largest buffer allocated for a frame before its
	// payload arrives; a larger frame's buffer doubles as its bytes arrive.
	growStart = bufSize
	// minKeep is the slack allowed when reusing a kept buffer for a frame.
	minKeep = 4 << 10
)

// Values of Conn.want other than 1 + an expected length.
const (
	wantNone = 0
	wantAny  = -1
)

// Errors returned by a Conn; test for them with errors.Is.
var (
	ErrPeerClosed = errors.New("transport: peer closed the connection")
	ErrTimeout    = errors.New("transport: timed out waiting for the peer")
	ErrClosed     = errors.New("transport: connection closed")
	ErrFrameSize  = errors.New("transport: unexpected frame size")
)

// AbortError is returned by receives after the peer called [Conn.Abort].
type AbortError struct{ Reason string }

func (e *AbortError) Error() string { return "transport: peer aborted: " + e.Reason }

// Options configures a Conn. The zero value is usable.
type Options struct {
	// Timeout bounds each wait for the peer (a receive, a socket write).
	// Zero means DefaultTimeout; a negative value disables the bound.
	Timeout time.Duration
	// Net, when non-nil, emulates this link on incoming frames, as a link
	// of this Conn's own.
	Net *netmodel.Model
	// Link, when non-nil, emulates a link on incoming frames that this Conn
	// shares with every other Conn given the same Link (the streams of one
	// party share its downlink, as on a real network). It takes precedence
	// over Net.
	Link *Link
	// MaxFrame is the largest frame accepted from the peer (and sent).
	// Zero means DefaultMaxFrame. A larger frame from the peer ends the
	// connection with an error wrapping ErrFrameSize. A frame past the
	// read-ahead bound is read only when a receive waits for exactly its
	// length (see "Receive buffering"), and its buffer grows as its bytes
	// arrive, so a frame header alone does not make the Conn allocate.
	MaxFrame int
	// MaxQueued bounds the payload bytes received from the peer but not yet
	// consumed by a receive. When a frame would exceed it, the Conn stops
	// reading the socket until receives drain the queue (back-pressure), so
	// a peer that sends faster than the protocol reads cannot grow memory
	// without bound. A single frame is always admitted into an empty queue.
	// Zero means DefaultMaxQueued. It must exceed what the peer sends in one
	// flight while this party is itself sending, or both sides may stall
	// until the timeout.
	//
	// Within MaxQueued, what the Conn reads depends on what this party does
	// (see the package documentation, "Receive buffering"): a waiting receive
	// admits the next frame; otherwise at most MaxReadAhead bytes are read
	// ahead, or, while this party is writing to the socket, MaxReadAhead plus
	// the bytes of its own current flight.
	MaxQueued int
	// MaxReadAhead bounds the payload bytes read ahead of the receives while
	// this party is neither waiting in a receive nor writing. Zero means
	// DefaultMaxReadAhead; it is at most MaxQueued.
	MaxReadAhead int
}

// Stats counts one direction-aware slice of a connection's traffic.
type Stats struct {
	BytesSent, BytesRecv   int64 // wire bytes, frame headers included
	FramesSent, FramesRecv int64
	Rounds                 int64 // flights: maximal runs of consecutive sends (pipelined: see SetYield)
}

// PayloadSent is BytesSent without the frame headers.
func (s Stats) PayloadSent() int64 { return s.BytesSent - HeaderSize*s.FramesSent }

// PayloadRecv is BytesRecv without the frame headers.
func (s Stats) PayloadRecv() int64 { return s.BytesRecv - HeaderSize*s.FramesRecv }

// Add returns the field-wise sum of s and t.
func (s Stats) Add(t Stats) Stats {
	return Stats{s.BytesSent + t.BytesSent, s.BytesRecv + t.BytesRecv,
		s.FramesSent + t.FramesSent, s.FramesRecv + t.FramesRecv, s.Rounds + t.Rounds}
}

// Sub returns the field-wise difference s − t.
func (s Stats) Sub(t Stats) Stats {
	return Stats{s.BytesSent - t.BytesSent, s.BytesRecv - t.BytesRecv,
		s.FramesSent - t.FramesSent, s.FramesRecv - t.FramesRecv, s.Rounds - t.Rounds}
}

// PhaseStats is the traffic of one phase label.
type PhaseStats struct {
	Phase string
	Stats
}

type frame struct {
	buf []byte
	at  time.Time // earliest delivery (network model); zero means now
}

// Conn is a framed full-duplex channel to the peer. See the package
// documentation for its guarantees.
type Conn struct {
	nc      net.Conn
	timeout time.Duration
	link    *Link
	maxFr   int
	maxQ    int64
	ahead   int64        // read-ahead bound (≤ maxQ)
	raised  atomic.Int64 // a higher read-ahead bound while set (SetReadAhead)

	// Send side (guarded by wmu).
	wmu   sync.Mutex
	bw    *bufio.Writer
	wctx  context.Context
	werr  error
	hdr   [HeaderSize]byte
	spack []uint64

	// Receive side (one goroutine at a time).
	frames chan frame
	queued atomic.Int64  // payload bytes in frames (readLoop adds, next subtracts)
	wake   chan struct{} // signalled (capacity 1) when readLoop may admit more: a frame consumed, a receive waiting, a socket write started
	// What this party is doing, for readLoop's admission of frames.
	want    atomic.Int64 // a receive waits for a frame: wantNone, wantAny (RecvFrame), or 1 + the length Recv expects
	nframes atomic.Int64 // frames in frames (readLoop adds, next subtracts): zero-length frames count too
	writing atomic.Int32 // a socket write is in progress
	flight  atomic.Int64 // payload bytes sent since the last frame received
	rerr    error        // set by readLoop before it closes frames
	timer   *time.Timer
	rpack   []uint64

	// Buffers of consumed frames, kept for reuse (oldest first); their
	// capacities sum to freed ≤ MaxQueued.
	freeMu sync.Mutex
	free   [][]byte
	freed  int64

	done      chan struct{}
	closeOnce sync.Once

	// Statistics.
	mu      sync.Mutex
	phase   string
	cur     *Stats
	phases  map[string]*Stats
	order   []string
	total   Stats
	sending bool

	// Pipelining (see SetYield).
	yield      func() error // guarded by mu
	yieldArmed atomic.Bool  // a frame was sent since the hook last ran (only set while yield != nil)
}

// NewConn wraps an established net.Conn. The Conn owns nc from now on.
func NewConn(nc net.Conn, opt Options) *Conn {
	c := &Conn{
		nc:      nc,
		timeout: opt.Timeout,
		maxFr:   opt.MaxFrame,
		frames:  make(chan frame, QueueFrames),
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		phases:  map[string]*Stats{},
	}
	if c.timeout == 0 {
		c.timeout = DefaultTimeout
	}
	if c.maxFr <= 0 || c.maxFr >= abortMarker {
		c.maxFr = DefaultMaxFrame
	}
	c.maxQ = int64(opt.MaxQueued)
	if c.maxQ <= 0 {
		c.maxQ = DefaultMaxQueued
	}
	c.ahead = int64(opt.MaxReadAhead)
	if c.ahead <= 0 {
		c.ahead = DefaultMaxReadAhead
	}
	c.ahead = min(c.ahead, c.maxQ)
	switch {
	case opt.Link != nil:
		c.link = opt.Link
	case opt.Net != nil:
		c.link = NewLink(*opt.Net)
	}
	c.bw = bufio.NewWriterSize(deadlineWriter{c}, bufSize)
	c.timer = time.NewTimer(time.Hour)
	c.timer.Stop()
	c.setPhaseLocked("")
	go c.readLoop()
	return c
}

// Pipe returns the two ends of an in-memory connection (net.Pipe underneath,
// with the same framing, deadlines and accounting as TCP).
func Pipe(opt Options) (*Conn, *Conn) {
	a, b := net.Pipe()
	return NewConn(a, opt), NewConn(b, opt)
}

// Dial connects to a TCP address. A refused connection is retried every
// 20 ms until ctx is done (so the listening party may start second); other
// errors are returned at once.
func Dial(ctx context.Context, addr string, opt Options) (*Conn, error) {
	var d net.Dialer
	for {
		nc, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			return NewConn(nc, opt), nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("transport: dial %s: %w", addr, ctx.Err())
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("transport: dial %s: %w", addr, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("transport: dial %s: %w", addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Accept waits for one connection on ln; cancelling ctx interrupts the wait
// (and closes ln if it has no deadline support).
func Accept(ctx context.Context, ln net.Listener, opt Options) (*Conn, error) {
	type deadliner interface{ SetDeadline(time.Time) error }
	stop := context.AfterFunc(ctx, func() {
		if d, ok := ln.(deadliner); ok {
			_ = d.SetDeadline(time.Unix(1, 0))
		} else {
			_ = ln.Close()
		}
	})
	nc, err := ln.Accept()
	if !stop() {
		if d, ok := ln.(deadliner); ok {
			_ = d.SetDeadline(time.Time{})
		}
		if err == nil {
			_ = nc.Close()
		}
		return nil, fmt.Errorf("transport: accept: %w", ctx.Err())
	}
	if err != nil {
		return nil, fmt.Errorf("transport: accept: %w", err)
	}
	return NewConn(nc, opt), nil
}

// deadlineWriter sets the write deadline before every socket write and
// honours the context of the send in progress.
type deadlineWriter struct{ c *Conn }

func (w deadlineWriter) Write(p []byte) (int, error) {
	c := w.c
	if c.timeout > 0 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(c.timeout))
	} else {
		_ = c.nc.SetWriteDeadline(time.Time{})
	}
	if c.wctx != nil && c.wctx.Err() != nil {
		return 0, c.wctx.Err()
	}
	// While this party writes, the peer may be writing too: let readLoop
	// drain the peer's flight so that neither side's write blocks forever.
	c.writing.Add(1)
	c.signal()
	n, err := c.nc.Write(p)
	c.writing.Add(-1)
	return n, err
}

// signal wakes readLoop if it waits to admit a frame.
func (c *Conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// guard arranges for a blocked socket write to be interrupted when ctx is
// cancelled. It returns a function that undoes the arrangement.
func (c *Conn) guard(ctx context.Context) func() bool {
	c.wctx = ctx
	if ctx.Done() == nil {
		return nil
	}
	return context.AfterFunc(ctx, func() { _ = c.nc.SetWriteDeadline(time.Unix(1, 0)) })
}

func (c *Conn) unguard(stop func() bool) {
	if stop != nil {
		stop()
	}
	c.wctx = nil
}

// writeFailed makes a write error sticky and maps it to a clear error.
func (c *Conn) writeFailed(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("transport: send: %w", ctx.Err())
	case isClosedLocally(c):
		err = ErrClosed
	default:
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			err = fmt.Errorf("transport: send blocked for %v: %w", c.timeout, ErrTimeout)
		} else if errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			err = fmt.Errorf("transport: send: %w", ErrPeerClosed)
		} else {
			err = fmt.Errorf("transport: send: %w", err)
		}
	}
	c.werr = err
	return err
}

func isClosedLocally(c *Conn) bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// Send queues p as one frame. The frame reaches the socket when the buffer
// fills, on Flush, or before the next receive.
func (c *Conn) Send(ctx context.Context, p []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("transport: send: %w", err)
	}
	if len(p) > c.maxFr {
		return fmt.Errorf("transport: frame of %d bytes exceeds the %d-byte limit", len(p), c.maxFr)
	}
	binary.LittleEndian.PutUint32(c.hdr[:], uint32(len(p)))
	// Counted before the write: while it blocks, readLoop may admit as much
	// of the peer's flight as this party is sending.
	c.flight.Add(int64(len(p)))
	var stop func() bool
	if HeaderSize+len(p) > c.bw.Available() {
		stop = c.guard(ctx)
	}
	_, err := c.bw.Write(c.hdr[:])
	if err == nil {
		_, err = c.bw.Write(p)
	}
	c.unguard(stop)
	if err != nil {
		return c.writeFailed(ctx, err)
	}
	c.count(true, HeaderSize+len(p))
	return nil
}

// Flush writes all buffered frames to the socket.
func (c *Conn) Flush(ctx context.Context) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.flushLocked(ctx)
}

func (c *Conn) flushLocked(ctx context.Context) error {
	if c.werr != nil {
		return c.werr
	}
	if c.bw.Buffered() == 0 {
		return nil
	}
	stop := c.guard(ctx)
	err := c.bw.Flush()
	c.unguard(stop)
	if err != nil {
		return c.writeFailed(ctx, err)
	}
	return nil
}

// Abort sends an abort frame carrying reason and makes further sends fail.
// The peer's next receive returns an *AbortError. Use it when a protocol
// detects that the two parties disagree, so the peer fails fast instead of
// waiting for a timeout.
func (c *Conn) Abort(ctx context.Context, reason string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	var h [6]byte
	binary.LittleEndian.PutUint32(h[:4], abortMarker)
	binary.LittleEndian.PutUint16(h[4:], uint16(len(reason)))
	stop := c.guard(ctx)
	_, err := c.bw.Write(h[:])
	if err == nil {
		_, err = c.bw.WriteString(reason)
	}
	if err == nil {
		err = c.bw.Flush()
	}
	c.unguard(stop)
	if err != nil {
		return c.writeFailed(ctx, err)
	}
	c.werr = errors.New("transport: connection aborted locally: " + reason)
	return nil
}

// beforeRecv runs the yield hook if one is installed and this party has sent since it last ran.
func (c *Conn) beforeRecv(ctx context.Context) error {
	if !c.yieldArmed.Load() {
		return nil
	}
	c.mu.Lock()
	y := c.yield
	c.mu.Unlock()
	if y == nil {
		return nil
	}
	c.yieldArmed.Store(false)
	err := y()
	// Whatever ran while this receiver waited sent on its own account.
	c.yieldArmed.Store(false)
	if err != nil {
		return err
	}
	return ctx.Err()
}

// Recv flushes pending sends, then receives the next frame into dst. The
// frame must have exactly len(dst) bytes; otherwise the frame is consumed
// and an error wrapping ErrFrameSize is returned.
func (c *Conn) Recv(ctx context.Context, dst []byte) error {
	if err := c.beforeRecv(ctx); err != nil {
		return err
	}
	if err := c.Flush(ctx); err != nil {
		return err
	}
	buf, err := c.next(ctx, 1+int64(len(dst)))
	if err != nil {
		return err
	}
	c.count(false, HeaderSize+len(buf))
	if len(buf) != len(dst) {
		n := len(buf)
		c.recycle(buf)
		return fmt.Errorf("transport: received a %d-byte frame, want %d bytes: %w", n, len(dst), ErrFrameSize)
	}
	copy(dst, buf)
	c.recycle(buf)
	return nil
}

// RecvFrame flushes pending sends, then returns the next frame, whatever its
// length (up to MaxFrame: a waiting RecvFrame admits any frame, so protocols
// facing an untrusted peer use Recv, whose expected length bounds what is
// read). The caller owns the returned slice.
func (c *Conn) RecvFrame(ctx context.Context) ([]byte, error) {
	if err := c.beforeRecv(ctx); err != nil {
		return nil, err
	}
	if err := c.Flush(ctx); err != nil {
		return nil, err
	}
	buf, err := c.next(ctx, wantAny)
	if err != nil {
		return nil, err
	}
	c.count(false, HeaderSize+len(buf))
	return buf, nil
}

// next waits for the next incoming frame, honouring ctx, the timeout and the
// network model. want is what the receive expects (wantAny, or 1 + its
// length): readLoop reads a frame past the read-ahead bound only for it.
func (c *Conn) next(ctx context.Context, want int64) ([]byte, error) {
	var f frame
	var ok bool
	select {
	case f, ok = <-c.frames:
	default:
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("transport: receive: %w", err)
		}
		var tc <-chan time.Time
		if c.timeout > 0 {
			c.timer.Reset(c.timeout)
			tc = c.timer.C
		}
		// The protocol waits for the next frame: readLoop admits it if it
		// has the length the receive expects (up to MaxFrame).
		c.want.Store(want)
		c.signal()
		select {
		case f, ok = <-c.frames:
		case <-ctx.Done():
			c.want.Store(wantNone)
			c.timer.Stop()
			return nil, fmt.Errorf("transport: receive: %w", ctx.Err())
		case <-tc:
			c.want.Store(wantNone)
			return nil, fmt.Errorf("transport: no message for %v: %w", c.timeout, ErrTimeout)
		}
		c.want.Store(wantNone)
		c.timer.Stop()
	}
	if !ok {
		return nil, c.rerr
	}
	c.nframes.Add(-1)
	c.queued.Add(-int64(len(f.buf)))
	c.signal()
	if !f.at.IsZero() {
		if d := time.Until(f.at); d > 0 {
			c.timer.Reset(d)
			select {
			case <-c.timer.C:
			case <-ctx.Done():
				c.timer.Stop()
				c.recycle(f.buf)
				return nil, fmt.Errorf("transport: receive: %w", ctx.Err())
			}
		}
	}
	return f.buf, nil
}

// recycle keeps b for a later frame. The oldest kept buffers make room for
// it, so that at most freeLen buffers of at most MaxQueued bytes are kept.
func (c *Conn) recycle(b []byte) {
	n := int64(cap(b))
	if n == 0 || n > c.maxQ {
		return
	}
	c.freeMu.Lock()
	defer c.freeMu.Unlock()
	drop := 0
	for drop < len(c.free) && (len(c.free)-drop >= freeLen || c.freed+n > c.maxQ) {
		c.freed -= int64(cap(c.free[drop]))
		c.free[drop] = nil
		drop++
	}
	c.free = append(c.free[:0], c.free[drop:]...)
	c.free = append(c.free, b)
	c.freed += n
}

// keptBuf returns the smallest kept buffer that fits an n-byte frame without
// wasting much (capacity at most 2n plus a little, so that small frames do not
// pin large buffers in the queue), or nil.
func (c *Conn) keptBuf(n int) []byte {
	c.freeMu.Lock()
	defer c.freeMu.Unlock()
	best := -1
	for i, b := range c.free {
		if cap(b) >= n && cap(b) <= 2*n+minKeep && (best < 0 || cap(b) < cap(c.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := c.free[best]
	c.freed -= int64(cap(b))
	c.free = append(c.free[:best], c.free[best+1:]...)
	return b[:n]
}

// readPayload reads an n-byte payload. It reuses a kept buffer that fits;
// otherwise it allocates at most growStart bytes up front and doubles the
// buffer as the bytes arrive, so the allocation stays within twice what the
// peer has actually sent.
func (c *Conn) readPayload(r io.Reader, n int) ([]byte, error) {
	if buf := c.keptBuf(n); buf != nil {
		_, err := io.ReadFull(r, buf)
		return buf, err
	}
	buf := make([]byte, 0, min(n, growStart))
	for {
		m, err := io.ReadFull(r, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil || len(buf) == n {
			return buf, err
		}
		grown := make([]byte, len(buf), min(n, 2*cap(buf)))
		copy(grown, buf)
		buf = grown
	}
}

// admit blocks until readLoop may read the payload of the next frame, of n
// bytes, into the queue: when it fits in the read-ahead bound; while this
// party writes to the socket, when it fits in the read-ahead bound plus this
// party's current flight (so that two parties sending at once drain each
// other) and in MaxQueued; or when a receive waits for the next frame (the
// queue is empty) and expects exactly n bytes. It returns ErrFrameSize when a
// receive waits for the next frame and expects another length, since no
// receive can then ever consume the frame (its buffer is never allocated), and
// ErrClosed when the Conn is closed. So a peer that sends what the protocol
// does not wait for makes this Conn hold at most the read-ahead bound, or what
// this party itself is sending, never MaxFrame.
func (c *Conn) admit(n int64) error {
	for {
		q := c.queued.Load()
		ahead := max(c.ahead, c.raised.Load())
		if q+n <= ahead || c.writing.Load() != 0 && q+n <= min(c.maxQ, ahead+c.flight.Load()) {
			return nil
		}
		if w := c.want.Load(); w != wantNone && c.nframes.Load() == 0 {
			if w == wantAny || w-1 == n {
				return nil
			}
			return fmt.Errorf("transport: the peer announced a %d-byte frame while this party waits for a %d-byte one: %w", n, w-1, ErrFrameSize)
		}
		select {
		case <-c.wake:
		case <-c.done:
			return ErrClosed
		}
	}
}

// readLoop moves incoming frames from the socket to the frame queue until
// the connection ends.
func (c *Conn) readLoop() {
	br := bufio.NewReaderSize(c.nc, bufSize)
	var hdr [HeaderSize]byte
	fail := func(err error) {
		select {
		case <-c.done:
			err = ErrClosed
		default:
		}
		c.rerr = err
		close(c.frames)
	}
	for {
		if _, err := io.ReadFull(br, hdr[:]); err != nil {
			switch {
			case errors.Is(err, io.EOF):
				fail(ErrPeerClosed)
			case errors.Is(err, io.ErrUnexpectedEOF):
				fail(fmt.Errorf("transport: connection ended inside a frame header: %w", ErrPeerClosed))
			default:
				fail(fmt.Errorf("transport: read: %w", err))
			}
			return
		}
		n := binary.LittleEndian.Uint32(hdr[:])
		if n == abortMarker {
			var l [2]byte
			reason := "(no reason received)"
			if _, err := io.ReadFull(br, l[:]); err == nil {
				r := make([]byte, min(int(binary.LittleEndian.Uint16(l[:])), maxReason))
				if _, err := io.ReadFull(br, r); err == nil {
					reason = string(r)
				}
			}
			fail(&AbortError{Reason: reason})
			return
		}
		if int64(n) > int64(c.maxFr) {
			fail(fmt.Errorf("transport: the peer announced a %d-byte frame, over the %d-byte limit: %w", n, c.maxFr, ErrFrameSize))
			return
		}
		// Back-pressure: read the payload only when the protocol's state admits it.
		if err := c.admit(int64(n)); err != nil {
			fail(err)
			return
		}
		buf, err := c.readPayload(br, int(n))
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				fail(fmt.Errorf("transport: connection ended inside a %d-byte frame: %w", n, ErrPeerClosed))
			} else {
				fail(fmt.Errorf("transport: read: %w", err))
			}
			return
		}
		var at time.Time
		if c.link != nil {
			at = c.link.arrival(HeaderSize + int(n))
		}
		c.queued.Add(int64(n))
		c.nframes.Add(1)
		select {
		case c.frames <- frame{buf: buf, at: at}:
		case <-c.done:
			c.rerr = ErrClosed
			close(c.frames)
			return
		}
	}
}

// Close flushes what it can (unless a send is in progress) and closes the
// connection; pending and later operations fail with ErrClosed. It is safe
// to call more than once and from any goroutine.
func (c *Conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		if c.wmu.TryLock() {
			if c.werr == nil && c.bw.Buffered() > 0 {
				_ = c.bw.Flush()
			}
			c.werr = ErrClosed
			c.wmu.Unlock()
		}
		close(c.done)
		err = c.nc.Close()
	})
	return err
}

// LocalAddr and RemoteAddr report the underlying addresses.
func (c *Conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// RemoteAddr reports the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// SetPhase makes label the phase charged by later traffic and returns the
// previous label. The initial phase is "".
func (c *Conn) SetPhase(label string) (prev string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev = c.phase
	c.setPhaseLocked(label)
	return prev
}

func (c *Conn) setPhaseLocked(label string) {
	c.phase = label
	s, ok := c.phases[label]
	if !ok {
		s = &Stats{}
		c.phases[label] = s
		c.order = append(c.order, label)
	}
	c.cur = s
}

// Phase returns the current phase label.
func (c *Conn) Phase() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.phase
}

// Stats returns the totals over all phases.
func (c *Conn) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.total
}

// PhaseStats returns the traffic of one phase (zero if never used).
func (c *Conn) PhaseStats(label string) Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.phases[label]; ok {
		return *s
	}
	return Stats{}
}

// Phases returns the traffic of every phase used so far, in order of first
// use (phases without traffic included).
func (c *Conn) Phases() []PhaseStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]PhaseStats, 0, len(c.order))
	for _, l := range c.order {
		out = append(out, PhaseStats{Phase: l, Stats: *c.phases[l]})
	}
	return out
}

func (c *Conn) count(send bool, n int) {
	if !send {
		c.flight.Store(0)
	}
	c.mu.Lock()
	if send {
		if c.yield != nil {
			c.yieldArmed.Store(true)
		}
		if !c.sending {
			c.cur.Rounds++
			c.total.Rounds++
			c.sending = true
		}
		c.cur.BytesSent += int64(n)
		c.cur.FramesSent++
		c.total.BytesSent += int64(n)
		c.total.FramesSent++
	} else {
		if c.yield == nil {
			c.sending = false
		}
		c.cur.BytesRecv += int64(n)
		c.cur.FramesRecv++
		c.total.BytesRecv += int64(n)
		c.total.FramesRecv++
	}
	c.mu.Unlock()
}
