package ring

import (
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestModArithmetic checks Z_n against math/big on random and edge operands, for small moduli and
// for moduli close to 2^64 (where sums and products overflow a word).
func TestModArithmetic(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []uint64{3, 65537, 1<<61 - 1, 18446744073709551557, 1152921504606846883 * 3} {
		r, err := NewMod(n)
		if err != nil {
			t.Fatal(err)
		}
		bn := new(big.Int).SetUint64(n)
		vals := []uint64{0, 1, n - 1, n / 2, n/2 + 1, n - 2}
		for range 200 {
			vals = append(vals, rng.Uint64()%n)
		}
		for _, a := range vals {
			ba := new(big.Int).SetUint64(a)
			s := r.Signed(a)
			if got := r.FromSigned(s); got != a {
				t.Fatalf("n=%d: FromSigned(Signed(%d)) = %d", n, a, got)
			}
			if s > r.MaxSigned() || s < r.MinSigned() {
				t.Fatalf("n=%d: Signed(%d) = %d outside [%d, %d]", n, a, s, r.MinSigned(), r.MaxSigned())
			}
			for _, b := range vals[:20] {
				bb := new(big.Int).SetUint64(b)
				check := func(op string, got uint64, want *big.Int) {
					want.Mod(want, bn)
					if got != want.Uint64() {
						t.Fatalf("n=%d: %d %s %d = %d, want %v", n, a, op, b, got, want)
					}
				}
				check("+", r.Add(a, b), new(big.Int).Add(ba, bb))
				check("-", r.Sub(a, b), new(big.Int).Sub(ba, bb))
				check("*", r.Mul(a, b), new(big.Int).Mul(ba, bb))
			}
		}
		for _, x := range []int64{0, -1, 1, -1 << 63, 1<<63 - 1, -12345} {
			want := new(big.Int).Mod(big.NewInt(x), bn).Uint64()
			if got := r.FromSigned(x); got != want {
				t.Fatalf("n=%d: FromSigned(%d) = %d, want %d", n, x, got, want)
			}
		}
		// MatMul against the scalar definition.
		a, b := make([]uint64, 6), make([]uint64, 6)
		for i := range a {
			a[i], b[i] = vals[i+3], vals[i+9]
		}
		dst := make([]uint64, 4)
		r.MatMul(dst, a, 2, 3, 2, b)
		for i := range 2 {
			for j := range 2 {
				var s uint64
				for k := range 3 {
					s = r.Add(s, r.Mul(a[i*3+k], b[k*2+j]))
				}
				if dst[i*2+j] != s {
					t.Fatalf("n=%d: MatMul[%d,%d] = %d, want %d", n, i, j, dst[i*2+j], s)
				}
			}
		}
	}
}
