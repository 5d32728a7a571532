package ferret

import (
	"unsafe"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// lpnD is the number of nonzero entries per row of the local linear code.
const lpnD = 10

// lpnRows is the number of rows whose indices are drawn in one batch (a
// multiple of 64, so the receiver's output bits fill whole words, and even,
// so a batch's 10 32-bit indices per row fill whole AES blocks).
const lpnRows = 256

// code is the public local linear code A ∈ F_2^{n×k} with lpnD ones per
// row: row i has ones at columns ⌊v·k / 2^32⌋ for the ten 32-bit words v
// of AES_seed blocks 5i/2 … (row i's words are words [10i, 10i+10) of the
// stream AES_seed(0), AES_seed(1), … with counter j in the low word of
// block j). The seed is public (the COT sender draws it and sends it), so
// both parties compute the same code; columns may repeat within a row (a
// repeated column cancels, as in any sum over F_2), which the LPN
// estimates for d = 10 allow for.
type code struct {
	perm *prg.Hash
	k    uint64
}

func newCode(seed prg.Seed, k int) *code { return &code{perm: prg.NewHashWithKey(seed), k: uint64(k)} }

// lpnScratch is one worker's index buffer.
type lpnScratch struct {
	ctr, idx [lpnRows * lpnD / 4]prg.Block
}

// indices fills sc.idx with the column indices of rows [r0, r0+lpnRows)
// (r0 a multiple of lpnRows) and returns them as uint32 words, lpnD per row.
func (c *code) indices(sc *lpnScratch, r0 int) []uint32 {
	b0 := uint64(r0) * lpnD / 4
	for j := range sc.ctr {
		sc.ctr[j] = prg.Block{b0 + uint64(j), 0}
	}
	c.perm.Permute(sc.idx[:], sc.ctr[:])
	w := unsafe.Slice((*uint32)(unsafe.Pointer(&sc.idx[0])), len(sc.idx)*4)
	for j, v := range w {
		w[j] = uint32(uint64(v) * c.k >> 32)
	}
	return w
}

// applySender adds A·base to out for rows [r0, r1) (r0 a multiple of
// lpnRows): out[i] ^= ⊕_j base[col(i, j)].
func (c *code) applySender(sc *lpnScratch, out, base []prg.Block, r0, r1 int) {
	for b := r0; b < r1; b += lpnRows {
		idx := c.indices(sc, b)
		rows := out[b:min(b+lpnRows, r1)]
		for i := range rows {
			ix := idx[i*lpnD : i*lpnD+lpnD : i*lpnD+lpnD]
			x := rows[i]
			for _, j := range ix {
				y := &base[j]
				x[0] ^= y[0]
				x[1] ^= y[1]
			}
			rows[i] = x
		}
	}
}

// applyReceiver is applySender for the receiver, which also adds A·bits to
// its packed choice bits outBits (bit i of outBits[i/64]).
func (c *code) applyReceiver(sc *lpnScratch, out, base []prg.Block, outBits, baseBits []uint64, r0, r1 int) {
	for b := r0; b < r1; b += lpnRows {
		idx := c.indices(sc, b)
		rows := out[b:min(b+lpnRows, r1)]
		var acc uint64
		for i := range rows {
			ix := idx[i*lpnD : i*lpnD+lpnD : i*lpnD+lpnD]
			x := rows[i]
			var bit uint64
			for _, j := range ix {
				y := &base[j]
				x[0] ^= y[0]
				x[1] ^= y[1]
				bit ^= baseBits[j>>6] >> (j & 63)
			}
			rows[i] = x
			acc |= (bit & 1) << (i & 63)
			if i&63 == 63 || i == len(rows)-1 {
				outBits[(b+i)>>6] ^= acc
				acc = 0
			}
		}
	}
}
