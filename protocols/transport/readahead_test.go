package transport

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// A peer that floods frames the protocol does not wait for (this party neither receives nor
// sends) fills at most the read-ahead bound, not MaxQueued: its flood blocks in its own socket.
// Once this party receives, every frame arrives intact, in order. (Before read-ahead was bound
// to what this party does, the default Conn queued the whole 32 MiB here.)
func TestFloodHeldToReadAhead(t *testing.T) {
	const (
		frames = 32
		size   = 1 << 20
	)
	for name, mk := range map[string]func(*testing.T, Options) (*Conn, *Conn){"pipe": pipe, "tcp": tcpPair} {
		t.Run(name, func(t *testing.T) {
			a, b := mk(t, Options{Timeout: 10 * time.Second})
			ctx := context.Background()
			var base runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&base)
			done := make(chan error, 1)
			go func() {
				msg := make([]byte, size)
				for i := 0; i < frames; i++ {
					msg[0] = byte(i)
					if err := a.Send(ctx, msg); err != nil {
						done <- err
						return
					}
				}
				done <- a.Flush(ctx)
			}()
			deadline := time.Now().Add(5 * time.Second)
			for b.queued.Load() < DefaultMaxReadAhead-size && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond) // let a flood past the bound show itself
			if q := b.queued.Load(); q < DefaultMaxReadAhead-size || q > DefaultMaxReadAhead {
				t.Fatalf("the idle receiver queues %d bytes, want between %d and %d", q, DefaultMaxReadAhead-size, DefaultMaxReadAhead)
			}
			var now runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&now)
			growth := int64(now.HeapAlloc) - int64(base.HeapAlloc)
			t.Logf("flood of %d MiB: receiver queues %d bytes, heap grew %d bytes", frames*size>>20, b.queued.Load(), growth)
			if growth > 2*DefaultMaxReadAhead+(4<<20) {
				t.Errorf("heap grew by %d bytes with a %d-byte read-ahead bound", growth, DefaultMaxReadAhead)
			}
			got := make([]byte, size)
			for i := 0; i < frames; i++ {
				if err := b.Recv(ctx, got); err != nil || got[0] != byte(i) {
					t.Fatalf("frame %d: %v (marker %d)", i, err, got[0])
				}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A frame larger than the read-ahead bound is read when a receive waits for it, and two parties
// that send flights larger than the read-ahead bound at once (with frames above it, and many
// small ones) drain each other instead of deadlocking.
func TestLargeFramesAndFlightsPastReadAhead(t *testing.T) {
	const ahead = 64 << 10
	for name, mk := range map[string]func(*testing.T, Options) (*Conn, *Conn){"pipe": pipe, "tcp": tcpPair} {
		t.Run(name, func(t *testing.T) {
			a, b := mk(t, Options{Timeout: 10 * time.Second, MaxReadAhead: ahead})
			ctx := context.Background()
			for _, shape := range []struct{ n, size int }{{1, 4 << 20}, {4, 1 << 20}, {512, 16 << 10}} {
				errs := make(chan error, 2)
				for _, c := range []*Conn{a, b} {
					go func() {
						msg := make([]byte, shape.size)
						for k := 0; k < shape.n; k++ {
							msg[0] = byte(k)
							if err := c.Send(ctx, msg); err != nil {
								errs <- err
								return
							}
						}
						buf := make([]byte, shape.size)
						for k := 0; k < shape.n; k++ {
							if err := c.Recv(ctx, buf); err != nil || buf[0] != byte(k) {
								errs <- err
								return
							}
						}
						errs <- nil
					}()
				}
				for range 2 {
					if err := <-errs; err != nil {
						t.Fatalf("%d frames of %d bytes each way: %v", shape.n, shape.size, err)
					}
				}
			}
		})
	}
}

// While this party's own flight is blocked (the peer reads nothing), a peer that floods is read
// only up to the read-ahead bound plus this party's flight, not MaxQueued.
func TestFloodWhileWritingHeldToOwnFlight(t *testing.T) {
	const (
		own   = 8 << 20 // this party's flight, which the peer never reads
		frame = 1 << 20
	)
	a, b := tcpPair(t, Options{Timeout: 10 * time.Second})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// b sends its flight; its write blocks once the socket buffers are full.
		_ = b.Send(ctx, make([]byte, own))
		_ = b.Flush(ctx)
	}()
	flooded := make(chan int, 1)
	go func() {
		msg := make([]byte, frame)
		n := 0
		for n < 64<<20 {
			if a.Send(ctx, msg) != nil || a.Flush(ctx) != nil {
				break
			}
			n += frame
		}
		flooded <- n
	}()
	limit := int64(DefaultMaxReadAhead + own)
	deadline := time.Now().Add(time.Second)
	var q int64
	for time.Now().Before(deadline) {
		if q = b.queued.Load(); q > limit {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("b queued %d bytes while its own %d-byte flight was blocked (bound %d)", q, own, limit)
	if q > limit {
		t.Fatalf("b queued %d bytes, over the read-ahead bound plus its own flight, %d", q, limit)
	}
	if q < DefaultMaxReadAhead {
		t.Errorf("b queued only %d bytes: the test did not exercise the writing bound", q)
	}
	cancel()
	a.Close()
	b.Close()
	<-flooded
}
