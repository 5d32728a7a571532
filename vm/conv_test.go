package vm

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// nativeConv is the cleartext backend plus a convolution of its own: a direct loop over the
// definition in ring.ConvGeom, independent of the Machine's im2col lowering. use decides per geometry.
type nativeConv struct {
	*cleartext.Backend
	use   func(ring.ConvGeom) bool
	calls []ring.ConvGeom
}

func (b *nativeConv) UseConv2D(g ring.ConvGeom, _ fixed.Engine) bool { return b.use(g) }

func (b *nativeConv) Conv2D(_ context.Context, _ fixed.Engine, dst ring.Tensor, w *ring.Tensor, x ring.Tensor, g ring.ConvGeom) error {
	if err := g.Validate(); err != nil {
		return err
	}
	cg, mg := g.C/g.Groups, g.M/g.Groups
	switch {
	case len(x.Data) != g.N*g.C*g.H*g.W:
		return fmt.Errorf("input has %d elements", len(x.Data))
	case len(dst.Data) != g.N*g.M*g.OH*g.OW:
		return fmt.Errorf("result has %d elements", len(dst.Data))
	case w == nil || len(w.Data) != g.M*cg*g.KH*g.KW:
		return fmt.Errorf("bad weights")
	}
	b.calls = append(b.calls, g)
	r := b.Ring()
	for n := 0; n < g.N; n++ {
		for m := 0; m < g.M; m++ {
			grp := m / mg
			for oy := 0; oy < g.OH; oy++ {
				for ox := 0; ox < g.OW; ox++ {
					var s uint64
					for c := 0; c < cg; c++ {
						for ky := 0; ky < g.KH; ky++ {
							iy := oy*g.SH - g.PH + ky*g.DH
							for kx := 0; kx < g.KW; kx++ {
								ix := ox*g.SW - g.PW + kx*g.DW
								if iy < 0 || iy >= g.H || ix < 0 || ix >= g.W {
									continue
								}
								s += w.Data[((m*cg+c)*g.KH+ky)*g.KW+kx] * x.Data[((n*g.C+grp*cg+c)*g.H+iy)*g.W+ix]
							}
						}
					}
					dst.Data[((n*g.M+m)*g.OH+oy)*g.OW+ox] = r.Reduce(s)
				}
			}
		}
	}
	return nil
}

// convCase is one convolution: input shape, output channels, group, window.
type convCase struct {
	xs    ir.Shape
	m     int
	group int
	wn    ir.Window
}

func (c convCase) weightShape() ir.Shape {
	ws := ir.Shape{c.m, c.xs[1] / c.group}
	return append(ws, c.wn.Kernel...)
}

// randomConvCase draws a convolution with random batch (1–2), channels, groups (including
// depthwise), kernel, strides, dilations and asymmetric padding, 1-D or 2-D.
func randomConvCase(rng *rand.Rand) convCase {
	dims := 1 + rng.IntN(2)
	if rng.IntN(4) == 0 {
		dims = 1
	}
	group := 1 + rng.IntN(3)
	cg := 1 + rng.IntN(3)
	c := convCase{xs: ir.Shape{1 + rng.IntN(2), group * cg}, m: group * (1 + rng.IntN(3)), group: group}
	var kernel, strides, dil, begin, end []int
	for d := 0; d < dims; d++ {
		size := 1 + rng.IntN(9)
		k := 1 + rng.IntN(min(4, size))
		dl := 1
		if rng.IntN(3) == 0 && 2*(k-1)+1 <= size+2 {
			dl = 2
		}
		c.xs = append(c.xs, size)
		kernel, strides, dil = append(kernel, k), append(strides, 1+rng.IntN(3)), append(dil, dl)
		begin, end = append(begin, rng.IntN(k+1)), append(end, rng.IntN(k+1))
		if span := (k-1)*dl + 1; size+begin[d]+end[d] < span {
			end[d] = span - size - begin[d]
		}
	}
	c.wn = win(kernel, strides, append(begin, end...), dil, false)
	return c
}

// convProgram builds a program of one or two convolutions of c (the second, when twice, a 1×1
// convolution of the first's output) and returns it with its random input.
func convProgram(t *testing.T, rng *rand.Rand, c convCase, bits int, twice bool) (*fixed.Program, []int64) {
	t.Helper()
	b := newBuilder(t, bits, 0)
	x := b.input(c.xs, 0)
	ws := c.weightShape()
	w := b.weight(ws, 0, randInts(rng, ws.Size(), -1<<20, 1<<20)...)
	y := b.op(&fixed.Instr{Op: fixed.OpConv, In: []int{x}, Weight: w, Group: c.group, Win: c.wn})
	if twice {
		ys := b.p.Tensors[y].Shape
		ones := make([]int, len(ys)-2)
		for i := range ones {
			ones[i] = 1
		}
		zeros := make([]int, 2*len(ones))
		w2s := append(ir.Shape{3, ys[1]}, ones...)
		w2 := b.weight(w2s, 0, randInts(rng, w2s.Size(), -1<<20, 1<<20)...)
		y = b.op(&fixed.Instr{Op: fixed.OpConv, In: []int{y}, Weight: w2, Group: 1, Win: win(ones, ones, zeros, ones, false)})
	}
	b.output(y)
	// Inputs of full ring width, so that products and sums wrap.
	return b.p, randInts(rng, c.xs.Size(), -1<<61, 1<<61)
}

func runOn(t *testing.T, p *fixed.Program, be Backend, in []int64) []uint64 {
	t.Helper()
	m, err := New(p, be)
	if err != nil {
		t.Fatal(err)
	}
	r := be.Ring()
	outs, err := m.Run(context.Background(), []ring.Tensor{r.SignedTensor(p.Tensors[p.Inputs[0].Tensor].Shape, in...)})
	if err != nil {
		t.Fatal(err)
	}
	return outs[0].Value.Data
}

// TestConvBackendMatchesIm2col runs random convolutions through the Machine's im2col lowering
// (Clear) and through ConvBackend.Conv2D (a direct loop), alone and mixed with im2col layers in one
// program: the results must be equal bitwise.
func TestConvBackendMatchesIm2col(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for i := 0; i < 60; i++ {
		c := randomConvCase(rng)
		bits := []int{8, 32, 41, 64}[i%4]
		r := ring.Must(bits)
		p, in := convProgram(t, rng, c, bits, i%3 == 0)
		clear, _ := cleartext.New(r)
		want := runOn(t, p, clear, in)
		for _, mode := range []string{"all", "spatial-only"} {
			nb := &nativeConv{Backend: clear, use: func(g ring.ConvGeom) bool { return mode == "all" || g.KH*g.KW > 1 }}
			got := runOn(t, p, nb, in)
			if !slices.Equal(got, want) {
				t.Fatalf("case %d %+v (l=%d, %s): Conv2D path differs from im2col", i, c, bits, mode)
			}
			if len(nb.calls) == 0 && (mode == "all" || c.wn.Kernel[0]*c.wn.Kernel[len(c.wn.Kernel)-1] > 1) {
				t.Fatalf("case %d (%s): Conv2D never called", i, mode)
			}
		}
	}
}

// TestConvGeomFromProgram checks the geometry the Machine hands to Conv2D for a 2-D and a 1-D
// convolution, and that it asks UseConv2D once per convolution at New, not per run.
func TestConvGeomFromProgram(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	r := ring.Must(16)
	clear, _ := cleartext.New(r)
	for _, tc := range []struct {
		c    convCase
		want ring.ConvGeom
	}{
		{convCase{ir.Shape{2, 4, 7, 5}, 6, 2, win([]int{3, 2}, []int{2, 1}, []int{1, 0, 2, 1}, []int{1, 2}, false)},
			ring.ConvGeom{N: 2, C: 4, H: 7, W: 5, M: 6, OH: 4, OW: 4, KH: 3, KW: 2, SH: 2, SW: 1, PH: 1, PW: 0, DH: 1, DW: 2, Groups: 2}},
		{convCase{ir.Shape{1, 3, 9}, 3, 3, win([]int{3}, []int{2}, []int{2, 1}, []int{2}, false)},
			ring.ConvGeom{N: 1, C: 3, H: 1, W: 9, M: 3, OH: 1, OW: 4, KH: 1, KW: 3, SH: 1, SW: 2, PH: 0, PW: 2, DH: 1, DW: 2, Groups: 3}},
	} {
		p, in := convProgram(t, rng, tc.c, 16, false)
		asked := 0
		nb := &nativeConv{Backend: clear, use: func(ring.ConvGeom) bool { asked++; return true }}
		m, err := New(p, nb)
		if err != nil {
			t.Fatal(err)
		}
		for run := 0; run < 2; run++ {
			if _, err := m.Run(context.Background(), []ring.Tensor{r.SignedTensor(tc.c.xs, in...)}); err != nil {
				t.Fatal(err)
			}
		}
		if asked != 1 || len(nb.calls) != 2 {
			t.Fatalf("UseConv2D asked %d times, Conv2D called %d times; want 1 and 2", asked, len(nb.calls))
		}
		if nb.calls[0] != tc.want {
			t.Errorf("geometry %+v, want %+v", nb.calls[0], tc.want)
		}
	}
}

func TestConvGeomValidate(t *testing.T) {
	ok := ring.ConvGeom{N: 1, C: 4, H: 3, W: 3, M: 2, OH: 3, OW: 3, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 2}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mut  func(*ring.ConvGeom)
		want string
	}{
		{func(g *ring.ConvGeom) { g.KH = 0 }, "KH"},
		{func(g *ring.ConvGeom) { g.SW = -1 }, "SW"},
		{func(g *ring.ConvGeom) { g.PH = -1 }, "padding"},
		{func(g *ring.ConvGeom) { g.Groups = 3 }, "divisible"},
		{func(g *ring.ConvGeom) { g.M = 3 }, "divisible"},
	} {
		g := ok
		tc.mut(&g)
		if err := g.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one mentioning %q", g, err, tc.want)
		}
	}
}

// failingConv refuses every convolution: the Machine must return its error, wrapped with the
// instruction.
type failingConv struct{ *cleartext.Backend }

func (failingConv) UseConv2D(ring.ConvGeom, fixed.Engine) bool { return true }
func (failingConv) Conv2D(context.Context, fixed.Engine, ring.Tensor, *ring.Tensor, ring.Tensor, ring.ConvGeom) error {
	return fmt.Errorf("no convolutions today")
}

func TestConvBackendError(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	c := convCase{ir.Shape{1, 1, 4, 4}, 1, 1, win([]int{3, 3}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}, false)}
	p, in := convProgram(t, rng, c, 16, false)
	r := ring.Must(16)
	clear, _ := cleartext.New(r)
	m, err := New(p, failingConv{clear})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Run(context.Background(), []ring.Tensor{r.SignedTensor(c.xs, in...)})
	if err == nil || !strings.Contains(err.Error(), "no convolutions today") || !strings.Contains(err.Error(), "conv") {
		t.Fatalf("error %v", err)
	}
}

// engineSpy records the engine the Machine passes with every linear-layer call.
type engineSpy struct {
	nativeConv
	engines []fixed.Engine
}

func (b *engineSpy) UseConv2D(g ring.ConvGeom, e fixed.Engine) bool {
	b.engines = append(b.engines, e)
	return b.use(g)
}

func (b *engineSpy) Conv2D(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, x ring.Tensor, g ring.ConvGeom) error {
	b.engines = append(b.engines, e)
	return b.nativeConv.Conv2D(ctx, e, dst, w, x, g)
}

func (b *engineSpy) MatMul(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, m, k, n int, x ring.Tensor) error {
	b.engines = append(b.engines, e)
	return b.nativeConv.MatMul(ctx, e, dst, w, m, k, n, x)
}

// TestLayerEngineReachesBackend checks that the engine a convolution's instruction records comes
// with UseConv2D and with the Conv2D call, or with every MatMul of its im2col lowering.
func TestLayerEngineReachesBackend(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	r := ring.Must(16)
	clear, _ := cleartext.New(r)
	c := convCase{ir.Shape{1, 4, 6, 6}, 4, 2, win([]int{3, 3}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}, false)}
	for _, native := range []bool{true, false} {
		p, in := convProgram(t, rng, c, 16, false)
		for _, ins := range p.Instrs {
			if ins.Op == fixed.OpConv {
				ins.Engine = fixed.EngineHE
			}
		}
		spy := &engineSpy{nativeConv: nativeConv{Backend: clear, use: func(ring.ConvGeom) bool { return native }}}
		m, err := New(p, spy)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(context.Background(), []ring.Tensor{r.SignedTensor(c.xs, in...)}); err != nil {
			t.Fatal(err)
		}
		if len(spy.engines) < 2 {
			t.Fatalf("native %v: %d engine-carrying calls", native, len(spy.engines))
		}
		for i, e := range spy.engines {
			if e != fixed.EngineHE {
				t.Fatalf("native %v: call %d got engine %v, want %v", native, i, e, fixed.EngineHE)
			}
		}
	}
}
