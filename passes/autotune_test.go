package passes

import (
	"math/rand/v2"
	"slices"
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
		if moreAgreeing(r, best) && !strings.Contains(res.Reason, "beyond the noise") {
			t.Errorf("row %+v agrees more than the chosen %+v (%s)", r, best, res.Reason)
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

// TestChooseRowPrefersAgreement reproduces issue 23's bad choice: on 40 CIFAR images the
// autotuner took s = 6 (92.5 % agreement with float) over s = 7 (100 %) because s = 6 classified
// one image more right. A constructed case with the same counts: float (and s = 7) get 36 of 40
// right; s = 6 differs from float on 3 images, fixing 2 and breaking 1 (37 of 40). One image is
// within the noise of 3 disagreements, so s = 7 must win; a gain of 6 with none lost is beyond
// it and wins; without labels agreement alone decides.
func TestChooseRowPrefersAgreement(t *testing.T) {
	const n = 40
	labels := make([]int, n)
	float := make([]int, n)
	for i := range labels {
		labels[i] = i % 10
		float[i] = labels[i]
	}
	for _, i := range []int{0, 1, 2, 3} { // float gets 36 right
		float[i] = (labels[i] + 1) % 10
	}
	s6 := slices.Clone(float)
	s6[0], s6[1] = labels[0], labels[1] // fixes two float errors
	s6[10] = (labels[10] + 1) % 10      // breaks one
	s7 := slices.Clone(float)
	row := func(scale, bits int, top []int) TuneRow {
		return TuneRow{Scale: scale, Bits: bits, Accuracy: accuracyOf(top, labels), Agreement: agreement(top, float)}
	}
	rows := []TuneRow{row(6, 20, s6), row(7, 22, s7)}
	if rows[0].Accuracy != 37.0/n || rows[0].Agreement != 37.0/n || rows[1].Accuracy != 36.0/n || rows[1].Agreement != 1 {
		t.Fatalf("constructed rows %+v", rows)
	}
	if !better(rows[0], rows[1], true) {
		t.Fatal("the old rule (accuracy first) no longer prefers s=6: the case does not reproduce the issue")
	}
	best, why := chooseRow(rows, [][]int{s6, s7}, labels)
	if best != 1 || !strings.Contains(why, "within the noise") || !strings.Contains(why, "s=6 (+2 -1)") {
		t.Errorf("chose row %d (%s), want s=7 with s=6 within the noise", best, why)
	}
	if rows[0].Gained != 2 || rows[0].Lost != 1 || rows[1].Gained != 0 || rows[1].Lost != 0 {
		t.Errorf("gained/lost %+v", rows)
	}

	// Fixing all four float errors with none lost: 4 > 2*sqrt(4) is false, still within the noise.
	s6b := slices.Clone(float)
	for _, i := range []int{0, 1, 2, 3} {
		s6b[i] = labels[i]
	}
	rows = []TuneRow{row(6, 20, s6b), row(7, 22, s7)}
	if best, why := chooseRow(rows, [][]int{s6b, s7}, labels); best != 1 {
		t.Errorf("+4 -0 chosen over agreement: %s", why)
	}
	// Six gained, none lost (float wrong on six): 6 > 2*sqrt(6) = 4.9, a gain beyond the noise.
	for _, i := range []int{4, 5} {
		float[i] = (labels[i] + 1) % 10
	}
	s7 = slices.Clone(float)
	s6c := slices.Clone(float)
	for i := range 6 {
		s6c[i] = labels[i]
	}
	rows = []TuneRow{row(6, 20, s6c), row(7, 22, s7)}
	if best, why := chooseRow(rows, [][]int{s6c, s7}, labels); best != 0 || !strings.Contains(why, "beyond the noise") {
		t.Errorf("+6 -0: chose row %d (%s), want s=6", best, why)
	}
	// An overflowing row is never the reference nor chosen.
	rows = []TuneRow{row(6, 20, s6c), row(7, 22, s7)}
	rows[0].Overflow = true
	if best, _ := chooseRow(rows, [][]int{s6c, s7}, labels); best != 1 {
		t.Errorf("overflowing row chosen")
	}
	// Without labels: agreement.
	rows = []TuneRow{row(6, 20, s6), row(7, 22, s7)}
	if best, why := chooseRow(rows, [][]int{s6, s7}, nil); best != 1 || !strings.Contains(why, "no labels") {
		t.Errorf("unlabelled: row %d (%s)", best, why)
	}
	if best, _ := chooseRow([]TuneRow{{Overflow: true}}, [][]int{s6}, labels); best != -1 {
		t.Errorf("all overflowing: %d", best)
	}
}

func accuracyOf(top, labels []int) float64 {
	return agreement(top, labels)
}

func TestSignificantGain(t *testing.T) {
	for _, c := range []struct {
		g, l int
		want bool
	}{{1, 0, false}, {2, 1, false}, {4, 0, false}, {5, 0, true}, {6, 0, true}, {10, 3, false}, {12, 3, true}, {0, 5, false}} {
		if got := significantGain(c.g, c.l); got != c.want {
			t.Errorf("significantGain(%d, %d) = %v", c.g, c.l, got)
		}
	}
}

// TestAutotuneMathFloor: a model with sigmoid and tanh whose values need few bits still gets a
// ring of 2s+9 bits, where the math functions' internal scale is the one of the 64-bit sweep
// (mathFloor). Before, an LSTM got l = 25 at s = 11 and the final lowering failed (the functions
// need l ≥ 2s+5), and at 2s+5 the verification run differed from the sweep. With l pinned below
// the floor of every candidate scale, autotune says which ring it needs.
func TestAutotuneMathFloor(t *testing.T) {
	b := newGB(32, ir.Shape{1, 4})
	h := b.node(ir.Sigmoid, nil, b.node(ir.Add, nil, b.node(ir.MatMul, nil, "x", b.konst(ir.Shape{4, 3}, 0.3)), b.konst(ir.Shape{3}, 0.1)))
	out := b.node(ir.Tanh, nil, b.node(ir.MatMul, nil, h, b.konst(ir.Shape{3, 2}, 0.3)))
	g := b.done(t, out)
	cg, _, err := clean(g, false)
	if err != nil {
		t.Fatal(err)
	}
	samples := tuneSamples(t, g, 10, false)
	opts := defaultTuneOptions()
	opts.Scales = []int{8, 10, 12}
	res, err := tuneGraph(cg, g, samples, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows {
		if r.BitsUsed+opts.Headroom >= 2*r.Scale+9 {
			t.Errorf("row %+v: the values alone need the floor; the test does not exercise it", r)
		}
		if r.Bits != 2*r.Scale+9 || r.Overflow {
			t.Errorf("row %+v: want l = 2s+9 = %d", r, 2*r.Scale+9)
		}
	}
	if !res.Verified || res.Program == nil || res.Program.Bits != 2*res.Scale+9 {
		t.Errorf("chose l=%d s=%d, verified %v", res.Bits, res.Scale, res.Verified)
	}
	opts.Bits = 24
	if _, err := tuneGraph(cg, g, samples, opts); err == nil || !strings.Contains(err.Error(), "needs 25 bits") {
		t.Errorf("l = 24 pinned, scales 8..12: %v", err)
	}
}
