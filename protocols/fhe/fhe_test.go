package fhe

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
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

// folded returns the diagonals of the o×cols matrix M for period Q, folded to m (a power of two
// ≥ o dividing Q): entry (r, j) goes to diagonal (j - r) mod m at position (j - d) mod Q, so that
// summing the Q/m blocks of m positions (Folds m, 2m, ..., Q/2) gives M·x at positions r < o.
func folded(M [][]uint64, cols, Q, m int) ([]Diag, []int) {
	byD := map[int][]uint64{}
	var order []int
	for r := range M {
		for j := 0; j < cols; j++ {
			if M[r][j] == 0 {
				continue
			}
			d := ((j-r)%m + m) % m
			i := ((j-d)%Q + Q) % Q
			if byD[d] == nil {
				byD[d] = make([]uint64, Q)
				order = append(order, d)
			}
			byD[d][i] = M[r][j]
		}
	}
	var ds []Diag
	for _, d := range order {
		ds = append(ds, Diag{D: d, V: byD[d]})
	}
	var folds []int
	for f := m; f < Q; f *= 2 {
		folds = append(folds, f)
	}
	return ds, folds
}

// TestLinearSquareLinear evaluates y = B·(A·x + a)² + b on encrypted x, three vectors sharing
// the slots (lanes), and checks every lane's decrypted, CRT-recombined result against the same
// arithmetic mod n, with two CRT components (of 20 bits for 40-bit values, of 31 bits, the
// largest plaintext primes, for 61-bit values); B is applied with folded diagonals. Then the same
// with the plaintext cache: the first evaluation encodes every diagonal, a second one none (same
// result), and with a budget of two plaintexts per component the second encodes all but those two.
func TestLinearSquareLinear(t *testing.T) {
	for _, bits := range []int{40, 61} {
		t.Run(fmt.Sprint(bits, "bits"), func(t *testing.T) { linearSquareLinear(t, bits) })
	}
}

func linearSquareLinear(t *testing.T, bits int) {
	p := testParams(t, bits, 3)
	if len(p.T) != 2 {
		t.Fatalf("%d bits: %d plaintext primes %v, want 2", bits, len(p.T), p.T)
	}
	n := p.Modulus()
	rng := rand.New(rand.NewPCG(1, 2))
	const period, g, stride, lanes = 16, 4, 8, 3
	const k, m, o = 11, 7, 5 // x has k values, A is m×k, B is o×m
	rnd := func() uint64 { return rng.Uint64() % n }
	small := func() uint64 { // small signed values mod n
		v := int64(rng.IntN(201)) - 100
		if v < 0 {
			return n - uint64(-v)
		}
		return uint64(v)
	}
	xs := make([][]uint64, lanes)
	for l := range xs {
		xs[l] = make([]uint64, k)
		for i := range xs[l] {
			xs[l][i] = small()
		}
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
	a, b := make([]uint64, period), make([]uint64, 8)
	for i := 0; i < m; i++ {
		a[i] = rnd()
	}
	for i := 0; i < o; i++ {
		b[i] = rnd()
	}
	cl, err := NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := cl.Keys([]int{stride, g * stride, 8 * stride})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(p, keys, stride)
	if err != nil {
		t.Fatal(err)
	}
	cx, err := cl.Encrypt(xs, period, stride)
	if err != nil {
		t.Fatal(err)
	}
	dA, fA := folded(A, k, period, period)
	dB, fB := folded(B, m, period, 8)
	if len(dB) > 8 || len(fB) != 1 {
		t.Fatalf("B folded to 8: %d diagonals, folds %v", len(dB), fB)
	}
	var h2 *Vector
	eval := func() [][]uint64 {
		t.Helper()
		h, err := ev.Linear(context.Background(), []Term{{X: cx, Diags: dA}}, a, LinearPlan{Period: period, Giant: g, Folds: fA})
		if err != nil {
			t.Fatal(err)
		}
		if h2, err = ev.Mul(h, h); err != nil {
			t.Fatal(err)
		}
		y, err := ev.Linear(context.Background(), []Term{{X: h2, Diags: dB}}, b, LinearPlan{Period: period, Giant: g, Folds: fB})
		if err != nil {
			t.Fatal(err)
		}
		if err := ev.Finish(y); err != nil {
			t.Fatal(err)
		}
		if y.Level() != p.OutLevel {
			t.Errorf("result at level %d, want %d", y.Level(), p.OutLevel)
		}
		got, err := cl.Decrypt(y, o, stride, lanes)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := eval()
	mul := func(a, b uint64) uint64 { return mulMod(a, b, n) }
	for l, x := range xs {
		for i := 0; i < o; i++ {
			want := b[i]
			for j := 0; j < m; j++ {
				hj := a[j]
				for c := 0; c < k; c++ {
					hj = addMod(hj, mul(A[j][c], x[c]), n)
				}
				want = addMod(want, mul(B[i][j], mul(hj, hj)), n)
			}
			if got[l][i] != want {
				t.Errorf("lane %d: y[%d] = %d, want %d", l, i, got[l][i], want)
			}
		}
	}
	products := len(dA) + len(dB)
	if ev.Stats.PlainMuls != products || ev.Stats.Encodes != products {
		t.Errorf("without a cache: %d products, %d encoded; want %d and %d", ev.Stats.PlainMuls, ev.Stats.Encodes, products, products)
	}
	// With the cache: every diagonal encoded once, then none; the same results.
	for k, budget := range []int64{1 << 40, int64(len(p.T)) * 2 * 8 * int64(p.comp[0].N()) * int64(p.MaxLevel()+1)} {
		ev.SetPlainCache(budget)
		for run := 0; run < 2; run++ {
			before := ev.Stats
			again := eval()
			for l := range got {
				if !slices.Equal(again[l], got[l]) {
					t.Errorf("cache budget %d, run %d, lane %d: %v, want %v", budget, run, l, again[l], got[l])
				}
			}
			enc := ev.Stats.Encodes - before.Encodes
			want := products
			if run == 1 {
				want = []int{0, products - 2}[k]
			}
			if enc != want || ev.Stats.PlainMuls-before.PlainMuls != products {
				t.Errorf("cache budget %d, run %d: %d of %d products encoded, want %d", budget, run, enc, ev.Stats.PlainMuls-before.PlainMuls, want)
			}
		}
		if k == 1 && ev.PlainCacheBytes() > budget {
			t.Errorf("the cache holds %d bytes, more than its budget %d", ev.PlainCacheBytes(), budget)
		}
	}
	if _, err := ev.Linear(context.Background(), []Term{{X: h2, Diags: dB}}, b, LinearPlan{Period: period, Giant: g, Folds: []int{2}}); err == nil {
		t.Error("a fold by a rotation with no key: no error")
	}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ev.Linear(cancelled, []Term{{X: h2, Diags: dB}}, b, LinearPlan{Period: period, Giant: g, Folds: fB}); !errors.Is(err, context.Canceled) {
		t.Errorf("a linear map under a cancelled context: %v", err)
	}
	t.Logf("%s: %+v", p, ev.Stats)
}

// TestLinearTermsShareGiantSteps: y = A·x1 + B·x2 on two encrypted vectors at the same level is
// evaluated with giant steps shared by the two terms: the same result as the two maps evaluated
// apart and added, with fewer rotations.
func TestLinearTermsShareGiantSteps(t *testing.T) {
	p := testParams(t, 30, 1)
	n := p.Modulus()
	rng := rand.New(rand.NewPCG(3, 4))
	const period, stride = 64, 1
	mat := func() [][]uint64 {
		M := make([][]uint64, period)
		for i := range M {
			M[i] = make([]uint64, period)
			for j := range M[i] {
				if rng.IntN(3) == 0 {
					M[i][j] = rng.Uint64() % n
				}
			}
		}
		return M
	}
	A, B := mat(), mat()
	x1, x2 := make([]uint64, period), make([]uint64, period)
	for i := range x1 {
		x1[i], x2[i] = rng.Uint64()%n, rng.Uint64()%n
	}
	cl, err := NewClient(p)
	if err != nil {
		t.Fatal(err)
	}
	keys, err := cl.Keys([]int{1, 8})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(p, keys, stride)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := cl.Encrypt([][]uint64{x1}, period, stride)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := cl.Encrypt([][]uint64{x2}, period, stride)
	if err != nil {
		t.Fatal(err)
	}
	dA, _ := folded(A, period, period, period)
	dB, _ := folded(B, period, period, period)
	plan := LinearPlan{Period: period, Giant: 8}
	before := ev.Stats.Rotations
	y, err := ev.Linear(context.Background(), []Term{{X: c1, Diags: dA}, {X: c2, Diags: dB}}, nil, plan)
	if err != nil {
		t.Fatal(err)
	}
	joint := ev.Stats.Rotations - before
	before = ev.Stats.Rotations
	ya, err := ev.Linear(context.Background(), []Term{{X: c1, Diags: dA}}, nil, plan)
	if err != nil {
		t.Fatal(err)
	}
	yb, err := ev.Linear(context.Background(), []Term{{X: c2, Diags: dB}}, nil, plan)
	if err != nil {
		t.Fatal(err)
	}
	apart := ev.Stats.Rotations - before
	got, err := cl.Decrypt(y, period, stride, 1)
	if err != nil {
		t.Fatal(err)
	}
	ga, err := cl.Decrypt(ya, period, stride, 1)
	if err != nil {
		t.Fatal(err)
	}
	gb, err := cl.Decrypt(yb, period, stride, 1)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < period; r++ {
		want := uint64(0)
		for j := 0; j < period; j++ {
			want = addMod(want, addMod(mulMod(A[r][j], x1[j], n), mulMod(B[r][j], x2[j], n), n), n)
		}
		if got[0][r] != want || addMod(ga[0][r], gb[0][r], n) != want {
			t.Fatalf("y[%d] = %d (apart %d + %d), want %d", r, got[0][r], ga[0][r], gb[0][r], want)
		}
	}
	if joint >= apart {
		t.Errorf("two terms: %d rotations together, %d apart", joint, apart)
	}
	t.Logf("two terms of %d and %d diagonals: %d rotations together, %d apart", len(dA), len(dB), joint, apart)
}
