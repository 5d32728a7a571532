package ferret

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

const purposeOTN = 3

// 1-out-of-N OT from m = log2 N COTs per instance (Naor–Pinkas style, with
// the tweakable hash in place of a PRF). Instance i uses COTs (i, j),
// j < m, whose receiver choice bits are derandomised to the bits of c_i:
// the receiver sends d_ij = bit j of c_i ⊕ r_ij, and the sender's key for
// bit value β at position j is a_ij^β = K_ij ⊕ (d_ij ⊕ β)·Δ (the receiver
// holds a_ij^{c_ij} = M_ij). The pad of message v is
//
//	pad_iv = ⊕_j H(τ_ijv, a_ij^{v_j}),  H(τ, x) = π(π(x) ⊕ τ) ⊕ π(x),
//
// τ_ijv = {(index of COT (i, j) in its stream)·N + v, Ferret domain | m}:
// the TCCR hash of package prg, with a tweak per (COT, v) (m in the domain
// keeps the tweaks of calls with different N apart). The receiver can compute
// only pad_{i,c_i}: for v ≠ c_i some position has v_j ≠ c_ij, whose term
// hashes M_ij ⊕ Δ. The sender sends e_iv = msg_iv ⊕ pad_iv, N·l bits.
// Cost: 2·N·m fixed-key AES per instance at the sender (on the hash's
// widest kernel), 2m at the receiver (KK13 takes about 2N at each, and 2λ
// bits more on the wire).

// otnArgs checks N and l and returns m = log2 N.
func otnArgs(call string, N, l int) (int, error) {
	if N < 2 || N > ot.MaxN || N&(N-1) != 0 {
		return 0, fmt.Errorf("ferret: %s: N=%d is not a power of two in 2..%d", call, N, ot.MaxN)
	}
	if l < 1 || l > 64 {
		return 0, fmt.Errorf("ferret: %s: bit width l=%d outside 1..64", call, l)
	}
	return bits.TrailingZeros(uint(N)), nil
}

// otnChunk is the number of instances whose hashes are formed at once.
func otnChunk(N, m int) int { return max(1, (1<<16)/(N*m)) }

// SendOTN is the sender of n = len(msgs)/N 1-out-of-N OTs with l-bit
// messages: instance i offers msgs[i·N : (i+1)·N] and the receiver learns
// exactly msgs[i·N + c_i] mod 2^l. N must be a power of two, 2 ≤ N ≤ 256.
// Communication: log2 N bits from the receiver and N·l bits from the
// sender per instance, two flights per batch (plus refills); it draws
// log2 N COTs per instance before the receiver's bits arrive and hashes
// them after: when the reservoir holds the whole batch it only reserves
// them (they are built as they are hashed), otherwise it keeps a copy of
// their keys (16·log2 N bytes per instance).
func (s *Session) SendOTN(ctx context.Context, N, l int, msgs []uint64) error {
	const call = "SendOTN"
	m, err := otnArgs(call, N, l)
	if err != nil {
		return err
	}
	if len(msgs)%N != 0 {
		return fmt.Errorf("ferret: %s: %d messages is not a multiple of N=%d", call, len(msgs), N)
	}
	if s.err != nil {
		return fmt.Errorf("ferret: %s: session unusable after an earlier failure: %w", call, s.err)
	}
	n := len(msgs) / N
	if n == 0 {
		return nil
	}
	c := s.out
	ctr := c.Used()
	// The keys: drawn now (a refill must happen before the receiver's bits
	// are read: the receiver waits for it before it sends them), but when
	// the reservoir holds them all, only reserved now and built unit by
	// unit as phase 2 hashes them (no copy of 16·m bytes per instance).
	var keys *COT
	if n*m <= c.Available() {
		keys = c.carve(n * m)
	} else {
		s.kall = grow(s.kall, n*m)
		if err := c.Send(ctx, s.kall); err != nil {
			return s.fail(call, err)
		}
	}
	if err := s.checkHeader(ctx, batchHeader{op: opOTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: ctr}); err != nil {
		return s.fail(call, err)
	}
	// The receiver's derandomisation bits, one frame per chunk.
	d := growU(s.dall, bitvec.Words(n*m)+1)
	s.dall = d
	for off := 0; off < n; off += chunk {
		nc := min(chunk, n-off)
		s.bits = growU(s.bits, bitvec.Words(nc*m))
		if err := s.conn.RecvBits(ctx, s.bits, nc*m); err != nil {
			return s.fail(call, err)
		}
		bitvec.Copy(d, off*m, s.bits, 0, nc*m)
	}
	delta := c.delta
	mask := bitvec.Mask(l)
	ci := otnChunk(N, m)
	dom := c.domain(purposeOTN, m)
	for off := 0; off < n; off += ci {
		nc := min(ci, n-off)
		// z[q·N + v] = a_q^{v_j} (q = i·m + j), hashed with tweak
		// {(index of COT q)·N + v, domain | m}: consecutive, so one TCCR call.
		s.z = grow(s.z, nc*m*N)
		for q0 := 0; q0 < nc*m; {
			var k []prg.Block
			if keys != nil {
				v, err := keys.view(ctx, nc*m-q0, nc*m-q0)
				if err != nil {
					return s.fail(call, err)
				}
				k = v.k
			} else {
				k = s.kall[off*m+q0 : (off+nc)*m]
			}
			otnKeys(s.z[q0*N:], k, d, off*m+q0, m, N, delta)
			q0 += len(k)
		}
		s.hash.TCCR(s.z, s.z, prg.Tweak{Lo: (ctr + uint64(off*m)) * uint64(N), Hi: dom})
		s.vals = growU(s.vals, nc*N)
		otnPads(s.vals, msgs[off*N:(off+nc)*N], s.z, m, N, mask)
		s.pk = growU(s.pk, transport.PackedWords(nc*N, l))
		transport.Pack(s.pk, s.vals, l)
		if err := s.conn.SendBits(ctx, s.pk, nc*N*l); err != nil {
			return s.fail(call, err)
		}
	}
	if err := s.conn.Flush(ctx); err != nil {
		return s.fail(call, err)
	}
	return nil
}

// otnKeys writes the hash inputs of COTs q0, q0+1, … (keys k, the
// receiver's bits in d): z[q·N + v] = a_q^{v_j}, j = q mod m, with a_q^β =
// K_q ⊕ (d_q ⊕ β)·Δ.
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

// otnPads sets e[i·N + v] = (msgs[i·N + v] ⊕ ⊕_j h[(i·m + j)·N + v]) mod
// 2^l (low words of the hashes h) for the instances of msgs.
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

// RecvOTN is the receiver of n = len(out) 1-out-of-N OTs: with choices c
// (len(c) = n, each c[i] < N) it sets out[i] = msgs[i·N + c[i]] mod 2^l
// (see SendOTN).
func (s *Session) RecvOTN(ctx context.Context, N, l int, c []uint8, out []uint64) error {
	const call = "RecvOTN"
	m, err := otnArgs(call, N, l)
	if err != nil {
		return err
	}
	if len(c) != len(out) {
		return fmt.Errorf("ferret: %s: %d choices for %d outputs", call, len(c), len(out))
	}
	for i, v := range c {
		if int(v) >= N {
			return fmt.Errorf("ferret: %s: choice c[%d]=%d not below N=%d", call, i, v, N)
		}
	}
	if s.err != nil {
		return fmt.Errorf("ferret: %s: session unusable after an earlier failure: %w", call, s.err)
	}
	n := len(out)
	if n == 0 {
		return nil
	}
	cs := s.in
	mask := bitvec.Mask(l)
	dom := cs.domain(purposeOTN, m)
	if err := s.sendHeader(ctx, batchHeader{op: opOTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: cs.Used()}); err != nil {
		return s.fail(call, err)
	}
	for off := 0; off < n; off += chunk {
		nc := min(chunk, n-off)
		ctr := cs.Used()
		s.k = grow(s.k, nc*m)
		s.bits = growU(s.bits, bitvec.Words(nc*m))
		if err := cs.Recv(ctx, s.bits, s.k); err != nil {
			return s.fail(call, err)
		}
		for i := 0; i < nc; i++ {
			ci := uint64(c[off+i])
			for j := 0; j < m; j++ {
				q := i*m + j
				s.bits[q>>6] ^= (ci >> j & 1) << (q & 63)
			}
		}
		if err := s.conn.SendBits(ctx, s.bits, nc*m); err != nil {
			return s.fail(call, err)
		}
		if err := s.conn.Flush(ctx); err != nil {
			return s.fail(call, err)
		}
		// pad_i = ⊕_j H(τ, M_ij), τ = {(index of COT ij)·N + c_i, domain | m}:
		// the TCCR hash written out, since the tweaks are not consecutive.
		s.y = grow(s.y, nc*m)
		s.hash.Permute(s.y, s.k)
		s.z = grow(s.z, nc*m)
		for q, y := range s.y {
			lo := (ctr+uint64(q))*uint64(N) + uint64(c[off+q/m])
			s.z[q] = prg.Block{y[0] ^ lo, y[1] ^ dom}
		}
		s.hash.Permute(s.z, s.z)
		for i := 0; i < nc; i++ {
			var p uint64
			for j := 0; j < m; j++ {
				p ^= s.z[i*m+j][0] ^ s.y[i*m+j][0]
			}
			out[off+i] = p
		}
	}
	ci := otnChunk(N, m)
	for off := 0; off < n; off += ci {
		nc := min(ci, n-off)
		nw := transport.PackedWords(nc*N, l)
		s.pk = growU(s.pk, nw)
		s.pk[nw-1] = 0
		if err := s.conn.RecvBits(ctx, s.pk, nc*N*l); err != nil {
			return s.fail(call, err)
		}
		s.vals = growU(s.vals, nc*N)
		transport.Unpack(s.vals, s.pk, l)
		for i := 0; i < nc; i++ {
			out[off+i] = (out[off+i] ^ s.vals[i*N+int(c[off+i])]) & mask
		}
	}
	return nil
}
