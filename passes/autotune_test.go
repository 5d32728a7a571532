package passes

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// tuneSamples makes n random inputs labelled with the float model's prediction (labelled) or
// unlabelled.
func tuneSamples(t *testing.T, g *ir.Graph, n int, labelled bool) []dataset.Sample {
	rng := rand.New(rand.NewPCG(77, 78))
	s := make([]dataset.Sample, n)
	for i := range s {
		x := randInput(rng, g.Inputs[0].Shape, 3)
		s[i] = dataset.Sample{Name: "s", Input: x, Label: -1}
		if labelled {
			s[i].Label = argmaxFloat(runFloat(t, g, x))
		}
	}
	return s
}

func TestAutotune(t *testing.T) {
	g := cnn(t, 60)
	cg, _, err := clean(g, false)
	if err != nil {
		t.Fatal(err)
	}
	samples := tuneSamples(t, g, 40, true)
	opts := defaultTuneOptions()
	opts.Scales = []int{4, 6, 8, 10}
	var mu sync.Mutex
	last, calls := 0, 0
	opts.Progress = func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		if done < last || total != 40*6 {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last, calls = done, calls+1
	}
	res, err := tuneGraph(cg, g, samples, opts)
	if err != nil {
		t.Fatal(err)
	}
	if last != 240 || calls != 240 {
		t.Errorf("progress ended at %d after %d calls", last, calls)
	}
	if !res.Labelled || res.FloatAccuracy != 1 || !res.Verified || len(res.Rows) != 4 {
		t.Fatalf("result %+v", res)
	}
	var best TuneRow
	for i, r := range res.Rows {
		if r.Bits != r.BitsUsed+1 {
			t.Errorf("row %d: bits %d, used %d, headroom 1", i, r.Bits, r.BitsUsed)
		}
		if i > 0 && r.BitsUsed <= res.Rows[i-1].BitsUsed {
			t.Errorf("bits used does not grow with the scale: %+v", res.Rows)
		}
		if r.Scale == res.Scale {
			best = r
		}
	}
	for _, r := range res.Rows {
		if better(r, best, true) {
			t.Errorf("row %+v beats the chosen %+v", r, best)
		}
	}
	if res.Bits != best.Bits || res.Chosen.Accuracy != best.Accuracy {
		t.Errorf("chosen l=%d acc %g, row %+v", res.Bits, res.Chosen.Accuracy, best)
	}

	// Unlabelled: agreement decides.
	opts.Progress = nil
	un := tuneSamples(t, g, 20, false)
	res2, err := tuneGraph(cg, g, un, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res2.Labelled || res2.FloatAccuracy != -1 || res2.Chosen.Accuracy != -1 || res2.Chosen.Agreement <= 0 {
		t.Errorf("unlabelled result %+v", res2)
	}

	// Pinned scale and bitwidth.
	pin := defaultTuneOptions()
	pin.Scale, pin.Bits = 6, 60
	res3, err := tuneGraph(cg, g, samples, pin)
	if err != nil {
		t.Fatal(err)
	}
	if res3.Scale != 6 || res3.Bits != 60 || len(res3.Rows) != 1 || !res3.Verified {
		t.Errorf("pinned result %+v", res3)
	}
	// A bitwidth too small for every scale: an error saying what is needed.
	pin = defaultTuneOptions()
	pin.Bits, pin.Scales = 8, []int{6, 8}
	if _, err := tuneGraph(cg, g, samples, pin); err == nil || !strings.Contains(err.Error(), "smallest needs") {
		t.Errorf("too-small bitwidth: %v", err)
	}
	// Both pinned too small: honoured, flagged, and the verification fails.
	pin.Scale = 8
	res4, err := tuneGraph(cg, g, samples, pin)
	if err != nil {
		t.Fatal(err)
	}
	if !res4.Rows[0].Overflow || res4.Verified {
		t.Errorf("overflowing pinned run: %+v", res4)
	}
	if _, err := tuneGraph(cg, g, nil, opts); err == nil {
		t.Error("no samples accepted")
	}
	if _, err := tuneGraph(cg, g, []dataset.Sample{{Input: []float32{1}}}, opts); err == nil {
		t.Error("wrong-size sample accepted")
	}
}

func TestBetter(t *testing.T) {
	a := TuneRow{Bits: 30, Scale: 8, Accuracy: 0.9, Agreement: 0.95}
	for _, c := range []struct {
		b        TuneRow
		labelled bool
		want     bool
	}{
		{TuneRow{Bits: 20, Scale: 6, Accuracy: 0.8, Agreement: 0.99}, true, true},   // accuracy first
		{TuneRow{Bits: 20, Scale: 6, Accuracy: 0.8, Agreement: 0.99}, false, false}, // agreement without labels
		{TuneRow{Bits: 32, Scale: 9, Accuracy: 0.9, Agreement: 0.99}, true, true},   // tie: fewer bits
		{TuneRow{Bits: 30, Scale: 9, Accuracy: 0.9, Agreement: 0.95}, true, true},   // then smaller scale
	} {
		if got := better(a, c.b, c.labelled); got != c.want {
			t.Errorf("better(%+v, %+v, %v) = %v", a, c.b, c.labelled, got)
		}
	}
}

// TestBitsUsedComparedInputs checks that tensors compared by maxpool/argmax need one bit more:
// the secure comparison is exact only while differences stay below 2^(l-1).
func TestBitsUsedComparedInputs(t *testing.T) {
	p := &fixed.Program{
		Tensors: []fixed.Tensor{{Name: "x", Shape: ir.Shape{1, 4}}, {Name: "y", Shape: ir.Shape{1}}, {Name: "z", Shape: ir.Shape{1, 4}}},
		Instrs:  []*fixed.Instr{{Op: fixed.OpArgMax, In: []int{0}, Out: 1, Weight: -1, Axis: 1}},
	}
	// |x| < 2^7 needs 7 magnitude bits + 1 sign bit, and one more because x is compared.
	if got, name := bitsUsed(p, []uint64{100, 3, 0}); got != 9 || name != "x" {
		t.Fatalf("compared tensor: got %d bits (%s), want 9 (x)", got, name)
	}
	// The same magnitude in a tensor that is not compared needs 8.
	if got, name := bitsUsed(p, []uint64{0, 3, 100}); got != 8 || name != "z" {
		t.Fatalf("plain tensor: got %d bits (%s), want 8 (z)", got, name)
	}
}
