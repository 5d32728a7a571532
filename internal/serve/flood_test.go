package serve

import (
	"context"
	"encoding/binary"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heapPeak samples the Go heap every few milliseconds until stop is called, and returns the
// largest HeapAlloc seen above the level at the start (after a GC).
func heapPeak() (stop func() uint64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	quit := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > base && m.HeapAlloc-base > peak.Load() {
				peak.Store(m.HeapAlloc - base)
			}
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(quit)
		wg.Wait()
		return peak.Load()
	}
}

// Issue 11, hole 3: a client that passes the handshake, opens its second stream, stalls the
// first and floods the second with frames the server does not wait for. The server's heap
// under the flood stays within twice the peak of an honest session of the same program and
// streams; the flood blocks in the attacker's own socket. (Before the fix each connection
// queued up to 128 MiB regardless of what the protocol waited for.)
func TestFloodOnIdleStreamBounded(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	sopt, copt := streamOptions(options(full), 2, nil), streamOptions(options(cfile), 2, nil)
	sopt.Timeout, copt.Timeout = 30*time.Second, 30*time.Second
	ts := startServer(t, &Server{Options: sopt, MaxSessions: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// An honest session first (also warms up the program and the runtime).
	in := input(t, full, 4)
	if _, err := streamClient(ctx, ts.addr, copt, nil, in); err != nil {
		t.Fatal(err)
	}
	peak := heapPeak()
	res, err := streamClient(ctx, ts.addr, copt, nil, in)
	honest := peak()
	if err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, "honest", res, clearRun(t, full, in))

	// The attacker.
	peak = heapPeak()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	h := HelloFor(cfile, 1, copt.backend(), "flood")
	h.Streams = 2
	peer, _, _, err := Handshake(ctx, nc, h, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	s1, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	if _, err := s1.Write(joinMessage(peer.Token, 1)); err != nil {
		t.Fatal(err)
	}
	if err := readVerdict(s1); err != nil {
		t.Fatal(err)
	}
	// Stream 0 stalls (nothing read, nothing sent); stream 1 gets 1 MiB frames until its
	// writes block for half a second, or 256 MiB went through.
	const frame = 1 << 20
	msg := make([]byte, 4+frame)
	binary.LittleEndian.PutUint32(msg, frame)
	sent := 0
	for sent < 256<<20 {
		_ = s1.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := s1.Write(msg)
		sent += n
		if err != nil {
			break
		}
	}
	time.Sleep(100 * time.Millisecond)
	flood := peak()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("honest session: heap peak +%.1f MiB; flood: %.1f MiB accepted by the server's sockets, heap peak +%.1f MiB (live heap now %.1f MiB)",
		mib(honest), mib(uint64(sent)), mib(flood), mib(ms.HeapAlloc))
	if flood > 2*honest {
		t.Errorf("under the flood the heap grew by %.1f MiB, over twice an honest session's %.1f MiB", mib(flood), mib(honest))
	}
	nc.Close()
	s1.Close()
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// Issue 24, finding 1: a client that passes the handshake and, while the server waits for a
// small message, announces a 60 MiB frame and sends all of it but the last byte. Before the fix
// the server admitted the frame (a receive was waiting), grew its buffer to 60 MiB as the bytes
// came and held it until the timeout (~130 MB of heap per session). Now the frame is refused as
// soon as its header arrives: the session fails at once, telling both lengths, and the server's
// heap stays within an honest session's.
func TestOversizedFrameWhileWaitingBounded(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	sopt, copt := streamOptions(options(full), 1, nil), streamOptions(options(cfile), 1, nil)
	sopt.Timeout, copt.Timeout = 30*time.Second, 30*time.Second
	ts := startServer(t, &Server{Options: sopt, MaxSessions: 2})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	in := input(t, full, 5)
	if _, err := streamClient(ctx, ts.addr, copt, nil, in); err != nil {
		t.Fatal(err)
	}
	peak := heapPeak()
	if _, err := streamClient(ctx, ts.addr, copt, nil, in); err != nil {
		t.Fatal(err)
	}
	honest := peak()

	peak = heapPeak()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, _, _, err := Handshake(ctx, nc, HelloFor(cfile, 1, copt.backend(), "oversized"), 5*time.Second); err != nil {
		t.Fatal(err)
	}
	const announced = 60 << 20
	start := time.Now()
	var hdr [4]byte
	binary.LittleEndian.PutUint32(hdr[:], announced)
	sent := 0
	if _, err := nc.Write(hdr[:]); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for sent < announced-1 {
		_ = nc.SetWriteDeadline(time.Now().Add(500 * time.Millisecond))
		n, err := nc.Write(chunk[:min(len(chunk), announced-1-sent)])
		sent += n
		if err != nil {
			break
		}
	}
	waitFor(t, "the refusal in the log", func() bool { return strings.Contains(ts.log.String(), "62914560-byte frame") })
	took := time.Since(start)
	attack := peak()
	t.Logf("honest session: heap peak +%.1f MiB; a %d MiB frame announced while the server waits: %.1f MiB accepted by the server's socket, heap peak +%.1f MiB, session ended after %v",
		mib(honest), announced>>20, mib(uint64(sent)), mib(attack), took.Round(time.Millisecond))
	if attack > honest+8<<20 {
		t.Errorf("under the attack the heap grew by %.1f MiB, over an honest session's %.1f MiB plus 8 MiB", mib(attack), mib(honest))
	}
	if sent >= announced-1 {
		t.Errorf("the server read the whole %d-byte frame", announced)
	}
	nc.Close()
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
}
