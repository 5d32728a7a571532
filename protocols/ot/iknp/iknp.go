package iknp

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"sync/atomic"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// kkCols is the KK13 code length (Walsh–Hadamard code, distance 128).
const kkCols = 256

const (
	protoVersion = 1
	helloSize    = 16
)

var helloMagic = [4]byte{'C', 'F', 'O', 'T'}

// famKK is KK13's purpose in the hash tweak (next to ot.PurposePads and ot.PurposeOTN).
const famKK = 2

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
	code     [ot.MaxN][2]prg.Block // Walsh–Hadamard codewords (lo, hi halves)
	kkMasked [ot.MaxN][2]prg.Block // code[j] ∧ s for the KK sender
	forks    atomic.Uint32
}

// iknpCore is the IKNP source: block COTs with Δ = the IKNP sender's secret s, the receiver
// choosing its bits in the extension matrix ([ot.ChosenCore]), and KK13 1-out-of-N OT
// ([ot.OTNCore]). One stream per connection; forks share the base OTs ([ot.Forker]).
type iknpCore struct {
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

	sc iknpScratch
}

// iknpScratch holds the extension's reusable buffers.
type iknpScratch struct {
	t, u, cb, tmp, bits []uint64
	rows, rowsHi, hb    []prg.Block
}

// NewSession sets up IKNP OT between this party (0 or 1) and the peer at the
// other end of conn: a version/role handshake, base OTs in both directions
// and the KK13 base OTs. The session uses conn exclusively while a call
// runs; the caller keeps ownership (Close it when done).
func NewSession(ctx context.Context, conn *transport.Conn, party int) (*ot.Session, error) {
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
	c := &iknpCore{conn: conn, party: party, hash: prg.NewHash(), rng: rng, tr: pickTranspose()}
	if err := c.hello(ctx, 0); err != nil {
		return nil, err
	}
	base, err := runBaseOTs(ctx, conn, rng, party)
	if err != nil {
		return nil, fmt.Errorf("ot: NewSession: %w", err)
	}
	sh := &shared{iknpS: base.choice, iknpKeys: base.keys, iknpK0: base.k0, iknpK1: base.k1}
	c.sh = sh
	c.snd = newExtSender(sh.iknpS, sh.iknpKeys, 0)
	c.rcv = newExtReceiver(sh.iknpK0, sh.iknpK1, 0)
	s, err := ot.New(c)
	if err != nil {
		return nil, err
	}

	// KK13 base OTs: 256 random 128-bit OTs per direction from IKNP. To
	// send 1-of-N OTs a party must be the base-OT receiver, i.e. the IKNP
	// receiver of these random OTs.
	recvBase := func() error {
		b := make([]uint64, kkCols/64)
		m := make([]uint64, 2*kkCols)
		if err := s.RecvROTWide(ctx, 2, 64, b, m); err != nil {
			return err
		}
		sh.kkS, sh.kkKeys = b, seedsOf(m)
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
	for v := 0; v < ot.MaxN; v++ {
		sh.code[v] = hadamard(v)
		sLo := prg.Block{sh.kkS[0], sh.kkS[1]}
		sHi := prg.Block{sh.kkS[2], sh.kkS[3]}
		sh.kkMasked[v] = [2]prg.Block{
			{sh.code[v][0][0] & sLo[0], sh.code[v][0][1] & sLo[1]},
			{sh.code[v][1][0] & sHi[0], sh.code[v][1][1] & sHi[1]},
		}
	}
	c.kkSnd = newExtSender(sh.kkS, sh.kkKeys, 0)
	c.kkRcv = newExtReceiver(sh.kkK0, sh.kkK1, 0)
	return s, nil
}

// Fork returns a new IKNP core on conn (a second connection to the same
// peer) that shares this core's base OTs but runs its own OT stream, so
// sessions on the two can be used concurrently from different goroutines. No
// base OTs are run; the forks are numbered, and both parties must fork in
// the same order (a handshake on conn checks this).
func (c *iknpCore) Fork(ctx context.Context, conn *transport.Conn) (ot.Core, error) {
	id := c.sh.forks.Add(1)
	rng, err := prg.NewRandom()
	if err != nil {
		return nil, fmt.Errorf("ot: Fork: %w", err)
	}
	f := &iknpCore{conn: conn, party: c.party, stream: id, hash: c.hash, rng: rng, sh: c.sh, tr: c.tr}
	if err := f.hello(ctx, id); err != nil {
		return nil, err
	}
	st := uint64(id)
	f.snd = newExtSender(c.sh.iknpS, c.sh.iknpKeys, st)
	f.rcv = newExtReceiver(c.sh.iknpK0, c.sh.iknpK1, st)
	f.kkSnd = newExtSender(c.sh.kkS, c.sh.kkKeys, st)
	f.kkRcv = newExtReceiver(c.sh.kkK0, c.sh.kkK1, st)
	return f, nil
}

func (c *iknpCore) Party() int            { return c.party }
func (c *iknpCore) Conn() *transport.Conn { return c.conn }

// Err is nil: a failure in the middle of a batch is the session's to record.
func (c *iknpCore) Err() error { return nil }

// Delta is the 128-bit secret of this party's IKNP sender. It is the same for the session and
// all its forks, and its low bit is always 1 (so a receiver's block k[i] ⊕ b_i·Δ has low bit
// b_i wherever the sender's k[i] has it clear).
func (c *iknpCore) Delta() prg.Block { return prg.Block{c.snd.s[0], c.snd.s[1]} }

func (c *iknpCore) Count(send bool) uint64 {
	if send {
		return c.snd.ctr
	}
	return c.rcv.ctr
}

func (c *iknpCore) OTNCount(send bool) uint64 {
	if send {
		return c.kkSnd.ctr
	}
	return c.kkRcv.ctr
}

// Domain is the tweak's high word for this stream, purpose and direction (sender is the party
// that sends the OTs): stream<<32 | sender<<24 | purpose<<16. ot.PurposePads is the IKNP family
// of the hashes of the 1-of-2 kinds; famKK (2) is KK13's.
func (c *iknpCore) Domain(sender int, purpose uint8) uint64 {
	return uint64(c.stream)<<32 | uint64(sender)<<24 | uint64(purpose)<<16
}

// Frame is the number of instances per extension-matrix frame.
func (c *iknpCore) Frame() int { return chunkOTs }

// hello exchanges magic, version, party and stream number, and checks that
// the host is little-endian.
func (c *iknpCore) hello(ctx context.Context, stream uint32) error {
	var msg [helloSize]byte
	copy(msg[:4], helloMagic[:])
	msg[4] = protoVersion
	msg[5] = byte(c.party)
	binary.LittleEndian.PutUint32(msg[6:10], stream)
	if !littleEndian() {
		return errors.New("ot: this package needs a little-endian host (words travel in memory order)")
	}
	if err := c.conn.Send(ctx, msg[:]); err != nil {
		return fmt.Errorf("ot: handshake: %w", err)
	}
	var peer [helloSize]byte
	if err := c.conn.Recv(ctx, peer[:]); err != nil {
		return fmt.Errorf("ot: handshake: %w", err)
	}
	switch {
	case [4]byte(peer[:4]) != helloMagic:
		return errors.New("ot: handshake: peer is not an OT session")
	case peer[4] != protoVersion:
		return fmt.Errorf("ot: handshake: peer speaks version %d, want %d", peer[4], protoVersion)
	case int(peer[5]) == c.party:
		return fmt.Errorf("ot: handshake: both parties claim to be party %d", c.party)
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

// RecvChosenCOT is the IKNP receiver's extension of n COTs with choice bits b: it sends the
// extension matrix, one frame per chunk, and gives f the rows t_i of each chunk.
func (c *iknpCore) RecvChosenCOT(ctx context.Context, n int, b []uint64, f func(off int, m []prg.Block)) error {
	e := &c.rcv
	for off := 0; off < n; off += chunkOTs {
		nc := min(chunkOTs, n-off)
		W, Wt := chunkWords(nc)
		t := growU(&c.sc.t, e.cols*W)
		u := growU(&c.sc.u, e.cols*Wt)
		e.extend(nc, b[off/64:], 0, t, u)
		if err := c.conn.SendUint64s(ctx, u); err != nil {
			return err
		}
		if err := c.conn.Flush(ctx); err != nil {
			return err
		}
		rows := growB(&c.sc.rows, W/2*128)
		columnsToRows(rows, t, W, 0, c.tr)
		f(off, rows[:nc])
	}
	e.ctr += uint64(n)
	return nil
}

// RecvCOT is RecvChosenCOT with random choice bits.
func (c *iknpCore) RecvCOT(ctx context.Context, n int, f func(off int, m []prg.Block, bits []uint64, bit int)) error {
	b := growU(&c.sc.bits, bitvec.Words(n))
	c.rng.Uint64s(b)
	return c.RecvChosenCOT(ctx, n, b, func(off int, m []prg.Block) { f(off, m, b, off) })
}

// SendCOT is the IKNP sender's side: it receives the extension matrix and gives f the rows
// q_i = t_i ⊕ b_i·s of each chunk.
func (c *iknpCore) SendCOT(ctx context.Context, n int, f func(off int, k []prg.Block)) error {
	e := &c.snd
	for off := 0; off < n; off += chunkOTs {
		nc := min(chunkOTs, n-off)
		W, Wt := chunkWords(nc)
		u := growU(&c.sc.u, e.cols*Wt)
		if err := c.conn.RecvUint64s(ctx, u); err != nil {
			return err
		}
		q := growU(&c.sc.t, e.cols*W)
		e.extend(nc, u, q)
		rows := growB(&c.sc.rows, W/2*128)
		columnsToRows(rows, q, W, 0, c.tr)
		f(off, rows[:nc])
	}
	e.ctr += uint64(n)
	return nil
}
