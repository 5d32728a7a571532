package serve

import (
	"context"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
	"github.com/cryptflow-go/cryptflow/vm"
)

// Backends with each combination of the optional interfaces the VM looks for by type assertion.
type (
	plainBackend struct{ vm.Backend }
	mathBackend  struct {
		vm.Backend
		calls *int
	}
	convBackend     struct{ vm.Backend }
	convMathBackend struct {
		convBackend
		calls *int
	}
	mathSharedBackend struct{ mathBackend }
	fullBackend       struct{ convMathBackend }
)

func (m mathSharedBackend) MatMulShared(context.Context, fixed.Engine, ring.Tensor, ring.Tensor, ring.Tensor, int, int, int, int) error {
	*m.calls += 10
	return nil
}

func (m fullBackend) MatMulShared(context.Context, fixed.Engine, ring.Tensor, ring.Tensor, ring.Tensor, int, int, int, int) error {
	*m.calls += 10
	return nil
}

func (m mathBackend) Math(context.Context, fxmath.Func, ring.Tensor, ring.Tensor, int) error {
	*m.calls++
	return nil
}

func (convBackend) UseConv2D(ring.ConvGeom, fixed.Engine) bool { return true }

func (convBackend) Conv2D(context.Context, fixed.Engine, ring.Tensor, *ring.Tensor, ring.Tensor, ring.ConvGeom) error {
	return nil
}

func (m convMathBackend) Math(context.Context, fxmath.Func, ring.Tensor, ring.Tensor, int) error {
	*m.calls++
	return nil
}

// TestRecorderExposesOptionalInterfaces: the session's accounting wrapper exposes exactly the
// optional interfaces of the backend it wraps (own convolution, math functions) and forwards the
// math functions to it. Before, a wrapped vm/sci backend lost Math, and `scirun --local` refused
// every program with sigmoid, tanh, exp, reciprocal or rsqrt.
func TestRecorderExposesOptionalInterfaces(t *testing.T) {
	calls := 0
	for _, c := range []struct {
		name               string
		b                  vm.Backend
		conv, math, shared bool
	}{
		{"plain", plainBackend{}, false, false, false},
		{"math", mathBackend{calls: &calls}, false, true, false},
		{"conv", convBackend{}, true, false, false},
		{"conv+math", convMathBackend{calls: &calls}, true, true, false},
		{"math+shared", mathSharedBackend{mathBackend{calls: &calls}}, false, true, true},
		{"conv+math+shared", fullBackend{convMathBackend{calls: &calls}}, true, true, true},
	} {
		be := newRecorder(c.b, nil, &fixed.Program{}, nil, 1).backend()
		_, conv := be.(vm.ConvBackend)
		mb, math := be.(vm.MathBackend)
		sb, shared := be.(vm.SharedMatMulBackend)
		if conv != c.conv || math != c.math || shared != c.shared {
			t.Errorf("%s: wrapper is a ConvBackend %v, a MathBackend %v, a SharedMatMulBackend %v; want %v, %v, %v", c.name, conv, math, shared, c.conv, c.math, c.shared)
			continue
		}
		if shared {
			before := calls
			if err := sb.MatMulShared(context.Background(), fixed.EngineDefault, ring.Tensor{}, ring.Tensor{}, ring.Tensor{}, 1, 1, 1, 1); err != nil || calls != before+10 {
				t.Errorf("%s: MatMulShared not forwarded (%v, %d)", c.name, err, calls-before)
			}
		}
		if math {
			before := calls
			if err := mb.Math(context.Background(), fxmath.Sigmoid, ring.Tensor{}, ring.Tensor{}, 12); err != nil || calls != before+1 {
				t.Errorf("%s: Math not forwarded (%v, %d calls)", c.name, err, calls-before)
			}
		}
	}
}

// lowBackend has a low-bit ReLU; plainReLU has only ReLU.
type (
	lowBackend struct {
		vm.Backend
		calls *int
	}
	plainReLU struct {
		vm.Backend
		calls *int
	}
)

func (m lowBackend) ReLULow(context.Context, ring.Tensor, ring.Tensor, int) error {
	*m.calls += 100
	return nil
}

func (m plainReLU) ReLU(context.Context, ring.Tensor, ring.Tensor) error {
	*m.calls++
	return nil
}

// TestRecorderForwardsLowReLU: the wrapper always offers the low-bit ReLU, running the wrapped
// backend's when it has one (scirun's sessions: vm/sci, vm/sci3) and its ReLU otherwise.
func TestRecorderForwardsLowReLU(t *testing.T) {
	calls := 0
	for _, c := range []struct {
		name string
		b    vm.Backend
		want int
	}{{"low", lowBackend{calls: &calls}, 100}, {"plain", plainReLU{calls: &calls}, 1}} {
		lb, ok := newRecorder(c.b, nil, &fixed.Program{}, nil, 1).backend().(vm.LowReLUBackend)
		if !ok {
			t.Fatalf("%s: the wrapper is no vm.LowReLUBackend", c.name)
		}
		before := calls
		if err := lb.ReLULow(context.Background(), ring.Tensor{}, ring.Tensor{}, 17); err != nil || calls-before != c.want {
			t.Errorf("%s: ReLULow made %d calls' worth (%v), want %d", c.name, calls-before, err, c.want)
		}
	}
}
