package dealer

import "github.com/cryptflow-go/cryptflow/ring"

// The linear layers' product kernel. ring.Ring.MatMul streams the whole right-hand matrix b once
// per row of a; a convolution's im2col matrix (k = C·KH·KW rows of n = OH·OW columns: up to
// several MiB in ResNet50) then comes from memory for every output channel. matMul computes the
// same product in tiles: a block of tileK rows by tileN columns of b (256 KiB) stays in the
// cache while every row of a uses it, and four rows of a by two of b are combined per pass over
// the block's columns. The sums are the same integers modulo 2^64 in another order, reduced once
// at the end, so the result is ring.Ring.MatMul's exactly (TestMatMulKernel).

const (
	tileN = 512 // columns of b per tile
	tileK = 64  // rows of b per tile
)

// matMul sets dst (m×n) = a (m×k) · b (k×n) in r, as r.MatMul does.
func matMul(r ring.Ring, dst, a []uint64, m, k, n int, b []uint64) {
	if r.Modulus() != 0 || m < 4 || n < 16 || k < 2 {
		r.MatMul(dst, a, m, k, n, b)
		return
	}
	dst, a, b = dst[:m*n], a[:m*k], b[:k*n]
	clear(dst)
	for j0 := 0; j0 < n; j0 += tileN {
		j1 := min(j0+tileN, n)
		for t0 := 0; t0 < k; t0 += tileK {
			t1 := min(t0+tileK, k)
			i := 0
			for ; i+4 <= m; i += 4 {
				o0 := dst[i*n+j0 : i*n+j1]
				o1 := dst[(i+1)*n+j0 : (i+1)*n+j1][:len(o0)]
				o2 := dst[(i+2)*n+j0 : (i+2)*n+j1][:len(o0)]
				o3 := dst[(i+3)*n+j0 : (i+3)*n+j1][:len(o0)]
				r0, r1, r2, r3 := a[i*k:(i+1)*k], a[(i+1)*k:(i+2)*k], a[(i+2)*k:(i+3)*k], a[(i+3)*k:(i+4)*k]
				t := t0
				for ; t+2 <= t1; t += 2 {
					b0 := b[t*n+j0 : t*n+j1][:len(o0)]
					b1 := b[(t+1)*n+j0 : (t+1)*n+j1][:len(o0)]
					a00, a01 := r0[t], r0[t+1]
					a10, a11 := r1[t], r1[t+1]
					a20, a21 := r2[t], r2[t+1]
					a30, a31 := r3[t], r3[t+1]
					for j, v0 := range b0 {
						v1 := b1[j]
						o0[j] += a00*v0 + a01*v1
						o1[j] += a10*v0 + a11*v1
						o2[j] += a20*v0 + a21*v1
						o3[j] += a30*v0 + a31*v1
					}
				}
				if t < t1 {
					b0 := b[t*n+j0 : t*n+j1][:len(o0)]
					a00, a10, a20, a30 := r0[t], r1[t], r2[t], r3[t]
					for j, v0 := range b0 {
						o0[j] += a00 * v0
						o1[j] += a10 * v0
						o2[j] += a20 * v0
						o3[j] += a30 * v0
					}
				}
			}
			for ; i < m; i++ {
				o := dst[i*n+j0 : i*n+j1]
				row := a[i*k : (i+1)*k]
				for t := t0; t < t1; t++ {
					av := row[t]
					for j, v := range b[t*n+j0 : t*n+j1][:len(o)] {
						o[j] += av * v
					}
				}
			}
		}
	}
	mask := r.Mask()
	for i := range dst {
		dst[i] &= mask
	}
}
