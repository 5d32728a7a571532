package ferret

import (
	"crypto/sha256"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// ggmKeys returns the two public fixed AES keys of the GGM length-doubling
// PRG G(x) = (π_L(x) ⊕ x, π_R(x) ⊕ x): the two halves of
// SHA-256("cryptflow-go ferret GGM"), a nothing-up-my-sleeve choice.
func ggmKeys() (l, r prg.Seed) {
	d := sha256.Sum256([]byte("cryptflow-go ferret GGM"))
	copy(l[:], d[:16])
	copy(r[:], d[16:])
	return l, r
}

// expander expands GGM trees level by level. A level of 2^(lvl−1) nodes
// held in t[0:half] becomes 2^lvl nodes in t[0:2·half] in place: the left
// child of node p goes to p, its right child to p + half. (So leaf
// Σ_i a_i·2^(i−1) is reached by taking branch a_i at level i; any fixed
// numbering of the leaves does, the two parties just have to agree.) With
// VAES on ZMM registers, a level of at least 16 nodes runs through
// ggmLevelZ one tree at a time; smaller levels are gathered across the
// group of trees so that every fixed-key AES call still sees a batch. An
// expander is not safe for concurrent use; each worker has its own.
type expander struct {
	hl, hr      *prg.Hash
	rk          [2][176]byte // round keys of π_L and π_R (for ggmLevelZ)
	useZ        bool
	src, lo, hi []prg.Block
	sum0, sum1  []prg.Block // per tree of the group: XOR of left / right children of the level
}

func newExpander(depth, group int) *expander {
	kl, kr := ggmKeys()
	half := 1 << (depth - 1)
	e := &expander{hl: prg.NewHashWithKey(kl), hr: prg.NewHashWithKey(kr), useZ: haveVAESZ(),
		src: make([]prg.Block, group*half), lo: make([]prg.Block, group*half), hi: make([]prg.Block, group*half),
		sum0: make([]prg.Block, group), sum1: make([]prg.Block, group)}
	expandKey128(kl, &e.rk[0])
	expandKey128(kr, &e.rk[1])
	return e
}

// level expands level lvl−1 of every tree in trees into level lvl and
// records in e.sum0[g], e.sum1[g] the XOR of tree g's left and right
// children (t[0:half] and t[half:2·half]).
func (e *expander) level(trees [][]prg.Block, lvl int) {
	e.expand(trees, lvl, true)
}

// expand is level; with sums false it may skip the level sums (a sender
// rebuilding trees whose messages it has sent).
func (e *expander) expand(trees [][]prg.Block, lvl int, sums bool) {
	half := 1 << (lvl - 1)
	if e.useZ && half >= 16 {
		for g, t := range trees {
			ggmLevelZ(&e.rk, (*[2]uint64)(&t[0]), half)
			if sums {
				e.sum0[g], e.sum1[g] = xorAll(t[:half]), xorAll(t[half:2*half])
			}
		}
		return
	}
	m := len(trees) * half
	src, lo, hi := e.src[:m], e.lo[:m], e.hi[:m]
	for g, t := range trees {
		copy(src[g*half:(g+1)*half], t[:half])
	}
	e.hl.Permute(lo, src)
	e.hr.Permute(hi, src)
	for g, t := range trees {
		s := src[g*half : (g+1)*half]
		l := lo[g*half : (g+1)*half]
		h := hi[g*half : (g+1)*half]
		left, right := t[:half], t[half:2*half]
		var s0, s1 prg.Block
		for p := range s {
			a := prg.Block{l[p][0] ^ s[p][0], l[p][1] ^ s[p][1]}
			b := prg.Block{h[p][0] ^ s[p][0], h[p][1] ^ s[p][1]}
			left[p], right[p] = a, b
			s0[0] ^= a[0]
			s0[1] ^= a[1]
			s1[0] ^= b[0]
			s1[1] ^= b[1]
		}
		e.sum0[g], e.sum1[g] = s0, s1
	}
}

// xorAll returns the XOR of the blocks of v.
func xorAll(v []prg.Block) prg.Block {
	var a, b, c, d uint64
	for len(v) >= 2 {
		a ^= v[0][0]
		b ^= v[0][1]
		c ^= v[1][0]
		d ^= v[1][1]
		v = v[2:]
	}
	if len(v) == 1 {
		a ^= v[0][0]
		b ^= v[0][1]
	}
	return prg.Block{a ^ c, b ^ d}
}

// expandKey128 writes the 11 AES-128 round keys of key (FIPS-197 key
// schedule, in the byte order AESENC takes) into rk.
func expandKey128(key prg.Seed, rk *[176]byte) {
	sbox := aesSbox()
	copy(rk[:16], key[:])
	rcon := byte(1)
	for i := 4; i < 44; i++ {
		t := [4]byte(rk[4*(i-1) : 4*i])
		if i%4 == 0 {
			t = [4]byte{sbox[t[1]] ^ rcon, sbox[t[2]], sbox[t[3]], sbox[t[0]]}
			rcon = xtime(rcon)
		}
		for j := 0; j < 4; j++ {
			rk[4*i+j] = rk[4*(i-4)+j] ^ t[j]
		}
	}
}

// xtime multiplies by x in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1.
func xtime(b byte) byte {
	r := b << 1
	if b&0x80 != 0 {
		r ^= 0x1b
	}
	return r
}

func gmul(a, b byte) byte {
	var r byte
	for b != 0 {
		if b&1 != 0 {
			r ^= a
		}
		a = xtime(a)
		b >>= 1
	}
	return r
}

// aesSbox computes the AES S-box: the inverse in GF(2^8) (0 ↦ 0) followed
// by the affine map b ⊕ rotl(b,1) ⊕ rotl(b,2) ⊕ rotl(b,3) ⊕ rotl(b,4) ⊕ 0x63.
func aesSbox() [256]byte {
	var s [256]byte
	for x := 0; x < 256; x++ {
		inv := byte(0)
		if x != 0 {
			// x^254 = x^-1.
			inv = 1
			p := byte(x)
			for e := 254; e > 0; e >>= 1 {
				if e&1 != 0 {
					inv = gmul(inv, p)
				}
				p = gmul(p, p)
			}
		}
		b := inv
		s[x] = b ^ bits.RotateLeft8(b, 1) ^ bits.RotateLeft8(b, 2) ^ bits.RotateLeft8(b, 3) ^ bits.RotateLeft8(b, 4) ^ 0x63
	}
	return s
}
