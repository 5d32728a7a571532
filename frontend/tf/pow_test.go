package tf

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

// TestSquareActivations checks the polynomial activations: Square, Mul(x, x) and Pow(x, 2) all
// import as Mul(x, x) and compute x²; Pow with another exponent is refused by name.
func TestSquareActivations(t *testing.T) {
	x := randTensor(rand.New(rand.NewPCG(5, 6)), 2, 3)
	b := graphBytes(
		placeholder("x", 2, 3),
		node("sq", "Square", []string{"x"}),
		node("mm", "Mul", []string{"x", "x"}),
		constF("two", nil, 2),
		node("pw", "Pow", []string{"x", "two"}),
	)
	g, out := importRun(t, b, []string{"sq", "mm", "pw"}, x)
	for _, n := range g.Nodes {
		if n.Op != ir.Mul || n.Inputs[0] != n.Inputs[1] {
			t.Errorf("node %s: %s%v, want Mul(x, x)", n.Name, n.Op, n.Inputs)
		}
	}
	want := make([]float32, len(x.Data))
	for i, v := range x.Data {
		want[i] = v * v
	}
	for _, name := range []string{"sq", "mm", "pw"} {
		closeTo(t, name, out[name], want, x.Shape)
	}
	bad := graphBytes(placeholder("x", 2, 3), constF("three", nil, 3), node("pw", "Pow", []string{"x", "three"}))
	gd, err := Decode(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Import(gd, Options{Outputs: []string{"pw"}}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Pow(x, 3): error %v, want ErrUnsupported", err)
	}
}
