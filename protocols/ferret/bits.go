package ferret

// copyBits copies n bits of the packed vector src starting at bit sOff to
// dst starting at bit dOff (bit i of a vector is v[i/64]>>(i%64)&1); the
// other bits of dst are kept.
func copyBits(dst []uint64, dOff int, src []uint64, sOff, n int) {
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
