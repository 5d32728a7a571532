package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ring"
)

func testHello(party int) Hello {
	h := Hello{Version: HandshakeVersion, Party: party, RingKind: ring.Pow2, RingParam: 32, Scale: 12,
		Backend: "sciot", Streams: 1, Model: "model.onnx", ModelSHA: "a18601277b701b25", Software: "test", Batch: 1,
		Compiled: "backend: sciot\npreprocessing mean (--mean): [0]\npreprocessing std (--std): [1]"}
	for i := range h.Program {
		h.Program[i] = byte(i)
	}
	return h
}

func TestHelloRoundTrip(t *testing.T) {
	h := testHello(1)
	b := h.marshal()
	version, party, n, err := parsePrefix(b[:prefixSize])
	if err != nil || version != HandshakeVersion || party != 1 || n != len(b)-prefixSize {
		t.Fatalf("prefix: %d %d %d %v", version, party, n, err)
	}
	got := Hello{Version: version, Party: party}
	if err := got.parseBody(b[prefixSize:]); err != nil {
		t.Fatal(err)
	}
	if got != h {
		t.Fatalf("round trip: %+v, want %+v", got, h)
	}
	// Every truncation of the body is an error, never a panic.
	for i := range len(b) - prefixSize {
		var g Hello
		if err := g.parseBody(b[prefixSize : prefixSize+i]); err == nil {
			t.Errorf("body cut at %d accepted", i)
		}
	}
	var g Hello
	if err := g.parseBody(append(b[prefixSize:], 0)); err == nil || !strings.Contains(err.Error(), "trailing") {
		t.Errorf("trailing byte: %v", err)
	}
}

func TestCompare(t *testing.T) {
	c, s := testHello(1), testHello(0)
	if m := Compare(c, s); m != "" {
		t.Fatalf("equal hellos: %q", m)
	}
	other := func(f func(h *Hello)) Hello { h := testHello(0); f(&h); return h }
	big := testHello(1)
	big.Batch = 1001
	lim := testHello(0)
	lim.Batch = 1000
	if m, want := Compare(big, lim), "the client asks for 1001 inferences in one session, the server allows at most 1000"; !strings.Contains(m, want) || Compare(lim, big) != m {
		t.Errorf("batch over the cap: %q, want %q at both sides", m, want)
	}
	lim.Batch = 1001
	if m := Compare(big, lim); m != "" {
		t.Errorf("batch at the cap: %q", m)
	}
	big.Batch = 0
	if m := Compare(big, lim); !strings.Contains(m, "a batch of 0 inferences: want at least 1") {
		t.Errorf("empty batch: %q", m)
	}
	// Issue 24, finding 7: an --ot mismatch was reported as "both must use the same --backend".
	iknp, ferret := testHello(1), testHello(0)
	iknp.Backend, ferret.Backend = "sciot ot=iknp", "sciot ot=ferret"
	if m, want := Compare(iknp, ferret), `client runs backend sciot with ot=iknp, server with ot=ferret: both must use the same --ot`; m != want || Compare(ferret, iknp) != m {
		t.Errorf("--ot mismatch: %q, want %q at both sides", m, want)
	}
	for _, tc := range []struct {
		name   string
		server Hello
		want   string
	}{
		{"version", other(func(h *Hello) { h.Version = HandshakeVersion + 1 }),
			fmt.Sprintf("client speaks scirun handshake version %d, server version %d", HandshakeVersion, HandshakeVersion+1)},
		{"streams", other(func(h *Hello) { h.Streams = 2 }), "client uses 1 streams, server 2: both must use the same --streams"},
		{"roles", other(func(h *Hello) { h.Party = 1 }), "both sides are the client (party 1)"},
		{"model", other(func(h *Hello) { h.Program[0] = 0xff; h.ModelSHA = "5b3c0000"; h.Model = "mnist-8.onnx" }),
			"client runs program 00010203…, server runs ff010203…" +
				" (compiled from different models: client from model.onnx a1860127…, server from mnist-8.onnx 5b3c0000):" +
				" recompile or fetch the matching client file"},
		{"scale", other(func(h *Hello) { h.Program[0] = 0xff; h.Scale = 8 }),
			"(different ring or scale: client Z_2^32 scale 12, server Z_2^32 scale 8)"},
		{"same model", other(func(h *Hello) { h.Program[0] = 0xff }), "(same model, ring and scale, compiled differently: in what the hellos do not describe"},
		{"preprocessing", other(func(h *Hello) {
			h.Program[0] = 0xff
			h.Compiled = "backend: sciot\npreprocessing mean (--mean): [0.1307]\npreprocessing std (--std): [0.3081]"
		}), "(same model, ring and scale, compiled differently: preprocessing mean (--mean): client [0], server [0.1307]; " +
			"preprocessing std (--std): client [1], server [0.3081])"},
		{"backend", other(func(h *Hello) { h.Backend = "scihe" }), `client runs backend "sciot", server "scihe"`},
		{"ring only", other(func(h *Hello) { h.RingParam = 20 }), "client runs Z_2^32 at scale 12, server Z_2^20 at scale 12"},
		{"batch cap", other(func(h *Hello) { h.Batch = 0 }),
			"the client asks for 1 inferences in one session, the server allows at most 0 (its --max-batch): split the batch"},
	} {
		mc, ms := Compare(c, tc.server), Compare(tc.server, c)
		if !strings.Contains(mc, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, mc, tc.want)
		}
		if tc.name != "roles" && mc != ms {
			t.Errorf("%s: the two sides word it differently: %q and %q", tc.name, mc, ms)
		}
	}
}

// handshakePair runs Handshake on both ends of a loopback TCP connection.
func handshakePair(t *testing.T, a, b Hello) (peerA, peerB Hello, errA, errB error) {
	t.Helper()
	ln := testenv.ListenLoopback(t)
	defer ln.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			errB = err
			return
		}
		defer nc.Close()
		peerB, _, _, errB = Handshake(context.Background(), nc, b, 2*time.Second)
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var sent, recv int64
	peerA, sent, recv, errA = Handshake(context.Background(), nc, a, 2*time.Second)
	nc.Close()
	<-done
	// The server's acceptance carries the session token.
	if errA == nil && (recv-sent != int64(expectedToken(a.Party)) || sent < prefixSize+43) {
		t.Errorf("handshake bytes: sent %d, received %d", sent, recv)
	}
	return peerA, peerB, errA, errB
}

func TestHandshakeOverTCP(t *testing.T) {
	peerA, peerB, errA, errB := handshakePair(t, testHello(1), testHello(0))
	if errA != nil || errB != nil {
		t.Fatalf("matching hellos: %v / %v", errA, errB)
	}
	if peerA != testHello(0) || peerB != testHello(1) {
		t.Errorf("peers %+v / %+v", peerA, peerB)
	}

	// The client learns the token the server issues; the server learns none from the client.
	s0, c1 := testHello(0), testHello(1)
	s0.Token = Token{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	c1.Token = Token{0xff}
	peerA, peerB, errA, errB = handshakePair(t, c1, s0)
	if errA != nil || errB != nil || peerA.Token != s0.Token || peerB.Token != (Token{}) {
		t.Errorf("token: %v / %v, client got %x, server got %x", errA, errB, peerA.Token, peerB.Token)
	}

	s := testHello(0)
	s.Program[0], s.Scale = 0xee, 8
	_, _, errA, errB = handshakePair(t, testHello(1), s)
	want := "client runs program 00010203…, server runs ee010203…"
	for i, err := range []error{errA, errB} {
		var he *HandshakeError
		if !errors.As(err, &he) || !he.Refused || !errors.Is(err, ErrHandshake) || !strings.Contains(err.Error(), want) {
			t.Errorf("side %d: %v, want a refusal naming %q", i, err, want)
		}
	}

	// A peer of another version: both sides refuse with the version message, even though the
	// body of a future version may not parse.
	v2 := testHello(0)
	v2.Version = HandshakeVersion + 1
	_, _, errA, errB = handshakePair(t, testHello(1), v2)
	for i, err := range []error{errA, errB} {
		if err == nil || !strings.Contains(err.Error(), "handshake version") {
			t.Errorf("version, side %d: %v", i, err)
		}
	}
}

// rawPeer accepts one connection and runs f on it.
func rawPeer(t *testing.T, f func(nc net.Conn)) (addr string, wait func()) {
	t.Helper()
	ln := testenv.ListenLoopback(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer ln.Close()
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		f(nc)
	}()
	return ln.Addr().String(), func() { <-done }
}

// drain reads until the other side closes.
func drain(nc net.Conn) { _, _ = io.Copy(io.Discard, nc) }

func TestHandshakeGarbageAndSilence(t *testing.T) {
	for _, tc := range []struct {
		name string
		peer func(nc net.Conn)
		want string
	}{
		{"http", func(nc net.Conn) { nc.Write([]byte("GET / HTTP/1.1\r\n\r\n")); drain(nc) },
			`not speaking the scirun protocol (first bytes 47 45 54 20 2f 20 "GET / ")`},
		{"tls", func(nc net.Conn) { nc.Write([]byte{0x16, 0x03, 0x01, 0x00, 0xa5, 0x01}); drain(nc) },
			"started a TLS handshake"},
		{"short garbage then close", func(nc net.Conn) { nc.Write([]byte("xy")) }, "not speaking the scirun protocol"},
		{"close", func(nc net.Conn) {}, "the server closed the connection (if the server uses TLS: pass --tls-pin with the fingerprint it printed at start"},
		{"silence", func(nc net.Conn) { drain(nc) }, "no answer within 300ms"},
		{"bad verdict", func(nc net.Conn) {
			nc.Write(testHello(0).marshal())
			nc.Write([]byte{7, 0, 0})
			drain(nc)
		}, "invalid verdict byte 7"},
		{"huge body", func(nc net.Conn) {
			nc.Write([]byte{'S', 'C', 'I', 'R', 'U', 'N', 1, 0, 0, 0, 0xff, 0xff})
			drain(nc)
		}, "exceeds 4096"},
	} {
		addr, wait := rawPeer(t, tc.peer)
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		timeout := 5 * time.Second
		if tc.name == "silence" {
			timeout = 300 * time.Millisecond
		}
		_, _, _, err = Handshake(context.Background(), nc, testHello(1), timeout)
		nc.Close()
		wait()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestHandshakeCancel(t *testing.T) {
	addr, wait := rawPeer(t, drain)
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, _, err = Handshake(ctx, nc, testHello(1), time.Minute)
	took := time.Since(start)
	nc.Close()
	wait()
	if !errors.Is(err, context.DeadlineExceeded) || took > 400*time.Millisecond {
		t.Errorf("cancelled handshake: %v after %v", err, took)
	}
}
