package iknp

import (
	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// chunkOTs is the number of instances per extension-matrix frame. Frames of
// this size let the sender work on one chunk while the receiver computes the
// next, and keep the column buffers in cache.
const chunkOTs = 8192

// extSender is the sender side of one extension direction with cols columns
// (128 for IKNP, 256 for KK13): the secret s and the column PRGs G(k_{s_j}).
type extSender struct {
	cols int
	s    []uint64 // cols bits
	g    []*prg.PRG
	ctr  uint64 // index of the next instance (the hash tweak)
}

// extReceiver is the receiver side: both column PRGs G(k0_j), G(k1_j).
type extReceiver struct {
	cols   int
	g0, g1 []*prg.PRG
	ctr    uint64
	spare  [1]uint64 // PRG output skipped to stay in step (kept here so it does not escape)
}

func newExtSender(choice []uint64, keys []prg.Seed, stream uint64) extSender {
	e := extSender{cols: len(keys), s: append([]uint64(nil), choice...), g: make([]*prg.PRG, len(keys))}
	for j, k := range keys {
		e.g[j] = prg.NewStream(k, stream)
	}
	return e
}

func newExtReceiver(k0, k1 []prg.Seed, stream uint64) extReceiver {
	e := extReceiver{cols: len(k0), g0: make([]*prg.PRG, len(k0)), g1: make([]*prg.PRG, len(k1))}
	for j := range k0 {
		e.g0[j] = prg.NewStream(k0[j], stream)
		e.g1[j] = prg.NewStream(k1[j], stream)
	}
	return e
}

// chunkWords returns, for a chunk of nc instances, the PRG words per column
// (whole 128-instance blocks, W) and the transmitted words per column (Wt).
func chunkWords(nc int) (W, Wt int) { return (nc + 127) / 128 * 2, (nc + 63) / 64 }

// extend computes the receiver's columns for one chunk of nc instances:
// t_j = G0_j and u_j = G0_j ⊕ G1_j ⊕ c_j, where column j of the code matrix
// is cb[j·stride : j·stride+Wt] (stride 0: the same choice vector for every
// column, as in IKNP). t has cols·W words, u gets cols·Wt words.
func (e *extReceiver) extend(nc int, cb []uint64, stride int, t, u []uint64) {
	W, Wt := chunkWords(nc)
	for j := 0; j < e.cols; j++ {
		tj := t[j*W : j*W+W]
		e.g0[j].Uint64s(tj)
		uj := u[j*Wt : j*Wt+Wt]
		e.g1[j].Uint64s(uj)
		if W > Wt {
			e.g1[j].Uint64s(e.spare[:]) // keep the PRG in step with the sender
		}
		c := cb[j*stride : j*stride+Wt]
		tj = tj[:Wt]
		for k := range uj {
			uj[k] ^= tj[k] ^ c[k]
		}
	}
}

// extend computes the sender's columns q_j = G_j ⊕ s_j·u_j for one chunk.
// q has cols·W words; u holds cols·Wt words.
func (e *extSender) extend(nc int, u, q []uint64) {
	W, Wt := chunkWords(nc)
	for j := 0; j < e.cols; j++ {
		qj := q[j*W : j*W+W]
		e.g[j].Uint64s(qj)
		if bitvec.Bit(e.s, j) == 1 {
			uj := u[j*Wt : j*Wt+Wt]
			qj = qj[:Wt]
			for k := range uj {
				qj[k] ^= uj[k]
			}
		}
	}
}

// columnsToRows transposes 128 columns of a chunk (column j at
// buf[(col0+j)·W:], W words each) into rows: rows[i] is the 128-bit row of
// instance i, for the nb = W/2 blocks of 128 instances.
func columnsToRows(rows []prg.Block, buf []uint64, W, col0 int, transpose func(*[128]prg.Block)) {
	for b := 0; b < W/2; b++ {
		m := (*[128]prg.Block)(rows[b*128 : b*128+128])
		for j := range m {
			c := buf[(col0+j)*W+2*b:]
			m[j] = prg.Block{c[0], c[1]}
		}
		transpose(m)
	}
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
