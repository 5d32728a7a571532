package ferret

import (
	"crypto/sha256"
	"unsafe"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// lpnD is the number of nonzero entries per row of the local linear code.
const lpnD = 10

// lpnRows is the number of rows whose indices are drawn in one batch (a
// multiple of 64, so the receiver's output bits fill whole words, and even,
// so a batch's 10 32-bit indices per row fill whole AES blocks).
const lpnRows = 256

// lpnHalf is the number of counter blocks per batch: each gives two
// output blocks (one per key), 8 column indices.
const lpnHalf = lpnRows * lpnD / 8

// code is the public local linear code A ∈ F_2^{n×k} with lpnD ones per
// row. Rows come in batches of lpnRows = 256; batch q's column indices are
// ⌊v·k / 2^32⌋ for the 32-bit words v (row i of the batch takes words
// [10i, 10i+10)) of the 640 blocks
//
//	π_A(c_j) ⊕ c_j  (j < 320),  then  π_B(c_j) ⊕ c_j  (j < 320),  c_j = {320·q + j, 0},
//
// with π_A, π_B AES-128 under the two halves of SHA-256("cryptflow-go
// ferret LPN code" ‖ seed) — the GGM kernel's length-doubling step applied
// to counters. The seed is public (the COT sender draws it and sends it),
// so both parties compute the same code; columns may repeat within a row
// (a repeated column cancels, as in any sum over F_2), which the LPN
// estimates for d = 10 allow for.
type code struct {
	ha, hb *prg.Hash
	rk     [2][176]byte
	useZ   bool
	k      uint64
}

func newCode(seed prg.Seed, k int) *code {
	d := sha256.Sum256(append([]byte("cryptflow-go ferret LPN code"), seed[:]...))
	var ka, kb prg.Seed
	copy(ka[:], d[:16])
	copy(kb[:], d[16:])
	c := &code{ha: prg.NewHashWithKey(ka), hb: prg.NewHashWithKey(kb), useZ: haveLPNKernels(), k: uint64(k)}
	expandKey128(ka, &c.rk[0])
	expandKey128(kb, &c.rk[1])
	return c
}

// lpnScratch is one worker's index buffer.
type lpnScratch struct {
	ctr [lpnHalf]prg.Block
	idx [2 * lpnHalf]prg.Block
}

// indices fills sc.idx with the column indices of rows [r0, r0+lpnRows)
// (r0 a multiple of lpnRows) and returns them as uint32 words, lpnD per row.
func (c *code) indices(sc *lpnScratch, r0 int) []uint32 {
	c0 := uint64(r0/lpnRows) * lpnHalf
	if c.useZ {
		for j := 0; j < lpnHalf; j++ {
			sc.idx[j] = prg.Block{c0 + uint64(j), 0}
		}
		ggmLevelZ(&c.rk, (*[2]uint64)(&sc.idx[0]), lpnHalf)
	} else {
		for j := range sc.ctr {
			sc.ctr[j] = prg.Block{c0 + uint64(j), 0}
		}
		lo, hi := sc.idx[:lpnHalf], sc.idx[lpnHalf:]
		c.ha.Permute(lo, sc.ctr[:])
		c.hb.Permute(hi, sc.ctr[:])
		for j, x := range sc.ctr {
			lo[j][0] ^= x[0]
			hi[j][0] ^= x[0]
		}
	}
	w := unsafe.Slice((*uint32)(unsafe.Pointer(&sc.idx[0])), len(sc.idx)*4)
	if c.useZ {
		lpnColsZ(&w[0], len(w), c.k)
		return w
	}
	for j, v := range w {
		w[j] = uint32(uint64(v) * c.k >> 32)
	}
	return w
}

// apply adds A·base to rows [r0, r1) (r0 a multiple of lpnRows) held
// in out (out[0] is row r0): out[i−r0] ^= ⊕_j base[col(i, j)]. Every column index is below k =
// len(base) by construction (⌊v·k/2^32⌋ < k), so the gathers skip the
// bounds checks; the ten loads of a row are unrolled into a tree of XORs.
func (c *code) apply(sc *lpnScratch, out, base []prg.Block, r0, r1 int) {
	if uint64(len(base)) < c.k {
		panic("ferret: LPN base shorter than k")
	}
	bp := unsafe.Pointer(&base[0])
	at := func(j uint32) *prg.Block { return (*prg.Block)(unsafe.Add(bp, uintptr(j)*16)) }
	for b := r0; b < r1; b += lpnRows {
		idx := c.indices(sc, b)
		rows := out[b-r0 : min(b+lpnRows, r1)-r0]
		if c.useZ {
			lpnXorX((*[2]uint64)(&rows[0]), (*[2]uint64)(&base[0]), &idx[0], len(rows))
			continue
		}
		for i := range rows {
			ix := (*[lpnD]uint32)(idx[i*lpnD:])
			a0, a1, a2, a3, a4 := at(ix[0]), at(ix[1]), at(ix[2]), at(ix[3]), at(ix[4])
			a5, a6, a7, a8, a9 := at(ix[5]), at(ix[6]), at(ix[7]), at(ix[8]), at(ix[9])
			rows[i][0] ^= (a0[0] ^ a1[0]) ^ (a2[0] ^ a3[0]) ^ (a4[0] ^ a5[0]) ^ (a6[0] ^ a7[0]) ^ (a8[0] ^ a9[0])
			rows[i][1] ^= (a0[1] ^ a1[1]) ^ (a2[1] ^ a3[1]) ^ (a4[1] ^ a5[1]) ^ (a6[1] ^ a7[1]) ^ (a8[1] ^ a9[1])
		}
	}
}
