package dealer

import (
	"sync"

	"github.com/cryptflow-go/cryptflow/ring"
)

// The linear layers' product kernel. ring.Ring.MatMul streams the whole right-hand matrix b once
// per row of a; a convolution's im2col matrix (k = C·KH·KW rows of n = OH·OW columns: up to
// several MiB in ResNet50) then comes from memory for every output channel. matMul computes the
// same product in tiles: a block of tileK rows by tileN columns of b (256 KiB) stays in the
// cache while every row of a uses it, and four rows of a by two of b are combined per pass over
// the block's columns. The sums are the same integers modulo 2^64 in another order, reduced once
// at the end, so the result is ring.Ring.MatMul's exactly (TestMatMulKernel). matMulPar splits
// the product into blocks of rows (or of columns, for few rows) computed by several goroutines:
// each output element is still one sum computed by one goroutine, so the result is the same.

const (
	tileN = 512 // columns of b per tile
	tileK = 64  // rows of b per tile

	// parMin is the number of multiply-adds below which a product is not split.
	parMin = 1 << 20
)

// matMul sets dst (m×n) = a (m×k) · b (k×n) in r, as r.MatMul does.
func matMul(r ring.Ring, dst, a []uint64, m, k, n int, b []uint64) {
	matMulPar(r, dst, a, m, k, n, b, 1)
}

// matMulPar is matMul on up to workers goroutines.
func matMulPar(r ring.Ring, dst, a []uint64, m, k, n int, b []uint64, workers int) {
	if r.Modulus() != 0 || m < 4 || n < 16 || k < 2 {
		r.MatMul(dst, a, m, k, n, b)
		return
	}
	dst, a, b = dst[:m*n], a[:m*k], b[:k*n]
	workers = min(workers, m*k*n/parMin)
	switch {
	case workers >= 2 && m >= 8*workers:
		// Rows, in multiples of 4 (the kernel's row block).
		step := (m/workers + 3) &^ 3
		var wg sync.WaitGroup
		for i0 := 0; i0 < m; i0 += step {
			wg.Add(1)
			go func() {
				defer wg.Done()
				matMulBlock(dst, a, k, n, b, i0, min(m, i0+step), 0, n)
			}()
		}
		wg.Wait()
	case workers >= 2 && n >= 64*workers:
		// Columns, in multiples of 16.
		step := (n/workers + 15) &^ 15
		var wg sync.WaitGroup
		for j0 := 0; j0 < n; j0 += step {
			wg.Add(1)
			go func() {
				defer wg.Done()
				matMulBlock(dst, a, k, n, b, 0, m, j0, min(n, j0+step))
			}()
		}
		wg.Wait()
	default:
		matMulBlock(dst, a, k, n, b, 0, m, 0, n)
	}
	mask := r.Mask()
	for i := range dst {
		dst[i] &= mask
	}
}

// matMulBlock sets rows [i0, i1) × columns [c0, c1) of dst (·×n) to those of a (·×k) · b (k×n)
// modulo 2^64 (not reduced into the ring).
func matMulBlock(dst, a []uint64, k, n int, b []uint64, i0, i1, c0, c1 int) {
	for i := i0; i < i1; i++ {
		clear(dst[i*n+c0 : i*n+c1])
	}
	for j0 := c0; j0 < c1; j0 += tileN {
		j1 := min(j0+tileN, c1)
		for t0 := 0; t0 < k; t0 += tileK {
			t1 := min(t0+tileK, k)
			i := i0
			for ; i+4 <= i1; i += 4 {
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
			for ; i < i1; i++ {
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
}
