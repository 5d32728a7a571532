package prg

import (
	"crypto/aes"
	"crypto/cipher"
	"sync"
	"unsafe"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// Block is a 128-bit value as two little-endian words: bit i of the block is
// bit i%64 of word i/64. Its memory layout matches the 16-byte AES block.
type Block [2]uint64

// Xor returns a ⊕ b.
func (a Block) Xor(b Block) Block { return Block{a[0] ^ b[0], a[1] ^ b[1]} }

// BlockWords views a block slice as its 2·len(b) words, low word of each block first (nil for
// an empty b). The view shares b's memory.
func BlockWords(b []Block) []uint64 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice(&b[0][0], 2*len(b))
}

// BlockBytes views a block slice as its bytes in memory order.
func BlockBytes(b []Block) []byte { return bitvec.Bytes(BlockWords(b)) }

// Tweak is the tweak of the hash: Lo is normally an instance index, Hi a
// domain word (stream, direction, output block). A caller must never hash two
// different inputs it needs independent under the same tweak and secret
// offset; OT extension guarantees this by giving every OT its own index.
type Tweak struct{ Lo, Hi uint64 }

// fixedKey is the public key of the fixed-key permutation π: the first 128
// bits of the fractional part of π in hex (a nothing-up-my-sleeve number).
var fixedKey = Seed{0x24, 0x3f, 0x6a, 0x88, 0x85, 0xa3, 0x08, 0xd3, 0x13, 0x19, 0x8a, 0x2e, 0x03, 0x70, 0x73, 0x44}

// batch is the number of blocks hashed per inner step (stack scratch).
const batch = 64

// Hash is the fixed-key AES permutation π and the hashes built on it. A
// Hash is immutable after construction and safe for concurrent use.
type Hash struct {
	rk      [176]byte    // expanded AES-128 encryption key (assembly paths)
	blk     cipher.Block // crypto/aes, used when there is no assembly path
	useAsm  bool         // AES-NI, 8 blocks per step
	useVAES bool         // VAES on ZMM registers, 32 blocks per step
	scratch *sync.Pool   // *genScratch for the crypto/aes path
}

// genScratch is the working space of the crypto/aes path. Blocks handed to
// cipher.Block escape to the heap, so they are pooled rather than declared
// per call.
type genScratch struct{ a, b [batch]Block }

// NewHash returns the hash with the package's fixed public key.
func NewHash() *Hash { return NewHashWithKey(fixedKey) }

// NewHashWithKey returns the hash whose permutation is AES-128 under key.
// The key is public by design; distinct keys give independent hash families.
func NewHashWithKey(key Seed) *Hash {
	h := &Hash{scratch: &sync.Pool{New: func() any { return new(genScratch) }}}
	blk, err := aes.NewCipher(key[:])
	if err != nil {
		panic("prg: " + err.Error()) // unreachable: 16-byte key
	}
	h.blk = blk
	h.useAsm = haveAESNI()
	if h.useAsm {
		expandKey(&key, &h.rk)
		h.useVAES = haveVAES()
	}
	return h
}

// Permute sets dst[k] = π(src[k]). dst and src must have the same length;
// they may be the same slice.
func (h *Hash) Permute(dst, src []Block) {
	if len(dst) != len(src) {
		panic("prg: Permute length mismatch")
	}
	if len(src) == 0 {
		return
	}
	if h.useAsm {
		encryptBlocks(&h.rk, &dst[0], &src[0], len(src))
		return
	}
	d, s := BlockBytes(dst), BlockBytes(src)
	for i := 0; i < len(d); i += 16 {
		h.blk.Encrypt(d[i:i+16], s[i:i+16])
	}
}

// TCCR sets dst[k] = π(π(src[k]) ⊕ τ_k) ⊕ π(src[k]) with τ_k = {t.Lo+k, t.Hi}.
// dst and src must have the same length; they may be the same slice.
func (h *Hash) TCCR(dst, src []Block, t Tweak) { h.TCCRXor(dst, src, Block{}, t) }

// TCCRXor is TCCR of src[k] ⊕ d: the IKNP sender's second message,
// H(q ⊕ s), without a pass to form q ⊕ s.
func (h *Hash) TCCRXor(dst, src []Block, d Block, t Tweak) {
	if len(dst) != len(src) {
		panic("prg: TCCR length mismatch")
	}
	done := 0
	if h.useVAES && len(src) >= 32 {
		done = len(src) &^ 31
		tccrWide(&h.rk, dst[:done], src[:done], d, t)
	}
	if h.useAsm {
		if m := (len(src) - done) &^ 7; m > 0 {
			tccr8(&h.rk, &dst[done], &src[done], m, t.Lo+uint64(done), t.Hi, d[0], d[1])
			done += m
		}
		if done < len(src) {
			// Fewer than 8 left: pad to one kernel step on the stack.
			var in, out [8]Block
			copy(in[:], src[done:])
			tccr8(&h.rk, &out[0], &in[0], 8, t.Lo+uint64(done), t.Hi, d[0], d[1])
			copy(dst[done:], out[:])
		}
		return
	}
	h.tccrGeneric(dst, src, d, t)
}

// tccrGeneric is the crypto/aes path (no AES-NI).
func (h *Hash) tccrGeneric(dst, src []Block, d Block, t Tweak) {
	sc := h.scratch.Get().(*genScratch)
	defer h.scratch.Put(sc)
	y, z := &sc.a, &sc.b
	for off := 0; off < len(src); off += batch {
		m := min(batch, len(src)-off)
		ys, zs := y[:m], z[:m]
		for k, x := range src[off : off+m] {
			ys[k] = x.Xor(d)
		}
		h.Permute(ys, ys)
		lo := t.Lo + uint64(off)
		for k := range ys {
			zs[k] = Block{ys[k][0] ^ (lo + uint64(k)), ys[k][1] ^ t.Hi}
		}
		h.Permute(zs, zs)
		out := dst[off : off+m]
		for k := range out {
			out[k] = Block{zs[k][0] ^ ys[k][0], zs[k][1] ^ ys[k][1]}
		}
	}
}

// Hash256 hashes the 256-bit inputs lo[k]‖hi[k]:
// dst[k] = MMO(lo[k] ⊕ MMO(hi[k] ⊕ τ_k)), MMO(y) = π(y) ⊕ y,
// τ_k = {t.Lo+k, t.Hi}. All slices must have the same length; dst may alias
// lo or hi.
func (h *Hash) Hash256(dst, lo, hi []Block, t Tweak) { h.Hash256Xor(dst, lo, hi, Block{}, Block{}, t) }

// Hash256Xor is Hash256 of (lo[k] ⊕ dlo)‖(hi[k] ⊕ dhi): the KK13 sender's
// pad for one codeword, without a pass to form the offset rows.
func (h *Hash) Hash256Xor(dst, lo, hi []Block, dlo, dhi Block, t Tweak) {
	if len(dst) != len(lo) || len(dst) != len(hi) {
		panic("prg: Hash256 length mismatch")
	}
	done := 0
	if h.useVAES && len(dst) >= 32 {
		done = len(dst) &^ 31
		hash256Wide(&h.rk, dst[:done], lo[:done], hi[:done], dlo, dhi, t)
	}
	if h.useAsm {
		if m := (len(dst) - done) &^ 7; m > 0 {
			hash256x8(&h.rk, &dst[done], &lo[done], &hi[done], m, t.Lo+uint64(done), t.Hi, dlo[0], dlo[1], dhi[0], dhi[1])
			done += m
		}
		if done < len(dst) {
			var l, hh, out [8]Block
			copy(l[:], lo[done:])
			copy(hh[:], hi[done:])
			hash256x8(&h.rk, &out[0], &l[0], &hh[0], 8, t.Lo+uint64(done), t.Hi, dlo[0], dlo[1], dhi[0], dhi[1])
			copy(dst[done:], out[:])
		}
		return
	}
	h.hash256Generic(dst, lo, hi, dlo, dhi, t)
}

func (h *Hash) hash256Generic(dst, lo, hi []Block, dlo, dhi Block, t Tweak) {
	sc := h.scratch.Get().(*genScratch)
	defer h.scratch.Put(sc)
	a, y := &sc.a, &sc.b
	for off := 0; off < len(dst); off += batch {
		m := min(batch, len(dst)-off)
		as, ys := a[:m], y[:m]
		hs, ls := hi[off:off+m], lo[off:off+m]
		base := t.Lo + uint64(off)
		for k := range as {
			as[k] = Block{hs[k][0] ^ dhi[0] ^ (base + uint64(k)), hs[k][1] ^ dhi[1] ^ t.Hi}
		}
		h.Permute(ys, as)
		for k := range as {
			as[k] = Block{ys[k][0] ^ as[k][0] ^ ls[k][0] ^ dlo[0], ys[k][1] ^ as[k][1] ^ ls[k][1] ^ dlo[1]}
		}
		h.Permute(ys, as)
		out := dst[off : off+m]
		for k := range out {
			out[k] = Block{ys[k][0] ^ as[k][0], ys[k][1] ^ as[k][1]}
		}
	}
}
