package vm

import (
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
)

// TestBatchMatMul runs bmatmul in the clear (X·Xᵀ per batch element, signed values wrapping in
// the ring) against the plain definition, and checks that New refuses it on a backend without
// vm.SharedMatMulBackend.
func TestBatchMatMul(t *testing.T) {
	b := newBuilder(t, 16, 2)
	x := b.input(ir.Shape{2, 2, 3}, 2)
	xt := b.op(&fixed.Instr{Op: fixed.OpTranspose, In: []int{x}, Perm: []int{0, 2, 1}})
	z := b.op(&fixed.Instr{Op: fixed.OpBatchMatMul, In: []int{x, xt}})
	b.output(z)
	if s := b.p.Tensors[z]; !s.Shape.Equal(ir.Shape{2, 2, 2}) || s.Scale != 4 {
		t.Fatalf("result %v at scale %d", s.Shape, s.Scale)
	}
	in := []int64{1, -2, 3, 200, 100, -7, 0, 1, -1, -32768, 5, 9}
	got := runClear(t, b.p, in)[0]
	r := ring.Must(16)
	for bt := 0; bt < 2; bt++ {
		for i := 0; i < 2; i++ {
			for j := 0; j < 2; j++ {
				var s uint64
				for k := 0; k < 3; k++ {
					s += r.FromSigned(in[bt*6+i*3+k]) * r.FromSigned(in[bt*6+j*3+k])
				}
				if want := r.Signed(r.Reduce(s)); got[bt*4+i*2+j] != want {
					t.Errorf("z[%d][%d][%d] = %d, want %d", bt, i, j, got[bt*4+i*2+j], want)
				}
			}
		}
	}
	d := newDealer(r)
	if _, err := New(b.p, &shareBackend{party: 1, d: d}); err == nil || !strings.Contains(err.Error(), "cannot multiply two shared matrices") {
		t.Errorf("New on a backend without MatMulShared: %v", err)
	}
}
