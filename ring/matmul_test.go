package ring

import "testing"

func TestMatMulAgainstDefinition(t *testing.T) {
	r := Must(13)
	for _, c := range []struct{ m, k, n int }{{1, 1, 1}, {3, 5, 2}, {4, 9, 7}, {2, 3, 16}, {5, 0, 4}} {
		a := make([]uint64, c.m*c.k)
		b := make([]uint64, c.k*c.n)
		for i := range a {
			a[i] = r.Reduce(uint64(i*7919 + 13))
		}
		for i := range b {
			b[i] = r.Reduce(^uint64(i * 104729))
		}
		got := make([]uint64, c.m*c.n)
		r.MatMul(got, a, c.m, c.k, c.n, b)
		for i := 0; i < c.m; i++ {
			for j := 0; j < c.n; j++ {
				var want uint64
				for t := 0; t < c.k; t++ {
					want += a[i*c.k+t] * b[t*c.n+j]
				}
				if want = r.Reduce(want); got[i*c.n+j] != want {
					t.Fatalf("%+v: dst[%d,%d] = %d, want %d", c, i, j, got[i*c.n+j], want)
				}
			}
		}
	}
}
