package passes

import (
	"bytes"
	"fmt"
	"github.com/cryptflow-go/cryptflow/sciir"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/golden"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir"
)

func fheSamples(g *ir.Graph, n int, seed uint64) []dataset.Sample {
	rng := rand.New(rand.NewPCG(seed, 3))
	var out []dataset.Sample
	for i := range n {
		x := make([]float32, g.Inputs[0].Shape.Size())
		for j := range x {
			x[j] = float32(2*rng.Float64() - 1)
		}
		out = append(out, dataset.Sample{Name: fmt.Sprint(i), Input: x, Label: -1})
	}
	return out
}

// TestCompileFHE compiles random polynomial networks for the fhe mode: no truncation anywhere,
// the program over Z_n with n the product of the chosen primes, verified against the 64-bit run,
// and encryption parameters within the security table.
func TestCompileFHE(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		g, err := golden.RandomPolyNet(seed, seed%3 == 0)
		if err != nil {
			t.Fatal(err)
		}
		opts := DefaultOptions()
		opts.Backend, opts.Samples, opts.Scales = BackendFHE, fheSamples(g, 8, seed), []int{2, 3, 4}
		p, rep, err := Compile(g, opts)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		for _, in := range p.Instrs {
			if !in.Op.Polynomial() {
				t.Fatalf("seed %d: %s in an fhe program", seed, in.Op)
			}
		}
		if p.Modulus == 0 || p.FHE == nil || rep.Tune == nil || !rep.Tune.Verified {
			t.Fatalf("seed %d: modulus %d, fhe %v, tune %+v", seed, p.Modulus, p.FHE, rep.Tune)
		}
		if d, _ := p.FHEDepth(); d != p.FHE.Depth {
			t.Errorf("seed %d: depth %d recorded, %d computed", seed, p.FHE.Depth, d)
		}
		var buf bytes.Buffer
		if err := sciir.Write(&buf, &sciir.File{Program: p, Backend: BackendFHE}, true); err != nil {
			t.Fatal(err)
		}
		f, err := sciir.Unmarshal(buf.Bytes())
		if err != nil {
			t.Fatalf("seed %d: read back: %v", seed, err)
		}
		if f.Program.Modulus != p.Modulus || !reflect.DeepEqual(f.Program.FHE, p.FHE) || f.Backend != BackendFHE {
			t.Errorf("seed %d: read back Z_%d %v (%s), wrote Z_%d %v", seed, f.Program.Modulus, f.Program.FHE, f.Backend, p.Modulus, p.FHE)
		}
		t.Logf("seed %d: %d instrs, %d bits, %s", seed, len(p.Instrs), rep.Tune.Bits, p.FHE)
	}
}

// TestCompileFHERefusesNonPolynomial checks that ReLU and MaxPool are refused, naming the nodes.
func TestCompileFHERefusesNonPolynomial(t *testing.T) {
	b := newGB(1, ir.Shape{1, 1, 6, 6})
	w := b.konst(ir.Shape{2, 1, 3, 3}, 0.5)
	c := b.node(ir.Conv, convAttrs(1, []int{3, 3}, []int{1, 1}, []int{0, 0, 0, 0}, []int{1, 1}), "x", w)
	r := b.node(ir.Relu, nil, c)
	m := b.node(ir.MaxPool, poolAttrs([]int{2, 2}, []int{2, 2}, []int{0, 0, 0, 0}, 0), r)
	g := b.done(t, m)
	opts := DefaultOptions()
	opts.Backend, opts.Samples = BackendFHE, fheSamples(g, 2, 1)
	_, _, err := Compile(g, opts)
	if err == nil {
		t.Fatal("a network with ReLU and MaxPool compiled for fhe")
	}
	for _, want := range []string{"relu", "maxpool", "not polynomial"} {
		if !strings.Contains(strings.ToLower(err.Error()), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	if !strings.Contains(err.Error(), "Relu_") || !strings.Contains(err.Error(), "MaxPool_") {
		t.Errorf("error %q does not name the nodes", err)
	}
}
