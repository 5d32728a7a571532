// Package bitvec holds the packed bit vectors of the protocols and the byte view of word slices
// that puts them (and any other word slice) on the wire.
//
// A bit vector is a []uint64: bit i of v is v[i/64]>>(i%64)&1, least significant bit first, and
// a vector of n bits has Words(n) words whose bits past n are zero. A packed stream of values of
// l bits each (the layout of transport.Pack) is a bit vector in which value j occupies bits
// [j·l, (j+1)·l).
//
// Bytes views words in memory order, which is the little-endian wire order only on a
// little-endian host; the OT session, which every protocol session is built on, refuses to start
// on any other host. The package is a leaf: it imports nothing of this module.
package bitvec

import (
	"fmt"
	"unsafe"
)

// Words is the number of words that hold n bits.
func Words(n int) int { return (n + 63) / 64 }

// Bit returns bit i of v (0 or 1).
func Bit(v []uint64, i int) uint64 { return v[i>>6] >> (i & 63) & 1 }

// Mask returns the mask of the low l bits: 2^l − 1 for 0 ≤ l < 64, all ones for l ≥ 64 (a
// width past the word, e.g. a share modulo 2^max(l, δ), keeps the whole word).
func Mask(l int) uint64 {
	if l >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(l) - 1
}

// ClearTail zeroes the bits of v past n (if v has a word for them).
func ClearTail(v []uint64, n int) {
	if r := n & 63; r != 0 && len(v) > n>>6 {
		v[n>>6] &= 1<<r - 1
	}
}

// Get returns the l bits (1 ≤ l ≤ 64) of src that start at bit off, in the low bits of the
// result. It reads no word past the one holding bit off+l−1.
func Get(src []uint64, off, l int) uint64 {
	w, o := off>>6, off&63
	v := src[w] >> o
	if o+l > 64 {
		v |= src[w+1] << (64 - o)
	}
	return v & (^uint64(0) >> uint(64-l)) // Mask(l) without its branch: here 1 ≤ l ≤ 64
}

// Peek returns the 64 bits of src that start at bit pos, in the low bits of the result, without
// masking (callers use the result modulo 2^width). src must hold a word past the word of pos;
// that word's value does not matter when the bits needed lie within the word of pos. It is the
// branch-free reader of the linear layers' correction loops.
func Peek(src []uint64, pos uint) uint64 {
	w, off := pos>>6, pos&63
	return src[w]>>off | src[w+1]<<(64-off) // a shift by 64 (off = 0) gives 0
}

// Extract sets dst (Words(n) words) to bits [off, off+n) of src, with the bits of dst past n
// cleared.
func Extract(dst, src []uint64, off, n int) {
	nw := Words(n)
	w, s := off>>6, uint(off&63)
	if s == 0 {
		copy(dst[:nw], src[w:w+nw])
	} else {
		for i := 0; i < nw; i++ {
			v := src[w+i] >> s
			if w+i+1 < len(src) {
				v |= src[w+i+1] << (64 - s)
			}
			dst[i] = v
		}
	}
	ClearTail(dst, n)
}

// Copy copies n bits of src starting at bit sOff to dst starting at bit dOff; the other bits of
// dst are kept.
func Copy(dst []uint64, dOff int, src []uint64, sOff, n int) {
	for n > 0 {
		c := min(64, n)
		w, o := sOff>>6, sOff&63
		v := src[w] >> o
		if o+c > 64 {
			v |= src[w+1] << (64 - o)
		}
		m := ^uint64(0) >> (64 - c)
		v &= m
		w, o = dOff>>6, dOff&63
		dst[w] = dst[w]&^(m<<o) | v<<o
		if o+c > 64 {
			dst[w+1] = dst[w+1]&^(m>>(64-o)) | v>>(64-o)
		}
		sOff += c
		dOff += c
		n -= c
	}
}

// Xor sets dst ^= src over len(dst) words.
func Xor(dst, src []uint64) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] ^= src[i]
	}
}

// PackBytes packs the bits b[i]&1 into dst: bit i goes to bit i of dst. dst must have at least
// Words(len(b)) words; the bits of the last word past len(b) are cleared.
func PackBytes(dst []uint64, b []uint8) error {
	if len(dst) < Words(len(b)) {
		return fmt.Errorf("bitvec: PackBytes: %d words cannot hold %d bits", len(dst), len(b))
	}
	full := len(b) / 64
	for w := 0; w < full; w++ {
		s := (*[64]uint8)(b[w*64 : w*64+64])
		var x uint64
		for k := 0; k < 64; k++ {
			x |= uint64(s[k]&1) << k
		}
		dst[w] = x
	}
	if rest := b[full*64:]; len(rest) > 0 {
		var x uint64
		for k, v := range rest {
			x |= uint64(v&1) << k
		}
		dst[full] = x
	}
	return nil
}

// UnpackBytes is the inverse of PackBytes: dst[i] = bit i of src, for every i < len(dst). src
// must have at least Words(len(dst)) words.
func UnpackBytes(dst []uint8, src []uint64) error {
	if len(src) < Words(len(dst)) {
		return fmt.Errorf("bitvec: UnpackBytes: %d words cannot hold %d bits", len(src), len(dst))
	}
	for i := range dst {
		dst[i] = uint8(src[i>>6] >> (i & 63) & 1)
	}
	return nil
}

// PackBit sets dst (Words(len(src)) words) to bit k of every word of src: bit i of dst is bit k
// of src[i]. The bits of the last word past len(src) are cleared.
func PackBit(dst []uint64, src []uint64, k uint) {
	full := len(src) / 64
	for w := 0; w < full; w++ {
		s := src[w*64 : w*64+64 : w*64+64]
		var x uint64
		for j := 0; j < 64; j++ {
			x |= (s[j] >> k & 1) << j
		}
		dst[w] = x
	}
	if rest := src[full*64:]; len(rest) > 0 {
		var x uint64
		for j, v := range rest {
			x |= (v >> k & 1) << j
		}
		dst[full] = x
	}
}

// Bytes views w as its 8·len(w) bytes in memory order (nil for an empty w). The view shares
// w's memory: writing either changes both.
func Bytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w))
}
