package iknp

import (
	"context"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// KK13 (Kolesnikov–Kumaresan 2013) with a length-256 Walsh–Hadamard code: IKNP's native
// 1-out-of-N random OT (ot.OTNCore). The receiver's extension matrix has 256 columns (2λ bits per
// instance); the sender's pad of message v is the 256-bit hash of q_i ⊕ (code(v) ∧ s), the
// receiver's the hash of t_i.

// SendOTNPads receives the KK13 extension of n instances and gives f, for each group of at
// most 128 instances (starting at a multiple of 128) and each v < N, the pads of message v.
func (c *iknpCore) SendOTNPads(ctx context.Context, N, n int, f func(i0, v int, pads []prg.Block)) error {
	e := &c.kkSnd
	dom := c.Domain(c.party, famKK)
	for off := 0; off < n; off += chunkOTs {
		nc := min(chunkOTs, n-off)
		W, Wt := chunkWords(nc)
		u := growU(&c.sc.u, kkCols*Wt)
		if err := c.conn.RecvUint64s(ctx, u); err != nil {
			return err
		}
		q := growU(&c.sc.t, kkCols*W)
		e.extend(nc, u, q)
		qLo := growB(&c.sc.rows, W/2*128)
		qHi := growB(&c.sc.rowsHi, W/2*128)
		columnsToRows(qLo, q, W, 0, c.tr)
		columnsToRows(qHi, q, W, 128, c.tr)
		for g := 0; g < nc; g += 128 {
			cnt := min(128, nc-g)
			hb := growB(&c.sc.hb, cnt)
			ql, qh := qLo[g:g+cnt], qHi[g:g+cnt]
			tw := prg.Tweak{Lo: e.ctr + uint64(off+g), Hi: dom}
			for v := 0; v < N; v++ {
				cs := &c.sh.kkMasked[v]
				c.hash.Hash256Xor(hb, ql, qh, cs[0], cs[1], tw)
				f(off+g, v, hb)
			}
		}
	}
	e.ctr += uint64(n)
	return nil
}

// RecvOTNPads sends the KK13 extension of len(c) instances with choices ch and gives f the pads
// of the chosen messages, in groups of at most 128 instances.
func (c *iknpCore) RecvOTNPads(ctx context.Context, N int, ch []uint8, f func(i0 int, pads []prg.Block)) error {
	e := &c.kkRcv
	n := len(ch)
	dom := c.Domain(1-c.party, famKK)
	for off := 0; off < n; off += chunkOTs {
		nc := min(chunkOTs, n-off)
		W, Wt := chunkWords(nc)
		// Code matrix columns (row i is the codeword of ch[off+i]).
		cb := growU(&c.sc.cb, kkCols*Wt)
		codeColumns(cb, ch[off:off+nc], Wt, growU(&c.sc.tmp, 8*Wt))
		t := growU(&c.sc.t, kkCols*W)
		u := growU(&c.sc.u, kkCols*Wt)
		e.extend(nc, cb, Wt, t, u)
		if err := c.conn.SendUint64s(ctx, u); err != nil {
			return err
		}
		if err := c.conn.Flush(ctx); err != nil {
			return err
		}
		tLo := growB(&c.sc.rows, W/2*128)
		tHi := growB(&c.sc.rowsHi, W/2*128)
		columnsToRows(tLo, t, W, 0, c.tr)
		columnsToRows(tHi, t, W, 128, c.tr)
		for g := 0; g < nc; g += 128 {
			cnt := min(128, nc-g)
			hb := growB(&c.sc.hb, cnt)
			c.hash.Hash256(hb, tLo[g:g+cnt], tHi[g:g+cnt], prg.Tweak{Lo: e.ctr + uint64(off+g), Hi: dom})
			f(off+g, hb)
		}
	}
	e.ctr += uint64(n)
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
