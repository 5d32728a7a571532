package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// preSessionLimits sets the server's pre-session deadlines for a test.
func preSessionLimits(opt *Options, hello, queue time.Duration) {
	opt.HelloTimeout, opt.JoinTimeout, opt.QueueTimeout = hello, hello, queue
}

// holdIdle opens n TCP connections to addr that never send a byte.
func holdIdle(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	var cs []net.Conn
	for range n {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		cs = append(cs, nc)
	}
	return cs
}

// holdMagic opens n connections to addr (TLS ones when tlsConf is set) that send only the
// 6-byte hello magic and then nothing. It reports how many got their bytes through (a server
// that accepts no more connections leaves TLS handshakes unanswered).
func holdMagic(t *testing.T, addr string, n int, tlsConf *tls.Config) (cs []net.Conn, sent int) {
	t.Helper()
	for range n {
		raw, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { raw.Close() })
		nc := raw
		if tlsConf != nil {
			conf := tlsConf.Clone()
			conf.ServerName = "127.0.0.1"
			tc := tls.Client(raw, conf)
			_ = raw.SetDeadline(time.Now().Add(time.Second))
			err := tc.Handshake()
			_ = raw.SetDeadline(time.Time{})
			if err != nil {
				t.Logf("TLS handshake of a magic-only connection: %v", err)
				cs = append(cs, raw)
				continue
			}
			nc = tc
		}
		if _, err := nc.Write([]byte(helloMagic)); err == nil {
			sent++
		}
		cs = append(cs, nc)
	}
	return cs, sent
}

// stillOpen reports how many of cs the server has not closed.
func stillOpen(cs []net.Conn) int {
	n := 0
	var b [1]byte
	for _, c := range cs {
		_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
		_, err := c.Read(b[:])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			n++
		}
		_ = c.SetReadDeadline(time.Time{})
	}
	return n
}

// Issue 11, hole 1: with the defaults of the review (2 sessions, 2 streams), 40 idle
// connections and 10 that send only the hello magic, all from the same address as the honest
// client and all held open, do not stop an honest client (with and without TLS). It must
// finish while every attacking connection is still open: so they held no place it needed.
// Before the fix the server stopped accepting after 6 of them, and the client failed.
func TestIdleAndMagicOnlyConnectionsDoNotBlock(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	stls, ctls := tlsPair(t)
	for _, tc := range []struct {
		name string
		s, c *tls.Config
	}{{"plain", nil, nil}, {"tls", stls, ctls}} {
		t.Run(tc.name, func(t *testing.T) {
			// The real backend (sciot) on two streams, as scirun runs it by default.
			sopt, copt := streamOptions(options(full), 2, nil), streamOptions(options(cfile), 2, nil)
			sopt.Timeout, copt.Timeout = 30*time.Second, 30*time.Second
			preSessionLimits(sopt, 30*time.Second, 30*time.Second)
			ts := startServer(t, &Server{Options: sopt, MaxSessions: 2, TLS: tc.s})
			in := input(t, full, 3)
			want := clearRun(t, full, in)
			// Generous: under -race a sciot session takes seconds.
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			t0 := time.Now()
			res, err := streamClient(ctx, ts.addr, copt, tc.c, in)
			if err != nil {
				t.Fatalf("without attackers: %v", err)
			}
			normal := time.Since(t0)
			checkOutputs(t, "without attackers", res, want)

			magic, sent := holdMagic(t, ts.addr, 10, tc.c)
			idle := holdIdle(t, ts.addr, 40)
			attackers := append(magic, idle...)

			t0 = time.Now()
			res, err = streamClient(ctx, ts.addr, copt, tc.c, in)
			took := time.Since(t0)
			if err != nil {
				t.Fatalf("honest client with 40 idle and %d magic-only connections held open: %v", sent, err)
			}
			checkOutputs(t, "under attack", res, want)
			if n := stillOpen(attackers); n != len(attackers) {
				t.Errorf("only %d of %d attacking connections still open: the test did not hold them during the session", n, len(attackers))
			}
			if sent != 10 {
				t.Errorf("%d of 10 magic-only connections got their magic through", sent)
			}
			t.Logf("%s: honest session %v alone, %v with 50 attacking connections held (%.2fx)", tc.name,
				normal.Round(time.Millisecond), took.Round(time.Millisecond), float64(took)/float64(normal))
			for _, c := range attackers {
				c.Close()
			}
			if err := ts.stop(t); err != nil {
				t.Error(err)
			}
		})
	}
}

// Every pre-session stage has a deadline: connections that stay silent, send only the magic,
// start TLS and stop, or send half a hello are closed after HelloTimeout, and the log says why.
func TestPreSessionDeadlines(t *testing.T) {
	full, _, _, _ := mnistSmall(t)
	stls, ctls := tlsPair(t)
	for _, tc := range []struct {
		name string
		s, c *tls.Config
	}{{"plain", nil, nil}, {"tls", stls, ctls}} {
		t.Run(tc.name, func(t *testing.T) {
			sopt := options(full)
			sopt.Timeout = 30 * time.Second
			preSessionLimits(sopt, 300*time.Millisecond, time.Second)
			ts := startServer(t, &Server{Options: sopt, TLS: tc.s})
			// A TLS handshake started and never finished.
			if tc.s != nil {
				raw := holdIdle(t, ts.addr, 1)[0]
				raw.Write([]byte{0x16, 0x03, 0x01, 0x00, 0x50})
			}
			idle := holdIdle(t, ts.addr, 3)
			magic, sent := holdMagic(t, ts.addr, 3, tc.c)
			if sent != 3 {
				t.Fatalf("%d of 3 magic-only connections got through", sent)
			}
			half := append(magic[:0:0], magic...)
			for _, c := range half {
				// The rest of a prefix announcing a body that never comes.
				c.Write([]byte{HandshakeVersion, 0, 1, 0, 100, 0})
			}
			all := append(idle, magic...)
			start := time.Now()
			testenv.WaitFor(t, 5*time.Second, "the server to close the silent connections", func() bool { return stillOpen(all) == 0 })
			t.Logf("%d connections closed after %v (HelloTimeout 300ms)", len(all), time.Since(start).Round(time.Millisecond))
			n := len(all)
			if tc.s != nil {
				n++ // the unfinished TLS handshake
			}
			waitFor(t, "the log lines", func() bool {
				return strings.Count(ts.log.String(), "within 300ms") == n
			})
			if err := ts.stop(t); err != nil {
				t.Error(err)
			}
		})
	}
}

// Many silent connections beyond MaxPending: the oldest are dropped (and logged), and an honest
// client that comes after them is served.
func TestPendingEvictsOldest(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	sopt := options(full)
	sopt.Streams, sopt.Timeout = 2, 30*time.Second
	preSessionLimits(sopt, 30*time.Second, 30*time.Second)
	copt := options(cfile)
	copt.Streams = 2
	ts := startServer(t, &Server{Options: sopt, MaxSessions: 1, MaxPending: 8})
	idle := holdIdle(t, ts.addr, 20)
	waitFor(t, "12 evictions", func() bool { return strings.Count(ts.log.String(), "connection dropped") == 12 })
	in := input(t, full, 2)
	res, err := streamClient(context.Background(), ts.addr, copt, nil, in)
	if err != nil {
		t.Fatalf("honest client after 20 silent connections with MaxPending 8: %v", err)
	}
	checkOutputs(t, "after evictions", res, clearRun(t, full, in))
	// The client's stream connection evicted one more silent connection.
	if n := stillOpen(idle); n != 7 {
		t.Errorf("%d silent connections still open, want 7 (8 pending minus the one the stream evicted)", n)
	}
	if !strings.Contains(ts.log.String(), "8 connections were awaiting their hello (the server's limit); this was the oldest") {
		t.Errorf("the log does not say why connections were dropped:\n%s", ts.log.String())
	}
	for _, c := range idle {
		c.Close()
	}
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
}

// A client queued behind a busy slot is refused after QueueTimeout, told why, instead of
// waiting without a deadline; a session that never gets its stream connections ends after
// JoinTimeout.
func TestQueueAndJoinDeadlines(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	sopt := options(full)
	sopt.Timeout = 30 * time.Second
	preSessionLimits(sopt, 5*time.Second, 300*time.Millisecond)
	ts := startServer(t, &Server{Options: sopt, MaxSessions: 1})
	// A client that completes its handshake and stalls holds the only slot.
	c := acceptedClient(t, ts.addr, options(cfile))
	waitFor(t, "the stalled session", func() bool { return strings.Contains(ts.log.String(), "session started") })
	start := time.Now()
	_, err := client(context.Background(), ts.addr, options(cfile), nil, input(t, full, 0))
	want := "no session slot came free within 300ms"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("queued client: %v, want %q", err, want)
	}
	t.Logf("queued client refused after %v", time.Since(start).Round(time.Millisecond))
	waitFor(t, "the refusal in the log", func() bool { return strings.Contains(ts.log.String(), want) })
	c.Close()
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}

	// Join deadline: a two-stream client that never opens its second stream.
	sopt = options(full)
	sopt.Streams, sopt.Timeout = 2, 30*time.Second
	preSessionLimits(sopt, 300*time.Millisecond, time.Second)
	ts = startServer(t, &Server{Options: sopt})
	copt := options(cfile)
	copt.Streams = 2
	copt.DialStream = func(ctx context.Context) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	go func() { _, _ = client(ctx, ts.addr, copt, nil, input(t, full, 0)) }()
	waitFor(t, "the join deadline", func() bool {
		return strings.Contains(ts.log.String(), "stream connections did not all arrive within 300ms")
	})
	cancel()
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
}

// holdHello opens n connections to addr that each send a whole valid hello for cfile and then
// nothing (they read nothing either).
func holdHello(t *testing.T, addr string, cfile *sciir.File, opt *Options, n int) []net.Conn {
	t.Helper()
	h := HelloFor(cfile, 1, opt.backend(), "hello-only").marshal()
	cs := holdIdle(t, addr, n)
	for _, c := range cs {
		if _, err := c.Write(h); err != nil {
			t.Fatal(err)
		}
	}
	return cs
}

// notClosed reports how many of cs the server has not closed, discarding what it sent them.
func notClosed(cs []net.Conn) int {
	n := 0
	b := make([]byte, 4096)
	for _, c := range cs {
		for {
			_ = c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			_, err := c.Read(b)
			if errors.Is(err, os.ErrDeadlineExceeded) {
				n++
			}
			if err != nil {
				break
			}
		}
		_ = c.SetReadDeadline(time.Time{})
	}
	return n
}

// Issue 24, finding 3: ten connections that each send one valid hello and never continue held
// every session slot and queue place (a slot for the rest of the handshake, the queue places
// until a slot came free), so an honest client was refused as busy for ~50 s with the
// defaults. Now a hello takes no slot until the client has answered the server's hello with its
// verdict, within HelloTimeout: the honest client is served while the ten are held open, and
// they are dropped after HelloTimeout, each logged.
func TestHelloOnlyConnectionsHoldNoSlot(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	sopt, copt := options(full), options(cfile)
	sopt.Timeout = 30 * time.Second
	preSessionLimits(sopt, 2*time.Second, 30*time.Second)
	ts := startServer(t, &Server{Options: sopt, MaxSessions: 1}) // 1 slot, 4 queue places
	attackers := holdHello(t, ts.addr, cfile, copt, 10)
	time.Sleep(100 * time.Millisecond) // let the server read their hellos
	in := input(t, full, 6)
	start := time.Now()
	res, err := client(context.Background(), ts.addr, copt, nil, in)
	if err != nil {
		t.Fatalf("honest client with 10 hello-only connections held open: %v", err)
	}
	checkOutputs(t, "under attack", res, clearRun(t, full, in))
	t.Logf("honest client served in %v while 10 hello-only connections were held", time.Since(start).Round(time.Millisecond))
	if n := notClosed(attackers); n != len(attackers) {
		t.Errorf("only %d of %d hello-only connections still open during the honest session", n, len(attackers))
	}
	testenv.WaitFor(t, 5*time.Second, "the server to drop the hello-only connections", func() bool { return notClosed(attackers) == 0 })
	waitFor(t, "the log lines", func() bool {
		return strings.Count(ts.log.String(), "waiting for the client's verdict on the server's hello: no answer within 2s") == 10
	})
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
}

// queuedGauge reads the server's scirun_sessions_queued gauge.
func queuedGauge(t *testing.T, m *Metrics) float64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "scirun_sessions_queued" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("no scirun_sessions_queued gauge")
	return 0
}

// Found by the soak test (issue 24): a client that queued for a slot (hello and verdict sent) and
// then went away kept its queue place until a slot came to it or the queue timeout passed, so a
// client that connected, queued and disconnected in a loop filled the queue with dead entries and
// every other client, honest ones included, was refused as busy. Now a queued client's
// connection is watched: when it closes, its place is freed at once, and logged; a client that
// stays (plain or TLS, whose connection the watch interrupts) is served as before.
func TestQueuedClientsThatLeaveFreeTheirPlaces(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	srvTLS, cliTLS := tlsPair(t)
	for _, tc := range []struct {
		name     string
		srv, cli *tls.Config
	}{{"plain", nil, nil}, {"TLS", srvTLS, cliTLS}} {
		t.Run(tc.name, func(t *testing.T) {
			sopt := options(full)
			sopt.Timeout = 30 * time.Second
			preSessionLimits(sopt, 5*time.Second, 30*time.Second)
			m := NewMetrics()
			ts := startServer(t, &Server{Options: sopt, MaxSessions: 1, Metrics: m, TLS: tc.srv}) // 4 queue places
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dial := func() net.Conn {
				nc, err := Dial(ctx, ts.addr, tc.cli, 5*time.Second)
				if err != nil {
					t.Fatal(err)
				}
				return nc
			}
			hello := HelloFor(cfile, 1, options(cfile).backend(), "test")
			stalled := dial() // holds the only slot
			defer stalled.Close()
			if _, _, _, err := Handshake(ctx, stalled, hello, 5*time.Second); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the stalled session", func() bool { return strings.Contains(ts.log.String(), "session started") })

			// Four clients queue, then go away.
			var leavers []net.Conn
			for range waitingPerSlot {
				nc := dial()
				leavers = append(leavers, nc)
				go func() { _, _, _, _ = Handshake(ctx, nc, hello, 30*time.Second) }()
			}
			waitFor(t, "four queued clients", func() bool { return queuedGauge(t, m) == waitingPerSlot })
			for _, nc := range leavers {
				nc.Close()
			}
			waitFor(t, "the queue to empty", func() bool { return queuedGauge(t, m) == 0 })
			waitFor(t, "the departures in the log", func() bool {
				return strings.Count(ts.log.String(), "left while waiting for a session slot") == waitingPerSlot
			})

			// An honest client now queues (it is not refused as busy) and is served once the slot
			// frees.
			in := input(t, full, 2)
			done := make(chan error, 1)
			var res *Result
			go func() {
				var err error
				res, err = client(ctx, ts.addr, options(cfile), tc.cli, in)
				done <- err
			}()
			waitFor(t, "the honest client in the queue", func() bool { return queuedGauge(t, m) == 1 })
			time.Sleep(100 * time.Millisecond) // the watch's read is blocked before the slot frees
			stalled.Close()
			if err := <-done; err != nil {
				t.Fatalf("the honest client: %v", err)
			}
			checkOutputs(t, "honest", res, clearRun(t, full, in))
			if err := ts.stop(t); err != nil {
				t.Error(err)
			}
		})
	}
}
