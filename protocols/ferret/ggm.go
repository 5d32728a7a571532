package ferret

import (
	"crypto/sha256"

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

// expander expands GGM trees level by level, a group of trees at a time, so
// that every call of the fixed-key AES kernel sees a batch of nodes (at
// least the group size, even at the top levels). It is not safe for
// concurrent use; each worker has its own.
type expander struct {
	hl, hr       *prg.Hash
	src, lo, hi  []prg.Block
	sum0, sum1   []prg.Block // per tree of the group: XOR of left / right children of the level
	depth, group int
}

func newExpander(hl, hr *prg.Hash, depth, group int) *expander {
	half := 1 << (depth - 1)
	return &expander{hl: hl, hr: hr, depth: depth, group: group,
		src: make([]prg.Block, group*half), lo: make([]prg.Block, group*half), hi: make([]prg.Block, group*half),
		sum0: make([]prg.Block, group), sum1: make([]prg.Block, group)}
}

// level expands level lvl−1 of every tree in trees (tree g holds its
// 2^(lvl−1) nodes in trees[g][:2^(lvl−1)]) into level lvl, in place: node p
// becomes children 2p (left) and 2p+1 (right). It records in e.sum0[g] and
// e.sum1[g] the XOR of tree g's left and right children.
func (e *expander) level(trees [][]prg.Block, lvl int) {
	half := 1 << (lvl - 1)
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
		t = t[:2*half]
		var s0, s1 prg.Block
		for p := range s {
			a := prg.Block{l[p][0] ^ s[p][0], l[p][1] ^ s[p][1]}
			b := prg.Block{h[p][0] ^ s[p][0], h[p][1] ^ s[p][1]}
			t[2*p], t[2*p+1] = a, b
			s0[0] ^= a[0]
			s0[1] ^= a[1]
			s1[0] ^= b[0]
			s1[1] ^= b[1]
		}
		e.sum0[g], e.sum1[g] = s0, s1
	}
}
