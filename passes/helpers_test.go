package passes

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// gb builds HLIL graphs for tests.
type gb struct {
	g   *ir.Graph
	rng *rand.Rand
	n   int
}

func newGB(seed uint64, input ir.Shape) *gb {
	g := ir.NewGraph("test")
	g.Inputs = []ir.Value{{Name: "x", DType: ir.Float32, Shape: input}}
	return &gb{g: g, rng: rand.New(rand.NewPCG(seed, seed+1))}
}

// konst adds a random constant with values uniform in [-a, a].
func (b *gb) konst(shape ir.Shape, a float32) string {
	b.n++
	name := "c" + string(rune('a'+b.n%26)) + string(rune('0'+b.n/26))
	t := ir.NewTensor(shape)
	for i := range t.Data {
		t.Data[i] = (2*b.rng.Float32() - 1) * a
	}
	b.g.Consts[name] = t
	return name
}

// konstOf adds a constant with the given values.
func (b *gb) konstOf(shape ir.Shape, v ...float32) string {
	b.n++
	name := "k" + string(rune('a'+b.n%26)) + string(rune('0'+b.n/26))
	b.g.Consts[name] = &ir.Tensor{Shape: shape, Data: v}
	return name
}

func (b *gb) node(op ir.Op, attrs ir.Attrs, in ...string) string {
	b.n++
	out := "v" + string(rune('a'+b.n%26)) + string(rune('0'+b.n/26))
	if attrs == nil {
		attrs = ir.Attrs{}
	}
	b.g.Nodes = append(b.g.Nodes, &ir.Node{Name: string(op) + "_" + out, Op: op, Inputs: in, Outputs: []string{out}, Attrs: attrs})
	return out
}

func (b *gb) done(t testing.TB, outs ...string) *ir.Graph {
	t.Helper()
	b.g.Outputs = outs
	if err := b.g.InferShapes(); err != nil {
		t.Fatal(err)
	}
	return b.g
}

func convAttrs(group int, k, s, p, d []int) ir.Attrs {
	return ir.Attrs{"group": ir.IntAttr(group), "kernel_shape": ir.IntsAttr(k), "strides": ir.IntsAttr(s),
		"pads": ir.IntsAttr(p), "dilations": ir.IntsAttr(d)}
}

func poolAttrs(k, s, p []int, ceil int) ir.Attrs {
	d := make([]int, len(k))
	for i := range d {
		d[i] = 1
	}
	return ir.Attrs{"kernel_shape": ir.IntsAttr(k), "strides": ir.IntsAttr(s), "pads": ir.IntsAttr(p),
		"dilations": ir.IntsAttr(d), "ceil_mode": ir.IntAttr(ceil)}
}

func gemmAttrs(alpha, beta float32, ta, tb int) ir.Attrs {
	return ir.Attrs{"alpha": ir.FloatAttr(alpha), "beta": ir.FloatAttr(beta), "transA": ir.IntAttr(ta), "transB": ir.IntAttr(tb)}
}

func randInput(rng *rand.Rand, shape ir.Shape, a float32) []float32 {
	x := make([]float32, shape.Size())
	for i := range x {
		x[i] = (2*rng.Float32() - 1) * a
	}
	return x
}

// runFloat evaluates g's first output on x.
func runFloat(t testing.TB, g *ir.Graph, x []float32) []float32 {
	t.Helper()
	out, err := interp.Run(g, map[string]*ir.Tensor{g.Inputs[0].Name: {Shape: g.Inputs[0].Shape, Data: x}})
	if err != nil {
		t.Fatal(err)
	}
	return out[g.Outputs[0]].Data
}

// runFixedRaw runs p in the clear on x and returns the first output's signed ring values and scale.
func runFixedRaw(t testing.TB, p *fixed.Program, x []float32) ([]int64, int) {
	t.Helper()
	r := ring.Must(p.Bits)
	c, err := cleartext.New(r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := vm.New(p, c)
	if err != nil {
		t.Fatal(err)
	}
	in := p.Tensors[p.Inputs[0].Tensor]
	enc, err := r.EncodeTensor(in.Shape, x, in.Scale)
	if err != nil {
		t.Fatal(err)
	}
	outs, err := m.Run(context.Background(), []ring.Tensor{enc})
	if err != nil {
		t.Fatal(err)
	}
	v := make([]int64, len(outs[0].Value.Data))
	for i, e := range outs[0].Value.Data {
		v[i] = r.Signed(e)
	}
	return v, outs[0].Scale
}

// runFixed runs p in the clear and decodes the first output.
func runFixed(t testing.TB, p *fixed.Program, x []float32) []float32 {
	raw, scale := runFixedRaw(t, p, x)
	out := make([]float32, len(raw))
	for i, v := range raw {
		out[i] = float32(math.Ldexp(float64(v), -scale))
	}
	return out
}

func maxAbsDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = math.Max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// clean runs the clean table on a copy of g through the driver, checked after every pass, and
// returns the cleaned graph and the passes' log lines.
func clean(g *ir.Graph, keepSoftmax bool) (*ir.Graph, []string, error) {
	st, rep, err := drive(&cleanTable, g, Options{Scale: -1, KeepSoftmax: keepSoftmax, Check: true})
	if err != nil {
		return nil, nil, err
	}
	var log []string
	for _, r := range rep.Passes {
		log = append(log, r.Log...)
	}
	return st.g, log, nil
}

// build runs the build table (lower, then the peepholes unless peephole is false) on a cleaned
// graph through the driver, checked after every pass.
func build(g *ir.Graph, bits, scale int, peephole bool) (*fixed.Program, error) {
	opts := Options{Bits: bits, Scale: scale, Check: true}
	if !peephole {
		opts.Disable = []string{"peephole-*"}
	}
	st, _, err := drive(&buildTable, g, opts)
	if err != nil {
		return nil, err
	}
	return st.p, nil
}

// peephole runs the peephole table through the driver on a copy of p, checked after every pass.
func peephole(p *fixed.Program) (*fixed.Program, PeepholeReport, error) {
	d, err := newDriver(&peepholeTable, Options{Scale: -1, Check: true})
	if err != nil {
		return nil, PeepholeReport{}, err
	}
	q := p.Clone()
	st := &state{opts: &d.opts, p: q, peep: PeepholeReport{Before: tally(q), After: tally(q)}}
	if err := d.run(&peepholeTable, st, true); err != nil {
		return nil, st.peep, err
	}
	return q, st.peep, nil
}

// defaultTuneOptions are the options the autotune pass gets from DefaultOptions.
func defaultTuneOptions() tuneOptions {
	return tuneOptions{Scale: -1, Headroom: 1, Workers: 2}
}

// tuneGraph runs autotune on a cleaned graph g with the build table (peepholes on) as its builder.
func tuneGraph(g, ref *ir.Graph, samples []dataset.Sample, opts tuneOptions) (*TuneResult, error) {
	return autotune(g, ref, samples, opts, func(bits, scale int, _ bool) (*fixed.Program, error) {
		return build(g, bits, scale, true)
	})
}
