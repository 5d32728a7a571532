package dealer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// TestMatMulKernel: the tiled kernel equals ring.Ring.MatMul bit for bit on random and edge
// values (all ones: the largest products), for shapes around the tile and unroll boundaries and
// rings of 8 to 64 bits.
func TestMatMulKernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 5))
	for _, l := range []int{8, 32, 37, 64} {
		r := ring.Must(l)
		for _, m := range []int{1, 3, 4, 5, 9} {
			for _, k := range []int{1, 2, 3, 127, 128, 129, 300} {
				for _, n := range []int{1, 15, 16, 17, 255, 256, 257, 600} {
					a, b := make([]uint64, m*k), make([]uint64, k*n)
					for v, x := range [][]uint64{a, b} {
						for i := range x {
							if (m+k+n+v)%3 == 0 {
								x[i] = r.Mask() // edge: every element −1
							} else {
								x[i] = rng.Uint64() & r.Mask()
							}
						}
					}
					want, got := make([]uint64, m*n), make([]uint64, m*n)
					for i := range got {
						got[i] = rng.Uint64() // the kernel must overwrite dst
					}
					r.MatMul(want, a, m, k, n, b)
					matMul(r, got, a, m, k, n, b)
					if !slices.Equal(got, want) {
						t.Fatalf("l=%d, %d×%d by %d×%d: the tiled kernel differs from ring.MatMul", l, m, k, k, n)
					}
				}
			}
		}
	}
}

// BenchmarkMatMulKernel compares the tiled kernel with ring.Ring.MatMul on the products of
// three ResNet50 convolutions (im2col: m output channels, k = C·KH·KW, n = OH·OW), l = 37.
func BenchmarkMatMulKernel(b *testing.B) {
	r := ring.Must(37)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range []struct {
		name    string
		m, k, n int
	}{{"3x3-64-56", 64, 576, 3136}, {"3x3-256-14", 256, 2304, 196}, {"1x1-1024-256-14", 256, 1024, 196}} {
		for _, kern := range []string{"ring", "tiled"} {
			b.Run(fmt.Sprintf("%s/%s", s.name, kern), func(b *testing.B) {
				// The operands are made here, so that a filtered-out shape costs nothing.
				a, x, dst := make([]uint64, s.m*s.k), make([]uint64, s.k*s.n), make([]uint64, s.m*s.n)
				for i := range a {
					a[i] = rng.Uint64() & r.Mask()
				}
				for i := range x {
					x[i] = rng.Uint64() & r.Mask()
				}
				for b.Loop() {
					if kern == "ring" {
						r.MatMul(dst, a, s.m, s.k, s.n, x)
					} else {
						matMul(r, dst, a, s.m, s.k, s.n, x)
					}
				}
			})
		}
	}
}

// TestMatMulPar: the product split over goroutines (by rows, or by columns for few rows)
// equals ring.Ring.MatMul bit for bit.
func TestMatMulPar(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 6))
	for _, l := range []int{37, 64} {
		r := ring.Must(l)
		for _, s := range []struct{ m, k, n int }{{64, 300, 600}, {61, 129, 257}, {5, 300, 2000}, {4, 1024, 520}, {200, 64, 96}} {
			a, b := ringtest.Values(r, rng, s.m*s.k), ringtest.Values(r, rng, s.k*s.n)
			for i := 0; i < len(a); i += 7 {
				a[i] = r.Mask()
			}
			want := make([]uint64, s.m*s.n)
			r.MatMul(want, a, s.m, s.k, s.n, b)
			for _, w := range []int{2, 3, 8} {
				got := make([]uint64, s.m*s.n)
				for i := range got {
					got[i] = rng.Uint64()
				}
				matMulPar(r, got, a, s.m, s.k, s.n, b, w)
				if !slices.Equal(got, want) {
					t.Fatalf("l=%d %+v, %d workers: differs from ring.MatMul", l, s, w)
				}
			}
		}
	}
}
