package nonlinear

import "unsafe"

// Boolean shares are packed bit vectors in the layout of package ot: bit i
// of a vector v is v[i/64]>>(i%64)&1, and a vector of n bits has
// bitWords(n) words whose bits past n are zero.

// bitWords is the number of words holding n bits.
func bitWords(n int) int { return (n + 63) / 64 }

// bitAt returns bit i of v.
func bitAt(v []uint64, i int) uint64 { return v[i>>6] >> (i & 63) & 1 }

// clearTail zeroes the bits of v past n.
func clearTail(v []uint64, n int) {
	if r := n & 63; r != 0 && len(v) > n>>6 {
		v[n>>6] &= 1<<r - 1
	}
}

// lowMask is 2^b − 1 for 0 ≤ b ≤ 64.
func lowMask(b int) uint64 {
	if b >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(b) - 1
}

// extractBits sets dst (bitWords(n) words) to bits [off, off+n) of src.
func extractBits(dst, src []uint64, off, n int) {
	nw := bitWords(n)
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
	clearTail(dst, n)
}

// bitWriter appends bit vectors to a packed stream.
type bitWriter struct {
	buf []uint64
	n   int // bits written
}

func (w *bitWriter) reset(buf []uint64) { w.buf, w.n = buf[:0], 0 }

// put appends the first n bits of v (whose bits past n are zero).
func (w *bitWriter) put(v []uint64, n int) {
	if n == 0 {
		return
	}
	nw := bitWords(n)
	s := uint(w.n & 63)
	if s == 0 {
		w.buf = append(w.buf, v[:nw]...)
	} else {
		last := len(w.buf) - 1
		for i := 0; i < nw; i++ {
			w.buf[last+i] |= v[i] << s
			w.buf = append(w.buf, v[i]>>(64-s))
		}
	}
	w.n += n
	w.buf = w.buf[:bitWords(w.n)]
}

// bytes returns the written bits as ⌈n/8⌉ bytes.
func (w *bitWriter) bytes() []byte { return wordBytes(w.buf)[:(w.n+7)/8] }

// wordBytes views a word slice as its bytes in memory order (the OT session
// has checked that both hosts are little-endian).
func wordBytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w))
}

// grow returns b resized to n words, reallocating only when needed. The
// contents are not cleared.
func grow(b *[]uint64, n int) []uint64 {
	if cap(*b) < n {
		*b = make([]uint64, n, n+n/4)
	}
	return (*b)[:n]
}

// growZero is grow with the result cleared.
func growZero(b *[]uint64, n int) []uint64 {
	v := grow(b, n)
	clear(v)
	return v
}

func growBytes(b *[]uint8, n int) []uint8 {
	if cap(*b) < n {
		*b = make([]uint8, n, n+n/4)
	}
	return (*b)[:n]
}

// packLow packs bit k of each src word into dst (bitWords(len(src)) words).
func packLow(dst []uint64, src []uint64, k uint) {
	n := len(src)
	full := n / 64
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

// xorInto sets dst ^= src over len(dst) words.
func xorInto(dst, src []uint64) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] ^= src[i]
	}
}
