package fixed_test

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// quantChain builds a program shaped like a lowered quantized layer, over Z_2^64 at scale 0:
// input in [lo, hi] → centre (addconst) → conv (c→m channels, 3×3, pad 1, group g) → bias
// (per channel) → ReLU → requant (mulconst per channel at scale k, addconst, trunc by k) → clip
// to [0, 255] as ReLU(t) − ReLU(t − 255) → 1×1 conv → ReLU → sumpool 2×2 → reshape → matmul → ReLU.
func quantChain(rng *rand.Rand, lo, hi int64, c, m, g, k int) *fixed.Program {
	p := &fixed.Program{Bits: 64, Scale: 0}
	rnd := func(n int, a, b int64) []int64 {
		v := make([]int64, n)
		for i := range v {
			v[i] = a + rng.Int64N(b-a+1)
		}
		return v
	}
	win := func(k, pad int) ir.Window {
		return ir.Window{Kernel: []int{k, k}, Strides: []int{1, 1}, Pads: []int{pad, pad, pad, pad}, Dilations: []int{1, 1}}
	}
	sh := func(d ...int) ir.Shape { return ir.Shape(d) }
	x := p.AddTensor("x", sh(1, c, 4, 4), 0)
	p.Inputs = []fixed.IO{{Name: "x", Tensor: x, Party: 1, Bounded: true, Lo: lo, Hi: hi}}
	var instrs []*fixed.Instr
	emit := func(in *fixed.Instr, shape ir.Shape, scale int) int {
		in.Out = p.AddTensor("t", shape, scale)
		if in.Weight == 0 && in.Op != fixed.OpConv && in.Op != fixed.OpMatMul && in.Op != fixed.OpAddConst && in.Op != fixed.OpMulConst {
			in.Weight = -1
		}
		instrs = append(instrs, in)
		return in.Out
	}
	instrs = append(instrs, &fixed.Instr{Op: fixed.OpInput, Out: x, Weight: -1})
	w := func(name string, shape ir.Shape, scale int, data []int64) int {
		return p.AddWeight(name, shape, scale, data)
	}
	a := emit(&fixed.Instr{Op: fixed.OpAddConst, In: []int{x}, Weight: w("zp", sh(), 0, rnd(1, -128, 0))}, sh(1, c, 4, 4), 0)
	cv := emit(&fixed.Instr{Op: fixed.OpConv, In: []int{a}, Weight: w("w", sh(m, c/g, 3, 3), 0, rnd(m*c/g*9, -127, 127)), Group: g, Win: win(3, 1)}, sh(1, m, 4, 4), 0)
	b := emit(&fixed.Instr{Op: fixed.OpAddConst, In: []int{cv}, Weight: w("bias", sh(m, 1, 1), 0, rnd(m, -5000, 5000))}, sh(1, m, 4, 4), 0)
	r0 := emit(&fixed.Instr{Op: fixed.OpReLU, In: []int{b}}, sh(1, m, 4, 4), 0)
	mc := emit(&fixed.Instr{Op: fixed.OpMulConst, In: []int{b}, Weight: w("mult", sh(m, 1, 1), k, rnd(m, 1, int64(1)<<(k-6)))}, sh(1, m, 4, 4), k)
	ac := emit(&fixed.Instr{Op: fixed.OpAddConst, In: []int{mc}, Weight: w("add", sh(m, 1, 1), k, rnd(m, 0, int64(1)<<(k+7)))}, sh(1, m, 4, 4), k)
	tq := emit(&fixed.Instr{Op: fixed.OpTrunc, In: []int{ac}, Shift: k}, sh(1, m, 4, 4), 0)
	rl := emit(&fixed.Instr{Op: fixed.OpReLU, In: []int{tq}}, sh(1, m, 4, 4), 0)
	hi255 := emit(&fixed.Instr{Op: fixed.OpAddConst, In: []int{tq}, Weight: w("max", sh(), 0, []int64{-255})}, sh(1, m, 4, 4), 0)
	rh := emit(&fixed.Instr{Op: fixed.OpReLU, In: []int{hi255}}, sh(1, m, 4, 4), 0)
	clip := emit(&fixed.Instr{Op: fixed.OpSub, In: []int{rl, rh}}, sh(1, m, 4, 4), 0)
	both := emit(&fixed.Instr{Op: fixed.OpAdd, In: []int{clip, r0}}, sh(1, m, 4, 4), 0)
	c2 := emit(&fixed.Instr{Op: fixed.OpConv, In: []int{clip}, Weight: w("w2", sh(3, m, 1, 1), 0, rnd(3*m, -127, 127)), Group: 1, Win: win(1, 0)}, sh(1, 3, 4, 4), 0)
	c2b := emit(&fixed.Instr{Op: fixed.OpAddConst, In: []int{c2}, Weight: w("b2", sh(3, 1, 1), 0, rnd(3, -3000, 3000))}, sh(1, 3, 4, 4), 0)
	r2 := emit(&fixed.Instr{Op: fixed.OpReLU, In: []int{c2b}}, sh(1, 3, 4, 4), 0)
	sp := emit(&fixed.Instr{Op: fixed.OpSumPool, In: []int{r2}, Win: ir.Window{Kernel: []int{2, 2}, Strides: []int{2, 2}, Pads: []int{0, 0, 0, 0}, Dilations: []int{1, 1}}}, sh(1, 3, 2, 2), 0)
	rs := emit(&fixed.Instr{Op: fixed.OpReshape, In: []int{sp}}, sh(12, 1), 0)
	mm := emit(&fixed.Instr{Op: fixed.OpMatMul, In: []int{rs}, Weight: w("fc", sh(5, 12), 0, rnd(60, -127, 127))}, sh(5, 1), 0)
	out := emit(&fixed.Instr{Op: fixed.OpReLU, In: []int{mm}}, sh(5, 1), 0)
	p.Outputs = []fixed.IO{{Name: "y", Tensor: out, Party: 1}, {Name: "z", Tensor: both, Party: 1}}
	instrs = append(instrs, &fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{out}, Weight: -1, Index: 0},
		&fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{both}, Weight: -1, Index: 1})
	p.Instrs = instrs
	p.Compact()
	return p
}

// The bounds hold every value a clear run produces, on random programs and random inputs of the
// declared range (the range's ends included); the low-bit ReLUs (checked by the cleartext
// backend on every element) give the clear result.
func TestBoundsSound(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	r := ring.Must(64)
	for trial := 0; trial < 40; trial++ {
		lo := -rng.Int64N(200)
		hi := lo + rng.Int64N(400)
		g := []int{1, 3}[trial%2]
		p := quantChain(rng, lo, hi, 3, 6, g, 20+rng.IntN(20))
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		iv, err := p.Bounds()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.LowBitReLUs(); err != nil {
			t.Fatal(err)
		}
		if err := p.CheckBounds(); err != nil {
			t.Fatal(err)
		}
		for _, in := range p.Instrs {
			if in.Op == fixed.OpReLU && in.Bits == 0 {
				t.Fatalf("trial %d: relu %s has no low-bit width (operand %v)", trial, p.InstrText(in), iv[in.In[0]])
			}
		}
		be, err := cleartext.New(r)
		if err != nil {
			t.Fatal(err)
		}
		m, err := vm.New(p, be)
		if err != nil {
			t.Fatal(err)
		}
		m.Observe = func(tensor int, v ring.Tensor) {
			b := iv[tensor]
			for _, e := range v.Data {
				if s := r.Signed(e); b.Full || s < b.Lo || s > b.Hi {
					t.Fatalf("trial %d: tensor %d (%s) holds %d outside its bound %v", trial, tensor, p.Tensors[tensor].Name, s, b)
				}
			}
		}
		for run := 0; run < 5; run++ {
			x := make([]uint64, 48)
			for i := range x {
				switch {
				case run == 0:
					x[i] = r.FromSigned(lo)
				case run == 1:
					x[i] = r.FromSigned(hi)
				default:
					x[i] = r.FromSigned(lo + rng.Int64N(hi-lo+1))
				}
			}
			if _, err := m.Run(context.Background(), []ring.Tensor{{Shape: []int{1, 3, 4, 4}, Data: x}}); err != nil {
				t.Fatalf("trial %d: %v", trial, err)
			}
		}
	}
}

// The clip's exact range comes from the relation between its two ReLUs, not from intervals.
func TestBoundsClip(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	p := quantChain(rng, 0, 255, 3, 6, 1, 30)
	iv, err := p.Bounds()
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range p.Instrs {
		if in.Op == fixed.OpSub {
			if got := iv[in.Out]; got.Full || got.Lo < 0 || got.Hi > 255 {
				t.Errorf("clip bound %v, want within [0, 255]", got)
			}
		}
	}
	if got := (fixed.Interval{Lo: -128, Hi: 127}).Bits(); got != 8 {
		t.Errorf("[-128, 127]: %d bits, want 8", got)
	}
	if got := (fixed.Interval{Lo: -128, Hi: 128}).Bits(); got != 9 {
		t.Errorf("[-128, 128]: %d bits, want 9", got)
	}
	if got := (fixed.Interval{Lo: 0, Hi: 0}).Bits(); got != 2 {
		t.Errorf("[0, 0]: %d bits, want 2", got)
	}
}

// A width below the operand's bound, or outside 2..l−1, is refused; so is a range on an output
// or an empty one.
func TestBoundsRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(85, 86))
	p := quantChain(rng, 0, 255, 3, 6, 1, 30)
	if _, err := p.LowBitReLUs(); err != nil {
		t.Fatal(err)
	}
	var relu *fixed.Instr
	for _, in := range p.Instrs {
		if in.Op == fixed.OpReLU {
			relu = in
			break
		}
	}
	relu.Bits--
	if err := p.CheckBounds(); err == nil || !strings.Contains(err.Error(), "low") {
		t.Errorf("a width one bit short: %v", err)
	}
	if _, err := vm.New(p, mustClear(t)); err == nil {
		t.Errorf("vm.New ran a program whose width is one bit short")
	}
	for _, b := range []int{1, 64, 70} {
		relu.Bits = b
		if err := p.Validate(); err == nil {
			t.Errorf("bits %d passed validation", b)
		}
	}
	relu.Bits = 0
	p.Inputs[0].Lo, p.Inputs[0].Hi = 5, 4
	if err := p.Validate(); err == nil {
		t.Errorf("an empty input range passed validation")
	}
	p.Inputs[0].Lo, p.Inputs[0].Hi = 0, 255
	p.Outputs[0].Bounded = true
	if err := p.Validate(); err == nil {
		t.Errorf("an output range passed validation")
	}
	p.Outputs[0].Bounded = false
	// The VM refuses an input outside the declared range at its owner.
	m, err := vm.New(p, mustClear(t))
	if err != nil {
		t.Fatal(err)
	}
	x := make([]uint64, 48)
	x[7] = 256
	if _, err := m.Run(context.Background(), []ring.Tensor{{Shape: []int{1, 3, 4, 4}, Data: x}}); err == nil || !strings.Contains(err.Error(), "outside the input's range") {
		t.Errorf("input 256 of [0, 255]: %v", err)
	}
}

func mustClear(t *testing.T) *cleartext.Backend {
	be, err := cleartext.New(ring.Must(64))
	if err != nil {
		t.Fatal(err)
	}
	return be
}
