package ot

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Lambda is the computational security parameter (bits) and the IKNP width.
const Lambda = 128

// kkCols is the KK13 code length (Walsh–Hadamard code, distance 128).
const kkCols = 256

// MaxN is the largest N of a 1-out-of-N OT.
const MaxN = 256

// MaxWidth is the largest number of words per instance in the Wide calls.
const MaxWidth = 1 << 16

const (
	protoVersion = 1
	helloSize    = 16
	headerSize   = 24
)

var helloMagic = [4]byte{'C', 'F', 'O', 'T'}

// Batch kinds, sent in the batch header.
const (
	opROT = 1 + iota
	opCOT
	opOT
	opOTN
	opROTChosen
)

var opNames = map[uint8]string{opROT: "random OT", opCOT: "correlated OT", opOT: "chosen 1-of-2 OT", opOTN: "1-of-N OT",
	opROTChosen: "random OT with the receiver's choice bits"}

// Extension families, part of the hash tweak.
const (
	famIKNP = 1
	famKK   = 2
)

// shared is the base-OT material of a session and its forks (immutable
// after NewSession, except the fork counter).
type shared struct {
	iknpS    []uint64 // 128 bits: my choices as IKNP sender
	iknpKeys []prg.Seed
	iknpK0   []prg.Seed // as IKNP receiver
	iknpK1   []prg.Seed
	kkS      []uint64 // 256 bits
	kkKeys   []prg.Seed
	kkK0     []prg.Seed
	kkK1     []prg.Seed
	code     [MaxN][2]prg.Block // Walsh–Hadamard codewords (lo, hi halves)
	kkMasked [MaxN][2]prg.Block // code[j] ∧ s for the KK sender
	forks    atomic.Uint32
}

// Session is one party's end of an OT session with the peer on one
// connection. See the package documentation.
type Session struct {
	conn   *transport.Conn
	party  int
	stream uint32
	hash   *prg.Hash
	rng    *prg.PRG
	sh     *shared
	tr     func(*[128]prg.Block) // 128×128 bit transpose for this CPU

	snd   extSender // IKNP, this party sends
	rcv   extReceiver
	kkSnd extSender // KK13, this party sends
	kkRcv extReceiver

	err error // sticky: set when the two parties may be out of step
	sc  scratch
}

// scratch holds reusable buffers so batches do not allocate in steady state.
type scratch struct {
	t, u, cb, in, vals, h0, h1, corr, tmp []uint64
	rows, rowsHi, hb, rep                 []prg.Block
}

func growU(b *[]uint64, n int) []uint64 {
	if cap(*b) < n {
		*b = make([]uint64, n)
	}
	return (*b)[:n]
}

func growB(b *[]prg.Block, n int) []prg.Block {
	if cap(*b) < n {
		*b = make([]prg.Block, n)
	}
	return (*b)[:n]
}

// NewSession sets up OT between this party (0 or 1) and the peer at the
// other end of conn: a version/role handshake, base OTs in both directions
// and the KK13 base OTs. The session uses conn exclusively while a call
// runs; the caller keeps ownership (Close it when done).
func NewSession(ctx context.Context, conn *transport.Conn, party int) (*Session, error) {
	if conn == nil {
		return nil, errors.New("ot: NewSession: nil connection")
	}
	if party != 0 && party != 1 {
		return nil, fmt.Errorf("ot: NewSession: party %d, want 0 or 1", party)
	}
	rng, err := prg.NewRandom()
	if err != nil {
		return nil, fmt.Errorf("ot: NewSession: %w", err)
	}
	s := &Session{conn: conn, party: party, hash: prg.NewHash(), rng: rng, tr: pickTranspose()}
	if err := s.hello(ctx, 0); err != nil {
		return nil, err
	}
	base, err := runBaseOTs(ctx, conn, rng, party)
	if err != nil {
		return nil, fmt.Errorf("ot: NewSession: %w", err)
	}
	sh := &shared{iknpS: base.choice, iknpKeys: base.keys, iknpK0: base.k0, iknpK1: base.k1}
	s.sh = sh
	s.snd = newExtSender(sh.iknpS, sh.iknpKeys, 0)
	s.rcv = newExtReceiver(sh.iknpK0, sh.iknpK1, 0)

	// KK13 base OTs: 256 random 128-bit OTs per direction from IKNP. To
	// send 1-of-N OTs a party must be the base-OT receiver, i.e. the IKNP
	// receiver of these random OTs.
	recvBase := func() error {
		c := make([]uint64, kkCols/64)
		m := make([]uint64, 2*kkCols)
		if err := s.RecvROTWide(ctx, 2, 64, c, m); err != nil {
			return err
		}
		sh.kkS, sh.kkKeys = c, seedsOf(m)
		return nil
	}
	sendBase := func() error {
		m0 := make([]uint64, 2*kkCols)
		m1 := make([]uint64, 2*kkCols)
		if err := s.SendROTWide(ctx, 2, 64, m0, m1); err != nil {
			return err
		}
		sh.kkK0, sh.kkK1 = seedsOf(m0), seedsOf(m1)
		return nil
	}
	first, second := sendBase, recvBase
	if party == 1 {
		first, second = recvBase, sendBase
	}
	if err := first(); err != nil {
		return nil, fmt.Errorf("ot: NewSession: KK13 base OTs: %w", err)
	}
	if err := second(); err != nil {
		return nil, fmt.Errorf("ot: NewSession: KK13 base OTs: %w", err)
	}
	for v := 0; v < MaxN; v++ {
		sh.code[v] = hadamard(v)
		sLo := prg.Block{sh.kkS[0], sh.kkS[1]}
		sHi := prg.Block{sh.kkS[2], sh.kkS[3]}
		sh.kkMasked[v] = [2]prg.Block{
			{sh.code[v][0][0] & sLo[0], sh.code[v][0][1] & sLo[1]},
			{sh.code[v][1][0] & sHi[0], sh.code[v][1][1] & sHi[1]},
		}
	}
	s.kkSnd = newExtSender(sh.kkS, sh.kkKeys, 0)
	s.kkRcv = newExtReceiver(sh.kkK0, sh.kkK1, 0)
	return s, nil
}

// Fork returns a new session on conn (a second connection to the same
// peer) that shares this session's base OTs but runs its own OT stream, so
// the two sessions can be used concurrently from different goroutines. No
// base OTs are run; the forks are numbered, and both parties must fork in
// the same order (a handshake on conn checks this).
func (s *Session) Fork(ctx context.Context, conn *transport.Conn) (*Session, error) {
	if conn == nil {
		return nil, errors.New("ot: Fork: nil connection")
	}
	id := s.sh.forks.Add(1)
	rng, err := prg.NewRandom()
	if err != nil {
		return nil, fmt.Errorf("ot: Fork: %w", err)
	}
	f := &Session{conn: conn, party: s.party, stream: id, hash: s.hash, rng: rng, sh: s.sh, tr: s.tr}
	if err := f.hello(ctx, id); err != nil {
		return nil, err
	}
	st := uint64(id)
	f.snd = newExtSender(s.sh.iknpS, s.sh.iknpKeys, st)
	f.rcv = newExtReceiver(s.sh.iknpK0, s.sh.iknpK1, st)
	f.kkSnd = newExtSender(s.sh.kkS, s.sh.kkKeys, st)
	f.kkRcv = newExtReceiver(s.sh.kkK0, s.sh.kkK1, st)
	return f, nil
}

// Party returns this party's index (0 or 1).
func (s *Session) Party() int { return s.party }

// Conn returns the session's connection (for phase labels and statistics).
func (s *Session) Conn() *transport.Conn { return s.conn }

// Err returns the error that made the session unusable, or nil.
func (s *Session) Err() error { return s.err }

// hello exchanges magic, version, party and stream number, and checks that
// the host is little-endian.
func (s *Session) hello(ctx context.Context, stream uint32) error {
	var msg [helloSize]byte
	copy(msg[:4], helloMagic[:])
	msg[4] = protoVersion
	msg[5] = byte(s.party)
	binary.LittleEndian.PutUint32(msg[6:10], stream)
	if !littleEndian() {
		return errors.New("ot: this package needs a little-endian host (words travel in memory order)")
	}
	if err := s.conn.Send(ctx, msg[:]); err != nil {
		return fmt.Errorf("ot: handshake: %w", err)
	}
	var peer [helloSize]byte
	if err := s.conn.Recv(ctx, peer[:]); err != nil {
		return fmt.Errorf("ot: handshake: %w", err)
	}
	switch {
	case [4]byte(peer[:4]) != helloMagic:
		return errors.New("ot: handshake: peer is not an OT session")
	case peer[4] != protoVersion:
		return fmt.Errorf("ot: handshake: peer speaks version %d, want %d", peer[4], protoVersion)
	case int(peer[5]) == s.party:
		return fmt.Errorf("ot: handshake: both parties claim to be party %d", s.party)
	case binary.LittleEndian.Uint32(peer[6:10]) != stream:
		return fmt.Errorf("ot: handshake: peer opened stream %d, this party stream %d (fork order differs)",
			binary.LittleEndian.Uint32(peer[6:10]), stream)
	}
	return nil
}

// littleEndian reports whether this host stores words least significant byte first, the wire
// order of the words that bitvec.Bytes puts on the wire in memory order.
func littleEndian() bool { return binary.NativeEndian.Uint16([]byte{1, 0}) == 1 }

func seedsOf(m []uint64) []prg.Seed {
	out := make([]prg.Seed, len(m)/2)
	for i := range out {
		binary.LittleEndian.PutUint64(out[i][:8], m[2*i])
		binary.LittleEndian.PutUint64(out[i][8:], m[2*i+1])
	}
	return out
}

// hadamard returns the Walsh–Hadamard codeword of v: bit k (0 ≤ k < 256) is
// the parity of v AND k.
func hadamard(v int) [2]prg.Block {
	var w [4]uint64
	for k := 0; k < kkCols; k++ {
		w[k/64] |= uint64(bits.OnesCount(uint(v&k))&1) << (k % 64)
	}
	return [2]prg.Block{{w[0], w[1]}, {w[2], w[3]}}
}

// domain is the tweak's high word for this stream, family and direction
// (sender is the party that sends the OTs); the output block index goes in
// the low 16 bits.
func (s *Session) domain(fam, sender int) uint64 {
	return uint64(s.stream)<<32 | uint64(sender)<<24 | uint64(fam)<<16
}

// usable reports the sticky error, if any.
func (s *Session) usable() error {
	if s.err != nil {
		return fmt.Errorf("ot: session unusable after an earlier failure: %w", s.err)
	}
	return nil
}

// fail records err as the sticky error and returns it.
func (s *Session) fail(err error) error {
	if s.err == nil {
		s.err = err
	}
	return err
}

// header describes a batch; the receiver sends it, the sender checks it.
type header struct {
	op  uint8
	l   uint8
	w   uint32 // words per instance, or N for opOTN
	n   uint64
	ctr uint64
}

func (h header) encode() [headerSize]byte {
	var b [headerSize]byte
	b[0], b[1] = h.op, h.l
	binary.LittleEndian.PutUint32(b[4:], h.w)
	binary.LittleEndian.PutUint64(b[8:], h.n)
	binary.LittleEndian.PutUint64(b[16:], h.ctr)
	return b
}

func decodeHeader(b [headerSize]byte) header {
	return header{op: b[0], l: b[1], w: binary.LittleEndian.Uint32(b[4:]),
		n: binary.LittleEndian.Uint64(b[8:]), ctr: binary.LittleEndian.Uint64(b[16:])}
}

func (h header) String() string {
	name := opNames[h.op]
	if name == "" {
		name = fmt.Sprintf("op %d", h.op)
	}
	if h.op == opOTN {
		return fmt.Sprintf("%s (n=%d, N=%d, l=%d, instance %d)", name, h.n, h.w, h.l, h.ctr)
	}
	return fmt.Sprintf("%s (n=%d, w=%d, l=%d, instance %d)", name, h.n, h.w, h.l, h.ctr)
}

// sendHeader is the receiver's opening message of a batch.
func (s *Session) sendHeader(ctx context.Context, h header) error {
	b := h.encode()
	return s.conn.Send(ctx, b[:])
}

// checkHeader is the sender's check of the receiver's opening message; on a
// mismatch it aborts the connection so the receiver fails at once.
func (s *Session) checkHeader(ctx context.Context, want header) error {
	var b [headerSize]byte
	if err := s.conn.Recv(ctx, b[:]); err != nil {
		return err
	}
	got := decodeHeader(b)
	if got != want {
		msg := fmt.Sprintf("OT sender called %v but the receiver called %v", want, got)
		_ = s.conn.Abort(ctx, msg)
		return errors.New("ot: " + msg)
	}
	return nil
}

// reply sends the sender's answer: an acknowledgement carrying the batch's
// first instance index, then (if v > 0) the packed values, v·l bits per
// instance, in one frame per chunk.
func (s *Session) reply(ctx context.Context, ctr uint64, packed []uint64, n, v, l int) error {
	ack := [1]uint64{ctr}
	if err := s.conn.SendUint64s(ctx, ack[:]); err != nil {
		return err
	}
	if v > 0 {
		b := bitvec.Bytes(packed)
		for off := 0; off < n; off += chunkOTs {
			nc := min(chunkOTs, n-off)
			start := off * v * l / 8
			if err := s.conn.Send(ctx, b[start:start+transport.PackedBytes(nc*v, l)]); err != nil {
				return err
			}
		}
	}
	return s.conn.Flush(ctx)
}

// awaitReply is the receiver's side of reply; apply gets each chunk's
// packed values.
func (s *Session) awaitReply(ctx context.Context, ctr uint64, n, v, l int, apply func(off, nc int, packed []uint64)) error {
	var ack [1]uint64
	if err := s.conn.RecvUint64s(ctx, ack[:]); err != nil {
		return err
	}
	if ack[0] != ctr {
		return fmt.Errorf("ot: sender acknowledged instance %d, want %d", ack[0], ctr)
	}
	if v == 0 {
		return nil
	}
	for off := 0; off < n; off += chunkOTs {
		nc := min(chunkOTs, n-off)
		nw := transport.PackedWords(nc*v, l)
		buf := growU(&s.sc.in, nw)
		if err := s.conn.RecvBits(ctx, buf, nc*v*l); err != nil {
			return err
		}
		apply(off, nc, buf)
	}
	return nil
}

// iknpReceive runs the receiver's half of an IKNP batch of h.n instances
// with packed choice bits b: it sends the header and the extension matrix
// and calls derive for every group of at most 128 instances with their rows
// t_i. It advances the instance counter.
func (s *Session) iknpReceive(ctx context.Context, h header, b []uint64, derive func(i0, cnt int, rows []prg.Block)) error {
	e := &s.rcv
	if err := s.sendHeader(ctx, h); err != nil {
		return err
	}
	n := int(h.n)
	for off := 0; off < n; off += chunkOTs {
		nc := min(chunkOTs, n-off)
		W, Wt := chunkWords(nc)
		t := growU(&s.sc.t, e.cols*W)
		u := growU(&s.sc.u, e.cols*Wt)
		e.extend(nc, b[off/64:], 0, t, u)
		if err := s.conn.SendUint64s(ctx, u); err != nil {
			return err
		}
		if err := s.conn.Flush(ctx); err != nil {
			return err
		}
		rows := growB(&s.sc.rows, W/2*128)
		columnsToRows(rows, t, W, 0, s.tr)
		for g := 0; g < nc; g += 128 {
			derive(off+g, min(128, nc-g), rows[g:g+128])
		}
	}
	e.ctr += h.n
	return nil
}

// iknpSend is the sender's half: it checks the header, receives the
// extension matrix and calls derive with the rows q_i (q_i = t_i ⊕ b_i·s).
func (s *Session) iknpSend(ctx context.Context, h header, derive func(i0, cnt int, q []prg.Block)) error {
	e := &s.snd
	if err := s.checkHeader(ctx, h); err != nil {
		return err
	}
	n := int(h.n)
	for off := 0; off < n; off += chunkOTs {
		nc := min(chunkOTs, n-off)
		W, Wt := chunkWords(nc)
		u := growU(&s.sc.u, e.cols*Wt)
		if err := s.conn.RecvUint64s(ctx, u); err != nil {
			return err
		}
		q := growU(&s.sc.t, e.cols*W)
		e.extend(nc, u, q)
		rows := growB(&s.sc.rows, W/2*128)
		columnsToRows(rows, q, W, 0, s.tr)
		for g := 0; g < nc; g += 128 {
			derive(off+g, min(128, nc-g), rows[g:g+128])
		}
	}
	e.ctr += h.n
	return nil
}

// hashBlocks is the number of 128-bit hash outputs per instance for w
// values of l bits.
func hashBlocks(w, l int) int { return (w*l + 127) / 128 }

// expandHash sets dst (cnt·w words) to the w l-bit values of the hash of
// rows[i] ⊕ d, for i < cnt = len(rows). An instance needs nb = ⌈w·l/128⌉
// hash outputs; its values are cut, l bits at a time, from the
// concatenation of those outputs. Tweaks: with nb = 1, instance index
// t = tweak0+i gives τ = {t, dom}; with nb > 1, output j of instance t gets
// τ = {t·nb + j, dom | nb}, so tweaks never repeat within a stream and
// direction (dom's low 16 bits are otherwise zero).
func (s *Session) expandHash(dst []uint64, rows []prg.Block, d prg.Block, tweak0, dom uint64, w, l int) {
	cnt := len(rows)
	nb := hashBlocks(w, l)
	hb := growB(&s.sc.hb, nb*cnt)
	if nb == 1 {
		s.hash.TCCRXor(hb, rows, d, prg.Tweak{Lo: tweak0, Hi: dom})
	} else {
		rep := growB(&s.sc.rep, nb*cnt)
		for i, r := range rows {
			ri := rep[i*nb : (i+1)*nb]
			for j := range ri {
				ri[j] = r
			}
		}
		s.hash.TCCRXor(hb, rep, d, prg.Tweak{Lo: tweak0 * uint64(nb), Hi: dom | uint64(nb)})
	}
	words := prg.BlockWords(hb)
	switch {
	case w == 1:
		m := bitvec.Mask(l)
		dst = dst[:cnt]
		for i := range dst {
			dst[i] = hb[i][0] & m
		}
	case w*l == 128*nb:
		// The outputs of consecutive instances abut: one unpack.
		transport.Unpack(dst[:cnt*w], words, l)
	default:
		// Pass the rest of the outputs, not just the instance's 2·nb words:
		// Unpack reads only the bits it needs, and a source of at least l
		// words spares it a copy for a partial block.
		for i := 0; i < cnt; i++ {
			transport.Unpack(dst[i*w:(i+1)*w], words[2*nb*i:], l)
		}
	}
}
