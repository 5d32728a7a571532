package passes

import (
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/protocols/linear/lincost"
)

func TestPlanEngines(t *testing.T) {
	opts := DefaultOptions()
	opts.Bits, opts.Scale, opts.Backend, opts.Check = 37, 12, "auto", true
	p, rep, err := Compile(cnn(t, 3), opts)
	if err != nil {
		t.Fatal(err)
	}
	planned := 0
	for _, in := range p.Instrs {
		switch in.Op {
		case fixed.OpMatMul, fixed.OpConv:
			planned++
			if in.Engine == fixed.EngineDefault {
				t.Errorf("%s %s: no engine recorded", in.Op, in.Source)
			}
		default:
			if in.Engine != fixed.EngineDefault {
				t.Errorf("%s: engine %v on a nonlinear layer", in.Op, in.Engine)
			}
		}
	}
	if planned == 0 {
		t.Fatal("the test network has no linear layer")
	}
	var log string
	for _, r := range rep.Passes {
		if r.Name == "plan-engines" {
			log = strings.Join(r.Log, "\n")
		}
	}
	if !strings.Contains(log, "planned") || !strings.Contains(log, "OT ") {
		t.Errorf("plan-engines log:\n%s", log)
	}
	for _, net := range []netmodel.Model{netmodel.LAN(), netmodel.WAN()} {
		est, err := PlanEngines(p, net)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range est {
			want := fixed.EngineOT
			if e.HETime < e.OTTime {
				want = fixed.EngineHE
			}
			if e.Chosen != want || p.Instrs[e.Instr].Engine != want {
				t.Errorf("instr %d: chose %v, estimates OT %v HE %v", e.Instr, e.Chosen, e.OTTime, e.HETime)
			}
		}
	}
	// Without auto the program records no engine.
	opts.Backend = "sciot"
	q, _, err := Compile(cnn(t, 3), opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range q.Instrs {
		if in.Engine != fixed.EngineDefault {
			t.Fatalf("sciot program records engine %v", in.Engine)
		}
	}
}

// TestPlanEnginesPicksHEForLargeConvs: a 56×56×64 → 64 3×3 convolution (ResNet's) moves gigabytes
// by OT and megabytes by HE. A 10×64 classifier layer moves fewer bytes by OT, but its 2l flights
// cost more than HE's one round trip even on the LAN: time, not bytes, decides.
func TestPlanEnginesPicksHEForLargeConvs(t *testing.T) {
	p := &fixed.Program{Bits: 37, Scale: 12}
	x := p.AddTensor("x", ir.Shape{1, 64, 56, 56}, 12)
	y := p.AddTensor("y", ir.Shape{1, 64, 56, 56}, 24)
	w := p.AddWeight("w", ir.Shape{64, 64, 3, 3}, 12, make([]int64, 64*64*9))
	v := p.AddTensor("v", ir.Shape{64, 1}, 12)
	z := p.AddTensor("z", ir.Shape{10, 1}, 24)
	fc := p.AddWeight("fc", ir.Shape{10, 64}, 12, make([]int64, 640))
	win := ir.Window{Kernel: []int{3, 3}, Strides: []int{1, 1}, Pads: []int{1, 1, 1, 1}, Dilations: []int{1, 1}}
	p.Instrs = []*fixed.Instr{
		{Op: fixed.OpConv, Out: y, In: []int{x}, Weight: w, Group: 1, Win: win},
		{Op: fixed.OpMatMul, Out: z, In: []int{v}, Weight: fc},
	}
	for _, net := range []netmodel.Model{netmodel.LAN(), netmodel.WAN()} {
		est, err := PlanEngines(p, net)
		if err != nil {
			t.Fatal(err)
		}
		if len(est) != 2 || est[0].Chosen != fixed.EngineHE || est[1].OTBytes >= est[1].HEBytes {
			t.Errorf("%+v: %+v", net, est)
		}
		if est[0].OTBytes < 1000*est[0].HEBytes/10 {
			t.Errorf("conv: OT %d bytes, HE %d", est[0].OTBytes, est[0].HEBytes)
		}
	}
}

// TestPlanEnginesSharedProducts: a product of two runtime tensors (bmatmul) is planned like the
// weight layers, on the exact costs of its two constructions (lincost.SharedMatMulBits by OT,
// heplan.SharedMatMulCost by HE), choosing the smaller time estimate: attention-sized heads by HE
// (even a 2×2 product goes to HE on the LAN model: OT's 2l flights cost more than its bytes).
func TestPlanEnginesSharedProducts(t *testing.T) {
	for _, c := range []struct {
		a, b ir.Shape
		want fixed.Engine
	}{{ir.Shape{2, 17, 16}, ir.Shape{2, 16, 17}, fixed.EngineHE}, {ir.Shape{1, 2, 2}, ir.Shape{1, 2, 1}, fixed.EngineHE}} {
		p := &fixed.Program{Bits: 37, Scale: 12}
		x := p.AddTensor("x", c.a, 12)
		y := p.AddTensor("y", c.b, 12)
		z := p.AddTensor("z", ir.Shape{c.a[0], c.a[1], c.b[2]}, 24)
		p.Instrs = []*fixed.Instr{{Op: fixed.OpBatchMatMul, Out: z, In: []int{x, y}, Weight: -1}}
		est, err := PlanEngines(p, netmodel.LAN())
		if err != nil {
			t.Fatal(err)
		}
		if len(est) != 1 {
			t.Fatalf("%d estimates", len(est))
		}
		batch, m, k, n := fixed.BatchMatMulDims(c.a, c.b)
		hc, err := heplan.SharedMatMulCost(batch, m, k, n, 37)
		if err != nil {
			t.Fatal(err)
		}
		e := est[0]
		if e.OTBytes != lincost.SharedMatMulBits(batch, m, k, n, 37)/8 || e.HEBytes != hc.Bytes {
			t.Errorf("%v·%v: estimates %d B by OT, %d B by HE", c.a, c.b, e.OTBytes, e.HEBytes)
		}
		if e.Chosen != c.want || p.Instrs[0].Engine != c.want || (e.HETime < e.OTTime) != (c.want == fixed.EngineHE) {
			t.Errorf("%v·%v: chose %v (OT %v, HE %v), want %v", c.a, c.b, e.Chosen, e.OTTime, e.HETime, c.want)
		}
	}
}
