package ring

// MatMul sets dst[m,n] = a[m,k] x b[k,n] in the ring (row-major operands; dst must not alias
// them). It is the plaintext product both the cleartext backend and party 0's local share of a
// secure product use.
func (r Ring) MatMul(dst, a []uint64, m, k, n int, b []uint64) {
	if r.mod != 0 {
		r.matMulMod(dst, a, m, k, n, b)
		return
	}
	mask := r.Mask()
	if n < 4 {
		// Matrix-vector products: dot products along rows of a.
		for i := 0; i < m; i++ {
			row := a[i*k : i*k+k]
			for j := 0; j < n; j++ {
				var s uint64
				for t, av := range row {
					s += av * b[t*n+j]
				}
				dst[i*n+j] = s & mask
			}
		}
		return
	}
	for i := 0; i < m; i++ {
		out := dst[i*n : i*n+n]
		clear(out)
		row := a[i*k : i*k+k]
		t := 0
		// Four rows of b per pass: one load and store of out per four products.
		for ; t+4 <= k; t += 4 {
			a0, a1, a2, a3 := row[t], row[t+1], row[t+2], row[t+3]
			b0 := b[t*n : t*n+n]
			b1 := b[(t+1)*n : (t+1)*n+n]
			b2 := b[(t+2)*n : (t+2)*n+n]
			b3 := b[(t+3)*n : (t+3)*n+n]
			b1, b2, b3 = b1[:len(b0)], b2[:len(b0)], b3[:len(b0)]
			o := out[:len(b0)]
			for j, v := range b0 {
				o[j] += a0*v + a1*b1[j] + a2*b2[j] + a3*b3[j]
			}
		}
		for ; t < k; t++ {
			av := row[t]
			bs := b[t*n : t*n+n]
			o := out[:len(bs)]
			for j, v := range bs {
				o[j] += av * v
			}
		}
		for j := range out {
			out[j] &= mask
		}
	}
}

// Transpose sets dst (cols×rows, row-major) to the transpose of src (rows×cols, row-major).
func Transpose(dst, src []uint64, rows, cols int) {
	for i := 0; i < rows; i++ {
		for j, v := range src[i*cols : (i+1)*cols] {
			dst[j*rows+i] = v
		}
	}
}
