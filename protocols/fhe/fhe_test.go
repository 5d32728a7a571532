package fhe

import (
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/fheparams"
)

func testParams(t *testing.T, bits, depth int) *Params {
	t.Helper()
	c, err := fheparams.Choose(bits, depth)
	if err != nil {
		t.Fatal(err)
	}
	p, err := NewParams(c.LogN, c.T, c.LogQ, c.LogP, fheparams.OutLevel)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestLinearSquareLinear evaluates y = B·(A·x + a)² + b on encrypted x and checks the decrypted,
// CRT-recombined result against the same arithmetic mod n, with two CRT components.
func TestLinearSquareLinear(t *testing.T) {
	p := testParams(t, 40, 3)
	n := p.Modulus()
	rng := rand.New(rand.NewPCG(1, 2))
	const period, g = 16, 4
	const k, m, o = 11, 7, 5 // x has k values, A is m×k, B is o×m
	rnd := func() uint64 { return rng.Uint64() % n }
	small := func() uint64 { // small signed values mod n
		v := int64(rng.IntN(201)) - 100
		if v < 0 {
			return n - uint64(-v)
		}
		return uint64(v)
	}
	x := make([]uint64, k)
	for i := range x {
		x[i] = small()
	}
	A, B := make([][]uint64, m), make([][]uint64, o)
	for i := range A {
		A[i] = make([]uint64, k)
		for j := range A[i] {
			A[i][j] = small()
		}
	}
	for i := range B {
		B[i] = make([]uint64, m)
		for j := range B[i] {
			B[i][j] = rnd()
		}
	}
	a, b := make([]uint64, period), make([]uint64, period)
	for i := 0; i < m; i++ {
		a[i] = rnd()
	}
	for i := 0; i < o; i++ {
		b[i] = rnd()
	}
	diags := func(M [][]uint64, cols int) []Diag {
		var ds []Diag
		for d := 0; d < period; d++ {
			v := make([]uint64, period)
			nz := false
			for i := range M {
				if j := (i + d) % period; j < cols && M[i][j] != 0 {
					v[i], nz = M[i][j], true
				}
			}
			if nz {
				ds = append(ds, Diag{D: d, V: v})
			}
		}
		return ds
	}
	cl, err := NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := cl.Keys([]int{1, g})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(p, keys)
	if err != nil {
		t.Fatal(err)
	}
	cx, err := cl.Encrypt(x, period)
	if err != nil {
		t.Fatal(err)
	}
	h, err := ev.Linear([]Term{{X: cx, Diags: diags(A, k)}}, a, period, g)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := ev.Mul(h, h)
	if err != nil {
		t.Fatal(err)
	}
	y, err := ev.Linear([]Term{{X: h2, Diags: diags(B, m)}}, b, period, g)
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Finish(y); err != nil {
		t.Fatal(err)
	}
	if y.Level() != p.OutLevel {
		t.Errorf("result at level %d, want %d", y.Level(), p.OutLevel)
	}
	got, err := cl.Decrypt(y, o)
	if err != nil {
		t.Fatal(err)
	}
	mul := func(a, b uint64) uint64 { return mulMod(a, b, n) }
	for i := 0; i < o; i++ {
		want := b[i]
		for j := 0; j < m; j++ {
			hj := a[j]
			for l := 0; l < k; l++ {
				hj = addMod(hj, mul(A[j][l], x[l]), n)
			}
			want = addMod(want, mul(B[i][j], mul(hj, hj)), n)
		}
		if got[i] != want {
			t.Errorf("y[%d] = %d, want %d", i, got[i], want)
		}
	}
	t.Logf("%s: %+v", p, ev.Stats)
}
