package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// allocatedDuring returns the bytes the process allocated while f ran.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// rawPeer returns a Conn whose peer is a raw net.Conn, so a test can write
// arbitrary bytes.
func rawPeer(t *testing.T, opt Options) (*Conn, net.Conn) {
	t.Helper()
	raw, other := net.Pipe()
	c := NewConn(other, opt)
	t.Cleanup(func() { c.Close(); raw.Close() })
	return c, raw
}

func header(n uint32) []byte {
	var h [HeaderSize]byte
	binary.LittleEndian.PutUint32(h[:], n)
	return h[:]
}

// A header announcing more than MaxFrame fails with a clear error and
// without allocating the announced size.
func TestHugeFrameHeaderRejected(t *testing.T) {
	ctx := context.Background()
	for _, maxFrame := range []int{0, 1 << 20} {
		c, raw := rawPeer(t, Options{MaxFrame: maxFrame, Timeout: 5 * time.Second})
		limit := c.maxFr
		var err error
		alloc := allocatedDuring(func() {
			go func() { _, _ = raw.Write(header(uint32(limit) + 1)) }()
			_, err = c.RecvFrame(ctx)
		})
		if !errors.Is(err, ErrFrameSize) || !strings.Contains(err.Error(), "limit") {
			t.Fatalf("MaxFrame %d: got %v, want an ErrFrameSize naming the limit", maxFrame, err)
		}
		if alloc > 1<<20 {
			t.Errorf("MaxFrame %d: rejecting the header allocated %d bytes", maxFrame, alloc)
		}
	}
	if DefaultMaxFrame > 64<<20 {
		t.Errorf("DefaultMaxFrame = %d, want at most 64 MiB", DefaultMaxFrame)
	}
}

// A header announcing a large frame within the limit, followed by only a few
// bytes, makes the Conn allocate about what arrived, not what was announced.
func TestAnnouncedFrameAllocatedAsBytesArrive(t *testing.T) {
	ctx := context.Background()
	const announced = 60 << 20
	const sent = 100 << 10
	c, raw := rawPeer(t, Options{Timeout: 5 * time.Second})
	var err error
	alloc := allocatedDuring(func() {
		go func() {
			_, _ = raw.Write(header(announced))
			_, _ = raw.Write(make([]byte, sent))
			raw.Close()
		}()
		_, err = c.RecvFrame(ctx)
	})
	if !errors.Is(err, ErrPeerClosed) || !strings.Contains(err.Error(), "inside a") {
		t.Fatalf("got %v, want ErrPeerClosed inside a frame", err)
	}
	// bufio (256 KiB each side of the pipe) plus a buffer of at most
	// growStart; far below the announced 60 MiB.
	if alloc > 4<<20 {
		t.Errorf("a %d-byte frame header with %d bytes of payload allocated %d bytes", announced, sent, alloc)
	}
	t.Logf("announced %d bytes, sent %d, allocated %d", announced, sent, alloc)
}

// A sender that is faster than the receiver's consumer fills at most
// MaxQueued bytes of the receiver's queue, then blocks; the receiver's memory
// stays bounded, and every frame arrives intact once the receiver reads.
func TestReceiveQueueBoundedInBytes(t *testing.T) {
	const (
		frames   = 32
		size     = 1<<20 + 3 // not a power of two: exercises buffer growth
		maxQueue = 2 << 20
	)
	for name, mk := range map[string]func(*testing.T, Options) (*Conn, *Conn){"pipe": pipe, "tcp": tcpPair} {
		t.Run(name, func(t *testing.T) {
			a, b := mk(t, Options{Timeout: 10 * time.Second, MaxQueued: maxQueue})
			ctx := context.Background()
			var base runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&base)

			done := make(chan error, 1)
			go func() {
				msg := make([]byte, size)
				for i := 0; i < frames; i++ {
					msg[0], msg[size-1] = byte(i), byte(i+1)
					if err := a.Send(ctx, msg); err != nil {
						done <- err
						return
					}
				}
				done <- a.Flush(ctx)
			}()

			// Wait until the receiver's queue is as full as it gets.
			deadline := time.Now().Add(5 * time.Second)
			for b.queued.Load() < maxQueue-size && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(100 * time.Millisecond)
			if q := b.queued.Load(); q < maxQueue-size || q > maxQueue {
				t.Fatalf("receiver queues %d bytes, want between %d and %d", q, maxQueue-size, maxQueue)
			}
			select {
			case err := <-done:
				t.Fatalf("the sender finished (%v) although the receiver read nothing", err)
			default:
			}
			var now runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&now)
			growth := int64(now.HeapAlloc) - int64(base.HeapAlloc)
			t.Logf("queued %d bytes, heap grew by %d bytes while %d were in flight", b.queued.Load(), growth, frames*size)
			if growth > 3*maxQueue+(2<<20) {
				t.Errorf("heap grew by %d bytes with a %d-byte queue", growth, maxQueue)
			}

			got := make([]byte, size)
			for i := 0; i < frames; i++ {
				if err := b.Recv(ctx, got); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if got[0] != byte(i) || got[size-1] != byte(i+1) {
					t.Fatalf("frame %d: got markers %d, %d", i, got[0], got[size-1])
				}
				if q := b.queued.Load(); q > maxQueue {
					t.Fatalf("queue holds %d bytes", q)
				}
			}
			if err := <-done; err != nil {
				t.Fatalf("sender: %v", err)
			}
			if q := b.queued.Load(); q != 0 {
				t.Fatalf("queue holds %d bytes after draining", q)
			}
		})
	}
}

// A frame larger than MaxQueued is still delivered (into an empty queue).
func TestFrameLargerThanQueue(t *testing.T) {
	a, b := pipe(t, Options{Timeout: 5 * time.Second, MaxQueued: 1 << 10})
	ctx := context.Background()
	msg := make([]byte, 1<<20)
	msg[len(msg)-1] = 9
	go func() { _ = a.Send(ctx, msg); _ = a.Send(ctx, msg); _ = a.Flush(ctx) }()
	got := make([]byte, len(msg))
	for i := 0; i < 2; i++ {
		if err := b.Recv(ctx, got); err != nil || got[len(got)-1] != 9 {
			t.Fatalf("frame %d: %v", i, err)
		}
	}
}

// Issue 24, finding 1: while a receive waits for a 10-byte message, a peer that announces a
// frame past the read-ahead bound (here 60 MiB, within MaxFrame) is refused at once: the receive
// fails with ErrFrameSize naming both lengths, and no buffer for the frame is allocated. Before
// the fix the waiting receive admitted the frame whatever its length, its buffer grew to 60 MiB
// as the bytes came, and the session held it until the timeout.
func TestOversizedFrameWhileWaitingRefused(t *testing.T) {
	ctx := context.Background()
	const announced = 60 << 20
	c, raw := rawPeer(t, Options{Timeout: 5 * time.Second})
	go func() {
		_, _ = raw.Write(header(announced))
		// The payload follows; it must not be read.
		chunk := make([]byte, 1<<20)
		for range announced / len(chunk) {
			if _, err := raw.Write(chunk); err != nil {
				return
			}
		}
	}()
	var err error
	start := time.Now()
	alloc := allocatedDuring(func() {
		err = c.Recv(ctx, make([]byte, 10))
	})
	took := time.Since(start)
	t.Logf("a %d-byte frame announced while a 10-byte receive waits: %v after %v, %d bytes allocated", announced, err, took.Round(time.Microsecond), alloc)
	if !errors.Is(err, ErrFrameSize) || !strings.Contains(err.Error(), "62914560-byte") || !strings.Contains(err.Error(), "10-byte") {
		t.Fatalf("got %v, want an ErrFrameSize naming the announced and expected lengths", err)
	}
	// bufio's 256 KiB reader and the test's 1 MiB chunk; far below the announced 60 MiB.
	if alloc > 2<<20 {
		t.Errorf("refusing the frame allocated %d bytes", alloc)
	}
	if q := c.queued.Load(); q != 0 {
		t.Errorf("%d payload bytes queued", q)
	}
}

// A frame past the read-ahead bound that the waiting receive expects is still read, and a
// mismatched frame within the read-ahead bound is consumed by the receive with ErrFrameSize
// (the connection goes on), as before.
func TestExpectedLargeFrameAdmitted(t *testing.T) {
	a, b := pipe(t, Options{Timeout: 5 * time.Second, MaxReadAhead: 64 << 10})
	ctx := context.Background()
	big := make([]byte, 8<<20)
	big[len(big)-1] = 3
	go func() { _ = a.Send(ctx, []byte{1, 2}); _ = a.Send(ctx, big); _ = a.Flush(ctx) }()
	if err := b.Recv(ctx, make([]byte, 3)); !errors.Is(err, ErrFrameSize) {
		t.Fatalf("mismatched small frame: %v, want ErrFrameSize", err)
	}
	got := make([]byte, len(big))
	if err := b.Recv(ctx, got); err != nil || got[len(got)-1] != 3 {
		t.Fatalf("expected 8 MiB frame: %v", err)
	}
}
