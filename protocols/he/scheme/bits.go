package scheme

// bitWriter appends values of given widths to a byte slice, least significant bit first.
type bitWriter struct {
	buf  []byte
	acc  uint64
	nacc uint
}

func (w *bitWriter) put(v uint64, width int) {
	for width > 0 {
		take := min(uint(width), 64-w.nacc)
		if take == 0 {
			w.flushWord()
			continue
		}
		var part uint64
		if take == 64 {
			part = v
		} else {
			part = v & (1<<take - 1)
		}
		w.acc |= part << w.nacc
		w.nacc += take
		if take < 64 {
			v >>= take
		} else {
			v = 0
		}
		width -= int(take)
		if w.nacc == 64 {
			w.flushWord()
		}
	}
}

func (w *bitWriter) flushWord() {
	for i := uint(0); i < w.nacc; i += 8 {
		w.buf = append(w.buf, byte(w.acc>>i))
	}
	w.acc, w.nacc = 0, 0
}

// bytes ends the stream (padding the last byte with zeros) and returns it.
func (w *bitWriter) bytes() []byte {
	if w.nacc > 0 {
		n := (w.nacc + 7) / 8
		for i := uint(0); i < n; i++ {
			w.buf = append(w.buf, byte(w.acc>>(8*i)))
		}
		w.acc, w.nacc = 0, 0
	}
	return w.buf
}

// bitReader reads values written by bitWriter.
type bitReader struct {
	buf  []byte
	pos  int // bit position
	over bool
}

func (r *bitReader) get(width int) uint64 {
	var v uint64
	done := 0
	for done < width {
		byteIdx := r.pos >> 3
		if byteIdx >= len(r.buf) {
			r.over = true
			return 0
		}
		off := r.pos & 7
		take := min(8-off, width-done)
		b := uint64(r.buf[byteIdx]>>off) & (1<<take - 1)
		v |= b << done
		done += take
		r.pos += take
	}
	return v
}
