package serve

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// HandshakeVersion is the version of the handshake and session protocol spoken by this package.
// It is bumped whenever two builds could no longer run a session together.
//
// Version 3 added the batch field: a client announces how many inferences it runs in the session,
// a server the most it accepts. Version 4 added the compile description (Hello.Compiled), so that
// two programs compiled differently from the same model are told apart by what differs.
const HandshakeVersion = 4

// handshake wire constants (docs/usage.md, "Handshake").
const (
	helloMagic   = "SCIRUN"
	prefixSize   = 12 // magic 6, version u16, party u8, flags u8, body length u16
	maxBodySize  = 4096
	maxReason    = 1024
	verdictOK    = 0
	verdictRefus = 1
)

// ErrHandshake is wrapped by every handshake failure: the peer is not a compatible scirun, runs
// another program, or disagrees on the roles.
var ErrHandshake = errors.New("handshake failed")

// Hello is what each party announces before any protocol message.
type Hello struct {
	Version   int       // handshake version (HandshakeVersion)
	Party     int       // 0 server, 1 client
	Program   [32]byte  // program ID (sciir.File.ID)
	RingKind  ring.Kind // ring family of the program
	RingParam uint64    // l for Z_2^l (n for Z_n)
	Scale     int       // the program's fixed-point scale
	Backend   string    // the two-party backend, e.g. "sciot"
	Streams   int       // connections (OT streams) per session, 1 to MaxStreams
	Model     string    // the source model's file name (metadata; may be empty)
	ModelSHA  string    // hex SHA-256 of the source model (metadata; may be empty)
	Software  string    // free text, for logs
	// Batch is, in a client's hello, the number of inferences the client runs in the session
	// (at least 1); in a server's, the most it accepts in one session (Options.MaxBatch).
	Batch int
	// Compiled describes the program's public compile settings beyond the model, ring and
	// scale (CompiledSettings): when two program IDs differ, the hellos name what differs.
	Compiled string

	// Token identifies the session's extra stream connections. It is not part of the hello:
	// party 0 sets it before the handshake and sends it in its accepting verdict; at party 1 the
	// peer hello that Handshake returns carries it.
	Token Token
}

// HelloFor returns the hello a party running f with the named backend announces, with one
// stream (set Streams for more) and a batch of one inference (set Batch for more).
func HelloFor(f *sciir.File, party int, backend, software string) Hello {
	p := f.Program
	kind, param := ring.Pow2, uint64(p.Bits)
	if p.Modulus != 0 {
		kind, param = ring.Prime, p.Modulus // the fhe mode's Z_n
	}
	return Hello{
		Version:   HandshakeVersion,
		Party:     party,
		Program:   f.ID,
		RingKind:  kind,
		RingParam: param,
		Scale:     p.Scale,
		Backend:   backend,
		Streams:   1,
		Model:     f.Meta.Source,
		ModelSHA:  f.Meta.SourceSHA256,
		Software:  software,
		Batch:     1,
		Compiled:  CompiledSettings(f),
	}
}

// maxCompiled bounds Hello.Compiled on the wire.
const maxCompiled = 2048

// CompiledSettings describes the public compile settings of f that are part of its program ID
// besides the model, ring and scale: one "name: value" line each (the image preprocessing, the
// class names, the recorded backend and link, the validation range, the passes), for naming what
// differs between two programs.
func CompiledSettings(f *sciir.File) string {
	m := f.Meta
	var lines []string
	add := func(name string, format string, args ...any) {
		lines = append(lines, name+": "+fmt.Sprintf(format, args...))
	}
	add("backend", "%s", f.Backend)
	if m.Net != "" {
		add("planned link (--net)", "%s", m.Net)
	}
	if p := m.Preprocess; p != nil {
		add("image size", "%dx%d", p.Width, p.Height)
		add("channels", "%d", p.Channels)
		add("layout", "%s", p.Layout)
		add("pixel scale (--pixel-scale)", "%g", p.Scale)
		add("preprocessing mean (--mean)", "%v", p.Mean)
		add("preprocessing std (--std)", "%v", p.Std)
		add("resize filter (--resize)", "%s", p.Resize)
		add("shorter-side resize (--resize-shorter)", "%d", p.ResizeShorter)
		add("centre crop (--center-crop)", "%dx%d", p.CropWidth, p.CropHeight)
	}
	if names := m.ClassNames(); len(names) > 0 {
		sum := sha256.Sum256([]byte(strings.Join(names, "\n")))
		add("class names", "%d (%s…, sha256 %x)", len(names), names[0], sum[:4])
	}
	if r := m.InputRange; r != nil {
		add("validated input range", "[%.6g, %.6g]", r.Min, r.Max)
	}
	if a := m.Autotune; a != nil {
		add("validation", "%d samples of %s", a.Samples, orUnknown(a.Validation))
	}
	sum := sha256.Sum256([]byte(strings.Join(m.Passes, "\n")))
	add("passes", "%d (sha256 %x)", len(m.Passes), sum[:4])
	s := strings.Join(lines, "\n")
	if len(s) > maxCompiled {
		s = s[:maxCompiled]
	}
	return s
}

// settingsDiff names the compile settings that differ between two CompiledSettings texts.
func settingsDiff(client, server string) string {
	parse := func(s string) (map[string]string, []string) {
		m := map[string]string{}
		var order []string
		for _, l := range strings.Split(s, "\n") {
			if k, v, ok := strings.Cut(l, ": "); ok {
				m[k] = v
				order = append(order, k)
			}
		}
		return m, order
	}
	c, order := parse(client)
	s, sorder := parse(server)
	for _, k := range sorder {
		if _, ok := c[k]; !ok {
			order = append(order, k)
		}
	}
	var diffs []string
	for _, k := range order {
		cv, cok := c[k]
		sv, sok := s[k]
		switch {
		case cok && sok && cv == sv:
			continue
		case !cok:
			cv = "none"
		case !sok:
			sv = "none"
		}
		diffs = append(diffs, fmt.Sprintf("%s: client %s, server %s", k, cv, sv))
	}
	return strings.Join(diffs, "; ")
}

// ProgramID returns the program ID in hex.
func (h Hello) ProgramID() string { return hex.EncodeToString(h.Program[:]) }

// RoleName is "server" for party 0 and "client" for party 1.
func RoleName(party int) string {
	switch party {
	case 0:
		return "server"
	case 1:
		return "client"
	}
	return fmt.Sprintf("party %d", party)
}

func (h Hello) ringString() string {
	r, err := ring.Of(h.RingKind, h.RingParam)
	if err != nil {
		return fmt.Sprintf("ring(kind %d, %d)", h.RingKind, h.RingParam)
	}
	return r.String()
}

// marshal encodes the hello: the fixed 12-byte prefix and the version-4 body.
func (h Hello) marshal() []byte {
	body := make([]byte, 0, 128)
	body = append(body, h.Program[:]...)
	body = append(body, byte(h.RingKind))
	body = binary.LittleEndian.AppendUint64(body, h.RingParam)
	body = append(body, byte(h.Scale), byte(h.Streams))
	body = binary.LittleEndian.AppendUint32(body, uint32(min(max(h.Batch, 0), maxBatchWire)))
	for _, s := range []string{h.Backend, h.Model, h.ModelSHA, h.Software} {
		if len(s) > 255 {
			s = s[:255]
		}
		body = append(body, byte(len(s)))
		body = append(body, s...)
	}
	compiled := h.Compiled
	if len(compiled) > maxCompiled {
		compiled = compiled[:maxCompiled]
	}
	body = binary.LittleEndian.AppendUint16(body, uint16(len(compiled)))
	body = append(body, compiled...)
	b := make([]byte, 0, prefixSize+len(body))
	b = append(b, helloMagic...)
	b = binary.LittleEndian.AppendUint16(b, uint16(h.Version))
	b = append(b, byte(h.Party), 0)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(body)))
	return append(b, body...)
}

// parsePrefix checks the magic and returns the version, party and body length.
func parsePrefix(b []byte) (version, party, bodyLen int, err error) {
	if string(b[:len(helloMagic)]) != helloMagic {
		return 0, 0, 0, garbageError(b)
	}
	version = int(binary.LittleEndian.Uint16(b[6:]))
	party = int(b[8])
	bodyLen = int(binary.LittleEndian.Uint16(b[10:]))
	if bodyLen > maxBodySize {
		return 0, 0, 0, fmt.Errorf("hello body of %d bytes exceeds %d", bodyLen, maxBodySize)
	}
	return version, party, bodyLen, nil
}

// garbageError describes a peer whose first bytes are not a scirun hello.
func garbageError(b []byte) error {
	if len(b) >= 3 && b[0] == 0x16 && b[1] == 0x03 {
		return errors.New("the peer started a TLS handshake, but this side has no TLS configured " +
			"(server: --tls-self, or --tls-cert and --tls-key; client: --tls-pin or --tls-ca)")
	}
	printable := strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '.'
		}
		return r
	}, string(b))
	return fmt.Errorf("the peer is not speaking the scirun protocol (first bytes % x %q)", b, printable)
}

// maxBatchWire is the largest batch a hello can carry (it is sent as a u32, and the rest of the
// code counts in int).
const maxBatchWire = 1<<31 - 1

// parseBody decodes a version-4 body into h.
func (h *Hello) parseBody(b []byte) error {
	if len(b) < 32+1+8+1+1+4 {
		return fmt.Errorf("hello body of %d bytes is too short", len(b))
	}
	copy(h.Program[:], b)
	h.RingKind = ring.Kind(b[32])
	h.RingParam = binary.LittleEndian.Uint64(b[33:])
	h.Scale = int(b[41])
	h.Streams = int(b[42])
	h.Batch = int(min(binary.LittleEndian.Uint32(b[43:]), maxBatchWire))
	b = b[47:]
	for _, s := range []*string{&h.Backend, &h.Model, &h.ModelSHA, &h.Software} {
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return errors.New("hello body is truncated")
		}
		*s = string(b[1 : 1+int(b[0])])
		b = b[1+int(b[0]):]
	}
	if len(b) < 2 || len(b) < 2+int(binary.LittleEndian.Uint16(b)) {
		return errors.New("hello body is truncated")
	}
	n := int(binary.LittleEndian.Uint16(b))
	h.Compiled = string(b[2 : 2+n])
	b = b[2+n:]
	if len(b) != 0 {
		return fmt.Errorf("hello body has %d trailing bytes", len(b))
	}
	return nil
}

// Compare checks that the peer's hello (peer) matches this party's (local) and returns a
// message naming what differs, or "" when they match. The message is the same at both parties.
func Compare(local, peer Hello) string {
	client, server := local, peer
	if local.Party == 0 {
		client, server = peer, local
	}
	switch {
	case local.Version != peer.Version:
		return fmt.Sprintf("client speaks scirun handshake version %d, server version %d: run the same scirun release on both sides",
			client.Version, server.Version)
	case local.Party == peer.Party:
		return fmt.Sprintf("both sides are the %s (party %d): one side must run --party 0 and the other --party 1",
			RoleName(local.Party), local.Party)
	case local.Party != 0 && local.Party != 1, peer.Party != 0 && peer.Party != 1:
		return fmt.Sprintf("parties %d and %d: want 0 (server) and 1 (client)", local.Party, peer.Party)
	case local.Program != peer.Program:
		return fmt.Sprintf("client runs program %s, server runs %s%s: recompile or fetch the matching client file",
			short(client.ProgramID()), short(server.ProgramID()), programDetail(client, server))
	case local.Backend != peer.Backend:
		cb, cot, _ := strings.Cut(client.Backend, " ")
		sb, sot, _ := strings.Cut(server.Backend, " ")
		if cb == sb {
			// The same backend with other options (e.g. "sciot ot=iknp" and "sciot ot=ferret").
			return fmt.Sprintf("client runs backend %s with %s, server with %s: both must use the same --ot", cb, orDefault(cot), orDefault(sot))
		}
		return fmt.Sprintf("client runs backend %q, server %q: both must use the same --backend", client.Backend, server.Backend)
	case local.Streams != peer.Streams:
		return fmt.Sprintf("client uses %d streams, server %d: both must use the same --streams", client.Streams, server.Streams)
	case local.Streams < 1 || local.Streams > MaxStreams:
		return fmt.Sprintf("%d streams: want 1 to %d", local.Streams, MaxStreams)
	case client.Batch < 1:
		return fmt.Sprintf("the client asks for a batch of %d inferences: want at least 1", client.Batch)
	case client.Batch > server.Batch:
		return fmt.Sprintf("the client asks for %d inferences in one session, the server allows at most %d (its --max-batch): split the batch",
			client.Batch, server.Batch)
	case local.RingKind != peer.RingKind || local.RingParam != peer.RingParam || local.Scale != peer.Scale:
		// Unreachable for honest peers (the ring and scale are part of the program ID), but a
		// modified peer must not get past this point.
		return fmt.Sprintf("client runs %s at scale %d, server %s at scale %d",
			client.ringString(), client.Scale, server.ringString(), server.Scale)
	}
	return ""
}

func short(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}

// programDetail explains why two program IDs differ, as far as the hellos tell.
func programDetail(c, s Hello) string {
	switch {
	case c.ModelSHA != "" && s.ModelSHA != "" && c.ModelSHA != s.ModelSHA:
		return fmt.Sprintf(" (compiled from different models: client from %s %s, server from %s %s)",
			orUnknown(c.Model), short(c.ModelSHA), orUnknown(s.Model), short(s.ModelSHA))
	case c.RingKind != s.RingKind || c.RingParam != s.RingParam || c.Scale != s.Scale:
		return fmt.Sprintf(" (different ring or scale: client %s scale %d, server %s scale %d)",
			c.ringString(), c.Scale, s.ringString(), s.Scale)
	case c.ModelSHA != "" && c.ModelSHA == s.ModelSHA:
		if d := settingsDiff(c.Compiled, s.Compiled); d != "" {
			return " (same model, ring and scale, compiled differently: " + d + ")"
		}
		return " (same model, ring and scale, compiled differently: in what the hellos do not describe: the program's code, e.g. from another athosc release)"
	}
	return ""
}

func orDefault(s string) string {
	if s == "" {
		return "its defaults"
	}
	return s
}

func orUnknown(s string) string {
	if s == "" {
		return "(unknown)"
	}
	return s
}

// HandshakeError is a handshake failure. Refused is true when one of the two sides rejected the
// session because the hellos differ; Reason then is the message both sides report.
type HandshakeError struct {
	Reason  string
	Refused bool
	Err     error // the underlying I/O error, if any
}

func (e *HandshakeError) Error() string { return "handshake: " + e.Reason }

// Unwrap returns ErrHandshake and the underlying error.
func (e *HandshakeError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrHandshake, e.Err}
	}
	return []error{ErrHandshake}
}

// Handshake exchanges hellos with the peer on nc, before any protocol message, and then a verdict
// (accept, or refuse with a reason) in each direction. It fails when the hellos differ (both sides
// then report the same message), when the peer refuses, sends something that is not a scirun
// hello, closes, or does not answer within timeout. It returns the peer's hello and the number of
// bytes sent and received. On return nc has no deadline set.
func Handshake(ctx context.Context, nc net.Conn, local Hello, timeout time.Duration) (peer Hello, sent, recv int64, err error) {
	return handshake(ctx, nc, local, timeout, "")
}

// handshake is Handshake; a non-empty busy refuses a session that the hellos would allow, with
// that reason (a server with no free session slot).
func handshake(ctx context.Context, nc net.Conn, local Hello, timeout time.Duration, busy string) (peer Hello, sent, recv int64, err error) {
	peerRole := RoleName(1 - local.Party)
	if timeout > 0 {
		_ = nc.SetDeadline(time.Now().Add(timeout))
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer func() {
		stop()
		_ = nc.SetDeadline(time.Time{})
		if err != nil && ctx.Err() != nil {
			err = &HandshakeError{Reason: "cancelled: " + ctx.Err().Error(), Err: ctx.Err()}
		}
	}()
	ioErr := func(what string, e error) error {
		return &HandshakeError{Reason: describeIOError(what, peerRole, timeout, e), Err: e}
	}

	msg := local.marshal()
	if pc, ok := nc.(*prefixConn); ok && pc.helloSent {
		// Sent before the client took its session slot (Server.awaitVerdict).
	} else if _, err := nc.Write(msg); err != nil {
		return Hello{}, 0, 0, ioErr("sending the hello", err)
	}
	sent = int64(len(msg))

	// Read the magic first, so that a peer speaking something else is recognised without
	// waiting for a whole prefix.
	var pre [prefixSize]byte
	for _, part := range [][2]int{{0, len(helloMagic)}, {len(helloMagic), prefixSize}} {
		n, err := io.ReadFull(nc, pre[part[0]:part[1]])
		recv += int64(n)
		if perr := checkMagic(pre[:part[0]+n]); perr != nil {
			return Hello{}, sent, recv, &HandshakeError{Reason: perr.Error(), Err: perr}
		}
		if err != nil {
			return Hello{}, sent, recv, ioErr("waiting for the "+peerRole+"'s hello", err)
		}
	}
	version, party, bodyLen, err := parsePrefix(pre[:])
	if err != nil {
		return Hello{}, sent, recv, &HandshakeError{Reason: err.Error(), Err: err}
	}
	body := make([]byte, bodyLen)
	if _, err := io.ReadFull(nc, body); err != nil {
		return Hello{}, sent, recv, ioErr("reading the "+peerRole+"'s hello", err)
	}
	recv += int64(bodyLen)
	peer = Hello{Version: version, Party: party}
	reason := ""
	if version == HandshakeVersion {
		if err := peer.parseBody(body); err != nil {
			reason = fmt.Sprintf("malformed hello from the %s: %v", peerRole, err)
		}
	}
	if reason == "" {
		reason = Compare(local, peer)
	}
	if reason == "" {
		reason = busy
	}

	// Verdicts: status u8, payload length u16, payload: the reason of a refusal; the session
	// token in the server's acceptance; nothing in the client's.
	v := []byte{verdictOK, 0, 0}
	if local.Party == 0 {
		v = binary.LittleEndian.AppendUint16(v[:1], uint16(len(local.Token)))
		v = append(v, local.Token[:]...)
	}
	if reason != "" {
		r := reason
		if len(r) > maxReason {
			r = r[:maxReason]
		}
		v = []byte{verdictRefus}
		v = binary.LittleEndian.AppendUint16(v, uint16(len(r)))
		v = append(v, r...)
	}
	if _, err := nc.Write(v); err != nil {
		if reason != "" {
			return peer, sent, recv, &HandshakeError{Reason: reason, Refused: true}
		}
		return peer, sent, recv, ioErr("sending the verdict", err)
	}
	sent += int64(len(v))
	if reason != "" {
		// Our own check failed: the peer reaches the same conclusion or reads our reason. Read
		// its verdict before closing, so that closing with unread data does not reset the
		// connection before the peer has read ours.
		d := 2 * time.Second
		if timeout > 0 && timeout < d {
			d = timeout
		}
		_ = nc.SetReadDeadline(time.Now().Add(d))
		var vh [3]byte
		if _, err := io.ReadFull(nc, vh[:]); err == nil && vh[0] == verdictRefus {
			_, _ = io.CopyN(io.Discard, nc, int64(binary.LittleEndian.Uint16(vh[1:])))
		}
		return peer, sent, recv, &HandshakeError{Reason: reason, Refused: true}
	}
	var vh [3]byte
	if _, err := io.ReadFull(nc, vh[:]); err != nil {
		return peer, sent, recv, ioErr("waiting for the "+peerRole+"'s verdict", err)
	}
	recv += 3
	switch vh[0] {
	case verdictOK:
		n := int(binary.LittleEndian.Uint16(vh[1:]))
		switch {
		case local.Party == 1 && n == len(peer.Token):
			if _, err := io.ReadFull(nc, peer.Token[:]); err != nil {
				return peer, sent, recv, ioErr("reading the "+peerRole+"'s verdict", err)
			}
			recv += int64(n)
		case n != 0:
			return peer, sent, recv, &HandshakeError{Reason: fmt.Sprintf("the %s accepted with a %d-byte payload, want %d", peerRole, n, expectedToken(local.Party))}
		}
		return peer, sent, recv, nil
	case verdictRefus:
		n := min(int(binary.LittleEndian.Uint16(vh[1:])), maxReason)
		r := make([]byte, n)
		if _, err := io.ReadFull(nc, r); err != nil {
			return peer, sent, recv, ioErr("reading the "+peerRole+"'s verdict", err)
		}
		recv += int64(n)
		return peer, sent, recv, &HandshakeError{Reason: "the " + peerRole + " refused the session: " + string(r), Refused: true}
	}
	return peer, sent, recv, &HandshakeError{Reason: fmt.Sprintf("the %s sent an invalid verdict byte %d", peerRole, vh[0])}
}

// expectedToken is the size of the payload of the peer's accepting verdict at party.
func expectedToken(party int) int {
	if party == 1 {
		return len(Token{})
	}
	return 0
}

// checkMagic reports garbage already visible in a short prefix.
func checkMagic(b []byte) error {
	n := min(len(b), len(helloMagic))
	if string(b[:n]) != helloMagic[:n] {
		return garbageError(b)
	}
	return nil
}

// describeIOError turns a network error during the handshake into an actionable sentence.
func describeIOError(what, peerRole string, timeout time.Duration, err error) string {
	var ne net.Error
	switch {
	case peerRole == "server" && (strings.Contains(err.Error(), "remote error: tls: bad certificate") ||
		strings.Contains(err.Error(), "remote error: tls: certificate required")):
		// TLS 1.3: the client's handshake ends before the server checks the client's certificate;
		// the server's alert arrives at the first read.
		return fmt.Sprintf("%s: the server refused this client's TLS certificate (%v): it admits only allowed clients; present an allowed one with --tls-client-cert and --tls-client-key, or --tls-client-self (and have its fingerprint pinned)", what, err)
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout():
		hint := ""
		if peerRole == "server" {
			hint = " (is it a scirun server? it may be busy with --max-sessions sessions)"
		}
		return fmt.Sprintf("%s: no answer within %v%s", what, timeout, hint)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		hint := ""
		if peerRole == "server" {
			hint = " (if the server uses TLS: pass --tls-pin with the fingerprint it printed at start, for a --tls-self server, or --tls-ca with the certificate that signed its own)"
		}
		return fmt.Sprintf("%s: the %s closed the connection%s", what, peerRole, hint)
	}
	return fmt.Sprintf("%s: %v", what, err)
}
