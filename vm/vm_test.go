package vm

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// builder assembles fixed-point programs by hand for tests.
type builder struct {
	t *testing.T
	p *fixed.Program
}

func newBuilder(t *testing.T, bits, scale int) *builder {
	return &builder{t: t, p: &fixed.Program{Bits: bits, Scale: scale}}
}

func (b *builder) input(shape ir.Shape, scale int) int {
	id := b.p.AddTensor("in", shape, scale)
	b.p.Inputs = append(b.p.Inputs, fixed.IO{Name: "in", Tensor: id, Party: 1})
	b.p.Instrs = append(b.p.Instrs, &fixed.Instr{Op: fixed.OpInput, Out: id, Weight: -1, Index: len(b.p.Inputs) - 1})
	return id
}

func (b *builder) weight(shape ir.Shape, scale int, data ...int64) int {
	return b.p.AddWeight("w", shape, scale, data)
}

// op appends an instruction, inferring its result (pass out for Reshape/ArgMax).
func (b *builder) op(in *fixed.Instr, out ...ir.Shape) int {
	b.t.Helper()
	if !in.Op.UsesWeight() {
		in.Weight = -1
	}
	if len(out) > 0 {
		sc := b.p.Tensors[in.In[0]].Scale
		if in.Op == fixed.OpArgMax {
			sc = 0
		}
		in.Out = b.p.AddTensor("t", out[0], sc)
	} else {
		shape, scale, err := b.p.InferInstr(in)
		if err != nil {
			b.t.Fatalf("%s: %v", in.Op, err)
		}
		in.Out = b.p.AddTensor("t", shape, scale)
	}
	b.p.Instrs = append(b.p.Instrs, in)
	return in.Out
}

func (b *builder) output(t int) {
	b.p.Outputs = append(b.p.Outputs, fixed.IO{Name: "out", Tensor: t, Party: 1})
	b.p.Instrs = append(b.p.Instrs, &fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{t}, Weight: -1, Index: len(b.p.Outputs) - 1})
}

// runClear runs p in the clear on signed inputs and returns the signed outputs.
func runClear(t *testing.T, p *fixed.Program, inputs ...[]int64) [][]int64 {
	t.Helper()
	r := ring.Must(p.Bits)
	c, _ := cleartext.New(r)
	m, err := New(p, c)
	if err != nil {
		t.Fatal(err)
	}
	var in []ring.Tensor
	for i, x := range inputs {
		in = append(in, r.SignedTensor(p.Tensors[p.Inputs[i].Tensor].Shape, x...))
	}
	outs, err := m.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	var res [][]int64
	for _, o := range outs {
		if !o.Revealed {
			t.Fatal("clear output not revealed")
		}
		res = append(res, r.SignedValues(o.Value))
	}
	return res
}

func randInts(rng *rand.Rand, n int, lo, hi int64) []int64 {
	v := make([]int64, n)
	for i := range v {
		v[i] = lo + rng.Int64N(hi-lo+1)
	}
	return v
}

func win(kernel, strides, pads, dil []int, ceil bool) ir.Window {
	return ir.Window{Kernel: kernel, Strides: strides, Pads: pads, Dilations: dil, CeilMode: ceil}
}

// naiveConv computes a 2-D convolution in int64.
func naiveConv(x []int64, xs ir.Shape, w []int64, ws ir.Shape, group int, wn ir.Window, out ir.Shape) []int64 {
	N, C, H, W := xs[0], xs[1], xs[2], xs[3]
	M, Cg, KH, KW := ws[0], ws[1], ws[2], ws[3]
	OH, OW := out[2], out[3]
	res := make([]int64, out.Size())
	mg := M / group
	for n := 0; n < N; n++ {
		for m := 0; m < M; m++ {
			g := m / mg
			for oy := 0; oy < OH; oy++ {
				for ox := 0; ox < OW; ox++ {
					var s int64
					for c := 0; c < Cg; c++ {
						for ky := 0; ky < KH; ky++ {
							for kx := 0; kx < KW; kx++ {
								iy := oy*wn.Strides[0] - wn.Pads[0] + ky*wn.Dilations[0]
								ix := ox*wn.Strides[1] - wn.Pads[1] + kx*wn.Dilations[1]
								if iy < 0 || iy >= H || ix < 0 || ix >= W {
									continue
								}
								s += x[((n*C+g*Cg+c)*H+iy)*W+ix] * w[((m*Cg+c)*KH+ky)*KW+kx]
							}
						}
					}
					res[((n*M+m)*OH+oy)*OW+ox] = s
				}
			}
		}
	}
	return res
}

func TestConvMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		xs, ws ir.Shape
		group  int
		wn     ir.Window
	}{
		{ir.Shape{1, 1, 6, 6}, ir.Shape{2, 1, 3, 3}, 1, win([]int{3, 3}, []int{1, 1}, []int{1, 1, 1, 1}, []int{1, 1}, false)},
		{ir.Shape{2, 4, 7, 5}, ir.Shape{6, 2, 3, 2}, 2, win([]int{3, 2}, []int{2, 1}, []int{1, 0, 2, 1}, []int{1, 2}, false)},
		{ir.Shape{1, 3, 5, 5}, ir.Shape{3, 1, 2, 2}, 3, win([]int{2, 2}, []int{2, 2}, []int{0, 0, 1, 1}, []int{1, 1}, true)},
	} {
		b := newBuilder(t, 32, 0)
		x := b.input(c.xs, 4)
		wdata := randInts(rng, c.ws.Size(), -20, 20)
		w := b.weight(c.ws, 4, wdata...)
		y := b.op(&fixed.Instr{Op: fixed.OpConv, In: []int{x}, Weight: w, Group: c.group, Win: c.wn})
		b.output(y)
		xdata := randInts(rng, c.xs.Size(), -50, 50)
		got := runClear(t, b.p, xdata)[0]
		want := naiveConv(xdata, c.xs, wdata, c.ws, c.group, c.wn, b.p.Tensors[y].Shape)
		if !slices.Equal(got, want) {
			t.Errorf("conv %v * %v group %d: got %v, want %v", c.xs, c.ws, c.group, got, want)
		}
	}
}

func TestConv1D(t *testing.T) {
	b := newBuilder(t, 32, 0)
	x := b.input(ir.Shape{1, 1, 5}, 0)
	w := b.weight(ir.Shape{1, 1, 3}, 0, 1, 2, 3)
	y := b.op(&fixed.Instr{Op: fixed.OpConv, In: []int{x}, Weight: w, Group: 1, Win: win([]int{3}, []int{2}, []int{1, 1}, []int{1}, false)})
	b.output(y)
	got := runClear(t, b.p, []int64{1, 2, 3, 4, 5})[0]
	// Windows over [0,1,2,3,4,5,0] starting at 0, 2, 4: (0,1,2), (2,3,4), (4,5,0).
	if want := []int64{0*1 + 1*2 + 2*3, 2*1 + 3*2 + 4*3, 4*1 + 5*2}; !slices.Equal(got, want) {
		t.Errorf("conv1d = %v, want %v", got, want)
	}
}

func TestPooling(t *testing.T) {
	b := newBuilder(t, 16, 0)
	x := b.input(ir.Shape{1, 1, 3, 3}, 0)
	wn := win([]int{2, 2}, []int{2, 2}, []int{1, 1, 0, 0}, []int{1, 1}, true)
	mx := b.op(&fixed.Instr{Op: fixed.OpMaxPool, In: []int{x}, Win: wn})
	sum := b.op(&fixed.Instr{Op: fixed.OpSumPool, In: []int{x}, Win: wn})
	div := b.op(&fixed.Instr{Op: fixed.OpDiv, In: []int{sum}, Divisors: []int{1, 2, 2, 4}})
	b.output(mx)
	b.output(sum)
	b.output(div)
	// x = [[-9,-8,-7],[-6,-5,-4],[-3,-2,-1]]; padded by one row/col at the start, ceil mode: windows
	// {(-9)}, {(-8,-7)}, {(-6,-3)}, {(-5,-4,-2,-1)}.
	res := runClear(t, b.p, []int64{-9, -8, -7, -6, -5, -4, -3, -2, -1})
	if want := []int64{-9, -7, -3, -1}; !slices.Equal(res[0], want) {
		t.Errorf("maxpool = %v, want %v (padding must not take part in the maximum)", res[0], want)
	}
	if want := []int64{-9, -15, -9, -12}; !slices.Equal(res[1], want) {
		t.Errorf("sumpool = %v, want %v", res[1], want)
	}
	if want := []int64{-9, -8, -5, -3}; !slices.Equal(res[2], want) {
		t.Errorf("div = %v, want %v (floor division)", res[2], want)
	}
}

func TestDataMovement(t *testing.T) {
	b := newBuilder(t, 16, 0)
	x := b.input(ir.Shape{2, 3}, 2)
	tr := b.op(&fixed.Instr{Op: fixed.OpTranspose, In: []int{x}, Perm: []int{1, 0}})
	rs := b.op(&fixed.Instr{Op: fixed.OpReshape, In: []int{x}}, ir.Shape{3, 2})
	cc := b.op(&fixed.Instr{Op: fixed.OpConcat, In: []int{x, x}, Axis: 1})
	pc := b.op(&fixed.Instr{Op: fixed.OpPad, In: []int{x}, Pads: []int{0, 1, 1, 0}, PadMode: fixed.PadConstant, PadValue: -7})
	pr := b.op(&fixed.Instr{Op: fixed.OpPad, In: []int{x}, Pads: []int{0, 2, 0, 2}, PadMode: fixed.PadReflect})
	pe := b.op(&fixed.Instr{Op: fixed.OpPad, In: []int{x}, Pads: []int{1, 1, 0, 0}, PadMode: fixed.PadEdge})
	pw := b.op(&fixed.Instr{Op: fixed.OpPad, In: []int{x}, Pads: []int{0, 1, 0, 1}, PadMode: fixed.PadWrap})
	am := b.op(&fixed.Instr{Op: fixed.OpArgMax, In: []int{x}, Axis: 0}, ir.Shape{3})
	su := b.op(&fixed.Instr{Op: fixed.OpScaleUp, In: []int{x}, Shift: 3})
	for _, o := range []int{tr, rs, cc, pc, pr, pe, pw, am, su} {
		b.output(o)
	}
	res := runClear(t, b.p, []int64{1, 2, 3, 4, 5, 6})
	want := [][]int64{
		{1, 4, 2, 5, 3, 6},
		{1, 2, 3, 4, 5, 6},
		{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6},
		{-7, 1, 2, 3, -7, 4, 5, 6, -7, -7, -7, -7},
		{3, 2, 1, 2, 3, 2, 1, 6, 5, 4, 5, 6, 5, 4},
		{1, 1, 2, 3, 1, 1, 2, 3, 4, 4, 5, 6},
		{3, 1, 2, 3, 1, 6, 4, 5, 6, 4},
		{1, 1, 1},
		{8, 16, 24, 32, 40, 48},
	}
	names := []string{"transpose", "reshape", "concat", "pad constant", "pad reflect", "pad edge", "pad wrap", "argmax axis 0", "scaleup"}
	for i := range want {
		if !slices.Equal(res[i], want[i]) {
			t.Errorf("%s = %v, want %v", names[i], res[i], want[i])
		}
	}
}

func TestArithmeticBroadcast(t *testing.T) {
	b := newBuilder(t, 8, 0)
	x := b.input(ir.Shape{1, 2, 2}, 0)
	y := b.input(ir.Shape{2, 1}, 0)
	add := b.op(&fixed.Instr{Op: fixed.OpAdd, In: []int{x, y}})
	sub := b.op(&fixed.Instr{Op: fixed.OpSub, In: []int{y, x}})
	w := b.weight(ir.Shape{2, 1}, 0, 100, -2)
	ac := b.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{x}, Weight: w})
	mc := b.op(&fixed.Instr{Op: fixed.OpMulConst, In: []int{x}, Weight: w})
	for _, o := range []int{add, sub, ac, mc} {
		b.output(o)
	}
	res := runClear(t, b.p, []int64{1, 2, 30, 40}, []int64{10, 100})
	want := [][]int64{
		{11, 12, 130 - 256, 140 - 256}, // 130 and 140 wrap in Z_2^8
		{9, 8, 70, 60},                 // y - x
		{101, 102, 28, 38},             // + [[100],[-2]]
		{100, 200 - 256, -60, -80},     // * [[100],[-2]], wrapping
	}
	for i := range want {
		if !slices.Equal(res[i], want[i]) {
			t.Errorf("op %d = %v, want %v", i, res[i], want[i])
		}
	}
}

func TestMachineErrors(t *testing.T) {
	b := newBuilder(t, 16, 4)
	x := b.input(ir.Shape{2}, 4)
	w := b.weight(ir.Shape{2}, 4, 1, 2)
	y := b.op(&fixed.Instr{Op: fixed.OpAddConst, In: []int{x}, Weight: w})
	b.output(y)
	r := ring.Must(16)
	c, _ := cleartext.New(r)
	if _, err := New(b.p.StripWeights(), c); !errors.Is(err, ErrNoWeights) {
		t.Errorf("party 0 without weights: %v", err)
	}
	c32, _ := cleartext.New(ring.Must(32))
	if _, err := New(b.p, c32); err == nil || !strings.Contains(err.Error(), "ring") {
		t.Errorf("ring mismatch: %v", err)
	}
	m, err := New(b.p, c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(context.Background(), nil); err == nil {
		t.Error("missing input accepted")
	}
	if _, err := m.Run(context.Background(), []ring.Tensor{ring.NewTensor([]int{3})}); err == nil {
		t.Error("input of the wrong shape accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Run(ctx, []ring.Tensor{ring.NewTensor([]int{2})}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
	bad := b.p.Clone()
	bad.Instrs[1].In[0] = 7
	if _, err := New(bad, c); err == nil {
		t.Error("invalid program accepted")
	}
}

func TestObserveAndSlotReuse(t *testing.T) {
	b := newBuilder(t, 16, 0)
	x := b.input(ir.Shape{4}, 0)
	y := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}})
	z := b.op(&fixed.Instr{Op: fixed.OpScaleUp, In: []int{y}, Shift: 1})
	u := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{z}})
	b.output(u)
	// Two slots suffice: x and z share one, y and u the other.
	for id, s := range []int{0, 1, 0, 1} {
		b.p.Tensors[id].Slot = s
	}
	if err := b.p.Validate(); err != nil {
		t.Fatal(err)
	}
	r := ring.Must(16)
	c, err := cleartext.New(r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(b.p, c)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int64{}
	m.Observe = func(id int, v ring.Tensor) { seen[id] = r.Signed(v.Data[0]) }
	for run := 0; run < 2; run++ { // buffers are reused across runs
		outs, err := m.Run(context.Background(), []ring.Tensor{r.SignedTensor([]int{4}, -3, 2, 0, 5)})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.SignedValues(outs[0].Value); !slices.Equal(got, []int64{0, 4, 0, 10}) {
			t.Fatalf("run %d: %v", run, got)
		}
	}
	if len(seen) != 4 || seen[0] != -3 || seen[1] != 0 {
		t.Errorf("observed %v", seen)
	}
	// A slot conflict (y and z both live at instruction 2) is rejected.
	b.p.Tensors[2].Slot = 1
	if err := b.p.Validate(); err == nil {
		t.Error("conflicting slots accepted")
	}
}
