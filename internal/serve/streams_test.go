package serve

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// newSCIOT runs the real SCI_OT backend on every stream of a session, recording how many
// streams it got.
func newSCIOT(got *sync.Map) BackendFunc {
	return func(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		b, err := sci.New(ctx, conn, party, r, sci.Options{Streams: streams})
		if err == nil && got != nil {
			got.Store(b, b.Streams())
		}
		return b, err
	}
}

// streamOptions are options for the secure backend with n streams.
func streamOptions(opt *Options, n int, got *sync.Map) *Options {
	opt.Backend, opt.NewBackend, opt.Streams = "sciot", newSCIOT(got), n
	return opt
}

// streamClient runs a client session with opt.Streams streams against addr.
func streamClient(ctx context.Context, addr string, opt *Options, tlsConf *tls.Config, in []ring.Tensor) (*Result, error) {
	o := *opt
	if o.DialStream == nil {
		o.DialStream = func(ctx context.Context) (net.Conn, error) { return Dial(ctx, addr, tlsConf, 2*time.Second) }
	}
	return client(ctx, addr, &o, tlsConf, in)
}

// Two-stream sciot sessions over loopback TCP (plain and TLS, several clients at once) give the
// cleartext result bit for bit, and every backend really runs on two streams.
func TestTwoStreamsBitwiseAndConcurrent(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	base := countGoroutines()
	var got sync.Map
	stls, ctls := tlsPair(t)
	for _, tc := range []struct {
		name    string
		s, c    *tls.Config
		clients int
	}{{"plain", nil, nil, 3}, {"tls", stls, ctls, 2}} {
		// With 2 slots the third client waits for a session to end before its hello arrives; the
		// per-wait timeout must outlast a whole session even under -race on a loaded machine.
		sopt, copt := streamOptions(options(full), 2, &got), streamOptions(options(cfile), 2, &got)
		sopt.Timeout, copt.Timeout = time.Minute, time.Minute
		ts := startServer(t, &Server{Options: sopt, MaxSessions: 2, TLS: tc.s})
		var wg sync.WaitGroup
		for i := range tc.clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				in := input(t, full, i)
				res, err := streamClient(context.Background(), ts.addr, copt, tc.c, in)
				if err != nil {
					t.Errorf("%s client %d: %v", tc.name, i, err)
					return
				}
				checkOutputs(t, tc.name, res, clearRun(t, full, in))
				if res.Report.Streams != 2 || res.Report.TLS != (tc.c != nil) {
					t.Errorf("%s client %d: report streams %d, TLS %v", tc.name, i, res.Report.Streams, res.Report.TLS)
				}
			}()
		}
		wg.Wait()
		if err := ts.stop(t); err != nil {
			t.Error(err)
		}
	}
	n := 0
	got.Range(func(_, v any) bool {
		n++
		if v.(int) != 2 {
			t.Errorf("a backend ran on %d streams, want 2", v)
		}
		return true
	})
	if n != 2*(3+2) {
		t.Errorf("%d backends, want %d", n, 2*(3+2))
	}
	testenv.CheckNoLeaks(t, base)
}

// A stream connection presenting a wrong token is refused with a clear reason and does not
// disturb the session waiting for its stream.
func TestStreamJoinRefusedWithoutDisturbing(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	ts := startServer(t, &Server{Options: streamOptions(options(full), 2, nil)})
	copt := streamOptions(options(cfile), 2, nil)
	var rogue []error
	copt.DialStream = func(ctx context.Context) (net.Conn, error) {
		// Before the real stream: strangers guess tokens while the session waits for it.
		for _, tok := range []Token{{0xde, 0xad}, {}} {
			nc, err := Dial(ctx, ts.addr, nil, time.Second)
			if err != nil {
				return nil, err
			}
			nc.SetDeadline(time.Now().Add(5 * time.Second))
			nc.Write(joinMessage(tok, 1))
			rogue = append(rogue, readVerdict(nc))
			nc.Close()
		}
		return Dial(ctx, ts.addr, nil, time.Second)
	}
	in := input(t, full, 1)
	res, err := client(context.Background(), ts.addr, copt, nil, in)
	if err != nil {
		t.Fatal(err)
	}
	checkOutputs(t, "after rogue joins", res, clearRun(t, full, in))
	wants := []string{"unknown or expired session token", "unknown or expired session token"}
	if len(rogue) != len(wants) {
		t.Fatalf("rogue joins: %v", rogue)
	}
	for i, w := range wants {
		if rogue[i] == nil || !strings.Contains(rogue[i].Error(), w) {
			t.Errorf("rogue join %d: %v, want %q", i, rogue[i], w)
		}
	}
	waitFor(t, "the refusals in the log", func() bool { return strings.Count(ts.log.String(), "stream connection refused") == 2 })
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
}

// Different stream counts are refused at the handshake, with the same message on both sides; a
// token from a finished session no longer joins.
func TestStreamCountMismatch(t *testing.T) {
	full, cfile, _, _ := mnistSmall(t)
	ts := startServer(t, &Server{Options: streamOptions(options(full), 2, nil)})
	_, err := streamClient(context.Background(), ts.addr, streamOptions(options(cfile), 1, nil), nil, input(t, full, 0))
	want := "client uses 1 streams, server 2: both must use the same --streams"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("mismatch: %v, want %q", err, want)
	}
	waitFor(t, "the server's refusal", func() bool { return strings.Contains(ts.log.String(), want) })
	if err := ts.stop(t); err != nil {
		t.Error(err)
	}
	// A lone server side cannot run several streams without a Server.
	a, b := net.Pipe()
	defer b.Close()
	if _, err := Run(context.Background(), a, 0, streamOptions(options(full), 2, nil), nil); err == nil || !strings.Contains(err.Error(), "needs a Server") {
		t.Errorf("Run as a two-stream server: %v", err)
	}
}

// The registry hands a connection only to the session of its token, at a free index inside the
// session, and nothing once the session stopped waiting.
func TestRegistryDeliver(t *testing.T) {
	reg := newRegistry()
	tok, err := newToken()
	if err != nil {
		t.Fatal(err)
	}
	other, _ := newToken()
	if tok == other || tok == (Token{}) {
		t.Fatalf("tokens %x and %x", tok, other)
	}
	p := reg.open(tok, 3)
	conns := make([]net.Conn, 4)
	for i := range conns {
		a, b := net.Pipe()
		defer a.Close()
		defer b.Close()
		conns[i] = a
		go drain(b)
	}
	for _, tc := range []struct {
		tok  Token
		idx  int
		want string
	}{
		{other, 1, "unknown or expired session token"},
		{tok, 0, "stream index 0: the session has streams 1 to 2"},
		{tok, 3, "stream index 3: the session has streams 1 to 2"},
		{tok, 2, ""},
		{tok, 2, "stream 2 of the session is already connected"},
	} {
		if got := reg.deliver(tc.tok, tc.idx, conns[0]); got != tc.want {
			t.Errorf("token %v index %d: %q, want %q", tc.tok, tc.idx, got, tc.want)
		}
	}
	// The session gives up (its primary connection closes): the token expires.
	primary, peer := net.Pipe()
	peer.Close()
	if _, err := reg.wait(context.Background(), tok, p, primary, 5*time.Second); err == nil || !strings.Contains(err.Error(), "closed the connection") {
		t.Errorf("wait with the client gone: %v", err)
	}
	if got := reg.deliver(tok, 1, conns[1]); got != "unknown or expired session token" {
		t.Errorf("after expiry: %q", got)
	}
}
