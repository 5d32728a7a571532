package ot

import "fmt"

// BitWords is the number of words that hold n packed bits.
func BitWords(n int) int { return (n + 63) / 64 }

// Bit returns bit i of the packed bit vector v (0 or 1).
func Bit(v []uint64, i int) uint64 { return v[i/64] >> (i % 64) & 1 }

// PackBits packs the bits b[i]&1 into dst, LSB first: bit i goes to
// dst[i/64]>>(i%64). dst must have at least BitWords(len(b)) words; the
// unused high bits of the last word are cleared.
func PackBits(dst []uint64, b []uint8) error {
	if len(dst) < BitWords(len(b)) {
		return fmt.Errorf("ot: PackBits: %d words cannot hold %d bits", len(dst), len(b))
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

// UnpackBits is the inverse of PackBits: dst[i] = bit i of src, for every i
// < len(dst). src must have at least BitWords(len(dst)) words.
func UnpackBits(dst []uint8, src []uint64) error {
	if len(src) < BitWords(len(dst)) {
		return fmt.Errorf("ot: UnpackBits: %d words cannot hold %d bits", len(src), len(dst))
	}
	for i := range dst {
		dst[i] = uint8(src[i/64] >> (i % 64) & 1)
	}
	return nil
}

// lowMask returns the mask of the low l bits (1 ≤ l ≤ 64).
func lowMask(l int) uint64 { return ^uint64(0) >> (64 - l) }

// getBits returns the l bits of the packed stream src starting at bit off.
func getBits(src []uint64, off, l int) uint64 {
	w, o := off>>6, off&63
	v := src[w] >> o
	if o+l > 64 {
		v |= src[w+1] << (64 - o)
	}
	return v & lowMask(l)
}
