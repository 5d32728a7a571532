package ferret

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// chunk is the number of instances per frame of a derived call.
const chunk = 1 << 15

// Batch kinds of the derived calls that send messages (random OT sends
// none and has no header).
const (
	opRCOT = 1 + iota
	opCOT
	opOT
	opOTN
)

func opName(op uint8) string {
	switch op {
	case opRCOT:
		return "COT with random choice bits"
	case opCOT:
		return "COT"
	case opOT:
		return "chosen 1-of-2 OT"
	case opOTN:
		return "1-of-N OT"
	}
	return fmt.Sprintf("unknown call %d", op)
}

// batchHeader describes a derived batch: its kind, l, w (N for 1-of-N),
// n, and the stream index of its first COT. The party that sends the
// batch's first message sends it (24 bytes); the other checks it against
// its own call and aborts the connection on a mismatch, so a call order or
// shape that differs between the parties — or an earlier random-OT call
// that did — fails at once instead of giving wrong outputs.
type batchHeader struct {
	op  uint8
	l   uint8
	w   uint32
	n   uint64
	ctr uint64
}

const headerSize = 24

func (h batchHeader) encode() [headerSize]byte {
	var b [headerSize]byte
	b[0], b[1] = h.op, h.l
	binary.LittleEndian.PutUint32(b[4:], h.w)
	binary.LittleEndian.PutUint64(b[8:], h.n)
	binary.LittleEndian.PutUint64(b[16:], h.ctr)
	return b
}

func (h batchHeader) String() string {
	return fmt.Sprintf("%s (n=%d, w=%d, l=%d, from COT %d)", opName(h.op), h.n, h.w, h.l, h.ctr)
}

func (s *Session) sendHeader(ctx context.Context, h batchHeader) error {
	b := h.encode()
	return s.conn.Send(ctx, b[:])
}

func (s *Session) checkHeader(ctx context.Context, want batchHeader) error {
	var b [headerSize]byte
	if err := s.conn.Recv(ctx, b[:]); err != nil {
		return err
	}
	if b != want.encode() {
		got := batchHeader{op: b[0], l: b[1], w: binary.LittleEndian.Uint32(b[4:]),
			n: binary.LittleEndian.Uint64(b[8:]), ctr: binary.LittleEndian.Uint64(b[16:])}
		msg := fmt.Sprintf("ferret: this party called %v but the peer called %v", want, got)
		_ = s.conn.Abort(ctx, msg)
		return errors.New(msg)
	}
	return nil
}

// Session is one party's end of silent OT with the peer in both
// directions: two COT streams on the OT session's connection, one in which
// this party is the COT sender and one in which it receives. Its methods
// have the shapes of ot.Session's (a SendX at one party meets the matching
// RecvX at the other, in the same order on both sides; messages are l-bit
// values in uint64 words, 1 ≤ l ≤ 64, w words per instance in the Wide
// forms; choice bits are packed). A Session is not safe for concurrent use.
//
// Per instance, not counting the refills (IterationBytes per main
// iteration of the stream drawn from, ≈ 0.44 bits per COT with B13), a
// 24-byte batch header that the other party checks (see batchHeader; not
// for random OT) and 4-byte frame headers per chunk of 2^15 instances:
//
//	ROT_l       (random b)     0 bits                no flight (refills only)
//	RCOT_l      (random b)     w·l bits              one flight
//	COT_l       (chosen b)     1 + w·l bits          two flights per batch
//	OT_l        (chosen b)     1 + 2·w·l bits        two flights per batch
type Session struct {
	ots     *ot.Session
	cfg     Config
	opt     Options
	party   int
	conn    *transport.Conn
	out, in *COT // this party sends / receives COTs
	hash    *prg.Hash
	err     error

	k    []prg.Block
	bits []uint64
	vals []uint64
	h1   []uint64
	pk   []uint64
	hb   []prg.Block
	tmp  []uint64

	kall, y, z []prg.Block // 1-of-N OT
	dall       []uint64
}

// NewSession sets up both COT directions over s with the same config at
// both parties (party 0's stream as sender first).
func NewSession(ctx context.Context, s *ot.Session, cfg Config, opt Options) (*Session, error) {
	if s == nil {
		return nil, errors.New("ferret: NewSession: nil OT session")
	}
	fs := &Session{ots: s, cfg: cfg, opt: opt, party: s.Party(), conn: s.Conn(), hash: prg.NewHash()}
	first, second := Sender, Receiver
	if fs.party == 1 {
		first, second = Receiver, Sender
	}
	for _, r := range []Role{first, second} {
		c, err := New(ctx, s, r, cfg, opt)
		if err != nil {
			return nil, err
		}
		if r == Sender {
			fs.out = c
		} else {
			fs.in = c
		}
	}
	return fs, nil
}

// Fork returns a new Session on conn (a second connection to the same
// peer) for use from another goroutine: it forks the underlying OT session
// (no new base OTs) and bootstraps two new COT streams on it (their own
// IKNP batch and pre-iteration: SetupBytes per direction). Both parties
// must fork in the same order.
func (s *Session) Fork(ctx context.Context, conn *transport.Conn) (*Session, error) {
	o, err := s.ots.Fork(ctx, conn)
	if err != nil {
		return nil, fmt.Errorf("ferret: Fork: %w", err)
	}
	return NewSession(ctx, o, s.cfg, s.opt)
}

// Party returns this party's index (0 or 1).
func (s *Session) Party() int { return s.party }

// Available returns how many COTs this party can draw as sender and as
// receiver before the next refill (an interactive iteration).
func (s *Session) Available() (send, recv int) { return s.out.Available(), s.in.Available() }

// Drawn returns the COTs this party has drawn so far as sender and as
// receiver.
func (s *Session) Drawn() (send, recv uint64) { return s.out.Used(), s.in.Used() }

// Renew makes sure that at least send COTs are available to this party as
// sender and recv as receiver without a refill in the middle: in a direction
// that holds fewer, it drops what is left there (those COTs are never used;
// Drawn counts them) and runs an iteration now. A caller that is about to
// carve ranges for interleaved batches calls it where both parties are at
// the same point of the connection's traffic. Both parties must call it
// with the same amounts mirrored (the peer's send is this party's recv).
// Amounts above one iteration's output are served as far as one iteration
// goes.
func (s *Session) Renew(ctx context.Context, send, recv int) error {
	if s.err != nil {
		return fmt.Errorf("ferret: Renew: session unusable after an earlier failure: %w", s.err)
	}
	// This party's sender direction first: an iteration is sent by the COT
	// sender only, so both parties send before they receive.
	for _, d := range []struct {
		c    *COT
		need int
	}{{s.out, send}, {s.in, recv}} {
		if d.c.Available() >= d.need {
			continue
		}
		d.c.drop()
		if err := d.c.refill(ctx); err != nil {
			return s.fail("Renew", err)
		}
	}
	return nil
}

// Carve returns a session that draws the next send COTs of this party's
// sender reservoir and the next recv COTs of its receiver reservoir, and
// moves s past them (s.Drawn grows by send and recv at once, whether or not
// the carved session uses them all). A carved session never refills: a draw
// beyond its share fails and makes it unusable. It shares s's connection;
// carved sessions let a caller interleave several batches on it in any
// order, since each draws from its own range of COTs (a refill's frames
// would overtake the other batches' frames, and draws interleaved in
// different orders at the two parties would pair different COTs). Both
// parties must carve the same ranges in the same order (the peer's send is
// this party's recv). Carve fails if the reservoirs hold fewer.
func (s *Session) Carve(send, recv int) (*Session, error) {
	if s.err != nil {
		return nil, fmt.Errorf("ferret: Carve: session unusable after an earlier failure: %w", s.err)
	}
	if send < 0 || recv < 0 || send > s.out.Available() || recv > s.in.Available() {
		return nil, fmt.Errorf("ferret: Carve: %d sender and %d receiver COTs asked, %d and %d available", send, recv, s.out.Available(), s.in.Available())
	}
	// The carved session starts with s's buffers (no call keeps their
	// contents while it waits for the peer, so sessions interleaved on one
	// goroutine may share them; a copy that needs more grows its own).
	c := *s
	c.out, c.in = s.out.carve(send), s.in.carve(recv)
	return &c, nil
}

// Conn returns the connection (for phase labels and statistics).
func (s *Session) Conn() *transport.Conn { return s.conn }

// Err returns the error that made the session unusable, or nil.
func (s *Session) Err() error { return s.err }

// SenderCOT and ReceiverCOT return the two underlying COT streams.
func (s *Session) SenderCOT() *COT { return s.out }

// ReceiverCOT returns the stream in which this party receives COTs.
func (s *Session) ReceiverCOT() *COT { return s.in }

// args validates a call's shape and returns the number of instances.
func (s *Session) args(call string, w, l int, v []uint64, other []uint64, b []uint64, recv bool) (int, error) {
	if s.err != nil {
		return 0, fmt.Errorf("ferret: %s: session unusable after an earlier failure: %w", call, s.err)
	}
	if l < 1 || l > 64 {
		return 0, fmt.Errorf("ferret: %s: bit width l=%d outside 1..64", call, l)
	}
	if w < 1 || w > ot.MaxWidth {
		return 0, fmt.Errorf("ferret: %s: width w=%d outside 1..%d", call, w, ot.MaxWidth)
	}
	if len(v)%w != 0 {
		return 0, fmt.Errorf("ferret: %s: %d words is not a multiple of w=%d", call, len(v), w)
	}
	n := len(v) / w
	if other != nil && len(other) != len(v) {
		return 0, fmt.Errorf("ferret: %s: slices of %d and %d words", call, len(v), len(other))
	}
	if recv && len(b) < bitvec.Words(n) {
		return 0, fmt.Errorf("ferret: %s: %d choice words cannot hold %d choice bits", call, len(b), n)
	}
	return n, nil
}

func (s *Session) fail(call string, err error) error {
	err = fmt.Errorf("ferret: %s: %w", call, err)
	if s.err == nil {
		s.err = err
	}
	return err
}

// pads sets dst (len(src)·w words) to the w l-bit values cut from
// H(src[i] ⊕ d), the TCCR hash with tweak {ctr0+i, domain | j} for output
// block j of instance i (⌈w·l/128⌉ blocks per instance). It hashes
// padChunk instances at a time, so that the hash outputs stay in the L1
// cache however long src is (a view of the reservoir can be millions).
func (s *Session) pads(c *COT, dst []uint64, src []prg.Block, d prg.Block, ctr0 uint64, w, l int) {
	nb := (w*l + 127) / 128
	for off := 0; off < len(src); off += padChunk {
		cnt := min(padChunk, len(src)-off)
		s.padsChunk(c, dst[off*w:(off+cnt)*w], src[off:off+cnt], d, ctr0+uint64(off), w, l, nb)
	}
}

// padChunk is the number of instances pads hashes at a time.
const padChunk = 512

func (s *Session) padsChunk(c *COT, dst []uint64, src []prg.Block, d prg.Block, ctr0 uint64, w, l, nb int) {
	cnt := len(src)
	hb := grow(s.hb, nb*cnt)
	s.hb = hb
	for j := 0; j < nb; j++ {
		s.hash.TCCRXor(hb[j*cnt:(j+1)*cnt], src, d, prg.Tweak{Lo: ctr0, Hi: c.domain(purposeDerived, j)})
	}
	if w == 1 {
		m := bitvec.Mask(l)
		hb = hb[:cnt]
		for i := range dst[:cnt] {
			dst[i] = hb[i][0] & m
		}
		return
	}
	s.tmp = growU(s.tmp, 2*nb)
	for i := 0; i < cnt; i++ {
		for j := 0; j < nb; j++ {
			s.tmp[2*j], s.tmp[2*j+1] = hb[j*cnt+i][0], hb[j*cnt+i][1]
		}
		transport.Unpack(dst[i*w:(i+1)*w], s.tmp, l)
	}
}

func growU(b []uint64, n int) []uint64 {
	if cap(b) < n {
		return make([]uint64, n)
	}
	return b[:n]
}

// ---------------------------------------------------------------- random OT

// SendROT is the sender of n = len(m0) random OTs: it gets random l-bit
// m0[i], m1[i]; the receiver gets a random choice bit b_i and m_{b_i}[i].
// No communication besides refills.
func (s *Session) SendROT(ctx context.Context, l int, m0, m1 []uint64) error {
	return s.sendROT(ctx, "SendROT", 1, l, m0, m1)
}

// RecvROT is the receiver of SendROT: b gets the random choice bits
// (packed; bits of the last word past n cleared), m[i] = m_{b_i}[i].
func (s *Session) RecvROT(ctx context.Context, l int, b, m []uint64) error {
	return s.recvROT(ctx, "RecvROT", 1, l, b, m)
}

// SendROTWide is SendROT with w l-bit words per message.
func (s *Session) SendROTWide(ctx context.Context, w, l int, m0, m1 []uint64) error {
	return s.sendROT(ctx, "SendROTWide", w, l, m0, m1)
}

// RecvROTWide is the receiver of SendROTWide.
func (s *Session) RecvROTWide(ctx context.Context, w, l int, b, m []uint64) error {
	return s.recvROT(ctx, "RecvROTWide", w, l, b, m)
}

func (s *Session) sendROT(ctx context.Context, call string, w, l int, m0, m1 []uint64) error {
	n, err := s.args(call, w, l, m0, m1, nil, false)
	if err != nil {
		return err
	}
	if err := s.padsSender(ctx, n, w, l, m0, m1); err != nil {
		return s.fail(call, err)
	}
	return nil
}

func (s *Session) recvROT(ctx context.Context, call string, w, l int, b, m []uint64) error {
	n, err := s.args(call, w, l, m, nil, b, true)
	if err != nil {
		return err
	}
	c := s.in
	err = s.drawRecv(ctx, n, b, 0, func(off int, mv []prg.Block, ctr uint64) {
		s.pads(c, m[off*w:(off+len(mv))*w], mv, prg.Block{}, ctr, w, l)
	})
	if err != nil {
		return s.fail(call, err)
	}
	clearPast(b, n)
	return nil
}

// clearPast clears the bits of b's last word past n.
func clearPast(b []uint64, n int) {
	if r := n % 64; r != 0 {
		b[n/64] &= bitvec.Mask(r)
	}
}

// drawSend draws n COTs at the sender without copying them out of the
// reservoir: f gets each piece (at most chunk COTs; a piece also ends where
// an iteration's outputs end) with the offset of its first COT in the batch
// and that COT's index in the stream (the hash tweak).
func (s *Session) drawSend(ctx context.Context, n int, f func(off int, k []prg.Block, ctr uint64)) error {
	c := s.out
	for off := 0; off < n; {
		ctr := c.Used()
		v, err := c.view(ctx, min(chunk, n-off), n-off)
		if err != nil {
			return err
		}
		f(off, v.k, ctr)
		off += len(v.k)
	}
	return nil
}

// drawRecv is drawSend at the receiver; it also copies each piece's choice
// bits into b, the batch's first at bit bOff.
func (s *Session) drawRecv(ctx context.Context, n int, b []uint64, bOff int, f func(off int, m []prg.Block, ctr uint64)) error {
	c := s.in
	for off := 0; off < n; {
		ctr := c.Used()
		v, err := c.view(ctx, min(chunk, n-off), n-off)
		if err != nil {
			return err
		}
		bitvec.Copy(b, bOff+off, v.bits, v.bit, len(v.k))
		f(off, v.k, ctr)
		off += len(v.k)
	}
	return nil
}

// ---------------------------------------------------------------- COT, random choice

// SendRCOT is the sender of n = len(x) correlated OTs with random choice
// bits: it gets random r[i] (l bits) and the receiver gets a random b_i and
// r[i] + b_i·x[i] mod 2^l. Communication: exactly l bits per instance (one
// frame per chunk of 2^15 instances), one flight.
func (s *Session) SendRCOT(ctx context.Context, l int, x, r []uint64) error {
	return s.sendCOT(ctx, "SendRCOT", false, 1, l, x, r)
}

// RecvRCOT is the receiver of SendRCOT: b gets the random choice bits,
// y[i] = r[i] + b_i·x[i] mod 2^l.
func (s *Session) RecvRCOT(ctx context.Context, l int, b, y []uint64) error {
	return s.recvCOT(ctx, "RecvRCOT", false, 1, l, b, y)
}

// SendRCOTWide is SendRCOT with w l-bit words per instance (w·l bits each).
func (s *Session) SendRCOTWide(ctx context.Context, w, l int, x, r []uint64) error {
	return s.sendCOT(ctx, "SendRCOTWide", false, w, l, x, r)
}

// RecvRCOTWide is the receiver of SendRCOTWide.
func (s *Session) RecvRCOTWide(ctx context.Context, w, l int, b, y []uint64) error {
	return s.recvCOT(ctx, "RecvRCOTWide", false, w, l, b, y)
}

// ---------------------------------------------------------------- COT, chosen choice

// SendCOT is the sender of n = len(x) correlated OTs (COT_l) with the
// receiver's chosen choice bits: it gets random r[i] and the receiver gets
// r[i] + b_i·x[i] mod 2^l. Communication: the receiver's derandomisation
// bit and the sender's l-bit correction per instance, two flights per
// batch (plus refills).
func (s *Session) SendCOT(ctx context.Context, l int, x, r []uint64) error {
	return s.sendCOT(ctx, "SendCOT", true, 1, l, x, r)
}

// RecvCOT is the receiver of SendCOT with packed choice bits b.
func (s *Session) RecvCOT(ctx context.Context, l int, b, y []uint64) error {
	return s.recvCOT(ctx, "RecvCOT", true, 1, l, b, y)
}

// SendCOTWide is SendCOT with w l-bit words per instance under one choice
// bit (1 + w·l bits each).
func (s *Session) SendCOTWide(ctx context.Context, w, l int, x, r []uint64) error {
	return s.sendCOT(ctx, "SendCOTWide", true, w, l, x, r)
}

// RecvCOTWide is the receiver of SendCOTWide.
func (s *Session) RecvCOTWide(ctx context.Context, w, l int, b, y []uint64) error {
	return s.recvCOT(ctx, "RecvCOTWide", true, w, l, b, y)
}

// The chosen-bit calls run in two phases so that a batch costs one round
// trip however many chunks and refills it spans. Phase 1: both parties draw
// the COTs chunk by chunk (refills flow from the COT sender); the receiver
// hashes H(M_i) at once and sends d = b ⊕ r for the chunk; the sender
// hashes both H(K_i) and H(K_i ⊕ Δ) and keeps them. Phase 2: the sender
// reads every chunk's d, orders its two pads by d_i, then sends the
// replies; the receiver applies them. The sender's wire order (all
// refills, then all replies) is the receiver's reading order, and a batch
// that needs no refill is exactly two flights (the receiver's d, the
// sender's replies); each refill inside a batch adds at most two.

// padsSender draws n COTs at the sender (phase 1) and sets p0 and p1 (n·w
// words each) to the pads H(K_i) and H(K_i ⊕ Δ).
func (s *Session) padsSender(ctx context.Context, n, w, l int, p0, p1 []uint64) error {
	c := s.out
	return s.drawSend(ctx, n, func(off int, k []prg.Block, ctr uint64) {
		s.pads(c, p0[off*w:(off+len(k))*w], k, prg.Block{}, ctr, w, l)
		s.pads(c, p1[off*w:(off+len(k))*w], k, c.delta, ctr, w, l)
	})
}

// padsReceiver draws n COTs at the receiver (phase 1), sets pad (n·w words)
// to H(M_i) and sends d = b ⊕ r per chunk.
func (s *Session) padsReceiver(ctx context.Context, n, w, l int, b, pad []uint64) error {
	c := s.in
	for off := 0; off < n; off += chunk {
		nc := min(chunk, n-off)
		s.bits = growU(s.bits, bitvec.Words(nc))
		err := s.drawRecv(ctx, nc, s.bits, 0, func(o int, m []prg.Block, ctr uint64) {
			s.pads(c, pad[(off+o)*w:(off+o+len(m))*w], m, prg.Block{}, ctr, w, l)
		})
		if err != nil {
			return err
		}
		for j := range s.bits {
			s.bits[j] ^= b[off/64+j]
		}
		if r := nc % 64; r != 0 {
			s.bits[len(s.bits)-1] &= bitvec.Mask(r) // the caller's bits past n stay private
		}
		if err := s.conn.SendBits(ctx, s.bits, nc); err != nil {
			return err
		}
		if err := s.conn.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// order reads the receiver's d for the chunk of nc instances at off and
// swaps p0 and p1 where d_i = 1, so that p0 is the pad the receiver holds
// when b_i = 0.
func (s *Session) order(ctx context.Context, off, nc, w int, p0, p1 []uint64) error {
	s.bits = growU(s.bits, bitvec.Words(nc))
	if err := s.conn.RecvBits(ctx, s.bits, nc); err != nil {
		return err
	}
	for i := 0; i < nc; i++ {
		if s.bits[i>>6]>>(i&63)&1 == 1 {
			a, b := p0[(off+i)*w:(off+i+1)*w], p1[(off+i)*w:(off+i+1)*w]
			for k := range a {
				a[k], b[k] = b[k], a[k]
			}
		}
	}
	return nil
}

func (s *Session) sendCOT(ctx context.Context, call string, chosen bool, w, l int, x, r []uint64) error {
	n, err := s.args(call, w, l, x, r, nil, false)
	if err != nil || n == 0 {
		return err
	}
	m := bitvec.Mask(l)
	h := batchHeader{op: opRCOT, l: uint8(l), w: uint32(w), n: uint64(n), ctr: s.out.Used()}
	s.h1 = growU(s.h1, n*w)
	if !chosen {
		if err := s.sendHeader(ctx, h); err != nil {
			return s.fail(call, err)
		}
	} else {
		h.op = opCOT
		if err := s.padsSender(ctx, n, w, l, r, s.h1); err != nil {
			return s.fail(call, err)
		}
		if err := s.checkHeader(ctx, h); err != nil {
			return s.fail(call, err)
		}
		for off := 0; off < n; off += chunk {
			if err := s.order(ctx, off, min(chunk, n-off), w, r, s.h1); err != nil {
				return s.fail(call, err)
			}
		}
	}
	for off := 0; off < n; off += chunk {
		nc := min(chunk, n-off)
		rc, xc, hc := r[off*w:(off+nc)*w], x[off*w:(off+nc)*w], s.h1[off*w:(off+nc)*w]
		if !chosen {
			if err := s.padsSender(ctx, nc, w, l, rc, hc); err != nil {
				return s.fail(call, err)
			}
		}
		s.vals = growU(s.vals, nc*w)
		for i := range s.vals {
			s.vals[i] = (rc[i] + xc[i] - hc[i]) & m
		}
		s.pk = growU(s.pk, transport.PackedWords(nc*w, l))
		transport.Pack(s.pk, s.vals, l)
		if err := s.conn.SendBits(ctx, s.pk, nc*w*l); err != nil {
			return s.fail(call, err)
		}
	}
	if err := s.conn.Flush(ctx); err != nil {
		return s.fail(call, err)
	}
	return nil
}

func (s *Session) recvCOT(ctx context.Context, call string, chosen bool, w, l int, b, y []uint64) error {
	n, err := s.args(call, w, l, y, nil, b, true)
	if err != nil || n == 0 {
		return err
	}
	c := s.in
	m := bitvec.Mask(l)
	h := batchHeader{op: opRCOT, l: uint8(l), w: uint32(w), n: uint64(n), ctr: c.Used()}
	if chosen {
		h.op = opCOT
		if err := s.sendHeader(ctx, h); err != nil {
			return s.fail(call, err)
		}
		if err := s.padsReceiver(ctx, n, w, l, b, y); err != nil {
			return s.fail(call, err)
		}
	} else if err := s.checkHeader(ctx, h); err != nil {
		return s.fail(call, err)
	}
	for off := 0; off < n; off += chunk {
		nc := min(chunk, n-off)
		yc := y[off*w : (off+nc)*w]
		if !chosen {
			err := s.drawRecv(ctx, nc, b, off, func(o int, mv []prg.Block, ctr uint64) {
				s.pads(c, yc[o*w:(o+len(mv))*w], mv, prg.Block{}, ctr, w, l)
			})
			if err != nil {
				return s.fail(call, err)
			}
			clearPast(b, n)
		}
		nw := transport.PackedWords(nc*w, l)
		s.pk = growU(s.pk, nw)
		s.pk[nw-1] = 0
		if err := s.conn.RecvBits(ctx, s.pk, nc*w*l); err != nil {
			return s.fail(call, err)
		}
		s.vals = growU(s.vals, nc*w)
		transport.Unpack(s.vals, s.pk, l)
		for i := 0; i < nc; i++ {
			bm := -(b[(off+i)>>6] >> ((off + i) & 63) & 1)
			yi, di := yc[i*w:(i+1)*w], s.vals[i*w:(i+1)*w]
			for k := range yi {
				yi[k] = (yi[k] + di[k]&bm) & m
			}
		}
	}
	return nil
}

// ---------------------------------------------------------------- chosen OT

// SendOT is the sender of n = len(m0) chosen-message 1-of-2 OTs: the
// receiver of instance i learns m_{b_i}[i] (mod 2^l) and nothing about the
// other. Communication: 1 + 2·l bits per instance, two flights per batch.
func (s *Session) SendOT(ctx context.Context, l int, m0, m1 []uint64) error {
	return s.sendOT(ctx, "SendOT", 1, l, m0, m1)
}

// RecvOT is the receiver of SendOT with packed choice bits b.
func (s *Session) RecvOT(ctx context.Context, l int, b, m []uint64) error {
	return s.recvOT(ctx, "RecvOT", 1, l, b, m)
}

// SendOTWide is SendOT with w l-bit words per message (1 + 2·w·l bits per
// instance).
func (s *Session) SendOTWide(ctx context.Context, w, l int, m0, m1 []uint64) error {
	return s.sendOT(ctx, "SendOTWide", w, l, m0, m1)
}

// RecvOTWide is the receiver of SendOTWide.
func (s *Session) RecvOTWide(ctx context.Context, w, l int, b, m []uint64) error {
	return s.recvOT(ctx, "RecvOTWide", w, l, b, m)
}

func (s *Session) sendOT(ctx context.Context, call string, w, l int, m0, m1 []uint64) error {
	n, err := s.args(call, w, l, m0, m1, nil, false)
	if err != nil || n == 0 {
		return err
	}
	hd := batchHeader{op: opOT, l: uint8(l), w: uint32(w), n: uint64(n), ctr: s.out.Used()}
	s.h1 = growU(s.h1, 2*n*w)
	h0, h1 := s.h1[:n*w], s.h1[n*w:]
	if err := s.padsSender(ctx, n, w, l, h0, h1); err != nil {
		return s.fail(call, err)
	}
	if err := s.checkHeader(ctx, hd); err != nil {
		return s.fail(call, err)
	}
	for off := 0; off < n; off += chunk {
		if err := s.order(ctx, off, min(chunk, n-off), w, h0, h1); err != nil {
			return s.fail(call, err)
		}
	}
	for off := 0; off < n; off += chunk {
		nc := min(chunk, n-off)
		s.vals = growU(s.vals, 2*nc*w)
		for i := 0; i < nc; i++ {
			e0 := s.vals[2*i*w : (2*i+1)*w]
			e1 := s.vals[(2*i+1)*w : (2*i+2)*w]
			for k := 0; k < w; k++ {
				j := (off+i)*w + k
				e0[k] = m0[j] ^ h0[j]
				e1[k] = m1[j] ^ h1[j]
			}
		}
		s.pk = growU(s.pk, transport.PackedWords(2*nc*w, l))
		transport.Pack(s.pk, s.vals, l)
		if err := s.conn.SendBits(ctx, s.pk, 2*nc*w*l); err != nil {
			return s.fail(call, err)
		}
	}
	if err := s.conn.Flush(ctx); err != nil {
		return s.fail(call, err)
	}
	return nil
}

func (s *Session) recvOT(ctx context.Context, call string, w, l int, b, m []uint64) error {
	n, err := s.args(call, w, l, m, nil, b, true)
	if err != nil || n == 0 {
		return err
	}
	mask := bitvec.Mask(l)
	if err := s.sendHeader(ctx, batchHeader{op: opOT, l: uint8(l), w: uint32(w), n: uint64(n), ctr: s.in.Used()}); err != nil {
		return s.fail(call, err)
	}
	if err := s.padsReceiver(ctx, n, w, l, b, m); err != nil {
		return s.fail(call, err)
	}
	for off := 0; off < n; off += chunk {
		nc := min(chunk, n-off)
		mc := m[off*w : (off+nc)*w]
		nw := transport.PackedWords(2*nc*w, l)
		s.pk = growU(s.pk, nw)
		s.pk[nw-1] = 0
		if err := s.conn.RecvBits(ctx, s.pk, 2*nc*w*l); err != nil {
			return s.fail(call, err)
		}
		s.vals = growU(s.vals, 2*nc*w)
		transport.Unpack(s.vals, s.pk, l)
		for i := 0; i < nc; i++ {
			bi := int(b[(off+i)>>6] >> ((off + i) & 63) & 1)
			e := s.vals[(2*i+bi)*w : (2*i+bi+1)*w]
			mi := mc[i*w : (i+1)*w]
			for k := range mi {
				mi[k] = (mi[k] ^ e[k]) & mask
			}
		}
	}
	return nil
}
