package passes

import (
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
)

// hardSigmoid is ONNX's HardSigmoid(x) = max(0, min(1, αx + β)) as the importer writes it:
// Clip(Add(Mul(x, α), β), 0, 1).
func (b *gb) hardSigmoid(x string, alpha, beta float32) string {
	m := b.node(ir.Mul, nil, x, b.konstOf(ir.Shape{}, alpha))
	a := b.node(ir.Add, nil, m, b.konstOf(ir.Shape{}, beta))
	return b.node(ir.Clip, ir.Attrs{"min": ir.FloatAttr(0), "max": ir.FloatAttr(1)}, a)
}

// hardSwish is x·HardSigmoid(x) with α = 1/6, β = 1/2, a product of two runtime tensors.
func (b *gb) hardSwish(x string) string {
	return b.node(ir.Mul, nil, x, b.hardSigmoid(x, 1.0/6, 0.5))
}

func mulLowerCases() []lowerCase {
	return []lowerCase{
		{"mul tensors", ir.Shape{1, 3, 4}, func(b *gb) string { return b.node(ir.Mul, nil, "x", b.node(ir.Relu, nil, "x")) }},
		{"mul square", ir.Shape{12}, func(b *gb) string { return b.node(ir.Mul, nil, "x", "x") }},
		{"mul broadcast both", ir.Shape{3, 1}, func(b *gb) string {
			t := b.node(ir.Transpose, ir.Attrs{"perm": ir.IntsAttr([]int{1, 0})}, "x")
			return b.node(ir.Mul, nil, b.node(ir.Relu, nil, t), "x")
		}},
		{"matmul tensors", ir.Shape{3, 4}, func(b *gb) string {
			return b.node(ir.MatMul, nil, "x", b.node(ir.Transpose, ir.Attrs{"perm": ir.IntsAttr([]int{1, 0})}, "x"))
		}},
		{"batched matmul tensors", ir.Shape{2, 3, 4}, func(b *gb) string {
			y := b.node(ir.Relu, nil, b.node(ir.Transpose, ir.Attrs{"perm": ir.IntsAttr([]int{0, 2, 1})}, "x"))
			return b.node(ir.MatMul, nil, "x", y)
		}},
		{"hardsigmoid", ir.Shape{40}, func(b *gb) string { return b.hardSigmoid("x", 0.2, 0.5) }},
		{"hardswish", ir.Shape{40}, func(b *gb) string { return b.hardSwish("x") }},
		{"squeeze excitation", ir.Shape{1, 4, 3, 3}, func(b *gb) string {
			g := b.node(ir.GlobalAveragePool, nil, "x")
			c1 := b.node(ir.Conv, convAttrs(1, []int{1, 1}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}), g,
				b.konst(ir.Shape{2, 4, 1, 1}, 1), b.konst(ir.Shape{2}, 0.5))
			r := b.node(ir.Relu, nil, c1)
			c2 := b.node(ir.Conv, convAttrs(1, []int{1, 1}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}), r,
				b.konst(ir.Shape{4, 2, 1, 1}, 1), b.konst(ir.Shape{4}, 0.5))
			return b.node(ir.Mul, nil, b.hardSigmoid(c2, 0.2, 0.5), b.hardSwish("x"))
		}},
	}
}

func TestLowerMulMatchesFloat(t *testing.T) {
	const scale = 14
	for _, c := range mulLowerCases() {
		t.Run(c.name, func(t *testing.T) {
			b := newGB(31, c.input)
			g := b.done(t, c.build(b))
			cg, _, err := clean(g, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, peep := range []bool{false, true} {
				p, err := build(cg, 64, scale, peep)
				if err != nil {
					t.Fatal(err)
				}
				if c.name != "hardsigmoid" && tally(p).Mul == 0 {
					t.Fatalf("no mul instruction in\n%s", programText(t, p))
				}
				rng := rand.New(rand.NewPCG(6, 6))
				for i := 0; i < 4; i++ {
					x := randInput(rng, c.input, 4)
					want := runFloat(t, g, x)
					got := runFixed(t, p, x)
					if d := maxAbsDiff(got, want); d > 0.01 {
						t.Errorf("peephole=%v: fixed-point output differs from float by %g\nfixed %v\nfloat %v", peep, d, got, want)
					}
				}
			}
		})
	}
}

func programText(t *testing.T, p *fixed.Program) string {
	t.Helper()
	var b []byte
	w := &sliceWriter{b: &b}
	if err := p.WriteText(w); err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type sliceWriter struct{ b *[]byte }

func (w *sliceWriter) Write(p []byte) (int, error) { *w.b = append(*w.b, p...); return len(p), nil }

// TestLowerHardSwishExact checks the lowering of HardSwish against its fixed-point definition
// computed here on the encoded integers, bit for bit: x at scale s, α at s, β at 2s (added to the
// product), u = x·α + β, t = floor(u / 2^s), h = ReLU(t) − ReLU(t − 2^s) (Clip(0, 1) by ReLUs),
// y = floor(x·h / 2^s).
func TestLowerHardSwishExact(t *testing.T) {
	const s, bits = 8, 32
	b := newGB(32, ir.Shape{200})
	g := b.done(t, b.hardSwish("x"))
	cg, _, err := clean(g, false)
	if err != nil {
		t.Fatal(err)
	}
	r := ring.Must(bits)
	alpha := int64(43) // round(2^8 / 6)
	beta := int64(1) << (2*s - 1)
	relu := func(v int64) int64 { return max(v, 0) }
	rng := rand.New(rand.NewPCG(7, 7))
	x := randInput(rng, ir.Shape{200}, 5)
	x[0], x[1], x[2], x[3] = 0, -3, 3, -0.001 // the knees and the smallest negative input
	enc, err := r.EncodeTensor(ir.Shape{200}, x, s)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int64, len(x))
	for i, e := range enc.Data {
		xi := r.Signed(e)
		tt := (xi*alpha + beta) >> s
		h := relu(tt) - relu(tt-1<<s)
		want[i] = (xi * h) >> s
	}
	for _, peep := range []bool{false, true} {
		p, err := build(cg, bits, s, peep)
		if err != nil {
			t.Fatal(err)
		}
		got, sc := runFixedRaw(t, p, x)
		if sc != s || !equalInts(got, want) {
			t.Fatalf("peephole=%v: scale %d\ngot  %v\nwant %v\n%s", peep, sc, got, want, programText(t, p))
		}
	}
}

// TestAutotuneTracksProduct checks that the autotuner sizes the ring by the product of two runtime
// tensors (at scale 2s, far above its inputs and its truncated output).
func TestAutotuneTracksProduct(t *testing.T) {
	b := newGB(33, ir.Shape{1, 6})
	g := b.done(t, b.node(ir.Mul, nil, "x", "x"))
	cg, _, err := clean(g, false)
	if err != nil {
		t.Fatal(err)
	}
	samples := tuneSamples(t, g, 8, false)
	opts := defaultTuneOptions()
	const s = 10
	opts.Scales = []int{s}
	res, err := tuneGraph(cg, g, samples, opts)
	if err != nil {
		t.Fatal(err)
	}
	r := ring.Must(64)
	var most uint64
	for _, smp := range samples {
		for _, v := range smp.Input {
			e, err := r.Encode(float64(v), s)
			if err != nil {
				t.Fatal(err)
			}
			xi := r.Signed(e)
			most = max(most, uint64(xi*xi))
		}
	}
	if len(res.Rows) != 1 {
		t.Fatalf("rows %+v", res.Rows)
	}
	if got, want := res.Rows[0].BitsUsed, bitsOfMagnitude(most)+1; got != want { // plus the sign bit
		t.Fatalf("bits used %d (widest %s), the product needs %d", got, res.Rows[0].Widest, want)
	}
}

// TestMulNonNegative: the product of two non-negative tensors is non-negative (its truncation is
// marked for the cheaper protocol); a product with a signed operand is not.
func TestMulNonNegative(t *testing.T) {
	b := newGB(34, ir.Shape{1, 6})
	r := b.node(ir.Relu, nil, "x")
	pos := b.node(ir.Mul, nil, r, b.node(ir.Relu, nil, b.node(ir.Mul, nil, "x", b.konst(ir.Shape{6}, 1))))
	g := b.done(t, pos, b.node(ir.Mul, nil, r, "x"))
	p, err := build(g, 32, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	nn := nonNegative(p)
	var muls []bool
	for _, in := range p.Instrs {
		if in.Op == fixed.OpMul {
			muls = append(muls, nn[in.Out])
		}
	}
	if len(muls) != 2 || !muls[0] || muls[1] {
		t.Fatalf("non-negative products %v, want [true false]\n%s", muls, programText(t, p))
	}
}
