package nonlinear

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/linear"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// mathPair is a nonlinear pair plus linear sessions on the same streams (the Multiplier).
type mathPair struct {
	*pair
	l0, l1 *linear.Session
}

func newMathPair(t testing.TB, src otSource, l int) *mathPair {
	t.Helper()
	p := &mathPair{pair: newPairOn(t, src, l, Options{}, 1)}
	ctx := context.Background()
	testenv.MustBoth(t, func() (err error) { p.l0, err = linear.New(ctx, p.r, linear.Options{}, p.ots.ots(0)...); return },
		func() (err error) { p.l1, err = linear.New(ctx, p.r, linear.Options{}, p.ots.ots(1)...); return })
	return p
}

// mathInputs are edge values, every input of a window around 0 (where the functions change
// fastest, and the clamps and thresholds), powers of two and neighbours, and random values.
func mathInputs(r ring.Ring, rng *rand.Rand, s, n int) []uint64 {
	v := edgeValues(r)
	for x := int64(-3 << s); x <= 3<<s; x += 1 << max(0, s-5) {
		v = append(v, r.FromSigned(x))
	}
	for k := 0; k < r.Bits-1; k++ {
		b := int64(1) << k
		v = append(v, r.FromSigned(b), r.FromSigned(b-1), r.FromSigned(b+1), r.FromSigned(-b), r.FromSigned(r.MinSigned()+b))
	}
	for len(v) < n {
		switch len(v) % 3 {
		case 0:
			v = append(v, r.Reduce(rng.Uint64()))
		case 1:
			v = append(v, r.FromSigned(rng.Int64N(40<<s)-20<<s))
		default:
			v = append(v, r.FromSigned(rng.Int64N(int64(1)<<min(62, r.Bits-1))))
		}
	}
	return v[:n]
}

func runMath(t testing.TB, p *mathPair, f fxmath.Func, s int, x0, x1 []uint64) []uint64 {
	t.Helper()
	y0, y1 := make([]uint64, len(x0)), make([]uint64, len(x0))
	ctx := context.Background()
	testenv.MustBoth(t, func() error { return p.s0.Math(ctx, p.l0, f, y0, x0, s) },
		func() error { return p.s1.Math(ctx, p.l1, f, y1, x1, s) })
	out := make([]uint64, len(y0))
	for i := range out {
		out[i] = p.r.Add(y0[i], y1[i])
	}
	return out
}

// TestMathMatchesClear runs every math function two-party (on IKNP and Ferret) on random and
// edge values, shared with wrap-stressing patterns, and checks the result bit for bit against
// fxmath's cleartext definition.
func TestMathMatchesClear(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, tc := range []struct {
		src  otSource
		l, s int
	}{{iknpSrc, 32, 12}, {iknpSrc, 20, 6}, {iknpSrc, 64, 12}, {ferretSrc, 32, 12}} {
		p := newMathPair(t, tc.src, tc.l)
		fp, err := fxmath.NewParams(tc.l, tc.s)
		if err != nil {
			t.Fatal(err)
		}
		x := mathInputs(p.r, rng, tc.s, 1500)
		x0, x1 := shareWrapping(p.r, rng, x)
		for _, f := range fxmath.Funcs() {
			got := runMath(t, p, f, tc.s, x0, x1)
			want := make([]uint64, len(x))
			if err := fp.EvalClear(f, want, x); err != nil {
				t.Fatal(err)
			}
			bad := 0
			for i := range want {
				if got[i] != want[i] {
					if bad++; bad <= 5 {
						t.Errorf("%s %s l=%d s=%d: f(%d) = %d, cleartext %d", tc.src.name, f, tc.l, tc.s,
							p.r.Signed(x[i]), p.r.Signed(got[i]), p.r.Signed(want[i]))
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s %s l=%d: %d of %d differ", tc.src.name, f, tc.l, bad, len(x))
			}
		}
	}
}

// TestCommunicationMath asserts each function's traffic (IKNP, l = 32, s = 12, m = 4) against
// MathCost plus linear.MulBits for its products.
func TestCommunicationMath(t *testing.T) {
	const n = 4096
	rng := rand.New(rand.NewPCG(23, 24))
	p := newMathPair(t, iknpSrc, 32)
	x := mathInputs(p.r, rng, 12, n)
	x0, x1 := share(p.r, rng, x)
	for _, f := range fxmath.Funcs() {
		c, muls, err := p.s0.Plan().MathCost(f, 32, 12)
		if err != nil {
			t.Fatal(err)
		}
		formula := c.Bits + muls*int(linear.MulBits(1, 32))
		before := p.stats()
		runMath(t, p, f, 12, x0, x1)
		d := p.stats().Sub(before)
		bits := 8 * float64(d.BytesSent) / n
		t.Logf("%s: measured %.1f bits/elt (%.0f bytes), formula %d = %d + %d products × %d; %d flights",
			f, bits, bits/8, formula, c.Bits, muls, linear.MulBits(1, 32), d.Rounds)
		if bits < float64(formula) || bits > float64(formula)*1.005 {
			t.Errorf("%s: measured %.1f bits per element, formula %d", f, bits, formula)
		}
	}
}

// TestLUT checks LUT against the tables on random shares, several tables in one batch.
func TestLUT(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	p := newPair(t, 32, Options{}, 1)
	const per, bits = 300, 5
	tables := make([][]uint64, 3)
	for g := range tables {
		tables[g] = make([]uint64, 1<<bits)
		for i := range tables[g] {
			tables[g][i] = p.r.Reduce(rng.Uint64())
		}
	}
	idx := make([]uint64, 3*per)
	for i := range idx {
		idx[i] = p.r.Reduce(rng.Uint64())
	}
	i0, i1 := share(p.r, rng, idx)
	d0, d1 := make([]uint64, len(idx)), make([]uint64, len(idx))
	ctx := context.Background()
	testenv.MustBoth(t, func() error { return p.s0.LUT(ctx, d0, i0, bits, tables) },
		func() error { return p.s1.LUT(ctx, d1, i1, bits, tables) })
	for i := range idx {
		if got, want := p.r.Add(d0[i], d1[i]), tables[i/per][idx[i]%(1<<bits)]; got != want {
			t.Fatalf("lookup %d: %d, want %d", i, got, want)
		}
	}
	if err := p.s0.LUT(ctx, d0, i0, 9, tables); err == nil {
		t.Error("9-bit index accepted")
	}
	if err := p.s0.LUT(ctx, d0[:1], i0, bits, tables); err == nil {
		t.Error("length mismatch accepted")
	}
}

// TestMathErrors: argument errors are reported before anything is sent.
func TestMathErrors(t *testing.T) {
	p := newMathPair(t, iknpSrc, 32)
	ctx := context.Background()
	x := make([]uint64, 4)
	if err := p.s0.Math(ctx, p.l0, fxmath.Sigmoid, x, x, 14); err == nil {
		t.Error("scale 14 in Z_2^32 accepted")
	}
	if err := p.s0.Math(ctx, nil, fxmath.Sigmoid, x, x, 12); err == nil {
		t.Error("nil multiplier accepted")
	}
	if err := p.s0.Math(ctx, p.l0, fxmath.Func(99), x, x, 12); err == nil {
		t.Error("unknown function accepted")
	}
	if p.s0.Err() != nil {
		t.Errorf("argument errors made the session unusable: %v", p.s0.Err())
	}
}
