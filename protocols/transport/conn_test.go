package transport

import (
	"bytes"
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/netmodel"
)

func pipe(t *testing.T, opt Options) (*Conn, *Conn) {
	t.Helper()
	a, b := Pipe(opt)
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func tcpPair(t *testing.T, opt Options) (*Conn, *Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx := context.Background()
	var srv *Conn
	var aerr error
	done := make(chan struct{})
	go func() { srv, aerr = Accept(ctx, ln, opt); close(done) }()
	cli, err := Dial(ctx, ln.Addr().String(), opt)
	if err != nil {
		t.Fatal(err)
	}
	<-done
	if aerr != nil {
		t.Fatal(aerr)
	}
	t.Cleanup(func() { srv.Close(); cli.Close() })
	return srv, cli
}

func TestSendRecvFramesAndStats(t *testing.T) {
	for name, mk := range map[string]func(*testing.T, Options) (*Conn, *Conn){"pipe": pipe, "tcp": tcpPair} {
		t.Run(name, func(t *testing.T) {
			a, b := mk(t, Options{})
			ctx := context.Background()
			sizes := []int{0, 1, 5, 4096, bufSize - 3, bufSize + 17, 3 << 20}
			var msgs [][]byte
			for i, n := range sizes {
				m := make([]byte, n)
				for k := range m {
					m[k] = byte(k*7 + i)
				}
				msgs = append(msgs, m)
			}
			errc := make(chan error, 1)
			go func() {
				for _, m := range msgs {
					if err := a.Send(ctx, m); err != nil {
						errc <- err
						return
					}
				}
				errc <- a.Flush(ctx)
			}()
			var total int64
			for i, m := range msgs {
				got := make([]byte, len(m))
				if err := b.Recv(ctx, got); err != nil {
					t.Fatalf("frame %d: %v", i, err)
				}
				if !bytes.Equal(got, m) {
					t.Fatalf("frame %d corrupted", i)
				}
				total += int64(len(m)) + HeaderSize
			}
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			sa, sb := a.Stats(), b.Stats()
			if sa.BytesSent != total || sb.BytesRecv != total || sa.FramesSent != int64(len(sizes)) || sb.FramesRecv != int64(len(sizes)) {
				t.Fatalf("stats: sender %+v receiver %+v, want %d bytes", sa, sb, total)
			}
			if sa.Rounds != 1 || sb.Rounds != 0 {
				t.Fatalf("rounds: sender %d receiver %d, want 1 and 0", sa.Rounds, sb.Rounds)
			}
			if sa.PayloadSent() != total-HeaderSize*int64(len(sizes)) {
				t.Fatalf("PayloadSent = %d", sa.PayloadSent())
			}
		})
	}
}

func TestRoundsAndPhases(t *testing.T) {
	a, b := pipe(t, Options{})
	ctx := context.Background()
	one := []byte{1}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		buf := make([]byte, 1)
		// b: recv, recv, send, send | recv, send
		_ = b.Recv(ctx, buf)
		_ = b.Recv(ctx, buf)
		_ = b.Send(ctx, one)
		_ = b.Send(ctx, one)
		_ = b.Recv(ctx, buf)
		_ = b.Send(ctx, one)
		_ = b.Flush(ctx)
	}()
	buf := make([]byte, 1)
	a.SetPhase("first")
	_ = a.Send(ctx, one)
	_ = a.Send(ctx, one)
	_ = a.Recv(ctx, buf)
	_ = a.Recv(ctx, buf)
	if prev := a.SetPhase("second"); prev != "first" {
		t.Fatalf("SetPhase returned %q", prev)
	}
	_ = a.Send(ctx, one)
	if err := a.Recv(ctx, buf); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	p1, p2 := a.PhaseStats("first"), a.PhaseStats("second")
	if p1.Rounds != 1 || p1.FramesSent != 2 || p1.FramesRecv != 2 || p2.Rounds != 1 || p2.FramesSent != 1 || p2.FramesRecv != 1 {
		t.Fatalf("phase stats: %+v %+v", p1, p2)
	}
	if a.Stats() != p1.Add(p2) {
		t.Fatalf("total %+v is not the sum of the phases", a.Stats())
	}
	if bs := b.Stats(); bs.Rounds != 2 {
		t.Fatalf("b rounds = %d, want 2", bs.Rounds)
	}
	ph := a.Phases()
	if len(ph) != 3 || ph[0].Phase != "" || ph[1].Phase != "first" || ph[2].Phase != "second" || a.Phase() != "second" {
		t.Fatalf("Phases() = %+v", ph)
	}
	if (a.PhaseStats("never") != Stats{}) {
		t.Fatal("unused phase has traffic")
	}
	if d := a.Stats().Sub(p1); d != p2 {
		t.Fatalf("Sub: %+v", d)
	}
}

// Both parties send a large message before receiving: must not deadlock.
func TestFullDuplexNoDeadlock(t *testing.T) {
	for name, mk := range map[string]func(*testing.T, Options) (*Conn, *Conn){"pipe": pipe, "tcp": tcpPair} {
		t.Run(name, func(t *testing.T) {
			a, b := mk(t, Options{Timeout: 10 * time.Second})
			ctx := context.Background()
			big := make([]byte, 8<<20)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for i, c := range []*Conn{a, b} {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := 0; k < 4; k++ {
						if err := c.Send(ctx, big); err != nil {
							errs[i] = err
							return
						}
					}
					buf := make([]byte, len(big))
					for k := 0; k < 4; k++ {
						if err := c.Recv(ctx, buf); err != nil {
							errs[i] = err
							return
						}
					}
				}()
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestWrongFrameLength(t *testing.T) {
	a, b := pipe(t, Options{})
	ctx := context.Background()
	go func() { _ = a.Send(ctx, make([]byte, 10)); _ = a.Send(ctx, []byte{7}); _ = a.Flush(ctx) }()
	err := b.Recv(ctx, make([]byte, 11))
	if !errors.Is(err, ErrFrameSize) {
		t.Fatalf("got %v, want ErrFrameSize", err)
	}
	// The bad frame was consumed; the next one is intact.
	got := make([]byte, 1)
	if err := b.Recv(ctx, got); err != nil || got[0] != 7 {
		t.Fatalf("after a bad frame: %v %v", err, got)
	}
}

func TestRecvFrame(t *testing.T) {
	a, b := pipe(t, Options{})
	ctx := context.Background()
	go func() { _ = a.Send(ctx, []byte("hello")); _ = a.Flush(ctx) }()
	f, err := b.RecvFrame(ctx)
	if err != nil || string(f) != "hello" {
		t.Fatalf("RecvFrame = %q, %v", f, err)
	}
}

func TestPeerClosed(t *testing.T) {
	for name, mk := range map[string]func(*testing.T, Options) (*Conn, *Conn){"pipe": pipe, "tcp": tcpPair} {
		t.Run(name, func(t *testing.T) {
			a, b := mk(t, Options{Timeout: 5 * time.Second})
			ctx := context.Background()
			if err := a.Send(ctx, []byte{1, 2}); err != nil {
				t.Fatal(err)
			}
			a.Close() // flushes the buffered frame, then closes
			buf := make([]byte, 2)
			if err := b.Recv(ctx, buf); err != nil {
				t.Fatalf("frame sent before close lost: %v", err)
			}
			start := time.Now()
			err := b.Recv(ctx, buf)
			if !errors.Is(err, ErrPeerClosed) {
				t.Fatalf("got %v, want ErrPeerClosed", err)
			}
			if time.Since(start) > 4*time.Second {
				t.Fatal("close was noticed only by the timeout")
			}
			// Local operations after a local close.
			if err := a.Send(ctx, buf); !errors.Is(err, ErrClosed) {
				t.Fatalf("send after close: %v", err)
			}
			if err := a.Recv(ctx, buf); !errors.Is(err, ErrClosed) {
				t.Fatalf("recv after close: %v", err)
			}
		})
	}
}

func TestPeerClosesMidFrame(t *testing.T) {
	raw, other := net.Pipe()
	c := NewConn(other, Options{Timeout: 5 * time.Second})
	defer c.Close()
	go func() {
		_, _ = raw.Write([]byte{100, 0, 0, 0, 1, 2, 3}) // 100-byte frame, 3 bytes sent
		raw.Close()
	}()
	err := c.Recv(context.Background(), make([]byte, 100))
	if !errors.Is(err, ErrPeerClosed) {
		t.Fatalf("got %v, want ErrPeerClosed", err)
	}
}

func TestStalledPeerTimesOut(t *testing.T) {
	a, b := pipe(t, Options{Timeout: 50 * time.Millisecond})
	_ = a
	start := time.Now()
	err := b.Recv(context.Background(), make([]byte, 1))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Fatalf("timed out after only %v", d)
	}
}

func TestStalledReaderSendTimesOut(t *testing.T) {
	raw, other := net.Pipe() // nobody reads raw
	defer raw.Close()
	c := NewConn(other, Options{Timeout: 50 * time.Millisecond})
	defer c.Close()
	err := c.Send(context.Background(), make([]byte, 2*bufSize))
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("got %v, want ErrTimeout", err)
	}
	// The error is sticky: the stream is broken.
	if err2 := c.Send(context.Background(), []byte{1}); !errors.Is(err2, ErrTimeout) {
		t.Fatalf("second send: %v", err2)
	}
}

func TestContextCancelsRecvAndSend(t *testing.T) {
	a, b := pipe(t, Options{Timeout: -1})
	_ = a
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	if err := b.Recv(ctx, make([]byte, 1)); !errors.Is(err, context.Canceled) {
		t.Fatalf("recv: got %v, want context.Canceled", err)
	}
	raw, other := net.Pipe()
	defer raw.Close()
	c := NewConn(other, Options{Timeout: -1})
	defer c.Close()
	ctx2, cancel2 := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel2)
	if err := c.Send(ctx2, make([]byte, 2*bufSize)); !errors.Is(err, context.Canceled) {
		t.Fatalf("send: got %v, want context.Canceled", err)
	}
	// An already-cancelled context fails fast.
	if err := b.Send(ctx, []byte{1}); !errors.Is(err, context.Canceled) {
		t.Fatalf("send with cancelled ctx: %v", err)
	}
}

func TestAbort(t *testing.T) {
	a, b := pipe(t, Options{Timeout: 5 * time.Second})
	ctx := context.Background()
	go func() { _ = a.Abort(ctx, "lengths disagree") }()
	err := b.Recv(ctx, make([]byte, 4))
	var ae *AbortError
	if !errors.As(err, &ae) || ae.Reason != "lengths disagree" {
		t.Fatalf("got %v, want AbortError", err)
	}
	time.Sleep(10 * time.Millisecond)
	if err := a.Send(ctx, []byte{1}); err == nil {
		t.Fatal("send after abort succeeded")
	}
}

func TestMaxFrame(t *testing.T) {
	a, b := pipe(t, Options{MaxFrame: 100, Timeout: 5 * time.Second})
	ctx := context.Background()
	if err := a.Send(ctx, make([]byte, 101)); err == nil {
		t.Fatal("oversized send accepted")
	}
	raw, other := net.Pipe()
	c := NewConn(other, Options{MaxFrame: 100, Timeout: 5 * time.Second})
	defer c.Close()
	go func() { _, _ = raw.Write([]byte{0, 1, 0, 0}); raw.Close() }() // 256-byte frame
	if err := c.Recv(ctx, make([]byte, 256)); err == nil {
		t.Fatal("oversized frame accepted")
	}
	_ = b
}

func TestNetworkModelDelays(t *testing.T) {
	// Lower bounds only: the emulated link must never be faster than the model.
	m := netmodel.Model{RTT: 40 * time.Millisecond, Bandwidth: 10e6}
	a, b := pipe(t, Options{Net: &m, Timeout: 5 * time.Second})
	ctx := context.Background()
	go func() {
		buf := make([]byte, 1)
		for i := 0; i < 2; i++ {
			if b.Recv(ctx, buf) != nil || b.Send(ctx, buf) != nil {
				return
			}
		}
		_ = b.Flush(ctx)
	}()
	start := time.Now()
	buf := make([]byte, 1)
	for i := 0; i < 2; i++ {
		if err := a.Send(ctx, buf); err != nil {
			t.Fatal(err)
		}
		if err := a.Recv(ctx, buf); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 2*m.RTT {
		t.Fatalf("two ping-pongs took %v < 2 RTT", d)
	}
	// 1 MB at 10 MB/s needs at least 100 ms of link time.
	go func() { _ = b.Send(ctx, make([]byte, 1e6)); _ = b.Flush(ctx) }()
	start = time.Now()
	if err := a.Recv(ctx, make([]byte, 1e6)); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Fatalf("1 MB arrived after %v < 100 ms", d)
	}
	if l, w := netmodel.LAN(), netmodel.WAN(); l.Bandwidth != 377e6 || w.RTT != 80*time.Millisecond {
		t.Fatal("LAN/WAN presets changed")
	}
}

func TestAcceptCancelAndDialRetry(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := Accept(ctx, ln, Options{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("accept: got %v", err)
	}
	ln.Close()
	// Dial before anybody listens; the listener appears 50 ms later.
	done := make(chan *Conn, 1)
	go func() {
		time.Sleep(50 * time.Millisecond)
		ln2, err := net.Listen("tcp", addr)
		if err != nil {
			done <- nil
			return
		}
		defer ln2.Close()
		c, _ := Accept(context.Background(), ln2, Options{})
		done <- c
	}()
	dctx, dcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer dcancel()
	c, err := Dial(dctx, addr, Options{})
	srv := <-done
	if srv == nil {
		t.Skip("could not re-listen on the same port")
	}
	defer srv.Close()
	if err != nil {
		t.Fatalf("dial with retry: %v", err)
	}
	c.Close()
	// A malformed address fails at once, without retrying.
	start := time.Now()
	if _, err := Dial(context.Background(), "no-port", Options{}); err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("dial to a malformed address: %v after %v", err, time.Since(start))
	}
	// Dial gives up when its context ends.
	short, scancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer scancel()
	if _, err := Dial(short, addr, Options{}); err == nil {
		t.Fatal("dial to a closed port succeeded")
	}
}

func TestSendRecvPackedAndWords(t *testing.T) {
	a, b := pipe(t, Options{})
	ctx := context.Background()
	v := []uint64{1, 2, 3, 4, 5, 6, 7, 1<<13 - 1, 9}
	w := []uint64{^uint64(0), 0, 42}
	go func() {
		_ = a.SendPacked(ctx, v, 13)
		_ = a.SendUint64s(ctx, w)
		_ = a.Flush(ctx)
	}()
	got := make([]uint64, len(v))
	if err := b.RecvPacked(ctx, got, 13); err != nil {
		t.Fatal(err)
	}
	for i := range v {
		if got[i] != v[i] {
			t.Fatalf("packed value %d: %d != %d", i, got[i], v[i])
		}
	}
	gw := make([]uint64, len(w))
	if err := b.RecvUint64s(ctx, gw); err != nil {
		t.Fatal(err)
	}
	if gw[0] != w[0] || gw[2] != 42 {
		t.Fatal("words corrupted")
	}
	if want := int64(PackedBytes(len(v), 13) + 8*len(w) + 2*HeaderSize); b.Stats().BytesRecv != want {
		t.Fatalf("received %d bytes, want %d", b.Stats().BytesRecv, want)
	}
	if err := a.SendPacked(ctx, v, 0); err == nil {
		t.Fatal("width 0 accepted")
	}
	if err := b.RecvPacked(ctx, got, 65); err == nil {
		t.Fatal("width 65 accepted")
	}
}

func TestSendRecvBits(t *testing.T) {
	a, b := pipe(t, Options{})
	ctx := context.Background()
	lengths := []int{0, 1, 7, 8, 9, 63, 64, 65, 130}
	go func() {
		for _, n := range lengths {
			v := []uint64{0xf0e1d2c3b4a59687, ^uint64(0), 0x0123456789abcdef} // bits past n too
			_ = a.SendBits(ctx, v, n)
		}
		_ = a.Flush(ctx)
	}()
	var sent int64
	for _, n := range lengths {
		dst := []uint64{0x5a5a5a5a5a5a5a5a, 0x5a5a5a5a5a5a5a5a, 0x5a5a5a5a5a5a5a5a, 7} // junk to overwrite
		if err := b.RecvBits(ctx, dst, n); err != nil {
			t.Fatalf("%d bits: %v", n, err)
		}
		want := []uint64{0xf0e1d2c3b4a59687, ^uint64(0), 0x0123456789abcdef}
		for i := range want {
			switch {
			case i >= (n+63)/64:
				want[i] = 0x5a5a5a5a5a5a5a5a // past the vector: untouched
			case n-64*i < 64:
				want[i] &= 1<<(n-64*i) - 1 // the tail past n is zeroed
			}
		}
		if dst[0] != want[0] || dst[1] != want[1] || dst[2] != want[2] || dst[3] != 7 {
			t.Fatalf("%d bits: received %#x, want %#x", n, dst[:3], want)
		}
		sent += int64(HeaderSize + (n+7)/8)
	}
	if got := b.Stats().BytesRecv; got != sent {
		t.Fatalf("received %d bytes, want %d (one frame of ⌈n/8⌉ bytes per vector)", got, sent)
	}
	if err := a.SendBits(ctx, []uint64{1}, 65); err == nil {
		t.Fatal("SendBits of 65 bits from one word accepted")
	}
	if err := b.RecvBits(ctx, make([]uint64, 1), 65); err == nil {
		t.Fatal("RecvBits of 65 bits into one word accepted")
	}
	if err := a.SendBits(ctx, nil, -1); err == nil {
		t.Fatal("SendBits of -1 bits accepted")
	}
}

func BenchmarkPipeThroughput(b *testing.B) {
	x, y := Pipe(Options{})
	defer x.Close()
	defer y.Close()
	benchThroughput(b, x, y)
}

func BenchmarkTCPThroughput(b *testing.B) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	defer ln.Close()
	ch := make(chan *Conn)
	go func() { c, _ := Accept(context.Background(), ln, Options{}); ch <- c }()
	x, err := Dial(context.Background(), ln.Addr().String(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	y := <-ch
	defer x.Close()
	defer y.Close()
	benchThroughput(b, x, y)
}

func benchThroughput(b *testing.B, x, y *Conn) {
	ctx := context.Background()
	msg := make([]byte, 1<<20)
	b.SetBytes(int64(len(msg)))
	go func() {
		buf := make([]byte, len(msg))
		for {
			if y.Recv(ctx, buf) != nil {
				return
			}
		}
	}()
	for b.Loop() {
		if err := x.Send(ctx, msg); err != nil {
			b.Fatal(err)
		}
	}
	_ = x.Flush(ctx)
}
