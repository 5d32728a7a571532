package linear

import "unsafe"

// bitWriter appends values of varying bit widths to a packed little-endian bit stream: bit p of
// the stream is buf[p/64]>>(p%64)&1, values at increasing positions (the layout of
// transport.Pack).
type bitWriter struct {
	buf []uint64
	w   int    // next word of buf
	acc uint64 // pending bits
	n   uint   // number of pending bits (< 64)
}

func (b *bitWriter) reset(buf []uint64) { *b = bitWriter{buf: buf} }

// put appends the low width bits of v (1 ≤ width ≤ 64; the bits of v above width must be zero).
func (b *bitWriter) put(v uint64, width uint) {
	b.acc |= v << b.n
	if b.n+width >= 64 {
		b.buf[b.w] = b.acc
		b.w++
		b.acc = v >> (64 - b.n) // a shift by 64 (n = 0) gives 0
		b.n = b.n + width - 64
		return
	}
	b.n += width
}

// flush writes the pending bits and returns the number of words written.
func (b *bitWriter) flush() int {
	if b.n > 0 {
		b.buf[b.w] = b.acc
		b.w++
		b.acc, b.n = 0, 0
	}
	return b.w
}

// bitReader reads a stream written by bitWriter.
type bitReader struct {
	buf []uint64
	w   int    // next word to load
	acc uint64 // unread bits of the last loaded word, low bits first (zeros above n)
	n   uint   // number of unread bits in acc (< 64)
}

func (b *bitReader) reset(buf []uint64) { *b = bitReader{buf: buf} }

// get returns the next width bits (1 ≤ width ≤ 64) in the low bits of the result; the bits above
// width are not cleared (callers use the result modulo 2^width).
func (b *bitReader) get(width uint) uint64 {
	if b.n >= width {
		v := b.acc
		b.acc >>= width // width ≤ n < 64
		b.n -= width
		return v
	}
	next := b.buf[b.w]
	b.w++
	v := b.acc | next<<b.n
	used := width - b.n  // 1..64 bits of next are consumed
	b.acc = next >> used // a shift by 64 gives 0
	b.n = 64 - used
	return v
}

// wordBytes views a word slice as its bytes in memory order (both parties are little-endian; the
// OT session checks this at start-up).
func wordBytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), 8*len(w))
}

// bitsAt returns the 64 bits of the packed stream buf that start at bit position pos, in the low
// bits of the result (callers use the result modulo 2^width). buf must hold one word past the
// word of pos; that word's value does not matter when the bits needed lie within the word of pos.
// It is the branch-free reader of the correction loops.
func bitsAt(buf []uint64, pos uint) uint64 {
	w, off := pos>>6, pos&63
	return buf[w]>>off | buf[w+1]<<(64-off) // a shift by 64 (off = 0) gives 0
}
