package linear

import (
	"github.com/cryptflow-go/cryptflow/protocols/linear/lincost"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// The convolution's OTs carry 128-bit seeds (random OTs of two 64-bit words); the pad of the OT of
// element e and bit i is the seed expanded with the fixed-key correlation-robust hash of package
// prg: block k is TCCR(seed) under the tweak ((e·64 + i)·2^24 + k, padDomain). Both parties expand
// exactly the bits the element's message at bit i needs, right before using them, so the pads never
// leave the cache and no pad bits are wasted on the widest element or on the low bit positions.

// seedWords is the number of 64-bit words of an OT seed.
const seedWords = 2

// padDomain is the tweak's domain word for pad expansion ("lin-pads"), distinct from the OT
// layer's domains.
const padDomain = 0x6c696e2d70616473

// maxPadBits bounds the pad of one OT (lincost.MaxPadBits, 2^22 bits).
const maxPadBits = lincost.MaxPadBits

// expander expands OT seeds into pads; each stream has its own (scratch is not shared).
type expander struct {
	h          *prg.Hash
	rep        []prg.Block // the seed, repeated
	pad0, pad1 []prg.Block // expanded pads (one spare block: bitvec.Peek reads a word ahead)
}

// expander returns the stream's pad expander with room for pads of maxBits bits.
func (st *stream) expander(maxBits int) *expander {
	if st.exp == nil {
		st.exp = &expander{h: prg.NewHash()}
	}
	x := st.exp
	nb := (maxBits+127)/128 + 1
	if len(x.rep) < nb {
		x.rep = make([]prg.Block, nb)
		x.pad0 = make([]prg.Block, nb)
		x.pad1 = make([]prg.Block, nb)
	}
	return x
}

// expand sets buf to the first nbits bits of the pad of seed for element e, bit i, and returns it
// as words (with at least one word after the pad).
func (x *expander) expand(buf []prg.Block, seed prg.Block, nbits, e, i int) []uint64 {
	nb := (nbits + 127) / 128
	rep := x.rep[:nb]
	for k := range rep {
		rep[k] = seed
	}
	x.h.TCCR(buf[:nb], rep, prg.Tweak{Lo: (uint64(e)*64 + uint64(i)) << 24, Hi: padDomain})
	buf[nb] = prg.Block{}
	return prg.BlockWords(buf)
}

// seedAt returns the seed of OT instance inst from a buffer of seedWords words per instance.
func seedAt(m []uint64, inst int) prg.Block {
	return prg.Block{m[inst*seedWords], m[inst*seedWords+1]}
}
