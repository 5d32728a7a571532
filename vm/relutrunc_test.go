package vm

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// fusingClear is the cleartext backend with a fused ReLU and truncation (ReLUTruncBackend) that
// records its calls and refuses shifts of at least bits−1, as vm/sci does.
type fusingClear struct {
	*cleartext.Backend
	calls [][2]int // (bits, s) per call
}

func (f *fusingClear) UseReLUTrunc(bits, s int) bool { return s < bits-1 }

func (f *fusingClear) ReLUTrunc(_ context.Context, dst, x ring.Tensor, bits, s int) error {
	f.calls = append(f.calls, [2]int{bits, s})
	r := f.Ring()
	for i, v := range x.Data {
		if r.Signed(v) < 0 {
			v = 0
		}
		dst.Data[i] = r.Trunc(v, s)
	}
	return nil
}

// The VM fuses exactly the ReLU–truncation pairs ReLUTruncBackend describes, and the fused run
// gives what the two instructions give.
func TestReLUTruncFusion(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	shape := ir.Shape{2, 40}
	in := randInts(rng, shape.Size(), -1<<20, 1<<20)
	for _, tc := range []struct {
		name  string
		build func(b *builder, x int)
		want  [][2]int
	}{
		{"pair", func(b *builder, x int) {
			y := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}})
			b.output(b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{y}, Shift: 12, NonNeg: true}))
		}, [][2]int{{32, 12}}},
		{"low bits", func(b *builder, x int) {
			y := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}, Bits: 22})
			b.output(b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{y}, Shift: 12, NonNeg: true}))
		}, [][2]int{{22, 12}}},
		{"two pairs, the input reused", func(b *builder, x int) {
			y := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}})
			z := b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{y}, Shift: 3, NonNeg: true})
			u := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}})
			v := b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{u}, Shift: 3, NonNeg: true})
			b.output(b.op(&fixed.Instr{Op: fixed.OpAdd, In: []int{z, v}}))
		}, [][2]int{{32, 3}, {32, 3}}},
		{"shift too wide", func(b *builder, x int) {
			y := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}, Bits: 22})
			b.output(b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{y}, Shift: 21, NonNeg: true}))
		}, nil},
		{"relu read twice", func(b *builder, x int) {
			y := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}})
			z := b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{y}, Shift: 4, NonNeg: true})
			w := b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{y}, Shift: 4})
			b.output(b.op(&fixed.Instr{Op: fixed.OpAdd, In: []int{z, w}}))
		}, nil},
		{"relu is an output", func(b *builder, x int) {
			y := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}})
			b.output(b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{y}, Shift: 4, NonNeg: true}))
			b.output(y)
		}, nil},
		{"signed truncation", func(b *builder, x int) {
			y := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}})
			b.output(b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{y}, Shift: 4}))
		}, nil},
		{"not adjacent", func(b *builder, x int) {
			y := b.op(&fixed.Instr{Op: fixed.OpReLU, In: []int{x}})
			w := b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{x}, Shift: 2})
			z := b.op(&fixed.Instr{Op: fixed.OpTrunc, In: []int{y}, Shift: 2, NonNeg: true})
			b.output(b.op(&fixed.Instr{Op: fixed.OpAdd, In: []int{z, w}}))
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBuilder(t, 32, 12)
			x := b.input(shape, 24)
			b.p.Inputs[0].Bounded, b.p.Inputs[0].Lo, b.p.Inputs[0].Hi = true, -1<<20, 1<<20
			tc.build(b, x)
			p := b.p
			want := runClear(t, p, in)
			r := ring.Must(32)
			c, _ := cleartext.New(r)
			f := &fusingClear{Backend: c}
			m, err := New(p, f)
			if err != nil {
				t.Fatal(err)
			}
			for run := range 2 {
				f.calls = nil
				outs, err := m.Run(context.Background(), []ring.Tensor{r.SignedTensor(shape, in...)})
				if err != nil {
					t.Fatal(err)
				}
				for i, o := range outs {
					if got := r.SignedValues(o.Value); !slices.Equal(got, want[i]) {
						t.Fatalf("run %d output %d: fused %v, unfused %v", run, i, got[:4], want[i][:4])
					}
				}
				if !slices.Equal(f.calls, tc.want) {
					t.Fatalf("run %d: fused calls %v, want %v", run, f.calls, tc.want)
				}
			}
		})
	}
}
