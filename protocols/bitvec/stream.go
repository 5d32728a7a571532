package bitvec

// Writer writes values of varying bit widths, one after the other, into a bit vector held in a
// buffer the caller sizes (the layout of transport.Pack when every width is the same).
type Writer struct {
	buf []uint64
	w   int    // next word of buf
	acc uint64 // pending bits
	n   uint   // number of pending bits (< 64)
}

// Reset makes w write from the start of buf.
func (w *Writer) Reset(buf []uint64) { *w = Writer{buf: buf} }

// Put appends the low width bits of v (1 ≤ width ≤ 64; the bits of v above width must be zero).
func (w *Writer) Put(v uint64, width uint) {
	w.acc |= v << w.n
	if w.n+width >= 64 {
		w.buf[w.w] = w.acc
		w.w++
		w.acc = v >> (64 - w.n) // a shift by 64 (n = 0) gives 0
		w.n = w.n + width - 64
		return
	}
	w.n += width
}

// Flush writes the pending bits and returns the number of words written since Reset.
func (w *Writer) Flush() int {
	if w.n > 0 {
		w.buf[w.w] = w.acc
		w.w++
		w.acc, w.n = 0, 0
	}
	return w.w
}

// Reader reads values of varying bit widths, one after the other, from a bit vector (a stream
// written by Writer).
type Reader struct {
	buf []uint64
	w   int    // next word to load
	acc uint64 // unread bits of the last loaded word, low bits first (zeros above n)
	n   uint   // number of unread bits in acc (< 64)
}

// Reset makes r read from the start of buf.
func (r *Reader) Reset(buf []uint64) { *r = Reader{buf: buf} }

// Get returns the next width bits (1 ≤ width ≤ 64) in the low bits of the result; the bits above
// width are not cleared (callers use the result modulo 2^width).
func (r *Reader) Get(width uint) uint64 {
	if r.n >= width {
		v := r.acc
		r.acc >>= width // width ≤ n < 64
		r.n -= width
		return v
	}
	next := r.buf[r.w]
	r.w++
	v := r.acc | next<<r.n
	used := width - r.n  // 1..64 bits of next are consumed
	r.acc = next >> used // a shift by 64 gives 0
	r.n = 64 - used
	return v
}

// Appender appends whole bit vectors, one after the other, to a bit vector that grows as needed.
type Appender struct {
	buf []uint64
	n   int // bits written
}

// Reset makes a append from the start of buf, reusing its capacity.
func (a *Appender) Reset(buf []uint64) { a.buf, a.n = buf[:0], 0 }

// Append appends the first n bits of v (whose bits past n must be zero).
func (a *Appender) Append(v []uint64, n int) {
	if n == 0 {
		return
	}
	nw := Words(n)
	s := uint(a.n & 63)
	if s == 0 {
		a.buf = append(a.buf, v[:nw]...)
	} else {
		last := len(a.buf) - 1
		for i := 0; i < nw; i++ {
			a.buf[last+i] |= v[i] << s
			a.buf = append(a.buf, v[i]>>(64-s))
		}
	}
	a.n += n
	a.buf = a.buf[:Words(a.n)]
}

// Words returns the vector appended so far (Words(Len()) words; its memory is reused by the next
// Reset).
func (a *Appender) Words() []uint64 { return a.buf }

// Len returns the number of bits appended since Reset.
func (a *Appender) Len() int { return a.n }
