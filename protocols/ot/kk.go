package ot

import (
	"context"
	"fmt"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

func checkN(call string, N, l int) error {
	if N < 2 || N > MaxN || N&(N-1) != 0 {
		return fmt.Errorf("ot: %s: N=%d is not a power of two in 2..%d", call, N, MaxN)
	}
	if l < 1 || l > 64 {
		return fmt.Errorf("ot: %s: bit width l=%d outside 1..64", call, l)
	}
	return nil
}

// SendOTN is the sender of n = len(msgs)/N 1-out-of-N OTs with l-bit
// messages (Kolesnikov–Kumaresan 2013 with a length-256 Walsh–Hadamard
// code): instance i offers msgs[i·N : (i+1)·N] and the receiver learns
// exactly msgs[i·N + c_i] mod 2^l. N must be a power of two, 2 ≤ N ≤ 256.
// Communication: 2λ + N·l bits per instance.
func (s *Session) SendOTN(ctx context.Context, N, l int, msgs []uint64) error {
	const call = "SendOTN"
	err := checkN(call, N, l)
	if err == nil && len(msgs)%N != 0 {
		err = fmt.Errorf("ot: %s: %d messages is not a multiple of N=%d", call, len(msgs), N)
	}
	if err == nil {
		err = s.usable()
	}
	n := len(msgs) / N
	if err != nil || n == 0 {
		return err
	}
	e := &s.kkSnd
	h := header{op: opOTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: e.ctr}
	dom := s.domain(famKK, s.party)
	corr := growU(&s.sc.corr, transport.PackedWords(n*N, l))
	m := bitvec.Mask(l)
	run := func() error {
		if err := s.checkHeader(ctx, h); err != nil {
			return err
		}
		for off := 0; off < n; off += chunkOTs {
			nc := min(chunkOTs, n-off)
			W, Wt := chunkWords(nc)
			u := growU(&s.sc.u, kkCols*Wt)
			if err := s.conn.RecvUint64s(ctx, u); err != nil {
				return err
			}
			q := growU(&s.sc.t, kkCols*W)
			e.extend(nc, u, q)
			qLo := growB(&s.sc.rows, W/2*128)
			qHi := growB(&s.sc.rowsHi, W/2*128)
			columnsToRows(qLo, q, W, 0, s.tr)
			columnsToRows(qHi, q, W, 128, s.tr)
			for g := 0; g < nc; g += 128 {
				cnt := min(128, nc-g)
				i0 := off + g
				hb := growB(&s.sc.hb, cnt)
				vals := growU(&s.sc.vals, cnt*N)
				ql, qh := qLo[g:g+cnt], qHi[g:g+cnt]
				mi := msgs[i0*N : (i0+cnt)*N]
				tw := prg.Tweak{Lo: h.ctr + uint64(i0), Hi: dom}
				for j := 0; j < N; j++ {
					cs := &s.sh.kkMasked[j]
					s.hash.Hash256Xor(hb, ql, qh, cs[0], cs[1], tw)
					v, mj := vals[j:], mi[j:]
					for i := range hb {
						v[i*N] = (mj[i*N] ^ hb[i][0]) & m
					}
				}
				transport.Pack(corr[i0*N*l/64:], vals, l)
			}
		}
		e.ctr += h.n
		return s.reply(ctx, h.ctr, corr, n, N, l)
	}
	if err := run(); err != nil {
		return s.fail(fmt.Errorf("ot: %s: %w", call, err))
	}
	return nil
}

// RecvOTN is the receiver of n = len(m) 1-out-of-N OTs: with choices c
// (len(c) = n, each c[i] < N) it sets m[i] = msgs[i·N + c[i]] mod 2^l (see
// SendOTN).
func (s *Session) RecvOTN(ctx context.Context, N, l int, c []uint8, m []uint64) error {
	const call = "RecvOTN"
	err := checkN(call, N, l)
	if err == nil && len(c) != len(m) {
		err = fmt.Errorf("ot: %s: len(c)=%d but len(m)=%d", call, len(c), len(m))
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
		err = s.usable()
	}
	n := len(m)
	if err != nil || n == 0 {
		return err
	}
	e := &s.kkRcv
	h := header{op: opOTN, l: uint8(l), w: uint32(N), n: uint64(n), ctr: e.ctr}
	dom := s.domain(famKK, 1-s.party)
	mask := bitvec.Mask(l)
	run := func() error {
		if err := s.sendHeader(ctx, h); err != nil {
			return err
		}
		for off := 0; off < n; off += chunkOTs {
			nc := min(chunkOTs, n-off)
			W, Wt := chunkWords(nc)
			// Code matrix columns (row i is the codeword of c[off+i]).
			cb := growU(&s.sc.cb, kkCols*Wt)
			codeColumns(cb, c[off:off+nc], Wt, growU(&s.sc.tmp, 8*Wt))
			t := growU(&s.sc.t, kkCols*W)
			u := growU(&s.sc.u, kkCols*Wt)
			e.extend(nc, cb, Wt, t, u)
			if err := s.conn.SendUint64s(ctx, u); err != nil {
				return err
			}
			if err := s.conn.Flush(ctx); err != nil {
				return err
			}
			tLo := growB(&s.sc.rows, W/2*128)
			tHi := growB(&s.sc.rowsHi, W/2*128)
			columnsToRows(tLo, t, W, 0, s.tr)
			columnsToRows(tHi, t, W, 128, s.tr)
			for g := 0; g < nc; g += 128 {
				cnt := min(128, nc-g)
				hb := growB(&s.sc.hb, cnt)
				s.hash.Hash256(hb, tLo[g:g+cnt], tHi[g:g+cnt], prg.Tweak{Lo: h.ctr + uint64(off+g), Hi: dom})
				mo := m[off+g : off+g+cnt]
				for i := range mo {
					mo[i] = hb[i][0] & mask
				}
			}
		}
		e.ctr += h.n
		apply := func(off, nc int, packed []uint64) {
			mo := m[off : off+nc]
			for i := range mo {
				mo[i] ^= bitvec.Get(packed, (i*N+int(c[off+i]))*l, l)
			}
		}
		return s.awaitReply(ctx, h.ctr, n, N, l, apply)
	}
	if err := run(); err != nil {
		return s.fail(fmt.Errorf("ot: %s: %w", call, err))
	}
	return nil
}

// codeColumns writes the kkCols columns of the Walsh–Hadamard code matrix
// whose row i is the codeword of c[i]: column j (at cb[j·Wt:], Wt words, bit
// i for instance i) is the parity of c[i] AND j, i.e. the XOR of the bit
// planes of c selected by the bits of j. planes is scratch of 8·Wt words.
// This replaces transposing the codeword rows.
func codeColumns(cb []uint64, c []uint8, Wt int, planes []uint64) {
	clear(planes)
	for w := 0; w < Wt; w++ {
		cw := c[w*64 : min(len(c), w*64+64)]
		for g := 0; g*8 < len(cw); g++ {
			var x uint64
			grp := cw[g*8 : min(len(cw), g*8+8)]
			for b, v := range grp {
				x |= uint64(v) << (8 * b)
			}
			// 8×8 bit transpose: afterwards byte t holds bit t of the
			// eight choices.
			t := (x ^ x>>7) & 0x00aa00aa00aa00aa
			x ^= t ^ t<<7
			t = (x ^ x>>14) & 0x0000cccc0000cccc
			x ^= t ^ t<<14
			t = (x ^ x>>28) & 0x00000000f0f0f0f0
			x ^= t ^ t<<28
			for p := 0; p < 8; p++ {
				planes[p*Wt+w] |= (x >> (8 * p) & 0xff) << (8 * g)
			}
		}
	}
	clear(cb[:Wt])
	for j := 1; j < kkCols; j++ {
		dst := cb[j*Wt : (j+1)*Wt]
		prev := cb[(j&(j-1))*Wt : (j&(j-1))*Wt+Wt]
		pl := planes[bits.TrailingZeros(uint(j))*Wt : bits.TrailingZeros(uint(j))*Wt+Wt]
		for i := range dst {
			dst[i] = prev[i] ^ pl[i]
		}
	}
}
