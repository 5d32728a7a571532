package serve

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// convClear is the cleartext backend with a (refusing) convolution of its own, so that it
// implements every optional interface, as vm/sci's backends do.
type convClear struct{ *cleartext.Backend }

func (convClear) UseConv2D(ring.ConvGeom, fixed.Engine) bool { return false }
func (convClear) Conv2D(context.Context, fixed.Engine, ring.Tensor, *ring.Tensor, ring.Tensor, ring.ConvGeom) error {
	return errors.New("not used")
}

// TestRecorderKeepsOptionalInterfaces: the session's per-layer recorder exposes the wrapped
// backend's math functions and products of two shared matrices (without them, vm.New refuses
// programs with softmax, LayerNorm or attention), with and without a convolution of its own, and
// a program with a bmatmul runs through it.
func TestRecorderKeepsOptionalInterfaces(t *testing.T) {
	cb, err := cleartext.New(ring.Must(32))
	if err != nil {
		t.Fatal(err)
	}
	p := &fixed.Program{Bits: 32, Scale: 4}
	x := p.AddTensor("x", ir.Shape{2, 2, 3}, 4)
	y := p.AddTensor("y", ir.Shape{2, 3, 2}, 4)
	z := p.AddTensor("z", ir.Shape{2, 2, 2}, 8)
	p.Inputs = []fixed.IO{{Name: "x", Tensor: x, Party: 1}, {Name: "y", Tensor: y, Party: 1}}
	p.Outputs = []fixed.IO{{Name: "z", Tensor: z, Party: 1}}
	p.Instrs = []*fixed.Instr{
		{Op: fixed.OpInput, Out: x, Weight: -1},
		{Op: fixed.OpInput, Out: y, Weight: -1, Index: 1},
		{Op: fixed.OpBatchMatMul, Out: z, In: []int{x, y}, Weight: -1},
		{Op: fixed.OpOutput, Out: -1, In: []int{z}, Weight: -1},
	}
	for _, be := range []vm.Backend{cb, convClear{cb}} {
		b := newRecorder(be, nil, p, nil, 1).backend()
		if _, ok := b.(vm.MathBackend); !ok {
			t.Errorf("%T: recorder hides the math functions", be)
		}
		if _, ok := b.(vm.SharedMatMulBackend); !ok {
			t.Errorf("%T: recorder hides the shared products", be)
		}
		_, isConv := b.(vm.ConvBackend)
		if _, want := be.(vm.ConvBackend); isConv != want {
			t.Errorf("%T: recorder is a ConvBackend: %v, want %v", be, isConv, want)
		}
		m, err := vm.New(p, b)
		if err != nil {
			t.Fatal(err)
		}
		one := func(n int) ring.Tensor {
			d := make([]uint64, n)
			for i := range d {
				d[i] = uint64(i + 1)
			}
			return ring.Tensor{Data: d}
		}
		xs, ys := one(12), one(12)
		xs.Shape, ys.Shape = []int{2, 2, 3}, []int{2, 3, 2}
		outs, err := m.Run(context.Background(), []ring.Tensor{xs, ys})
		if err != nil {
			t.Fatal(err)
		}
		// First product: [1 2 3; 4 5 6]·[1 2; 3 4; 5 6] = [22 28; 49 64].
		if got := outs[0].Value.Data[:4]; got[0] != 22 || got[1] != 28 || got[2] != 49 || got[3] != 64 {
			t.Errorf("%T: product %v", be, got)
		}
	}
}

// fusingClear is the cleartext backend with a fused ReLU and truncation (vm.ReLUTruncBackend).
type fusingClear struct{ *cleartext.Backend }

func (fusingClear) UseReLUTrunc(bits, s int) bool { return s < bits-1 }

func (f fusingClear) ReLUTrunc(_ context.Context, dst, x ring.Tensor, _, s int) error {
	r := f.Ring()
	for i, v := range x.Data {
		if r.Signed(v) < 0 {
			v = 0
		}
		dst.Data[i] = r.Trunc(v, s)
	}
	return nil
}

// TestRecorderReLUTrunc: the recorder fuses a ReLU and its truncation exactly when the wrapped
// backend does, names the fused layer relu+trunc (the truncation's row then runs nothing), and the
// result is the unfused one.
func TestRecorderReLUTrunc(t *testing.T) {
	r := ring.Must(32)
	cb, err := cleartext.New(r)
	if err != nil {
		t.Fatal(err)
	}
	p := &fixed.Program{Bits: 32, Scale: 4}
	x := p.AddTensor("x", ir.Shape{6}, 8)
	y := p.AddTensor("y", ir.Shape{6}, 8)
	z := p.AddTensor("z", ir.Shape{6}, 4)
	p.Inputs = []fixed.IO{{Name: "x", Tensor: x, Party: 1}}
	p.Outputs = []fixed.IO{{Name: "z", Tensor: z, Party: 1}}
	p.Instrs = []*fixed.Instr{
		{Op: fixed.OpInput, Out: x, Weight: -1},
		{Op: fixed.OpReLU, Out: y, In: []int{x}, Weight: -1},
		{Op: fixed.OpTrunc, Out: z, In: []int{y}, Weight: -1, Shift: 4, NonNeg: true},
		{Op: fixed.OpOutput, Out: -1, In: []int{z}, Weight: -1},
	}
	in := r.SignedTensor([]int{6}, -100, -1, 0, 15, 16, 1000)
	want := []int64{0, 0, 0, 0, 1, 62}
	for _, tc := range []struct {
		be vm.Backend
		op string
	}{{cb, "relu"}, {fusingClear{cb}, ReLUTruncOp}} {
		rc := newRecorder(tc.be, nil, p, nil, 1)
		m, err := vm.New(p, rc.backend())
		if err != nil {
			t.Fatal(err)
		}
		m.Observe = rc.observe
		rc.start(0)
		outs, err := m.Run(context.Background(), []ring.Tensor{in})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.SignedValues(outs[0].Value); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%T: %v, want %v", tc.be, got, want)
		}
		if rc.layers[1].Op != tc.op || rc.layers[2].Op != "trunc" {
			t.Errorf("%T: layers named %q, %q; want %q, trunc", tc.be, rc.layers[1].Op, rc.layers[2].Op, tc.op)
		}
	}
}
