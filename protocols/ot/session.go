package ot

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Session is one party's end of an OT session with the peer on one connection: the OT kinds of
// this package derived from a [Core] (IKNP's from package iknp, Ferret's from package ferret).
// See the package documentation. A Session is not safe for concurrent use.
type Session struct {
	core   Core
	chosen ChosenCore // the core, if its receiver chooses its bits
	otn    OTNCore    // the core, if it has a native 1-of-N extension
	dealt  DealtCore  // the core, if a dealer deals its random OTs
	conn   *transport.Conn
	party  int
	hash   *prg.Hash
	rng    *prg.PRG // the receiver's random 1-of-N choices on a native core (made on first use)
	err    error    // sticky: set when the two parties may be out of step
	sc     scratch
}

// scratch holds reusable buffers so batches do not allocate in steady state. Sessions carved
// from one another start with the same buffers: no call keeps their contents while it waits
// for the peer, so sessions interleaved on one goroutine may share them.
type scratch struct {
	p0, p1, vals, pk, bits, flips, cb []uint64
	dm, rc                            []uint64 // dealt messages (sender), random choices (receiver)
	hb, rep, keys, z, y               []prg.Block
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

// New returns the session that derives the OT kinds from core.
func New(core Core) (*Session, error) {
	if core == nil {
		return nil, errors.New("ot: New: nil core")
	}
	if err := core.Err(); err != nil {
		return nil, fmt.Errorf("ot: New: the core is unusable: %w", err)
	}
	s := &Session{core: core, conn: core.Conn(), party: core.Party(), hash: prg.NewHash()}
	s.chosen, _ = core.(ChosenCore)
	s.otn, _ = core.(OTNCore)
	s.dealt, _ = core.(DealtCore)
	return s, nil
}

// Core returns the core the session derives its OTs from.
func (s *Session) Core() Core { return s.core }

// Party returns this party's index (0 or 1).
func (s *Session) Party() int { return s.party }

// Conn returns the session's connection (for phase labels and statistics).
func (s *Session) Conn() *transport.Conn { return s.conn }

// Err returns the error that made the session unusable, or nil.
func (s *Session) Err() error {
	if s.err != nil {
		return s.err
	}
	return s.core.Err()
}

// Delta returns Δ, the global correlation of the block COTs this party sends
// ([Session.SendBlockCOT]). Δ must stay secret; it is exported for protocols (such as silent
// OT) that build on COTs with a global Δ.
func (s *Session) Delta() prg.Block { return s.core.Delta() }

// Fork returns a new session on conn (a second connection to the same peer) that runs its own
// OT stream, so the two sessions can be used concurrently from different goroutines. The core
// must be a [Forker]; both parties must fork in the same order.
func (s *Session) Fork(ctx context.Context, conn *transport.Conn) (*Session, error) {
	if conn == nil {
		return nil, errors.New("ot: Fork: nil connection")
	}
	f, ok := s.core.(Forker)
	if !ok {
		return nil, fmt.Errorf("ot: Fork: a %T cannot fork", s.core)
	}
	c, err := f.Fork(ctx, conn)
	if err != nil {
		return nil, err
	}
	return New(c)
}

// Reservoir returns the session's core as a [Reservoir] (Ferret), or false if it makes its
// COTs on demand.
func (s *Session) Reservoir() (Reservoir, bool) {
	r, ok := s.core.(Reservoir)
	return r, ok
}

// Carve returns a session that draws the next send COTs this party sends and the next recv it
// receives, and moves s past them (see [Reservoir.Carve]); the core must be a Reservoir. A
// carved session never refills: a draw beyond its share fails and makes it unusable. It shares
// s's connection; carved sessions let a caller interleave several batches on it in any order.
func (s *Session) Carve(send, recv int) (*Session, error) {
	if err := s.usable("Carve"); err != nil {
		return nil, err
	}
	r, ok := s.core.(Reservoir)
	if !ok {
		return nil, fmt.Errorf("ot: Carve: a %T is not a reservoir", s.core)
	}
	c, err := r.Carve(send, recv)
	if err != nil {
		return nil, fmt.Errorf("ot: Carve: %w", err)
	}
	d := *s
	d.core = c
	d.chosen, _ = c.(ChosenCore)
	d.otn, _ = c.(OTNCore)
	d.dealt, _ = c.(DealtCore)
	return &d, nil
}

// usable returns an error if the session (or its core) failed earlier.
func (s *Session) usable(call string) error {
	if err := s.Err(); err != nil {
		return fmt.Errorf("ot: %s: session unusable after an earlier failure: %w", call, err)
	}
	return nil
}

// fail records the failure of call (the first only) and returns it.
func (s *Session) fail(call string, err error) error {
	err = fmt.Errorf("ot: %s: %w", call, err)
	if s.err == nil {
		s.err = err
	}
	return err
}

// ---------------------------------------------------------------- arguments

// checkShape validates the common arguments of the 1-of-2 calls and returns the number of
// instances.
func checkShape(call string, w, l, words int) (int, error) {
	if l < 1 || l > 64 {
		return 0, fmt.Errorf("ot: %s: bit width l=%d outside 1..64", call, l)
	}
	if w < 1 || w > MaxWidth {
		return 0, fmt.Errorf("ot: %s: width w=%d outside 1..%d", call, w, MaxWidth)
	}
	if words%w != 0 {
		return 0, fmt.Errorf("ot: %s: %d words is not a multiple of w=%d", call, words, w)
	}
	return words / w, nil
}

// BitWords is the number of words that hold n packed choice bits (bitvec.Words, named here for
// the callers of this package's packed choice-bit API).
func BitWords(n int) int { return bitvec.Words(n) }

// Bit returns choice bit i of the packed vector v (bitvec.Bit).
func Bit(v []uint64, i int) uint64 { return bitvec.Bit(v, i) }

// sendArgs validates the arguments of a sender's call (n instances of w l-bit words in x, and y
// of the same length; xn and yn name them) and that the session is usable, and returns n.
func (s *Session) sendArgs(call string, w, l int, xn, yn string, x, y []uint64) (int, error) {
	n, err := checkShape(call, w, l, len(x))
	if err == nil && len(x) != len(y) {
		err = fmt.Errorf("ot: %s: len(%s)=%d but len(%s)=%d", call, xn, len(x), yn, len(y))
	}
	if err == nil {
		err = s.usable(call)
	}
	return n, err
}

// recvArgs validates the arguments of a receiver's call (n instances of w l-bit words in m,
// n choice bits in b) and that the session is usable, and returns n.
func (s *Session) recvArgs(call string, w, l int, b, m []uint64) (int, error) {
	n, err := checkShape(call, w, l, len(m))
	if err == nil && len(b) < bitvec.Words(n) {
		err = fmt.Errorf("ot: %s: %d choice words cannot hold %d choice bits", call, len(b), n)
	}
	if err == nil {
		err = s.usable(call)
	}
	return n, err
}

// ---------------------------------------------------------------- batch headers

const headerSize = 24

// Batch kinds, sent in the batch header.
const (
	opROT = 1 + iota
	opCOT
	opOT
	opOTN
	opROTChosen
	opBlockCOT
	opRCOT
	opROTN
)

var opNames = map[uint8]string{opROT: "random OT", opCOT: "correlated OT", opOT: "chosen 1-of-2 OT", opOTN: "1-of-N OT",
	opROTChosen: "random OT with the receiver's choice bits", opBlockCOT: "block COT", opRCOT: "correlated OT with random choice bits", opROTN: "random 1-of-N OT"}

// header describes a batch: its kind, l, w (N for 1-of-N), n, and the stream index of its
// first instance. The party that sends the batch's first message sends it; the other checks
// it against its own call and aborts the connection on a mismatch, so a call order or shape
// that differs between the parties fails at once instead of giving wrong outputs.
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
	if h.op == opOTN || h.op == opROTN {
		return fmt.Sprintf("%s (n=%d, N=%d, l=%d, instance %d)", name, h.n, h.w, h.l, h.ctr)
	}
	return fmt.Sprintf("%s (n=%d, w=%d, l=%d, instance %d)", name, h.n, h.w, h.l, h.ctr)
}

// open starts a batch: the party that sends the batch's first message (first) sends h, the
// other receives the peer's header and checks it against h, aborting the connection on a
// mismatch so the peer fails at once. sender says whether this party is the OT sender.
func (s *Session) open(ctx context.Context, h header, first, sender bool) error {
	if first {
		b := h.encode()
		return s.conn.Send(ctx, b[:])
	}
	var b [headerSize]byte
	if err := s.conn.Recv(ctx, b[:]); err != nil {
		return err
	}
	if got := decodeHeader(b); got != h {
		me, peer := "sender", "receiver"
		if !sender {
			me, peer = peer, me
		}
		msg := fmt.Sprintf("OT %s called %v but the %s called %v", me, h, peer, got)
		_ = s.conn.Abort(ctx, msg)
		return errors.New("ot: " + msg)
	}
	return nil
}

// ---------------------------------------------------------------- replies

// reply sends the sender's answer of a batch of n instances: on a chosen-choice core an
// acknowledgement carrying the batch's first instance index (the receiver, whose flight came
// first, then learns in the same call that the header matched), then, if v > 0, the values
// (n·v of them, l bits each, packed) in one frame per Frame instances. They are either
// packed already (packed, all n·v of them) or made a frame at a time by vals(off, nc), which
// returns the nc·v values of the instances from off.
func (s *Session) reply(ctx context.Context, ctr uint64, n, v, l int, packed []uint64, vals func(off, nc int) ([]uint64, error)) error {
	if s.chosen != nil {
		ack := [1]uint64{ctr}
		if err := s.conn.SendUint64s(ctx, ack[:]); err != nil {
			return err
		}
	}
	if v > 0 {
		fr := s.core.Frame()
		for off := 0; off < n; off += fr {
			nc := min(fr, n-off)
			var err error
			if packed != nil {
				b := bitvec.Bytes(packed)
				start := off * v * l / 8
				err = s.conn.Send(ctx, b[start:start+transport.PackedBytes(nc*v, l)])
			} else {
				var d []uint64
				if d, err = vals(off, nc); err != nil {
					return err
				}
				pk := growU(&s.sc.pk, transport.PackedWords(nc*v, l))
				transport.Pack(pk, d, l)
				err = s.conn.SendBits(ctx, pk, nc*v*l)
			}
			if err != nil {
				return err
			}
		}
	}
	return s.conn.Flush(ctx)
}

// awaitReply is the receiver's side of reply: apply gets each frame's values, packed. If ready
// is not nil (a dealt core's wait for the receiver's outputs), it is called once, when the
// first frame is in (so that only the time the dealer takes beyond the peer's reply is spent
// waiting for it), or before returning if no frame comes.
func (s *Session) awaitReply(ctx context.Context, ctr uint64, n, v, l int, ready func() error, apply func(off, nc int, packed []uint64)) (err error) {
	if ready != nil {
		defer func() {
			if ready != nil {
				if rerr := ready(); err == nil {
					err = rerr
				}
			}
		}()
	}
	if s.chosen != nil {
		var ack [1]uint64
		if err := s.conn.RecvUint64s(ctx, ack[:]); err != nil {
			return err
		}
		if ack[0] != ctr {
			return fmt.Errorf("sender acknowledged instance %d, want %d", ack[0], ctr)
		}
	}
	if v == 0 {
		return nil
	}
	fr := s.core.Frame()
	for off := 0; off < n; off += fr {
		nc := min(fr, n-off)
		nw := transport.PackedWords(nc*v, l)
		pk := growU(&s.sc.pk, nw)
		pk[nw-1] = 0
		if err := s.conn.RecvBits(ctx, pk, nc*v*l); err != nil {
			return err
		}
		if r := ready; r != nil {
			ready = nil
			if err := r(); err != nil {
				return err
			}
		}
		apply(off, nc, pk)
	}
	return nil
}

// ---------------------------------------------------------------- draws

// recvDraw is the receiver's draw of the COTs of a batch of n instances of k COTs each: f gets
// the blocks in pieces. With random set, the choice bits are the core's random ones, written
// to b (bits past n·k cleared). Otherwise they are the caller's bits b: natively on a
// chosen-choice core; else the core's random bits r are derandomised — per frame of
// Frame()·k COTs, this party sends d = b ⊕ r (see sendDraw).
func (s *Session) recvDraw(ctx context.Context, n, k int, random bool, b []uint64, f func(off int, m []prg.Block)) error {
	total := n * k
	if !random && s.chosen != nil {
		return s.chosen.RecvChosenCOT(ctx, total, b, f)
	}
	if random {
		err := s.core.RecvCOT(ctx, total, func(off int, m []prg.Block, bits []uint64, bit int) {
			bitvec.Copy(b, off, bits, bit, len(m))
			f(off, m)
		})
		if err == nil && total%64 != 0 {
			b[total/64] &= bitvec.Mask(total % 64)
		}
		return err
	}
	fr := s.core.Frame() * k
	for off := 0; off < total; off += fr {
		nc := min(fr, total-off)
		d := growU(&s.sc.flips, bitvec.Words(nc))
		err := s.core.RecvCOT(ctx, nc, func(o int, m []prg.Block, bits []uint64, bit int) {
			bitvec.Copy(d, o, bits, bit, len(m))
			f(off+o, m)
		})
		if err != nil {
			return err
		}
		for j := range d {
			d[j] ^= b[off/64+j]
		}
		if r := nc % 64; r != 0 {
			d[len(d)-1] &= bitvec.Mask(r) // the caller's bits past n stay private
		}
		if err := s.conn.SendBits(ctx, d, nc); err != nil {
			return err
		}
		if err := s.conn.Flush(ctx); err != nil {
			return err
		}
	}
	return nil
}

// sendDraw is the sender's side of recvDraw: f gets the keys in pieces, and for a batch with
// the receiver's chosen bits on a random-choice core, flip gets each frame's derandomisation
// bits (bit i of d for COT off+i: 1 where the receiver's choice differs from its COT's).
func (s *Session) sendDraw(ctx context.Context, n, k int, random bool, f func(off int, key []prg.Block), flip func(off, nc int, d []uint64)) error {
	total := n * k
	if random || s.chosen != nil {
		return s.core.SendCOT(ctx, total, f)
	}
	fr := s.core.Frame() * k
	for off := 0; off < total; off += fr {
		nc := min(fr, total-off)
		err := s.core.SendCOT(ctx, nc, func(o int, key []prg.Block) { f(off+o, key) })
		if err != nil {
			return err
		}
		d := growU(&s.sc.flips, bitvec.Words(nc))
		if err := s.conn.RecvBits(ctx, d, nc); err != nil {
			return err
		}
		flip(off, nc, d)
	}
	return nil
}

// ---------------------------------------------------------------- hashing

// padChunk is the number of instances hashed at a time, so that the hash outputs stay in the
// L1 cache however long a piece is.
const padChunk = 512

// hashBlocks is the number of 128-bit hash outputs per instance for w values of l bits.
func hashBlocks(w, l int) int { return (w*l + 127) / 128 }

// pads sets dst (len(src)·w words) to the w l-bit values of the hash of src[i] ⊕ d, for the
// instances t = ctr0+i. An instance needs nb = ⌈w·l/128⌉ hash outputs; its values are cut, l
// bits at a time, from the concatenation of those outputs. Tweaks: with nb = 1, τ = {t, dom};
// with nb > 1, output j of instance t gets τ = {t·nb + j, dom | nb}, so tweaks never repeat
// within a stream and direction (dom's low 16 bits are otherwise zero).
func (s *Session) pads(dst []uint64, src []prg.Block, d prg.Block, ctr0, dom uint64, w, l int) {
	for off := 0; off < len(src); off += padChunk {
		cnt := min(padChunk, len(src)-off)
		s.padsChunk(dst[off*w:(off+cnt)*w], src[off:off+cnt], d, ctr0+uint64(off), dom, w, l)
	}
}

func (s *Session) padsChunk(dst []uint64, rows []prg.Block, d prg.Block, tweak0, dom uint64, w, l int) {
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
		// Pass the rest of the outputs, not just the instance's 2·nb words: Unpack reads only
		// the bits it needs, and a source of at least l words spares it a copy for a partial
		// block.
		for i := 0; i < cnt; i++ {
			transport.Unpack(dst[i*w:(i+1)*w], words[2*nb*i:], l)
		}
	}
}

// swapFlipped swaps instance off+i's w words of p0 and p1 where bit i of d is set.
func swapFlipped(p0, p1 []uint64, off, nc, w int, d []uint64) {
	for i := 0; i < nc; i++ {
		if d[i>>6]>>(i&63)&1 == 0 {
			continue
		}
		a, b := p0[(off+i)*w:(off+i+1)*w], p1[(off+i)*w:(off+i+1)*w]
		for k := range a {
			a[k], b[k] = b[k], a[k]
		}
	}
}
