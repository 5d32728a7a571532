package ot

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// The derivation from dealt random OTs ([DealtCore]). A dealt batch gives the sender N random
// messages per instance (w l-bit words each) and the receiver a random choice r_i < N with
// message r_i; it replaces the COT draw and the hashing of the generic derivation, and
// everything else stays as on a random-choice core:
//
//   - random choices (ROT, RCOT): the receiver's bits are r_i; nothing more.
//   - chosen choices (COT, OT, ROTChosen, 1-of-N): the receiver sends d_i = c_i ⊕ r_i (log2 N
//     bits per instance, in frames of Frame instances, as the derandomisation bits of the
//     generic derivation) and the sender relabels its messages: message v becomes the dealt
//     message v ⊕ d_i, so the receiver's message r_i is message c_i.
//   - the sender's reply is that of the generic derivation, with the relabelled dealt messages
//     as pads: COT r + x − q, OT m_v ⊕ pad_v, 1-of-N e_v = msg_v ⊕ pad_{v ⊕ d_i}.
//
// The receiver sends its derandomisation bits before it waits for the dealer's reply, and waits
// for it only when the sender's reply is in (awaitReply), so the dealer's round trip overlaps the
// parties' own and only what it takes beyond that counts as a wait on the dealer.

// count is the stream index of the next instance of a derived 1-of-2 or 1-of-N batch this party
// draws as sender (send) or receiver, for the batch header.
func (s *Session) count(send bool) uint64 {
	if s.dealt != nil {
		return s.dealt.DealtCount(send)
	}
	return s.core.Count(send)
}

// sendDealt2 is the sender's draw of a 1-of-2 batch on a dealt core: n instances of w l-bit
// words, messages 0 into p0 and 1 into p1, relabelled by the receiver's derandomisation bits
// unless the choices are random.
func (s *Session) sendDealt2(ctx context.Context, n, w, l int, random bool, p0, p1 []uint64) error {
	dm := growU(&s.sc.dm, 2*n*w)
	if err := s.dealt.SendDealt(ctx, 2, w, l, dm); err != nil {
		return err
	}
	if w == 1 {
		for i := 0; i < n; i++ {
			p0[i], p1[i] = dm[2*i], dm[2*i+1]
		}
	} else {
		for i := 0; i < n; i++ {
			copy(p0[i*w:(i+1)*w], dm[2*i*w:(2*i+1)*w])
			copy(p1[i*w:(i+1)*w], dm[(2*i+1)*w:(2*i+2)*w])
		}
	}
	if random {
		return nil
	}
	return s.recvFlips(ctx, n, 1, func(off, nc int, d []uint64) { swapFlipped(p0, p1, off, nc, w, d) })
}

// recvFlips receives the derandomisation bits of n instances of k bits each, one frame per
// Frame() instances (what sendDraw receives on a random-choice core): flip gets bit q of the
// batch at bit q−off of d.
func (s *Session) recvFlips(ctx context.Context, n, k int, flip func(off, nc int, d []uint64)) error {
	total, fr := n*k, s.core.Frame()*k
	for off := 0; off < total; off += fr {
		nc := min(fr, total-off)
		d := growU(&s.sc.flips, bitvec.Words(nc))
		if err := s.conn.RecvBits(ctx, d, nc); err != nil {
			return err
		}
		flip(off, nc, d)
	}
	return nil
}

// recvDealt is the receiver's draw of a batch of n dealt 1-of-N OTs (k = log2 N choice bits per
// instance, w l-bit words per message) into out. With random set, the choices are the dealt ones,
// written to b (bits past n·k cleared); otherwise b holds the wanted choices (k bits per
// instance, packed) and this party sends d = b ⊕ r, one frame per Frame() instances. It returns
// the wait for out, which the caller must call once (awaitReply calls it when the peer's reply
// is in); on an error it has waited already.
func (s *Session) recvDealt(ctx context.Context, N, n, w, l, k int, random bool, b, out []uint64) (func() error, error) {
	total := n * k
	nw := bitvec.Words(total)
	rc := growU(&s.sc.rc, nw)
	wait, err := s.dealt.RecvDealt(ctx, N, w, l, rc, out)
	if err != nil {
		return nil, err
	}
	if random {
		copy(b[:nw], rc)
		bitvec.ClearTail(b[:nw], total)
	} else {
		fr := s.core.Frame() * k // a multiple of 64
		for off := 0; off < total && err == nil; off += fr {
			nc := min(fr, total-off)
			d := growU(&s.sc.flips, bitvec.Words(nc))
			for j := range d {
				d[j] = rc[off/64+j] ^ b[off/64+j]
			}
			bitvec.ClearTail(d, nc) // the caller's bits past n stay private
			if err = s.conn.SendBits(ctx, d, nc); err == nil {
				err = s.conn.Flush(ctx)
			}
		}
	}
	if err != nil {
		_ = wait() // the batch failed already; the fetch must end before out is given back
		return nil, err
	}
	return wait, nil
}

// sendOTNDealt is the 1-of-N sender on a dealt core: the receiver's header and derandomisation
// bits (log2 N per instance), then e_iv = msg_iv ⊕ R_{i, v⊕d_i} for the dealt messages R.
func (s *Session) sendOTNDealt(ctx context.Context, N, m, l, n int, msgs []uint64) error {
	h := header{op: opOTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: s.dealt.DealtCount(true)}
	if err := s.open(ctx, h, false, true); err != nil {
		return err
	}
	if N*l <= 64 {
		return s.sendOTNDealtWord(ctx, h.ctr, N, m, l, n, msgs, nil)
	}
	R := growU(&s.sc.dm, n*N)
	if err := s.dealt.SendDealt(ctx, N, 1, l, R); err != nil {
		return err
	}
	d := growU(&s.sc.bits, bitvec.Words(n*m)+1) // Get may read the word past the last bit
	clear(d)
	if err := s.recvFlips(ctx, n, m, func(off, nc int, f []uint64) { bitvec.Copy(d, off, f, 0, nc) }); err != nil {
		return err
	}
	mask := bitvec.Mask(l)
	vals := func(off, nc int) ([]uint64, error) {
		e := growU(&s.sc.vals, nc*N)
		for i := 0; i < nc; i++ {
			g := off + i
			di := int(bitvec.Get(d, g*m, m))
			mi, ri, ei := msgs[g*N:(g+1)*N], R[g*N:(g+1)*N], e[i*N:(i+1)*N]
			for v := range ei {
				ei[v] = (mi[v] ^ ri[v^di]) & mask
			}
		}
		return e, nil
	}
	return s.reply(ctx, h.ctr, n, N, l, nil, vals)
}

// sendOTNDealtWord is sendOTNDealt for messages of N·l ≤ 64 bits in all, where an instance's
// dealt messages are one word of the dealer's stream (message v at bits [v·l, (v+1)·l)): the
// relabelling by d_i is a butterfly on that word (for each set bit j of d_i, swap the neighbouring
// blocks of 2^j·l bits), and the reply is the packed messages ⊕ the relabelled word, XORed
// straight into the packed reply. Same values and bytes as the general path, without unpacking
// the dealt messages or packing the reply. The sender's messages are msgs (N values per
// instance) or, with msgs nil, words (instance i's packed in words[i], as SendOTNWords takes
// them).
func (s *Session) sendOTNDealtWord(ctx context.Context, ctr uint64, N, m, l, n int, msgs, words []uint64) error {
	R := growU(&s.sc.dm, n)
	if err := s.dealt.SendDealtRaw(ctx, N, 1, l, R); err != nil {
		return err
	}
	B := N * l
	out := growU(&s.sc.vals, bitvec.Words(n*B)+1)
	mask := bitvec.Mask(l)
	keep := ^uint64(0) // the B bits of an instance
	if B < 64 {
		keep = 1<<B - 1
	}
	// lo[j]: the low halves of the pairs of 2^j·l-bit blocks that bit j of d_i swaps.
	var lo [8]uint64
	for j := 0; j < m; j++ {
		for v := 0; v < N; v++ {
			if v>>j&1 == 0 {
				lo[j] |= mask << (v * l)
			}
		}
	}
	flip := func(off, nc int, f []uint64) {
		g0, cnt := off/m, nc/m // a frame holds whole instances, and starts on a word of out
		fo := out[g0*B/64:]
		if msgs != nil {
			transport.Pack(fo, msgs[g0*N:(g0+cnt)*N], l)
			fo[transport.PackedWords(cnt*N, l)] = 0
		} else {
			clear(fo[:transport.PackedWords(cnt*N, l)+1])
		}
		for i := 0; i < cnt; i++ {
			p := i * m
			di := f[p>>6] >> (p & 63)
			if (p&63)+m > 64 {
				di |= f[p>>6+1] << (64 - p&63)
			}
			x := R[g0+i] & keep
			for j := 0; j < m; j++ {
				// Swap the block pairs of bit j when it is set (a delta swap, without a branch).
				sh := l << j
				t := ((x >> sh) ^ x) & lo[j] & -(di >> j & 1)
				x ^= t | t<<sh
			}
			if msgs == nil {
				x ^= words[g0+i] & keep
			}
			q := i * B
			fo[q>>6] ^= x << (q & 63)
			if (q&63)+B > 64 {
				fo[q>>6+1] ^= x >> (64 - q&63)
			}
		}
	}
	if err := s.recvFlips(ctx, n, m, flip); err != nil {
		return err
	}
	return s.reply(ctx, ctr, n, N, l, out, nil)
}

// PacksOTN reports whether SendOTNWords forms the reply on the packed words themselves for 1-of-N
// OTs of l-bit messages (a dealt core and N·l ≤ 64); otherwise it unpacks them for SendOTN, and
// a caller that has the messages unpacked should call SendOTN.
func (s *Session) PacksOTN(N, l int) bool {
	return s.dealt != nil && s.otn == nil && N*l <= 64
}

// SendOTNWords is SendOTN with instance i's N messages packed in words[i] (N·l ≤ 64; message v
// at bits [v·l, (v+1)·l), bits past N·l ignored): the same OTs, the same bytes.
func (s *Session) SendOTNWords(ctx context.Context, N, l int, words []uint64) error {
	const call = "SendOTNWords"
	m, err := checkN(call, N, l)
	if err == nil && N*l > 64 {
		err = fmt.Errorf("ot: %s: N·l = %d·%d bits do not fit one word", call, N, l)
	}
	if err == nil {
		err = s.usable(call)
	}
	n := len(words)
	if err != nil || n == 0 {
		return err
	}
	if !s.PacksOTN(N, l) {
		msgs := make([]uint64, n*N)
		mask := bitvec.Mask(l)
		for i, x := range words {
			for v := range N {
				msgs[i*N+v] = x >> (v * l) & mask
			}
		}
		return s.SendOTN(ctx, N, l, msgs)
	}
	h := header{op: opOTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: s.dealt.DealtCount(true)}
	if err = s.open(ctx, h, false, true); err == nil {
		err = s.sendOTNDealtWord(ctx, h.ctr, N, m, l, n, nil, words)
	}
	if err != nil {
		return s.fail(call, err)
	}
	return nil
}

// recvOTNDealt is the receiver of sendOTNDealt: choices c, outputs out.
func (s *Session) recvOTNDealt(ctx context.Context, N, m, l int, c []uint8, out []uint64) error {
	n := len(out)
	h := header{op: opOTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: s.dealt.DealtCount(false)}
	if err := s.open(ctx, h, true, false); err != nil {
		return err
	}
	// The choices packed, m bits per instance (bit j of c_i at bit i·m + j).
	cb := growU(&s.sc.cb, bitvec.Words(n*m))
	clear(cb)
	for i, ci := range c {
		q := i * m
		cb[q>>6] |= uint64(ci) << (q & 63)
		if (q&63)+m > 64 {
			cb[q>>6+1] |= uint64(ci) >> (64 - q&63)
		}
	}
	ready, err := s.recvDealt(ctx, N, n, 1, l, m, false, cb, out)
	if err != nil {
		return err
	}
	return s.awaitOTN(ctx, h.ctr, N, l, c, out, ready)
}
