package main

// The soak test of the production server (issue 24): the real scirun binary serves on loopback
// for a bounded time while honest, stalling, flooding and killed clients run beside each other.

import (
	"bufio"
	"context"
	encbin "encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

var soakPhase = flag.Duration("soak", 0, "TestSoak: run each of its two phases for `D` (default 25s; e.g. -soak 10m -timeout 30m)")

// The soak server's limits (flags of the binary). The stall bound is short so that a stalled
// session frees its slot within the run; an honest receive of mnist-small waits far less.
const (
	soakMaxSessions = 4
	soakTimeout     = 6 * time.Second // --timeout: a stalled peer is dropped after this
	soakHello       = 2 * time.Second // --hello-timeout and --join-timeout
	soakSlack       = 5 * time.Second // scheduling slack on a loaded machine
)

// TestSoak runs the scirun binary as a --serve server (SCI_OT, two streams, --max-sessions 4,
// --timeout 6s, --hello-timeout 2s) on loopback with mnist-small and, for a bounded time each,
// two mixes of clients: (1) two honest clients, two stalling, two flooding and one killed
// mid-session; (2) the same with eight more stalling clients beside; every hostile client from
// its own loopback address. Every honest session must complete with the output of the clear run, bit for bit;
// every stalled or flooding connection must be dropped by the server within its timeout; the
// server's peak RSS must stay below idle + 2 × what MaxSessions concurrent honest sessions
// raised it by (each session's memory is bounded to at most twice an honest one's, whatever
// its client sends, and connections outside sessions are bounded in number and buffer); and
// after the run the server's goroutines and open files (from its metrics endpoint), and this
// process's, are back to what they were. Last, a scrape during a session shows it, /healthz is
// 200, and SIGTERM during a session lets it finish: the client gets its result and the server
// exits 0. With -short it is skipped; -soak D runs each phase for D.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak test takes about 90 s; skipped with -short")
	}
	phase := 25 * time.Second
	if *soakPhase > 0 {
		phase = *soakPhase
	}
	full, client, data := program(t)
	sk := newSoak(t, full, client, data)
	baseG, baseFD := runtime.NumGoroutine(), openFDs(t, os.Getpid())

	srv := startSoakServer(t, full)
	defer srv.kill()
	sk.addr = srv.addr
	if code, body := srv.get(t, "/healthz"); code != 200 {
		t.Fatalf("/healthz: %d %q", code, body)
	}

	// Warm-up: MaxSessions honest sessions at once, three times. What that raises the server's RSS
	// by is the honest working set the bound is made of.
	idle := procStatus(t, srv.pid, "VmRSS")
	for range 3 {
		var wg sync.WaitGroup
		for i := range soakMaxSessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sk.honest(context.Background(), i, "127.0.0.1")
			}()
		}
		wg.Wait()
	}
	if sk.failures() != "" {
		t.Fatalf("warm-up: %s", sk.failures())
	}
	warm := procStatus(t, srv.pid, "VmHWM")
	bound := idle + 2*(warm-idle)
	// The idle level: no session running, the lowest counts over a second.
	testenv.WaitFor(t, 20*time.Second, "the warm-up sessions to end", func() bool {
		m := srv.metrics(t)
		return m["scirun_sessions_running"] == 0 && m["scirun_sessions_finished_total"] == 3*soakMaxSessions
	})
	g0, fd0 := math.Inf(1), math.Inf(1)
	for range 5 {
		m := srv.metrics(t)
		g0, fd0 = min(g0, m["go_goroutines"]), min(fd0, m["process_open_fds"])
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("server idle RSS %.1f MiB; peak after %d concurrent honest sessions %.1f MiB; bound %.1f MiB; %v goroutines, %v open files",
		mib(idle), soakMaxSessions, mib(warm), mib(bound), g0, fd0)

	phases := []struct {
		name                               string
		honest, stallers, flooders, killed int
	}{
		{"mix", 2, 2, 2, 1},
		{"mix + 8 stalling", 2, 2 + 8, 2, 1},
	}
	for _, ph := range phases {
		sk.reset()
		// Reset the server's peak RSS (VmHWM) to its current RSS, so that the peak is this
		// phase's (Linux ≥ 4.0); where that is refused, the peak is the process's so far.
		_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", srv.pid), []byte("5"), 0)
		rss := srv.sampleRSS(t)
		sk.runPhase(ph.name, phase, ph.honest, ph.stallers, ph.flooders, ph.killed)
		samples := rss()
		hwm := procStatus(t, srv.pid, "VmHWM")
		t.Logf("phase %q (%v): %s", ph.name, phase, sk.summary())
		t.Logf("phase %q: server RSS %s; peak %.1f MiB (bound %.1f MiB)", ph.name, samples, mib(hwm), mib(bound))
		if f := sk.failures(); f != "" {
			t.Errorf("phase %q: %s", ph.name, f)
		}
		if n := sk.count("honest", "completed"); n < ph.honest {
			t.Errorf("phase %q: only %d honest sessions completed", ph.name, n)
		}
		if hwm > bound {
			t.Errorf("phase %q: the server's peak RSS %.1f MiB exceeds the bound %.1f MiB (idle %.1f + 2 × %.1f of %d honest sessions)",
				ph.name, mib(hwm), mib(bound), mib(idle), mib(warm-idle), soakMaxSessions)
		}
	}

	// No leak at the server: its goroutines and open files return to the idle level once the
	// last connection has been dropped.
	var g1, fd1 float64
	var m map[string]float64
	deadline := time.Now().Add(soakTimeout + 2*soakSlack)
	for {
		m = srv.metrics(t)
		g1, fd1 = m["go_goroutines"], m["process_open_fds"]
		if g1 <= g0 && fd1 <= fd0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("server after the run: %v goroutines, %v open files (idle before: %v, %v); %s", g1, fd1, g0, fd0, metricsSummary(m))
	if g1 > g0 || fd1 > fd0 {
		t.Errorf("the server leaks: %v goroutines and %v open files after the run, %v and %v before", g1, fd1, g0, fd0)
	}

	// A scrape during a session shows it; SIGTERM then lets it finish with the client's result.
	sk.reset()
	res := make(chan struct{})
	go func() {
		defer close(res)
		sk.honest(context.Background(), 3, "127.0.0.1")
	}()
	testenv.WaitFor(t, 20*time.Second, "a running session in the metrics", func() bool {
		return srv.metrics(t)["scirun_sessions_running"] >= 1
	})
	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-res
	if sk.count("honest", "completed") != 1 || sk.failures() != "" {
		t.Errorf("the session running at SIGTERM: %s %s", sk.summary(), sk.failures())
	}
	if err := srv.wait(30 * time.Second); err != nil {
		t.Errorf("server after SIGTERM: %v", err)
	}
	if log := srv.stderr.String(); !strings.Contains(log, "terminated: draining") ||
		!strings.Contains(log, `"msg":"draining: waiting for running sessions","sessions":1`) {
		t.Errorf("the server did not drain with the session running:\n%s", tail(log, 20))
	}
	testenv.CheckNoLeaks(t, baseG)
	if fd := openFDs(t, os.Getpid()); fd > baseFD {
		t.Errorf("the test process has %d open files after the run, %d before", fd, baseFD)
	}
}

// soakServer is the scirun binary serving.
type soakServer struct {
	cmd         *exec.Cmd
	pid         int
	addr, web   string
	stderr      *testenv.SyncBuffer
	exited      chan error
	http        *http.Client
	killOnce    sync.Once
	waitErr     error
	waitErrOnce sync.Once
}

func startSoakServer(t *testing.T, full string) *soakServer {
	t.Helper()
	d := func(v time.Duration) string { return v.String() }
	cmd := exec.Command(binary, "--party", "0", full, "--serve", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
		"--log-format", "json", "--max-sessions", strconv.Itoa(soakMaxSessions), "--timeout", d(soakTimeout),
		"--hello-timeout", d(soakHello), "--join-timeout", d(soakHello), "--drain-timeout", "30s", "--streams", "2")
	s := &soakServer{cmd: cmd, stderr: &testenv.SyncBuffer{}, exited: make(chan error, 1),
		http: &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.pid = cmd.Process.Pid
	go func() { s.exited <- cmd.Wait() }()
	testenv.WaitFor(t, 20*time.Second, "the server's addresses", func() bool {
		l := s.stderr.String()
		s.addr, s.web = between(l, "listening on ", "\n"), between(l, `"addr":"`, `"`)
		return s.addr != "" && s.web != ""
	})
	return s
}

func (s *soakServer) kill() {
	s.killOnce.Do(func() {
		_ = s.cmd.Process.Kill()
		_ = s.wait(10 * time.Second)
	})
}

// wait returns the server's exit status, waiting at most d for it.
func (s *soakServer) wait(d time.Duration) error {
	s.waitErrOnce.Do(func() {
		select {
		case s.waitErr = <-s.exited:
		case <-time.After(d):
			s.waitErr = fmt.Errorf("still running %v later", d)
		}
	})
	return s.waitErr
}

func (s *soakServer) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := s.http.Get("http://" + s.web + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// metrics scrapes /metrics into series name (with labels) → value.
func (s *soakServer) metrics(t *testing.T) map[string]float64 {
	t.Helper()
	code, body := s.get(t, "/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		if i < 0 {
			continue
		}
		if v, err := strconv.ParseFloat(l[i+1:], 64); err == nil {
			m[l[:i]] = v
		}
	}
	return m
}

// sampleRSS samples the server's VmRSS every 250 ms until the returned function is called,
// which describes the samples.
func (s *soakServer) sampleRSS(t *testing.T) func() string {
	var mu sync.Mutex
	var v []int64
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tk := time.NewTicker(250 * time.Millisecond)
		defer tk.Stop()
		for {
			if r, err := readStatus(s.pid, "VmRSS"); err == nil {
				mu.Lock()
				v = append(v, r)
				mu.Unlock()
			}
			select {
			case <-quit:
				return
			case <-tk.C:
			}
		}
	}()
	return func() string {
		close(quit)
		<-done
		if len(v) == 0 {
			return "not sampled"
		}
		sorted := slices.Clone(v)
		slices.Sort(sorted)
		// Ten points over the phase, for the docs' figure.
		var pts []string
		for i := range 10 {
			pts = append(pts, fmt.Sprintf("%.0f", mib(v[i*(len(v)-1)/9])))
		}
		return fmt.Sprintf("%d samples: min %.1f, median %.1f, max %.1f, last %.1f MiB; over time [%s] MiB",
			len(v), mib(sorted[0]), mib(sorted[len(v)/2]), mib(sorted[len(v)-1]), mib(v[len(v)-1]), strings.Join(pts, " "))
	}
}

// soak drives the clients.
type soak struct {
	addr    string
	opt     func(timeout time.Duration) *serve.Options
	inputs  [][]ring.Tensor
	want    [][][]uint64
	helloN  int // bytes of the client's hello: a handshake is helloN + 3 (the verdict) bytes
	mu      sync.Mutex
	outcome map[[2]string]int // (class, outcome) → sessions
	lat     []time.Duration   // honest sessions, dial to result
	drops   map[string][]time.Duration
	errs    []string
	flooded map[string]int64 // most junk bytes a flooding client got into the server, by kind
	stop    chan struct{}
}

func newSoak(t *testing.T, full, client, data string) *soak {
	t.Helper()
	ff, err := sciir.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := sciir.ReadFile(client)
	if err != nil {
		t.Fatal(err)
	}
	sk := &soak{}
	p := ff.Program
	r := ring.Must(p.Bits)
	for i := range 8 {
		a, err := npy.ReadFile(inputPath(data, i))
		if err != nil {
			t.Fatal(err)
		}
		x, err := a.Float32()
		if err != nil {
			t.Fatal(err)
		}
		in := p.Tensors[p.Inputs[0].Tensor]
		enc, err := r.EncodeTensor(in.Shape, x, in.Scale)
		if err != nil {
			t.Fatal(err)
		}
		be, err := cleartext.New(r)
		if err != nil {
			t.Fatal(err)
		}
		mach, err := vm.New(p, be)
		if err != nil {
			t.Fatal(err)
		}
		outs, err := mach.Run(context.Background(), []ring.Tensor{enc})
		if err != nil {
			t.Fatal(err)
		}
		var w [][]uint64
		for _, o := range outs {
			w = append(w, o.Value.Data)
		}
		sk.inputs, sk.want = append(sk.inputs, []ring.Tensor{enc}), append(sk.want, w)
	}
	// The client's options exactly as scirun --party 1 builds them.
	c, err := parse([]string{"--party", "1", client, "--connect", "127.0.0.1:1", "--input", inputPath(data, 0)})
	if err != nil {
		t.Fatal(err)
	}
	e, _, _ := testEnv()
	base, err := c.options(cf, e)
	if err != nil {
		t.Fatal(err)
	}
	sk.opt = func(timeout time.Duration) *serve.Options {
		o := *base
		o.Timeout = timeout
		return &o
	}
	// The hello's length, from a handshake against a connection that only records.
	rc := &recordConn{}
	_, _, _, _ = serve.Handshake(context.Background(), rc, serve.HelloFor(cf, 1, base.Backend, base.Software), time.Second)
	sk.helloN = len(rc.b)
	if sk.helloN < 8 {
		t.Fatalf("recorded a %d-byte hello", sk.helloN)
	}
	return sk
}

func (sk *soak) reset() {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	sk.outcome, sk.lat, sk.drops, sk.flooded, sk.errs = map[[2]string]int{}, nil, map[string][]time.Duration{}, map[string]int64{}, nil
}

func (sk *soak) record(class, outcome string) {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if sk.outcome == nil {
		sk.outcome = map[[2]string]int{}
	}
	sk.outcome[[2]string{class, outcome}]++
}

func (sk *soak) count(class, outcome string) int {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	return sk.outcome[[2]string{class, outcome}]
}

func (sk *soak) fail(format string, args ...any) {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	if len(sk.errs) < 10 {
		sk.errs = append(sk.errs, fmt.Sprintf(format, args...))
	} else {
		sk.errs[9] = "… and more"
	}
}

func (sk *soak) failures() string {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	return strings.Join(sk.errs, "; ")
}

// dialer returns a dial function from local address ip that records every connection in conns.
func (sk *soak) dialer(ip string, conns *[]net.Conn, mu *sync.Mutex) func(ctx context.Context) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return func(ctx context.Context) (net.Conn, error) {
		nc, err := d.DialContext(ctx, "tcp", sk.addr)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		*conns = append(*conns, nc)
		mu.Unlock()
		return nc, nil
	}
}

// honest runs one inference on input i and checks it against the clear run.
func (sk *soak) honest(ctx context.Context, i int, ip string) {
	var mu sync.Mutex
	var conns []net.Conn
	dial := sk.dialer(ip, &conns, &mu)
	opt := sk.opt(60 * time.Second)
	opt.DialStream = dial
	start := time.Now()
	nc, err := dial(ctx)
	if err != nil {
		sk.record("honest", "failed")
		sk.fail("honest client: %v", err)
		return
	}
	res, err := serve.Run(ctx, nc, 1, opt, sk.inputs[i%8])
	took := time.Since(start)
	switch {
	case refused(err):
		sk.record("honest", "refused")
		sk.fail("honest client refused: %v", err)
	case err != nil:
		sk.record("honest", "failed")
		sk.fail("honest client: %v", err)
	default:
		for k, o := range res.Outputs {
			if !o.Revealed || !slices.Equal(o.Value.Data, sk.want[i%8][k]) {
				sk.record("honest", "wrong")
				sk.fail("honest client, input %d: output %d differs from the clear run", i%8, k)
				return
			}
		}
		sk.record("honest", "completed")
		sk.mu.Lock()
		sk.lat = append(sk.lat, took)
		sk.mu.Unlock()
	}
}

// refused reports whether err is the server's refusal at the handshake (busy, or shutting down).
func refused(err error) bool {
	var he *serve.HandshakeError
	return errors.As(err, &he) && he.Refused
}

// The hostile kinds: where a client's primary connection turns bad (after how many bytes of
// its honest traffic) and how.
type hostile struct {
	name  string
	after func(sk *soak, r *rand.Rand) int // honest bytes sent first
	act   int                              // actStall, actOversized, actJunk, actGarbage
	bound time.Duration                    // the server must drop it within this of the turn
}

const (
	actStall     = iota // send nothing more
	actOversized        // announce a 60 MiB frame and send its bytes
	actJunk             // well-framed junk
	actGarbage          // 4 KiB of random bytes
)

var (
	preSession = soakHello + soakSlack
	inSession  = soakTimeout + soakHello + soakSlack
	stallKinds = []hostile{
		{"silent after connecting", func(*soak, *rand.Rand) int { return 0 }, actStall, preSession},
		{"half a hello", func(sk *soak, _ *rand.Rand) int { return sk.helloN / 2 }, actStall, preSession},
		{"hello, no verdict", func(sk *soak, _ *rand.Rand) int { return sk.helloN }, actStall, preSession},
		{"after the handshake", func(sk *soak, _ *rand.Rand) int { return sk.helloN + 3 }, actStall, inSession},
		{"mid-protocol", func(sk *soak, r *rand.Rand) int { return sk.helloN + 3 + 1 + r.IntN(64<<10) }, actStall, inSession},
	}
	floodKinds = []hostile{
		{"garbage for a hello", func(*soak, *rand.Rand) int { return 0 }, actGarbage, preSession},
		{"60 MiB frame after the handshake", func(sk *soak, _ *rand.Rand) int { return sk.helloN + 3 }, actOversized, inSession},
		{"60 MiB frame mid-protocol", func(sk *soak, r *rand.Rand) int { return sk.helloN + 3 + 1 + r.IntN(64<<10) }, actOversized, inSession},
		{"junk frames mid-protocol", func(sk *soak, r *rand.Rand) int { return sk.helloN + 3 + 1 + r.IntN(64<<10) }, actJunk, inSession},
	}
)

// hostileClient runs the real client over a primary connection that turns bad as kind says,
// and records how long after the turn the server dropped it.
func (sk *soak) hostileClient(class string, kind hostile, ip string, r *rand.Rand) {
	var mu sync.Mutex
	var conns []net.Conn
	dial := sk.dialer(ip, &conns, &mu)
	nc, err := dial(context.Background())
	if err != nil {
		sk.record(class, "dial failed")
		sk.fail("%s client: %v", class, err)
		return
	}
	bc := &badConn{Conn: nc, budget: kind.after(sk, r), act: kind.act, r: r}
	opt := sk.opt(10 * time.Minute) // the server, not the client, must end it
	opt.DialStream = dial
	// The client's context ends with the phase (and whatever stays open is then counted).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	var cut atomic.Bool
	go func() {
		select {
		case <-sk.stop:
			cut.Store(true)
			mu.Lock()
			for _, c := range conns {
				_ = c.Close()
			}
			mu.Unlock()
			cancel()
		case <-done:
		}
	}()
	_, err = serve.Run(ctx, bc, 1, opt, sk.inputs[r.IntN(8)])
	close(done)
	turned := bc.turnedAt()
	if n := bc.flooded.Load(); n > 0 {
		sk.mu.Lock()
		sk.flooded[kind.name] = max(sk.flooded[kind.name], n)
		sk.mu.Unlock()
	}
	switch {
	case err == nil:
		// The turn came after the client's last byte: an honest session.
		sk.record(class, "completed (turned too late)")
	case cut.Load():
		if !turned.IsZero() && time.Since(turned) > kind.bound {
			sk.fail("%s client (%s): still open %v after it turned bad (bound %v)", class, kind.name, time.Since(turned).Round(time.Millisecond), kind.bound)
		}
		sk.record(class, "open at the phase's end")
	case turned.IsZero() && refused(err):
		sk.record(class, "refused (busy)")
	case turned.IsZero():
		sk.record(class, "failed before turning")
		sk.fail("%s client (%s): failed before turning bad: %v", class, kind.name, err)
	default:
		d := time.Since(turned)
		sk.record(class, "dropped by the server")
		sk.mu.Lock()
		sk.drops[kind.name] = append(sk.drops[kind.name], d)
		sk.mu.Unlock()
		if d > kind.bound {
			sk.fail("%s client (%s): dropped %v after it turned bad, over the bound %v", class, kind.name, d.Round(time.Millisecond), kind.bound)
		}
	}
}

// killedClient runs an honest client and closes its connections at a random point, as the
// kernel does when the client process is killed.
func (sk *soak) killedClient(ip string, r *rand.Rand) {
	var mu sync.Mutex
	var conns []net.Conn
	dial := sk.dialer(ip, &conns, &mu)
	opt := sk.opt(60 * time.Second)
	opt.DialStream = dial
	nc, err := dial(context.Background())
	if err != nil {
		sk.record("killed", "dial failed")
		sk.fail("killed client: %v", err)
		return
	}
	kill := time.AfterFunc(time.Duration(50+r.IntN(1500))*time.Millisecond, func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	_, err = serve.Run(context.Background(), nc, 1, opt, sk.inputs[r.IntN(8)])
	if kill.Stop() {
		if refused(err) {
			sk.record("killed", "refused (busy)")
			return
		}
		if err != nil {
			sk.record("killed", "failed before the kill")
			sk.fail("killed client failed before its kill: %v", err)
			return
		}
		sk.record("killed", "completed before the kill")
		return
	}
	if err == nil {
		sk.record("killed", "completed before the kill")
		return
	}
	sk.record("killed", "killed")
}

// runPhase runs the clients for d: each worker starts its next session when the last ends.
// Honest clients connect from 127.0.0.1, every hostile one from its own 127.0.0.x.
func (sk *soak) runPhase(name string, d time.Duration, honest, stallers, flooders, killed int) {
	sk.stop = make(chan struct{})
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	worker := func(seed uint64, f func(n int, r *rand.Rand)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(seed, uint64(time.Now().UnixNano())))
			for n := 0; time.Now().Before(end); n++ {
				f(n, r)
			}
		}()
	}
	ip := 2
	nextIP := func() string { ip++; return fmt.Sprintf("127.0.0.%d", ip-1) }
	for w := range honest {
		worker(uint64(w), func(n int, _ *rand.Rand) { sk.honest(context.Background(), w+2*n, "127.0.0.1") })
	}
	for w := range stallers {
		a := nextIP()
		worker(uint64(100+w), func(n int, r *rand.Rand) {
			sk.hostileClient("stalling", stallKinds[(w+n)%len(stallKinds)], a, r)
		})
	}
	for w := range flooders {
		a := nextIP()
		worker(uint64(200+w), func(n int, r *rand.Rand) {
			sk.hostileClient("flooding", floodKinds[(w+n)%len(floodKinds)], a, r)
		})
	}
	for w := range killed {
		a := nextIP()
		worker(uint64(300+w), func(_ int, r *rand.Rand) { sk.killedClient(a, r) })
	}
	// The honest workers finish their last session by themselves; the hostile clients still
	// open at the end are cut.
	time.Sleep(time.Until(end))
	close(sk.stop)
	wg.Wait()
}

// summary describes the phase: sessions by class and outcome, honest latency, drop times.
func (sk *soak) summary() string {
	sk.mu.Lock()
	defer sk.mu.Unlock()
	var keys [][2]string
	for k := range sk.outcome {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i][0] < keys[j][0] || keys[i][0] == keys[j][0] && keys[i][1] < keys[j][1]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s %d", k[0], k[1], sk.outcome[k]))
	}
	s := strings.Join(parts, ", ")
	if len(sk.lat) > 0 {
		l := slices.Clone(sk.lat)
		slices.Sort(l)
		s += fmt.Sprintf("; honest latency p50 %v, p99 %v, max %v (n=%d)", quantile(l, 0.5), quantile(l, 0.99), l[len(l)-1], len(l))
	}
	var kinds []string
	for k := range sk.drops {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		l := slices.Clone(sk.drops[k])
		slices.Sort(l)
		s += fmt.Sprintf("; %q dropped in %v–%v (n=%d", k, l[0].Round(time.Millisecond), l[len(l)-1].Round(time.Millisecond), len(l))
		if f := sk.flooded[k]; f > 0 {
			s += fmt.Sprintf(", at most %.1f MiB of junk written", mib(f))
		}
		s += ")"
	}
	return s
}

func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))].Round(time.Millisecond)
}

// metricsSummary lists the server's session counters.
func metricsSummary(m map[string]float64) string {
	var parts []string
	for k, v := range m {
		if strings.HasPrefix(k, "scirun_sessions_started") || strings.HasPrefix(k, "scirun_sessions_finished") ||
			strings.HasPrefix(k, "scirun_sessions_failed") || strings.HasPrefix(k, "scirun_clients_refused") {
			parts = append(parts, fmt.Sprintf("%s %v", strings.TrimPrefix(k, "scirun_"), v))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// badConn passes the first budget bytes written through, then turns bad: it stalls (swallows
// every later write), or sends an oversized frame or junk frames instead (until the server
// closes the connection or the write blocks for good).
type badConn struct {
	net.Conn
	budget int
	act    int
	r      *rand.Rand
	mu     sync.Mutex
	turned time.Time
	// flooded counts the junk bytes written (accepted by the kernel's buffers on the way to
	// the server).
	flooded atomic.Int64
}

func (c *badConn) turnedAt() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.turned
}

func (c *badConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	budget := c.budget
	if len(p) <= budget {
		c.budget -= len(p)
		c.mu.Unlock()
		return c.Conn.Write(p)
	}
	first := c.turned.IsZero()
	if first {
		c.turned = time.Now()
		c.budget = 0
	}
	c.mu.Unlock()
	if budget > 0 {
		if n, err := c.Conn.Write(p[:budget]); err != nil {
			return n, err
		}
	}
	if !first || c.act == actStall {
		return len(p), nil // swallowed: the peer waits
	}
	var err error
	switch c.act {
	case actOversized:
		var hdr [4]byte
		encbin.LittleEndian.PutUint32(hdr[:], 60<<20)
		if _, err = c.Conn.Write(hdr[:]); err == nil {
			c.flooded.Add(4)
			err = c.flood(60<<20 - 1)
		}
	case actGarbage:
		junk := make([]byte, 4096)
		for i := range junk {
			junk[i] = byte(c.r.Uint32())
		}
		n, werr := c.Conn.Write(junk)
		c.flooded.Add(int64(n))
		err = werr
	case actJunk:
		for i := 0; err == nil && i < 1000; i++ {
			junk := make([]byte, 4+64)
			encbin.LittleEndian.PutUint32(junk, 64)
			for j := 4; j < len(junk); j++ {
				junk[j] = byte(c.r.Uint32())
			}
			var n int
			n, err = c.Conn.Write(junk)
			c.flooded.Add(int64(n))
		}
	}
	if err != nil {
		return 0, err
	}
	return len(p), nil
}

// flood writes n junk bytes, stopping when the connection fails.
func (c *badConn) flood(n int) error {
	chunk := make([]byte, 1<<20)
	for sent := 0; sent < n; {
		k, err := c.Conn.Write(chunk[:min(len(chunk), n-sent)])
		sent += k
		c.flooded.Add(int64(k))
		if err != nil {
			return err
		}
	}
	return nil
}

// recordConn records what is written to it; reads end at once.
type recordConn struct {
	net.Conn
	b []byte
}

func (c *recordConn) Write(p []byte) (int, error)      { c.b = append(c.b, p...); return len(p), nil }
func (c *recordConn) Read([]byte) (int, error)         { return 0, io.EOF }
func (c *recordConn) Close() error                     { return nil }
func (c *recordConn) SetDeadline(time.Time) error      { return nil }
func (c *recordConn) SetReadDeadline(time.Time) error  { return nil }
func (c *recordConn) SetWriteDeadline(time.Time) error { return nil }
func (c *recordConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *recordConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }

// readStatus reads a kB field of /proc/PID/status in bytes.
func readStatus(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	v := between(string(b), field+":", "kB")
	kb, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/status %s: %q", pid, field, v)
	}
	return kb << 10, nil
}

func procStatus(t *testing.T, pid int, field string) int64 {
	t.Helper()
	v, err := readStatus(pid, field)
	if err != nil {
		t.Skipf("no /proc on this system: %v", err)
	}
	return v
}

func openFDs(t *testing.T, pid int) int {
	t.Helper()
	es, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "fd"))
	if err != nil {
		t.Skipf("no /proc on this system: %v", err)
	}
	return len(es)
}

func mib[T int64 | uint64 | float64](n T) float64 { return float64(n) / (1 << 20) }

func between(s, prefix, end string) string {
	_, rest, ok := strings.Cut(s, prefix)
	if !ok {
		return ""
	}
	v, _, ok := strings.Cut(rest, end)
	if !ok {
		return ""
	}
	return v
}

func tail(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}
