package passes

import (
	"context"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// TestRequantLowering compiles a Requant graph with default options (Z_2^64 at scale 0 follow
// from the node, no autotuning) and checks the program against ir.RequantParams.Apply on every
// input of a range, in floor and round-half-even modes, with point corrections.
func TestRequantLowering(t *testing.T) {
	for _, rne := range []int{0, 1} {
		g := ir.NewGraph("requant")
		g.Inputs = append(g.Inputs, ir.Value{Name: "x", DType: ir.Float32, Shape: ir.Shape{1, 2, 200}})
		attrs := ir.Attrs{"axis": ir.IntAttr(1), "mult": ir.IntsAttr([]int{3, 5}), "add": ir.IntsAttr([]int{7, -2}),
			"shift": ir.IntAttr(3), "min": ir.IntAttr(-20), "max": ir.IntAttr(40), "rne": ir.IntAttr(rne),
			"fix_at": ir.IntsAttr([]int{4, -9, 50, 11}), "fix_add": ir.IntsAttr([]int{1, -1, 2, 0})}
		g.Nodes = append(g.Nodes, &ir.Node{Name: "rq", Op: ir.Requant, Inputs: []string{"x"}, Outputs: []string{"y"}, Attrs: attrs})
		g.Outputs = []string{"y"}
		if err := g.InferShapes(); err != nil {
			t.Fatal(err)
		}
		opts := DefaultOptions()
		p, _, err := Compile(g, opts)
		if err != nil {
			t.Fatal(err)
		}
		if p.Bits != 64 || p.Scale != 0 {
			t.Fatalf("l=%d s=%d, want 64, 0", p.Bits, p.Scale)
		}
		params, err := ir.ReadRequant(attrs, 1, ir.Shape{1, 2, 200})
		if err != nil {
			t.Fatal(err)
		}
		r := ring.Must(64)
		x := make([]int64, 400)
		for i := range x {
			x[i] = int64(i%200) - 100
		}
		c, err := cleartext.New(r)
		if err != nil {
			t.Fatal(err)
		}
		m, err := vm.New(p, c)
		if err != nil {
			t.Fatal(err)
		}
		outs, err := m.Run(context.Background(), []ring.Tensor{r.SignedTensor([]int{1, 2, 200}, x...)})
		if err != nil {
			t.Fatal(err)
		}
		got := r.SignedValues(outs[0].Value)
		for i, v := range x {
			if want := params.Apply([]int64{v}, i/200); got[i] != want {
				t.Fatalf("rne=%d x=%d channel %d: program %d, definition %d", rne, v, i/200, got[i], want)
			}
		}
	}
}
