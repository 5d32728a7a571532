package serve

// The helper (party 2) of three-party sessions (backend sci3, protocols/dealer): it pairs the
// two data parties' connections of one session by a token and serves their requests.

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// Helper hello (data party → helper), before the dealer's link hello on the same connection:
// magic "SCI3HELP" | party u8 | program ID [32] | session token [16] | backend length u8 |
// backend. Verdict (helper → data party): status u8 (0 accepted) | reason length u16 | reason.
const helperMagic = "SCI3HELP"

// HelperToken names one three-party session at the helper: party 0 draws it and sends it to
// party 1, and both present it to the helper.
type HelperToken [16]byte

// NewHelperToken draws a session token from crypto/rand.
func NewHelperToken() (HelperToken, error) {
	var t HelperToken
	_, err := rand.Read(t[:])
	return t, err
}

// HelperOptions configures a helper.
type HelperOptions struct {
	// File is the program (the client copy suffices: the helper needs shapes only).
	File *sciir.File
	// Backend is the backend the helper serves ("sci3").
	Backend string
	// Timeout bounds every wait for a data party once a session runs (DefaultTimeout if zero).
	Timeout time.Duration
	// HelloTimeout bounds the wait for a connection's hello (DefaultHelloTimeout if zero).
	HelloTimeout time.Duration
	// JoinTimeout bounds the wait of a data party for the other one (DefaultJoinTimeout if zero).
	JoinTimeout time.Duration
	// Net emulates a link on the frames the helper receives.
	Net *netmodel.Model
	// TLS, when set, makes every connection a TLS server connection with this configuration
	// (the same as a server's: --tls-self, or --tls-cert and --tls-key). Without it the
	// pairwise seeds travel in the clear (scirun requires --helper-insecure for that).
	TLS *tls.Config
	// Log receives one line per session and per refusal (nil: discarded).
	Log *slog.Logger
}

func (o *HelperOptions) timeout() time.Duration {
	if o.Timeout > 0 {
		return o.Timeout
	}
	return DefaultTimeout
}

func (o *HelperOptions) helloTimeout() time.Duration {
	if o.HelloTimeout > 0 {
		return min(o.HelloTimeout, o.timeout())
	}
	return min(DefaultHelloTimeout, o.timeout())
}

func (o *HelperOptions) joinTimeout() time.Duration {
	if o.JoinTimeout > 0 {
		return o.JoinTimeout
	}
	return DefaultJoinTimeout
}

func (o *HelperOptions) log() *slog.Logger {
	if o.Log != nil {
		return o.Log
	}
	return slog.New(slog.DiscardHandler)
}

// helperHello is a parsed helper hello.
type helperHello struct {
	party   int
	id      [32]byte
	token   HelperToken
	backend string
}

func (h helperHello) encode() []byte {
	b := []byte(helperMagic)
	b = append(b, byte(h.party))
	b = append(b, h.id[:]...)
	b = append(b, h.token[:]...)
	b = append(b, byte(len(h.backend)))
	return append(b, h.backend...)
}

func readHelperHello(nc net.Conn) (helperHello, error) {
	var h helperHello
	head := make([]byte, 8+1+32+16+1)
	if _, err := readFull(nc, head); err != nil {
		return h, err
	}
	if string(head[:8]) != helperMagic {
		if head[0] == 0x16 { // a TLS handshake record
			return h, errors.New("a TLS handshake, but this helper has no TLS configured (start it with --tls-self FILE, or --tls-cert and --tls-key)")
		}
		return h, errors.New("not a sci3 data party's hello (wrong magic)")
	}
	h.party = int(head[8])
	copy(h.id[:], head[9:41])
	copy(h.token[:], head[41:57])
	be := make([]byte, head[57])
	if _, err := readFull(nc, be); err != nil {
		return h, err
	}
	h.backend = string(be)
	return h, nil
}

func readFull(nc net.Conn, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := nc.Read(b[n:])
		n += k
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func writeHelperVerdict(nc net.Conn, reason string) error {
	if len(reason) > 4000 {
		reason = reason[:4000]
	}
	b := []byte{0, 0, 0}
	if reason != "" {
		b[0] = 1
	}
	binary.LittleEndian.PutUint16(b[1:], uint16(len(reason)))
	_, err := nc.Write(append(b, reason...))
	return err
}

func readHelperVerdict(nc net.Conn) error {
	var b [3]byte
	if _, err := readFull(nc, b[:]); err != nil {
		return fmt.Errorf("no verdict from the helper: %w", err)
	}
	reason := make([]byte, binary.LittleEndian.Uint16(b[1:]))
	if _, err := readFull(nc, reason); err != nil {
		return fmt.Errorf("no verdict from the helper: %w", err)
	}
	if b[0] != 0 {
		return fmt.Errorf("the helper refused: %s", reason)
	}
	return nil
}

// HelperDial says how a data party reaches the helper.
type HelperDial struct {
	// Addr is the helper's address, host:port.
	Addr string
	// TLS authenticates the helper (PinnedClientTLS or LoadClientTLS) and encrypts the link,
	// which carries the data party's pairwise seed with the helper.
	TLS *tls.Config
	// Insecure allows a plaintext link when TLS is nil: the pairwise seed then travels in the
	// clear, and whoever sees it learns this party's dealt randomness. Without it, DialHelper
	// refuses to connect without TLS.
	Insecure bool
}

// ErrHelperPlaintext is DialHelper's refusal to send a pairwise seed over a plaintext link.
var ErrHelperPlaintext = errors.New("refusing to send the pairwise seed over a plaintext link: authenticate the helper with --helper-tls-pin (the fingerprint it printed at start) or --helper-tls-ca, or accept a plaintext link on a trusted network with --helper-insecure")

// DialHelper connects data party `party` of the session named by token to the helper at d.Addr
// (over TLS, verified by d.TLS, unless d.Insecure), announces the program and backend, waits
// for the helper's verdict (it accepts once both data parties of the session have arrived with
// the same program and backend) and starts the dealer link on the connection: only then is the
// pairwise seed sent. Every wait is bounded by topt.Timeout. Its errors name the helper.
func DialHelper(ctx context.Context, d HelperDial, party int, f *sciir.File, backend string, token HelperToken, topt transport.Options) (*dealer.Link, error) {
	addr := d.Addr
	fail := func(err error) error { return &dealer.HelperError{Where: addr, Err: err} }
	if d.TLS == nil && !d.Insecure {
		return nil, fail(ErrHelperPlaintext)
	}
	timeout := topt.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	nc, err := Dial(ctx, addr, nil, min(timeout, DefaultConnectTimeout))
	if err != nil {
		return nil, fail(errors.New(helperDialText.Replace(err.Error())))
	}
	if d.TLS != nil {
		if nc, err = helperTLSClient(ctx, nc, addr, d.TLS, min(timeout, DefaultConnectTimeout)); err != nil {
			return nil, fail(err)
		}
	}
	h := helperHello{party: party, id: f.ID, token: token, backend: backend}
	_ = nc.SetDeadline(time.Now().Add(timeout))
	if _, err := nc.Write(h.encode()); err != nil {
		nc.Close()
		return nil, fail(err)
	}
	if err := readHelperVerdict(nc); err != nil {
		nc.Close()
		return nil, fail(err)
	}
	_ = nc.SetDeadline(time.Time{})
	conn := transport.NewConn(nc, topt)
	link, err := dealer.NewLink(ctx, conn, party)
	if err != nil {
		conn.Close()
		return nil, fail(err)
	}
	link.SetWhere(addr)
	return link, nil
}

// helperDialText rewords Dial's errors, written for a client reaching its server.
var helperDialText = strings.NewReplacer("the server at", "it", "is 'scirun --party 0 ... --listen' running there?",
	"is 'scirun --helper --listen ADDR PROGRAM' running there?", "(another scirun server?)", "")

// helperTLSClient performs the TLS handshake with the helper within timeout.
func helperTLSClient(ctx context.Context, nc net.Conn, addr string, conf *tls.Config, timeout time.Duration) (net.Conn, error) {
	hctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return tlsHandshake(hctx, nc, conf, addr, handshakeHints{
		plaintext: "the helper does not use TLS? start it with --tls-self FILE, or --tls-cert and --tls-key",
		unknownCA: "is --helper-tls-ca the certificate that signed the helper's? a --tls-self helper has no CA: pass --helper-tls-pin with the fingerprint it printed at start",
		hostname:  "reach the helper by a name in its certificate",
		other:     "does the helper use TLS?",
	})
}

// helperRegistry pairs the data parties' connections by session token.
type helperRegistry struct {
	mu      sync.Mutex
	waiting map[HelperToken]*helperArrival
}

type helperArrival struct {
	nc    net.Conn
	hello helperHello
	pair  chan net.Conn // the other party's connection, once it arrives
}

// ServeHelper accepts data parties' connections on ln until ctx ends, pairs the two of each
// session, checks that both announce the helper's program and backend (refusing others with a
// reason), and serves each session's requests in its own goroutine.
func ServeHelper(ctx context.Context, ln net.Listener, opt *HelperOptions) error {
	if opt.File == nil {
		return errors.New("helper: no program")
	}
	reg := &helperRegistry{waiting: map[HelperToken]*helperArrival{}}
	go func() { <-ctx.Done(); ln.Close() }()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			opt.handle(ctx, reg, nc)
		}()
	}
}

func (o *HelperOptions) refuse(nc net.Conn, reason string) {
	o.log().Warn("helper: refused", "peer", nc.RemoteAddr().String(), "reason", reason)
	_ = nc.SetDeadline(time.Now().Add(time.Second))
	_ = writeHelperVerdict(nc, reason)
	nc.Close()
}

func (o *HelperOptions) handle(ctx context.Context, reg *helperRegistry, nc net.Conn) {
	// Stopping the helper ends a connection at once, in whatever wait (TLS handshake, hello,
	// the other data party) it is; a running session aborts its links itself (session).
	stop := context.AfterFunc(ctx, func() { nc.Close() })
	defer stop()
	_ = nc.SetDeadline(time.Now().Add(o.helloTimeout()))
	if o.TLS != nil {
		tc := tls.Server(nc, o.TLS)
		if err := tc.HandshakeContext(ctx); err != nil {
			var rh tls.RecordHeaderError
			if errors.As(err, &rh) {
				err = fmt.Errorf("%w (a data party without TLS? it needs --helper-tls-pin with the fingerprint printed at start, or --helper-tls-ca)", err)
			}
			o.log().Warn("helper: TLS handshake failed", "peer", nc.RemoteAddr().String(), "err", err)
			nc.Close()
			return
		}
		nc = tc
	}
	h, err := readHelperHello(nc)
	if err != nil {
		o.log().Warn("helper: no hello", "peer", nc.RemoteAddr().String(), "err", err)
		nc.Close()
		return
	}
	switch {
	case h.party != 0 && h.party != 1:
		o.refuse(nc, fmt.Sprintf("party %d is not a data party (0 or 1)", h.party))
		return
	case h.id != o.File.ID:
		o.refuse(nc, fmt.Sprintf("program %x… differs from the helper's %s…", h.id[:4], o.File.IDString()[:8]))
		return
	case h.backend != o.Backend:
		o.refuse(nc, fmt.Sprintf("backend %q differs from the helper's %q", h.backend, o.Backend))
		return
	}
	reg.mu.Lock()
	first, ok := reg.waiting[h.token]
	if !ok {
		a := &helperArrival{nc: nc, hello: h, pair: make(chan net.Conn, 1)}
		reg.waiting[h.token] = a
		reg.mu.Unlock()
		select {
		case <-a.pair: // the second arrival runs the session
		case <-time.After(o.joinTimeout()):
			reg.mu.Lock()
			if reg.waiting[h.token] == a {
				delete(reg.waiting, h.token)
				reg.mu.Unlock()
				o.refuse(nc, fmt.Sprintf("the other data party did not reach the helper within %v", o.joinTimeout()))
				return
			}
			reg.mu.Unlock()
			<-a.pair
		case <-ctx.Done():
			nc.Close()
		}
		return
	}
	delete(reg.waiting, h.token)
	reg.mu.Unlock()
	first.pair <- nc
	if first.hello.party == h.party {
		o.refuse(first.nc, fmt.Sprintf("both connections of the session announce party %d", h.party))
		o.refuse(nc, fmt.Sprintf("both connections of the session announce party %d", h.party))
		return
	}
	var ncs [2]net.Conn
	ncs[first.hello.party], ncs[h.party] = first.nc, nc
	if !stop() {
		return
	}
	o.session(ctx, ncs)
}

// session runs one paired session: the verdicts, the link hellos (the pairwise seeds) and the
// requests until both data parties are done or one fails.
func (o *HelperOptions) session(ctx context.Context, ncs [2]net.Conn) {
	start := time.Now()
	o.log().Info("helper: session started", "party0", ncs[0].RemoteAddr().String(), "party1", ncs[1].RemoteAddr().String())
	for _, nc := range ncs {
		_ = nc.SetDeadline(time.Now().Add(o.timeout()))
		if err := writeHelperVerdict(nc, ""); err != nil {
			ncs[0].Close()
			ncs[1].Close()
			return
		}
		_ = nc.SetDeadline(time.Time{})
	}
	topt := transport.Options{Timeout: o.timeout(), Net: o.Net}
	var conns [2]*transport.Conn
	for p := range 2 {
		conns[p] = transport.NewConn(ncs[p], topt)
		defer conns[p].Close()
	}
	// Stopping the helper (its first signal) aborts both links with a reason the data parties
	// print, then ends the session's waits.
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	defer scancel()
	stopped := context.AfterFunc(ctx, func() {
		actx, cancel := context.WithTimeout(context.Background(), time.Second)
		for _, c := range conns {
			_ = c.Abort(actx, "the helper was stopped")
		}
		cancel()
		scancel()
	})
	defer stopped()
	errs := make([]error, 2)
	var seeds [2][16]byte
	var wg sync.WaitGroup
	for p := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var q int
			q, seeds[p], errs[p] = dealer.AcceptLink(sctx, conns[p])
			if errs[p] == nil && q != p {
				errs[p] = fmt.Errorf("link of party %d announced party %d", p, q)
			}
		}()
	}
	wg.Wait()
	err := errors.Join(errs...)
	if err == nil {
		err = dealer.NewHelper(seeds[0], seeds[1]).ServeBoth(sctx, conns[0], conns[1])
	}
	var st [2]transport.Stats
	for p := range 2 {
		st[p] = conns[p].Stats()
	}
	if err != nil && ctx.Err() != nil {
		o.log().Warn("helper: session stopped", "time", time.Since(start))
		return
	}
	if err != nil {
		o.log().Warn("helper: session failed", "err", err, "time", time.Since(start))
		actx, cancel := context.WithTimeout(context.Background(), time.Second)
		for _, c := range conns {
			_ = c.Abort(actx, "helper: "+err.Error())
		}
		cancel()
		return
	}
	o.log().Info("helper: session done", "time", time.Since(start),
		"to_party0", st[0].BytesSent, "to_party1", st[1].BytesSent, "from_party0", st[0].BytesRecv, "from_party1", st[1].BytesRecv)
}

// HelperAccount is what a three-party backend knows of its link to the helper, for the report
// (Report.Helper): a backend that implements HelperAccounter gets the offline/online split.
type HelperAccount struct {
	// Setup is the time to reach the helper (TCP, TLS, its verdict, the link hello with the
	// seed) and SetupStats the link's traffic then.
	Setup      time.Duration
	SetupStats transport.Stats
	// Wait is the run's time in requests to the helper (dealer.Link.Wait): on demand during
	// the inferences, and at an inference's start for what was being dealt ahead.
	Wait time.Duration
	// Demand is the number of requests sent on the critical path (dealer.Link.Demand), Ahead
	// what dealing ahead did (dealer.Link.AheadStats).
	Demand int64
	Ahead  dealer.AheadStats
	// Other is the other data party's link traffic, when this process knows it (--local), and
	// OtherAhead its dealing ahead and OtherWait its waits on the helper.
	Other      *transport.Stats
	OtherAhead dealer.AheadStats
	OtherWait  time.Duration
	// Precompute is the time this party spent at the inferences' starts computing its linear
	// shares ahead (sci3's party 1: before the inputs are used), PrecomputeN their number and
	// LinearOnline the linear shares it computed during the inferences instead.
	Precompute   time.Duration
	PrecomputeN  int64
	LinearOnline int64
}

// HelperAccounter is a HelperBackend that accounts its link's set-up and waits.
type HelperAccounter interface {
	HelperBackend
	HelperAccount() HelperAccount
}

// ThreeParty is Report.Helper: this party's traffic with the helper (all phases, as the
// embedded Traffic), and the session split into set-up, offline and online. Everything the
// helper deals is input-independent; what it deals before the inference that uses it is
// offline (dealt ahead: the first inference's at its start from a trace of an earlier session,
// each later one's in the background during the one before), what an inference asks for while
// it runs is online (on demand). The run's wall-clock time is split into the offline phase
// (OfflineMS: the waits at the inferences' starts for what was being dealt ahead, and party 1's
// linear shares computed from it, before their inputs are used) and the online one (OnlineMS = Report.RunMS − OfflineMS: from input to
// output, the waits on the helper on demand included, HelperWaitMS of them). AheadMS is the
// time the dealing ahead ran (at the first inference's start, then overlapping the inferences).
type ThreeParty struct {
	Traffic
	SetupMS   float64 `json:"setup_ms"`   // reaching the helper: TCP, TLS, verdict, link hello
	OfflineMS float64 `json:"offline_ms"` // the waits at inference starts for the dealing ahead, and the linear shares computed then
	OnlineMS  float64 `json:"online_ms"`  // the run without them: from input to output
	// HelperWaitMS is the part of OnlineMS spent in requests to the helper on demand (and
	// waiting for a reply dealt ahead still in flight).
	HelperWaitMS float64 `json:"helper_wait_ms"`
	// FirstRequests is the number of requests in the first inference's trace (0 without one:
	// then the first inference is dealt on demand), FirstAheadRequests those dealt at its start
	// (fewer when their replies exceed --helper-ahead's cap), FirstBytes and FirstAheadBytes
	// their replies' payload bytes.
	FirstRequests      int   `json:"first_requests,omitempty"`
	FirstAheadRequests int   `json:"first_ahead_requests,omitempty"`
	FirstBytes         int64 `json:"first_bytes,omitempty"`
	FirstAheadBytes    int64 `json:"first_ahead_bytes,omitempty"`
	// AheadInferences is the number of inferences served from correlations dealt ahead,
	// AheadMS the wall time of that dealing (in the background) and AheadWaitMS the part of
	// OfflineMS spent waiting for it at an inference's start.
	AheadInferences int     `json:"ahead_inferences"`
	AheadMS         float64 `json:"ahead_ms"`
	AheadWaitMS     float64 `json:"ahead_wait_ms"`
	// OnDemandRequests is the number of requests this party sent the helper while an
	// inference ran (on its critical path); AheadRequests those dealt ahead.
	OnDemandRequests int64 `json:"on_demand_requests"`
	AheadRequests    int64 `json:"ahead_requests"`
	// AheadPeriod is the period of the requests (1 or 2 inferences; 0 unknown), AheadMisses
	// the requests of inferences served ahead that were not dealt ahead (sent on demand),
	// AheadWastedBytes the replies dealt ahead and not used, AheadLateWaits the waits of an
	// inference served ahead for a reply still in flight.
	AheadPeriod      int   `json:"ahead_period,omitempty"`
	AheadMisses      int64 `json:"ahead_misses"`
	AheadWastedBytes int64 `json:"ahead_wasted_bytes"`
	AheadLateWaits   int64 `json:"ahead_late_waits"`
	// AheadOff says why dealing ahead is off, when it was asked for.
	AheadOff string `json:"ahead_off,omitempty"`
	// PrecomputeMS is the part of OfflineMS this party spent computing its linear shares ahead
	// (sci3's party 1), LinearAhead their number and LinearOnline the linear shares computed
	// within the inferences; LinearOverlapped counts the shares ahead whose correction was
	// still being dealt when party 1 reached it (computed during the helper's dealing).
	PrecomputeMS     float64 `json:"precompute_ms,omitempty"`
	LinearAhead      int64   `json:"linear_ahead,omitempty"`
	LinearOnline     int64   `json:"linear_online,omitempty"`
	LinearOverlapped int64   `json:"linear_overlapped,omitempty"`
	// Pairs gives the bytes (both directions) of each pair of parties this party can see: its
	// own two links, and the other data party's link to the helper when known (--local).
	Pairs []PairTraffic `json:"pairs"`
}

// PairTraffic is the traffic between two parties in the phases of a three-party session, and
// the time of each phase on that pair.
type PairTraffic struct {
	Pair    string `json:"pair"`          // "0-1", "0-2" or "1-2"
	Setup   int64  `json:"setup_bytes"`   // handshake and set-up (0-1), link set-up (P-2)
	Offline int64  `json:"offline_bytes"` // what the helper dealt ahead (P-2)
	Online  int64  `json:"online_bytes"`  // the data parties' protocol (0-1), dealt on demand (P-2)
	// SetupMS is the backend's set-up (0-1) or reaching the helper (P-2, this party's link);
	// OfflineMS the wall time of the dealing ahead on the link (P-2: before the first
	// inference's input and in the background during the inferences; 0-1: 0); OnlineMS the
	// run's online time (0-1: ThreeParty.OnlineMS), or the time inferences waited on the link
	// within it (P-2: requests on demand, replies dealt ahead still in flight).
	SetupMS   float64 `json:"setup_ms"`
	OfflineMS float64 `json:"offline_ms"`
	OnlineMS  float64 `json:"online_ms"`
}

func bothWays(s transport.Stats) int64 { return s.BytesSent + s.BytesRecv }

// threeParty builds Report.Helper of party `party` once rep has its totals.
func threeParty(h HelperBackend, rep *Report, party int) *ThreeParty {
	all := h.HelperStats()
	t := &ThreeParty{Traffic: trafficOf(all)}
	setup := rep.Handshake.BytesSent + rep.Handshake.BytesRecv + rep.Setup.BytesSent + rep.Setup.BytesRecv
	t.Pairs = append(t.Pairs, PairTraffic{Pair: "0-1", Setup: setup, Online: rep.Total.BytesSent + rep.Total.BytesRecv - setup, SetupMS: rep.SetupMS, OnlineMS: rep.RunMS})
	a, ok := h.(HelperAccounter)
	if !ok {
		t.Pairs = append(t.Pairs, PairTraffic{Pair: fmt.Sprintf("%d-2", party), Online: bothWays(all)})
		return t
	}
	acc := a.HelperAccount()
	t.SetupMS = ms(acc.Setup)
	t.OfflineMS = ms(acc.Ahead.Wait + acc.Precompute)
	t.PrecomputeMS, t.LinearAhead, t.LinearOnline = ms(acc.Precompute), acc.PrecomputeN, acc.LinearOnline
	t.OnlineMS = max(0, rep.RunMS-t.OfflineMS)
	t.HelperWaitMS = ms(acc.Wait - acc.Ahead.Wait)
	t.FirstRequests, t.FirstAheadRequests = acc.Ahead.FirstRequests, acc.Ahead.FirstDealt
	t.FirstBytes, t.FirstAheadBytes = acc.Ahead.FirstBytes, acc.Ahead.FirstDealtBytes
	t.AheadInferences, t.AheadMS, t.AheadWaitMS = acc.Ahead.Inferences, ms(acc.Ahead.Fetch), ms(acc.Ahead.Wait)
	t.OnDemandRequests, t.AheadRequests, t.AheadOff = acc.Demand, acc.Ahead.Requests, acc.Ahead.Off
	t.AheadPeriod, t.AheadMisses, t.AheadWastedBytes, t.AheadLateWaits = acc.Ahead.Period, acc.Ahead.Misses, acc.Ahead.Wasted, acc.Ahead.LateWaits
	t.LinearOverlapped = acc.Ahead.Overlapped
	setupB := bothWays(acc.SetupStats)
	t.Pairs[0].OnlineMS = t.OnlineMS
	own := PairTraffic{Pair: fmt.Sprintf("%d-2", party), Setup: setupB, Offline: acc.Ahead.Bytes, Online: bothWays(all) - setupB - acc.Ahead.Bytes,
		SetupMS: t.SetupMS, OfflineMS: ms(acc.Ahead.Fetch), OnlineMS: t.HelperWaitMS}
	if acc.Other == nil {
		t.Pairs = append(t.Pairs, own)
		return t
	}
	// The link hello has the same size for both data parties.
	other := PairTraffic{Pair: fmt.Sprintf("%d-2", 1-party), Setup: own.Setup, Offline: acc.OtherAhead.Bytes, Online: bothWays(*acc.Other) - own.Setup - acc.OtherAhead.Bytes,
		OfflineMS: ms(acc.OtherAhead.Fetch), OnlineMS: ms(acc.OtherWait - acc.OtherAhead.Wait)}
	if party == 0 {
		t.Pairs = append(t.Pairs, own, other)
	} else {
		t.Pairs = append(t.Pairs, other, own)
	}
	return t
}

// write writes the three-party lines under the per-layer table.
func (t *ThreeParty) write(b *strings.Builder, runMS float64) {
	fmt.Fprintf(b, "three parties: helper set-up %s, offline (dealt before the inputs are used) %s, online %s (of which waits on the helper %s) of the run's %s\n",
		fmtMS(t.SetupMS), fmtMS(t.OfflineMS), fmtMS(t.OnlineMS), fmtMS(t.HelperWaitMS), fmtMS(runMS))
	switch {
	case t.FirstRequests > 0 && t.FirstAheadRequests < t.FirstRequests:
		fmt.Fprintf(b, "  first inference: %d of its %d requests (%s of %s) dealt before its input, the rest on demand: they exceed --helper-ahead's cap\n",
			t.FirstAheadRequests, t.FirstRequests, FormatBytes(t.FirstAheadBytes), FormatBytes(t.FirstBytes))
	case t.FirstRequests > 0:
		fmt.Fprintf(b, "  first inference: all %d requests (%s) dealt before its input\n", t.FirstRequests, FormatBytes(t.FirstBytes))
	}
	if t.LinearAhead > 0 {
		fmt.Fprintf(b, "  linear layers: %d shares computed before their inference's input (%s of the offline phase), %d during the inferences\n",
			t.LinearAhead, fmtMS(t.PrecomputeMS), t.LinearOnline)
	}
	switch {
	case t.AheadInferences > 0:
		fmt.Fprintf(b, "  dealt ahead: %d inferences, %d requests in %s in the background (waited %s at inference starts; period %d, %d missed, %s unused); %d requests on demand\n",
			t.AheadInferences, t.AheadRequests, fmtMS(t.AheadMS), fmtMS(t.AheadWaitMS), t.AheadPeriod, t.AheadMisses, FormatBytes(t.AheadWastedBytes), t.OnDemandRequests)
	case t.AheadOff != "":
		fmt.Fprintf(b, "  dealt on demand (%d requests): dealing ahead is off: %s\n", t.OnDemandRequests, t.AheadOff)
	}
	for _, p := range t.Pairs {
		fmt.Fprintf(b, "  %s: set-up %s, offline %s, online %s; time set-up %s, offline %s, online %s\n", strings.Replace(p.Pair, "-", "↔", 1),
			FormatBytes(p.Setup), FormatBytes(p.Offline), FormatBytes(p.Online), fmtMS(p.SetupMS), fmtMS(p.OfflineMS), fmtMS(p.OnlineMS))
	}
}
