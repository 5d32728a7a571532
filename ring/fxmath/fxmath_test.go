package fxmath

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ring"
)

// reference is the float64 function each Func approximates, on real inputs.
func reference(f Func, x float64) float64 {
	switch f {
	case Exp:
		return math.Exp(min(x, 0))
	case Sigmoid:
		return 1 / (1 + math.Exp(-x))
	case Tanh:
		return math.Tanh(x)
	case Recip:
		return 1 / max(x, 1)
	case Rsqrt:
		return 1 / math.Sqrt(max(x, 1))
	case Log:
		return math.Log(max(x, 1))
	}
	panic("unknown function")
}

// sweep is the set of inputs the error is measured on: every input where the function is not
// constant for Exp, Sigmoid and Tanh; for Recip and Rsqrt every input of each octave of x ≥ 1 with
// at most 2^18 values, and a uniform grid of 2^18 points of the larger octaves.
func sweep(p *Params, f Func) (chunks [][]int64, desc string) {
	switch f {
	case Exp, Sigmoid, Tanh:
		lim := int64(p.Exp.Clamp) + 1<<p.S
		if f == Tanh {
			lim = int64(p.Exp2.Clamp) + 1<<p.S
		}
		lo := -lim
		hi := int64(1 << p.S)
		if f != Exp {
			hi = lim
		}
		var v []int64
		for x := lo; x <= hi; x++ {
			v = append(v, x)
		}
		if f == Exp {
			desc = fmt.Sprintf("every x in [−%d, %d] (below, the result is 0)", lim, hi)
		} else {
			desc = fmt.Sprintf("every x in [−%d, %d] (beyond, constant)", lim, hi)
		}
		return [][]int64{v}, desc
	}
	top := p.E
	if f == Rsqrt && p.E%2 == 0 || f == Log {
		top-- // the top octave is taken as x = 2^E (TestRsqrtTopOctave, TestLogTopOctave)
	}
	for q := 0; q <= top; q++ {
		lo := int64(1) << (p.S + q)
		step := max(int64(1), lo>>18)
		var v []int64
		for x := lo; x < 2*lo; x += step {
			v = append(v, x)
		}
		chunks = append(chunks, v)
	}
	return chunks, fmt.Sprintf("x in [2^%d, 2^%d): every input below 2^19, then 2^18 evenly spaced per octave", p.S, p.S+top+1)
}

type errStats struct {
	max, sum float64
	n        int
	worst    int64
}

func measure(t testing.TB, p *Params, f Func) (errStats, string) {
	t.Helper()
	r := ring.Must(p.L)
	chunks, desc := sweep(p, f)
	var st errStats
	for _, xs := range chunks {
		x := make([]uint64, len(xs))
		for i, v := range xs {
			x[i] = r.FromSigned(v)
		}
		y := make([]uint64, len(x))
		if err := p.Eval(context.Background(), Clear{R: r, Strict: true}, f, y, x); err != nil {
			t.Fatalf("%s l=%d s=%d: %v", f, p.L, p.S, err)
		}
		sc := math.Ldexp(1, p.S)
		for i, v := range xs {
			want := reference(f, float64(v)/sc) * sc
			e := math.Abs(float64(r.Signed(y[i])) - want)
			st.sum += e
			st.n++
			if e > st.max {
				st.max, st.worst = e, v
			}
		}
	}
	return st, desc
}

// TestULP measures the maximum and mean error, in units of 2^−s, against float64 at the
// project's default l = 32, s = 12 and at other rings, running every step strictly (a promised
// non-negative truncation operand that is negative fails the test).
func TestULP(t *testing.T) {
	bounds := map[Func]float64{Exp: 1.5, Sigmoid: 1.5, Tanh: 3, Recip: 2, Rsqrt: 3, Log: 1.5}
	var table strings.Builder
	for _, ls := range [][2]int{{32, 12}, {20, 6}, {40, 16}, {64, 12}} {
		p, err := NewParams(ls[0], ls[1])
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range Funcs() {
			if testing.Short() && ls != [2]int{32, 12} {
				continue
			}
			st, desc := measure(t, p, f)
			fmt.Fprintf(&table, "| %s | %d | %d | %.3f | %.4f | %d | %s |\n", f, p.L, p.S, st.max, st.sum/float64(st.n), st.n, desc)
			if st.max > bounds[f] {
				t.Errorf("%s l=%d s=%d: max error %.3f ULP at x=%d exceeds %.1f", f, p.L, p.S, st.max, st.worst, bounds[f])
			}
		}
	}
	t.Logf("\n| function | l | s | max ULP | mean ULP | inputs | swept |\n|---|---|---|---|---|---|---|\n%s", table.String())
}

// TestEdges runs every function strictly on the ring's extreme and special values.
func TestEdges(t *testing.T) {
	for _, ls := range [][2]int{{32, 12}, {17, 6}, {64, 12}, {64, 29}, {7, 1}} {
		p, err := NewParams(ls[0], ls[1])
		if err != nil {
			t.Fatal(err)
		}
		r := ring.Must(p.L)
		var x []uint64
		for _, v := range []int64{r.MinSigned(), r.MinSigned() + 1, r.MaxSigned(), r.MaxSigned() - 1, 0, 1, -1} {
			x = append(x, r.FromSigned(v))
		}
		for k := 0; k < p.L-1; k++ {
			v := int64(1) << k
			x = append(x, r.FromSigned(v), r.FromSigned(v-1), r.FromSigned(-v), r.FromSigned(-v+1),
				r.FromSigned(r.MinSigned()+v))
		}
		y := make([]uint64, len(x))
		for _, f := range Funcs() {
			if err := p.Eval(context.Background(), Clear{R: r, Strict: true}, f, y, x); err != nil {
				t.Errorf("l=%d s=%d: %v", p.L, p.S, err)
			}
		}
	}
}

// TestSymmetry checks σ(x) + σ(−x) = 1 and tanh(−x) = −tanh(x) exactly.
func TestSymmetry(t *testing.T) {
	p, _ := NewParams(32, 12)
	r := ring.Must(32)
	var x, nx []uint64
	for v := int64(-70000); v <= 70000; v += 7 {
		x, nx = append(x, r.FromSigned(v)), append(nx, r.FromSigned(-v))
	}
	a, b := make([]uint64, len(x)), make([]uint64, len(x))
	_ = p.EvalClear(Sigmoid, a, x)
	_ = p.EvalClear(Sigmoid, b, nx)
	for i := range a {
		if r.Add(a[i], b[i]) != 1<<12 {
			t.Fatalf("σ(%d) + σ(−%d) = %d", r.Signed(x[i]), r.Signed(x[i]), r.Add(a[i], b[i]))
		}
	}
	_ = p.EvalClear(Tanh, a, x)
	_ = p.EvalClear(Tanh, b, nx)
	for i := range a {
		if r.Add(a[i], b[i]) != 0 {
			t.Fatalf("tanh(%d) + tanh(−%d) = %d", r.Signed(x[i]), r.Signed(x[i]), r.Signed(r.Add(a[i], b[i])))
		}
	}
}

// TestTablesFarFromTies checks that every exp table entry, before rounding, is at least 2^−20
// away from a tie, so a last-bit difference of math.Exp between platforms cannot change it (the
// reciprocal tables use only correctly rounded division and square root).
func TestTablesFarFromTies(t *testing.T) {
	for l := 7; l <= 64; l++ {
		for s := 1; MinBits(s) <= l; s++ {
			p, err := NewParams(l, s)
			if err != nil {
				t.Fatal(err)
			}
			for _, ep := range []ExpParams{p.Exp, p.Exp2} {
				for j := 0; j < ep.Digits; j++ {
					for v := 0; v < 1<<ep.DigitBits; v++ {
						z := float64(uint64(v) << (j * ep.DigitBits))
						y := math.Exp(-z/math.Ldexp(1, ep.In)) * math.Ldexp(1, p.T)
						if f := y - math.Floor(y); math.Abs(f-0.5) < 1.0/(1<<20) && y > 0.25 {
							t.Errorf("l=%d s=%d: exp table entry %g is %g from a tie", l, s, y, math.Abs(f-0.5))
						}
					}
				}
			}
		}
	}
}

func TestParamsErrors(t *testing.T) {
	for _, ls := range [][2]int{{28, 12}, {32, 0}, {65, 12}} {
		if _, err := NewParams(ls[0], ls[1]); err == nil {
			t.Errorf("l=%d s=%d accepted", ls[0], ls[1])
		}
	}
}

// TestRsqrtTopOctave: when l − 2 − s is even, rsqrt takes the top octave [2^(l−2−s), 2^(l−1−s))
// as its lower end; the error there stays below 0.3 of the result.
func TestRsqrtTopOctave(t *testing.T) {
	p, _ := NewParams(32, 12)
	r := ring.Must(32)
	lo := int64(1) << (p.S + p.E)
	var x []uint64
	for v := lo; v < 2*lo; v += lo >> 12 {
		x = append(x, r.FromSigned(v))
	}
	y := make([]uint64, len(x))
	if err := p.EvalClear(Rsqrt, y, x); err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		want := 1 / math.Sqrt(float64(v)/4096) * 4096
		if e := math.Abs(float64(y[i]) - want); e > 0.3*want+1 {
			t.Fatalf("rsqrt(%d) = %d, want %.2f", v, y[i], want)
		}
	}
}

// TestLogTopOctave: log takes the top octave [2^(l−2−s), 2^(l−1−s)) as its lower end, so its
// error there is below ln 2 (and the input −2^(l−1), which clamping maps to 2^(l−1), is defined).
func TestLogTopOctave(t *testing.T) {
	p, _ := NewParams(32, 12)
	r := ring.Must(32)
	lo := int64(1) << (p.S + p.E)
	var x []uint64
	for v := lo; v < 2*lo; v += lo >> 12 {
		x = append(x, r.FromSigned(v))
	}
	y := make([]uint64, len(x))
	if err := p.Eval(context.Background(), Clear{R: r, Strict: true}, Log, y, x); err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		want := math.Log(float64(v)/4096) * 4096
		if e := math.Abs(float64(y[i]) - want); e > math.Ln2*4096+2 {
			t.Fatalf("log(%d) = %d, want %.2f", v, y[i], want)
		}
	}
}
