package ot

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// 1-out-of-N OT. On a core with a native extension ([OTNCore], IKNP's KK13) the session frames
// that; on a dealt core ([DealtCore]) it relabels dealt random 1-of-N OTs (dealt.go); on any
// other it derives the OTs from m = log2 N COTs per instance (Naor–Pinkas style,
// with the tweakable hash in place of a PRF). Instance i uses COTs (i, j), j < m, whose
// receiver choice bits are bit j of c_i (natively on a chosen-choice core, else by
// derandomisation: the receiver sends d_ij = bit j of c_i ⊕ r_ij, and d = 0 on a chosen-choice
// core). The sender's key for bit value β at position j is a_ij^β = K_ij ⊕ (d_ij ⊕ β)·Δ (the
// receiver holds a_ij^{c_ij} = M_ij). The pad of message v is
//
//	pad_iv = ⊕_j H(τ_ijv, a_ij^{v_j}),  H(τ, x) = π(π(x) ⊕ τ) ⊕ π(x),
//
// τ_ijv = {(index of COT (i, j) in its stream)·N + v, Domain(PurposeOTN) | m}: the TCCR hash
// of package prg, with a tweak per (COT, v) (m in the domain keeps the tweaks of calls with
// different N apart). The receiver can compute only pad_{i,c_i}: for v ≠ c_i some position has
// v_j ≠ c_ij, whose term hashes M_ij ⊕ Δ. The sender sends e_iv = msg_iv ⊕ pad_iv, N·l bits.
// Cost: 2·N·m fixed-key AES per instance at the sender (on the hash's widest kernel), 2m at
// the receiver (KK13 takes about 2N at each, and 2λ bits more on the wire).

func checkN(call string, N, l int) (int, error) {
	if N < 2 || N > MaxN || N&(N-1) != 0 {
		return 0, fmt.Errorf("ot: %s: N=%d is not a power of two in 2..%d", call, N, MaxN)
	}
	if l < 1 || l > 64 {
		return 0, fmt.Errorf("ot: %s: bit width l=%d outside 1..64", call, l)
	}
	return bits.TrailingZeros(uint(N)), nil
}

// otnGroup is the number of instances whose hashes the sender forms at once.
func otnGroup(N, m int) int { return max(1, (1<<16)/(N*m)) }

// SendOTN is the sender of n = len(msgs)/N 1-out-of-N OTs with l-bit messages: instance i
// offers msgs[i·N : (i+1)·N] and the receiver learns exactly msgs[i·N + c_i] mod 2^l. N must
// be a power of two, 2 ≤ N ≤ 256. Communication: N·l bits per instance from the sender, and
// the receiver's choice: 2λ bits of KK13 extension on IKNP, log2 N derandomisation bits on a
// random-choice core.
func (s *Session) SendOTN(ctx context.Context, N, l int, msgs []uint64) error {
	const call = "SendOTN"
	m, err := checkN(call, N, l)
	if err == nil && len(msgs)%N != 0 {
		err = fmt.Errorf("ot: %s: %d messages is not a multiple of N=%d", call, len(msgs), N)
	}
	if err == nil {
		err = s.usable(call)
	}
	n := len(msgs) / N
	if err != nil || n == 0 {
		return err
	}
	if s.otn != nil {
		if err := s.sendOTNNative(ctx, N, l, n, msgs); err != nil {
			return s.fail(call, err)
		}
		return nil
	}
	if s.dealt != nil {
		err = s.sendOTNDealt(ctx, N, m, l, n, msgs)
	} else {
		err = s.sendOTN(ctx, N, m, l, n, msgs)
	}
	if err != nil {
		return s.fail(call, err)
	}
	return nil
}

// sendOTN is the derived 1-of-N sender. On a random-choice core it must hold the keys of the
// batch until the receiver's bits arrive: a reservoir that holds them all only reserves them
// (carves a range, built as it is hashed); otherwise it keeps a copy (16·m bytes per instance).
func (s *Session) sendOTN(ctx context.Context, N, m, l, n int, msgs []uint64) error {
	h := header{op: opOTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: s.core.Count(true)}
	if err := s.open(ctx, h, false, true); err != nil {
		return err
	}
	total := n * m
	d := growU(&s.sc.bits, bitvec.Words(total)+1)
	clear(d)
	var keys Core
	if r, ok := s.core.(Reservoir); ok && s.chosen == nil {
		if avail, _ := r.Available(); total <= avail {
			var err error
			if keys, err = r.Carve(total, 0); err != nil {
				return err
			}
			fr := s.core.Frame() * m
			for off := 0; off < total; off += fr {
				nc := min(fr, total-off)
				f := growU(&s.sc.flips, bitvec.Words(nc))
				if err := s.conn.RecvBits(ctx, f, nc); err != nil {
					return err
				}
				bitvec.Copy(d, off, f, 0, nc)
			}
		}
	}
	if keys == nil {
		kall := growB(&s.sc.keys, total)
		err := s.sendDraw(ctx, n, m, false, func(off int, k []prg.Block) { copy(kall[off:], k) },
			func(off, nc int, f []uint64) { bitvec.Copy(d, off, f, 0, nc) })
		if err != nil {
			return err
		}
	}
	delta := s.core.Delta()
	mask := bitvec.Mask(l)
	dom := s.core.Domain(s.party, PurposeOTN) | uint64(m)
	ci := otnGroup(N, m)
	vals := func(off, nc int) ([]uint64, error) {
		e := growU(&s.sc.vals, nc*N)
		for g := off; g < off+nc; g += ci {
			cnt := min(ci, off+nc-g)
			// z[q·N + v] = a_q^{v_j} (q = i·m + j), hashed with tweak {(index of COT q)·N + v,
			// domain | m}: consecutive, so one TCCR call.
			z := growB(&s.sc.z, cnt*m*N)
			if keys != nil {
				err := keys.SendCOT(ctx, cnt*m, func(o int, k []prg.Block) { otnKeys(z[o*N:], k, d, g*m+o, m, N, delta) })
				if err != nil {
					return nil, err
				}
			} else {
				otnKeys(z, s.sc.keys[g*m:(g+cnt)*m], d, g*m, m, N, delta)
			}
			s.hash.TCCR(z, z, prg.Tweak{Lo: (h.ctr + uint64(g*m)) * uint64(N), Hi: dom})
			otnPads(e[(g-off)*N:(g-off+cnt)*N], msgs[g*N:(g+cnt)*N], z, m, N, mask)
		}
		return e, nil
	}
	return s.reply(ctx, h.ctr, n, N, l, nil, vals)
}

// otnKeys writes the hash inputs of COTs q0, q0+1, … (keys k, the receiver's bits in d):
// z[q·N + v] = a_q^{v_j}, j = q mod m, with a_q^β = K_q ⊕ (d_q ⊕ β)·Δ.
func otnKeys(z, k []prg.Block, d []uint64, q0, m, N int, delta prg.Block) {
	j := q0 % m
	z = z[:len(k)*N]
	for q, kq := range k {
		g := q0 + q
		bm := -(d[g>>6] >> (g & 63) & 1)
		a0 := prg.Block{kq[0] ^ delta[0]&bm, kq[1] ^ delta[1]&bm}
		a := [2]prg.Block{a0, a0.Xor(delta)}
		zq := z[q*N : (q+1)*N : (q+1)*N]
		for v := range zq {
			zq[v] = a[(v>>j)&1]
		}
		if j++; j == m {
			j = 0
		}
	}
}

// otnPads sets e[i·N + v] = (msgs[i·N + v] ⊕ ⊕_j h[(i·m + j)·N + v]) mod 2^l (low words of the
// hashes h) for the instances of msgs.
func otnPads(e, msgs []uint64, h []prg.Block, m, N int, mask uint64) {
	e = e[:len(msgs)]
	for i := 0; i < len(msgs)/N; i++ {
		ev := e[i*N : (i+1)*N : (i+1)*N]
		copy(ev, msgs[i*N:(i+1)*N])
		hi := h[i*m*N : (i+1)*m*N : (i+1)*m*N]
		for j := 0; j < m; j++ {
			zq := hi[j*N : (j+1)*N : (j+1)*N]
			for v := range ev {
				ev[v] ^= zq[v][0] // only l ≤ 64 bits of the hash are used
			}
		}
		for v := range ev {
			ev[v] &= mask
		}
	}
}

// RecvOTN is the receiver of n = len(out) 1-out-of-N OTs: with choices c (len(c) = n, each
// c[i] < N) it sets out[i] = msgs[i·N + c[i]] mod 2^l (see SendOTN).
func (s *Session) RecvOTN(ctx context.Context, N, l int, c []uint8, out []uint64) error {
	const call = "RecvOTN"
	m, err := checkN(call, N, l)
	if err == nil && len(c) != len(out) {
		err = fmt.Errorf("ot: %s: len(c)=%d but len(m)=%d", call, len(c), len(out))
	}
	if err == nil {
		for i, v := range c {
			if int(v) >= N {
				err = fmt.Errorf("ot: %s: choice c[%d]=%d is not below N=%d", call, i, v, N)
				break
			}
		}
	}
	if err == nil {
		err = s.usable(call)
	}
	n := len(out)
	if err != nil || n == 0 {
		return err
	}
	switch {
	case s.otn != nil:
		err = s.recvOTNNative(ctx, N, l, c, out)
	case s.dealt != nil:
		err = s.recvOTNDealt(ctx, N, m, l, c, out)
	default:
		err = s.recvOTN(ctx, N, m, l, c, out)
	}
	if err != nil {
		return s.fail(call, err)
	}
	return nil
}

// recvOTN is the derived 1-of-N receiver.
func (s *Session) recvOTN(ctx context.Context, N, m, l int, c []uint8, out []uint64) error {
	n := len(out)
	h := header{op: opOTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: s.core.Count(false)}
	if err := s.open(ctx, h, true, false); err != nil {
		return err
	}
	// The choice bits: bit j of c_i is the choice of COT i·m + j.
	cb := growU(&s.sc.cb, bitvec.Words(n*m))
	clear(cb)
	for i, ci := range c {
		for j := 0; j < m; j++ {
			q := i*m + j
			cb[q>>6] |= (uint64(ci) >> j & 1) << (q & 63)
		}
	}
	clear(out)
	dom := s.core.Domain(1-s.party, PurposeOTN) | uint64(m)
	err := s.recvDraw(ctx, n, m, false, cb, func(off int, mb []prg.Block) {
		s.otnRecvPads(out, mb, off, h.ctr, N, m, dom, c)
	})
	if err != nil {
		return err
	}
	return s.awaitOTN(ctx, h.ctr, N, l, c, out, nil)
}

// otnRecvPads XORs into out[i] the hashes of the receiver's COT messages mb, those of COTs
// off, off+1, … of a 1-of-N batch at counter ctr: pad_i = ⊕_j H(τ, M_ij) with
// τ = {(index of COT ij)·N + c_i, domain | m} (the TCCR hash written out, since the tweaks are
// not consecutive).
func (s *Session) otnRecvPads(out []uint64, mb []prg.Block, off int, ctr uint64, N, m int, dom uint64, c []uint8) {
	y := growB(&s.sc.y, len(mb))
	z := growB(&s.sc.z, len(mb))
	s.hash.Permute(y, mb)
	for q, yq := range y {
		g := off + q
		lo := (ctr+uint64(g))*uint64(N) + uint64(c[g/m])
		z[q] = prg.Block{yq[0] ^ lo, yq[1] ^ dom}
	}
	s.hash.Permute(z, z)
	for q := range z {
		out[(off+q)/m] ^= z[q][0] ^ y[q][0]
	}
}

// awaitOTN is the receiver's reply of a 1-of-N batch: out[i] ⊕= e_{i,c_i}, masked to l bits
// (ready as in awaitReply).
func (s *Session) awaitOTN(ctx context.Context, ctr uint64, N, l int, c []uint8, out []uint64, ready func() error) error {
	mask := bitvec.Mask(l)
	return s.awaitReply(ctx, ctr, len(out), N, l, ready, func(off, nc int, pk []uint64) {
		mo := out[off : off+nc]
		for i := range mo {
			mo[i] = (mo[i] ^ bitvec.Get(pk, (i*N+int(c[off+i]))*l, l)) & mask
		}
	})
}

// sendOTNNative is the 1-of-N sender on a core's native extension: the receiver's header and
// extension, then the masked messages, packed as the pads come.
func (s *Session) sendOTNNative(ctx context.Context, N, l, n int, msgs []uint64) error {
	h := header{op: opOTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: s.otn.OTNCount(true)}
	if err := s.open(ctx, h, false, true); err != nil {
		return err
	}
	corr := growU(&s.sc.p0, transport.PackedWords(n*N, l))
	mask := bitvec.Mask(l)
	err := s.otn.SendOTNPads(ctx, N, n, func(i0, v int, pads []prg.Block) {
		cnt := len(pads)
		vals := growU(&s.sc.vals, cnt*N)
		vv, mv := vals[v:], msgs[i0*N+v:]
		for i := range pads {
			vv[i*N] = (mv[i*N] ^ pads[i][0]) & mask
		}
		if v == N-1 {
			transport.Pack(corr[i0*N*l/64:], vals, l)
		}
	})
	if err != nil {
		return err
	}
	return s.reply(ctx, h.ctr, n, N, l, corr, nil)
}

// recvOTNNative is the receiver of sendOTNNative.
func (s *Session) recvOTNNative(ctx context.Context, N, l int, c []uint8, out []uint64) error {
	h := header{op: opOTN, l: uint8(l), w: uint32(N), n: uint64(len(out)), ctr: s.otn.OTNCount(false)}
	if err := s.open(ctx, h, true, false); err != nil {
		return err
	}
	err := s.otn.RecvOTNPads(ctx, N, c, func(i0 int, pads []prg.Block) {
		mo := out[i0 : i0+len(pads)]
		for i := range mo {
			mo[i] = pads[i][0]
		}
	})
	if err != nil {
		return err
	}
	return s.awaitOTN(ctx, h.ctr, N, l, c, out, nil)
}
