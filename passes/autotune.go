package passes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// tuneOptions controls autotune (the autotune pass fills it from Options).
type tuneOptions struct {
	// Scales are the candidate scales (default defaultScales). Ignored when Scale is pinned.
	Scales []int
	// Bits pins the bitwidth l (0: choose the smallest that does not overflow).
	Bits int
	// Scale pins the scale s (-1: choose by SelectionRule).
	Scale int
	// Headroom is the number of bits kept free above the largest magnitude seen on the
	// validation data (0..32).
	Headroom int
	// Workers run the validation inputs in parallel (default 2).
	Workers int
	// Progress, when set, is called as validation inputs complete (done of total, over the whole
	// sweep), from any goroutine but never concurrently.
	Progress func(done, total int)
}

// defaultScales is the default scale sweep.
var defaultScales = []int{6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}

// TuneRow is one row of the autotune table: the program at Scale in the smallest ring that holds
// every value seen (Bits = BitsUsed + headroom, or the pinned bitwidth).
type TuneRow struct {
	Bits, Scale int
	Accuracy    float64 // top-1 accuracy on the labelled samples (-1 without labels)
	Agreement   float64 // fraction of samples whose top-1 equals the float model's
	BitsUsed    int     // bits of the largest magnitude over all tensors and weights, plus sign
	Widest      string  // the tensor (or weight) with the largest magnitude
	Overflow    bool    // BitsUsed + headroom exceeds the (pinned or maximal) bitwidth
	// Gained and Lost compare the row with the reference row (the one that agrees most with the
	// float model) on labelled samples: the samples this row classifies right and the reference
	// wrong, and the reverse. Both 0 without labels and on the reference row itself.
	Gained, Lost int
}

// SelectionRule is the autotuner's rule for choosing a scale, as the compile output states it.
const SelectionRule = "highest agreement with the float model (ties: higher accuracy, fewer bits, smaller scale); " +
	"a scale with less agreement only for an accuracy gain beyond the validation noise: gained - lost > 2*sqrt(gained + lost) " +
	"images against that row (McNemar's paired test at z = 2)"

// TuneResult is the autotuner's choice with the table it was made from.
type TuneResult struct {
	Bits, Scale   int
	Rows          []TuneRow
	Chosen        TuneRow // the row chosen, re-measured in the chosen ring
	Samples       int
	Labelled      bool
	FloatAccuracy float64 // -1 without labels
	Headroom      int
	// Verified reports that running the chosen program in Z_{2^Bits} gave outputs identical to the
	// 64-bit run (so the chosen ring does not overflow on the validation data).
	Verified bool
	// Reason says why the chosen row won under SelectionRule (for the compile output).
	Reason string
	// Program is the program verified in the chosen ring (no slots assigned yet): the one to
	// emit, not to be lowered again.
	Program *fixed.Program
}

// autotune picks the ring bitwidth l and scale s for the cleaned graph g on the validation samples.
// For each candidate scale it runs the cleartext fixed-point VM on every sample in Z_{2^64},
// tracking the largest magnitude each tensor reaches; the smallest ring without overflow then has
// l = bits used + headroom, and because nothing wraps, its results equal the 64-bit run's, so one
// run per scale measures every (l, s) pair. Among scales that fit, it picks by SelectionRule
// (chooseRow): the best agreement with the float model ref, unless another scale is more accurate
// on the labels by more than the validation set's noise; ties go to the smaller bitwidth, then
// the smaller scale. A final run in the chosen ring verifies the choice.
//
// ref is the float model used for agreement (usually the graph before clean-up). Programs come
// from build(bits, scale, final): one per candidate scale, and with final set the chosen one,
// which is verified and handed back (TuneResult.Program). The autotune pass passes the driver's
// build table as build, so the program it verifies is the one the compilation emits.
func autotune(g, ref *ir.Graph, samples []dataset.Sample, opts tuneOptions, build func(bits, scale int, final bool) (*fixed.Program, error)) (*TuneResult, error) {
	if len(samples) == 0 {
		return nil, fmt.Errorf("autotune: no validation samples")
	}
	if len(g.Inputs) != 1 || len(g.Outputs) < 1 {
		return nil, fmt.Errorf("autotune: the model has %d inputs and %d outputs (want one input)", len(g.Inputs), len(g.Outputs))
	}
	if opts.Workers < 1 {
		opts.Workers = 2
	}
	if opts.Headroom < 0 || opts.Headroom > 32 {
		return nil, fmt.Errorf("autotune: headroom %d bits is not in 0..32", opts.Headroom)
	}
	if opts.Bits != 0 && (opts.Bits < MinBits || opts.Bits > MaxBits) {
		return nil, fmt.Errorf("autotune: bitwidth %d is not in %d..%d", opts.Bits, MinBits, MaxBits)
	}
	scales := opts.Scales
	if len(scales) == 0 {
		scales = defaultScales
	}
	if opts.Scale >= 0 {
		scales = []int{opts.Scale}
	}
	in := g.Inputs[0]
	n := in.Shape.Size()
	labelled := true
	for i, s := range samples {
		if len(s.Input) != n {
			return nil, fmt.Errorf("autotune: sample %d (%s) has %d values, the input %q has %d", i, s.Name, len(s.Input), in.Name, n)
		}
		labelled = labelled && s.Label >= 0
	}
	res := &TuneResult{Samples: len(samples), Labelled: labelled, FloatAccuracy: -1, Headroom: opts.Headroom}
	prog := &progress{fn: opts.Progress, total: len(samples) * (len(scales) + 2)}

	floatTop, err := floatPredictions(ref, samples, opts.Workers, prog)
	if err != nil {
		return nil, err
	}
	if labelled {
		res.FloatAccuracy = accuracy(floatTop, samples)
	}
	limit := 64
	if opts.Bits != 0 {
		limit = opts.Bits
	}
	type scaleRun struct {
		row   TuneRow
		floor int // the smallest ring the program accepts (MinBits, or the math functions' floor)
		outs  [][]int64
		top   []int
	}
	var runs []scaleRun
	for _, s := range scales {
		p, err := build(64, s, false)
		if err != nil {
			return nil, fmt.Errorf("autotune at scale %d: %w", s, err)
		}
		run, err := runClear(p, samples, opts.Workers, true, prog)
		if err != nil {
			return nil, fmt.Errorf("autotune at scale %d: %w", s, err)
		}
		row := TuneRow{Scale: s, Agreement: agreement(run.top, floatTop), Accuracy: -1}
		if labelled {
			row.Accuracy = accuracy(run.top, samples)
		}
		row.BitsUsed, row.Widest = bitsUsed(p, run.maxAbs)
		// The math functions compute at an internal scale wider than any tensor's: a floor
		// under the ring the values need (mathFloor).
		floor := max(MinBits, mathFloor(p))
		row.Bits = max(row.BitsUsed+opts.Headroom, floor)
		if opts.Bits != 0 {
			row.Bits = opts.Bits
		}
		row.Overflow = max(row.BitsUsed+opts.Headroom, floor) > limit
		runs = append(runs, scaleRun{row: row, floor: floor, outs: run.outs, top: run.top})
	}
	rows := make([]TuneRow, len(runs))
	tops := make([][]int, len(runs))
	for i, r := range runs {
		rows[i], tops[i] = r.row, r.top
	}
	var labels []int
	if labelled {
		labels = make([]int, len(samples))
		for i, s := range samples {
			labels[i] = s.Label
		}
	}
	best, reason := chooseRow(rows, tops, labels)
	for i := range runs {
		runs[i].row = rows[i]
	}
	res.Rows = rows
	res.Reason = reason
	if best < 0 {
		if opts.Scale >= 0 && opts.Bits != 0 {
			// Both pinned by hand: honour the request; the row says it overflows.
			best, res.Reason = 0, "bitwidth and scale pinned"
		} else {
			need := math.MaxInt
			for _, r := range runs {
				need = min(need, max(r.row.BitsUsed+opts.Headroom, r.floor))
			}
			return nil, fmt.Errorf("autotune: no scale fits a %d-bit ring with %d bit(s) of headroom (the smallest needs %d bits); lower the scale or the headroom", limit, opts.Headroom, need)
		}
	}
	if opts.Scale >= 0 && res.Reason != "bitwidth and scale pinned" {
		res.Reason = "scale pinned"
	}
	res.Bits, res.Scale = runs[best].row.Bits, runs[best].row.Scale
	// Verify in the chosen ring.
	p, err := build(res.Bits, res.Scale, true)
	if err != nil {
		return nil, fmt.Errorf("autotune: %w", err)
	}
	run, err := runClear(p, samples, opts.Workers, false, prog)
	if err != nil {
		return nil, fmt.Errorf("autotune: verify l=%d s=%d: %w", res.Bits, res.Scale, err)
	}
	res.Chosen = runs[best].row
	res.Chosen.Agreement = agreement(run.top, floatTop)
	if labelled {
		res.Chosen.Accuracy = accuracy(run.top, samples)
	}
	res.Verified = equalOutputs(run.outs, runs[best].outs)
	res.Program = p
	return res, nil
}

// chooseRow picks the row to compile under SelectionRule among rows that do not overflow, and
// says why; -1 when every row overflows. tops[i] are row i's top-1 classes per sample; labels
// are the samples' labels (nil without labels: agreement alone decides). It fills in the rows'
// Gained and Lost against the reference row.
//
// Why this rule: the programs differ from the float model only by rounding, so agreement with
// float is what the fixed-point conversion controls; a higher accuracy on a few validation images
// is as likely rounding noise that happens to fix an image the float model gets wrong. Paired
// samples make the comparison exact: images both rows classify alike say nothing about which is
// better, and if the two rows were equally accurate each of the n = gained + lost images they
// disagree on would be a fair coin, so gained - lost has standard deviation sqrt(n). A gain of
// more than two standard deviations (one-sided p ≈ 0.023, McNemar's test with z = 2) is
// accepted; on 40 images one image more with three disagreements (2 gained, 1 lost) is not, six
// gained with none lost is.
func chooseRow(rows []TuneRow, tops [][]int, labels []int) (int, string) {
	ref := -1
	for i, r := range rows {
		if r.Overflow {
			continue
		}
		if ref < 0 || moreAgreeing(r, rows[ref]) {
			ref = i
		}
	}
	if ref < 0 {
		return -1, ""
	}
	if labels == nil {
		best := ref
		for i, r := range rows {
			if !r.Overflow && better(r, rows[best], false) {
				best = i
			}
		}
		return best, fmt.Sprintf("s=%d agrees best with the float model (%.2f%%); no labels, so agreement alone decides", rows[best].Scale, 100*rows[best].Agreement)
	}
	best := ref
	var passed []string
	for i := range rows {
		if i == ref {
			continue
		}
		for k, lab := range labels {
			a, b := tops[i][k] == lab, tops[ref][k] == lab
			switch {
			case a && !b:
				rows[i].Gained++
			case b && !a:
				rows[i].Lost++
			}
		}
		r := rows[i]
		if r.Overflow || r.Gained <= r.Lost {
			continue
		}
		if !significantGain(r.Gained, r.Lost) {
			passed = append(passed, fmt.Sprintf("s=%d (+%d -%d)", r.Scale, r.Gained, r.Lost))
			continue
		}
		if best == ref || better(r, rows[best], true) {
			best = i
		}
	}
	rf := rows[ref]
	if best != ref {
		b := rows[best]
		return best, fmt.Sprintf("s=%d classifies %d more image(s) right than s=%d, the scale that agrees best with float (+%d -%d > 2*sqrt(%d)): a gain beyond the noise",
			b.Scale, b.Gained-b.Lost, rf.Scale, b.Gained, b.Lost, b.Gained+b.Lost)
	}
	why := fmt.Sprintf("s=%d agrees best with the float model (%.2f%%)", rf.Scale, 100*rf.Agreement)
	if len(passed) > 0 {
		why += fmt.Sprintf("; more accurate but within the noise: %s, each needs gained - lost > 2*sqrt(gained + lost)", strings.Join(passed, ", "))
	}
	return ref, why
}

// significantGain reports whether gained - lost paired images exceed two standard deviations of
// the difference under equal accuracy, 2*sqrt(gained + lost).
func significantGain(gained, lost int) bool {
	d := float64(gained - lost)
	return d > 0 && d*d > 4*float64(gained+lost)
}

// moreAgreeing orders rows for the reference of chooseRow: higher agreement, then higher
// accuracy, then fewer bits, then a smaller scale.
func moreAgreeing(a, b TuneRow) bool {
	if a.Agreement != b.Agreement {
		return a.Agreement > b.Agreement
	}
	if a.Accuracy != b.Accuracy {
		return a.Accuracy > b.Accuracy
	}
	if a.Bits != b.Bits {
		return a.Bits < b.Bits
	}
	return a.Scale < b.Scale
}

// better reports whether row a beats row b: higher accuracy (agreement without labels), then
// fewer bits, then a smaller scale.
func better(a, b TuneRow, labelled bool) bool {
	sa, sb := a.Agreement, b.Agreement
	if labelled {
		sa, sb = a.Accuracy, b.Accuracy
	}
	if sa != sb {
		return sa > sb
	}
	if a.Bits != b.Bits {
		return a.Bits < b.Bits
	}
	return a.Scale < b.Scale
}

func accuracy(top []int, samples []dataset.Sample) float64 {
	ok := 0
	for i, s := range samples {
		if top[i] == s.Label {
			ok++
		}
	}
	return float64(ok) / float64(len(samples))
}

func agreement(a, b []int) float64 {
	ok := 0
	for i := range a {
		if a[i] == b[i] {
			ok++
		}
	}
	return float64(ok) / float64(len(a))
}

func equalOutputs(a, b [][]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// mathFloor returns the smallest bitwidth at which the math instructions of p (exp, sigmoid,
// tanh, reciprocal, rsqrt) compute what they compute in the 64-bit sweep, or 0 when p has none.
// They accept any l ≥ fxmath.MinBits(s) = 2s+5, but their internal scale T = min(s+3, ⌊(l−3)/2⌋)
// (fxmath.NewParams) reaches s+3 only from l = 2s+9: in a smaller ring they are less precise than
// the program autotune measured (and the verification run would differ from it).
func mathFloor(p *fixed.Program) int {
	for _, in := range p.Instrs {
		if _, ok := in.Op.MathFunc(); ok {
			return max(fxmath.MinBits(p.Scale), 2*(p.Scale+3)+3)
		}
	}
	return 0
}

// bitsUsed returns the bits (with sign) of the largest magnitude over the tensors (maxAbs) and the
// weights of p, and the name of the widest one.
//
// The inputs of maxpool and argmax count one bit more: the secure protocols compare x and y by the
// sign of x − y in the ring, which is exact only while |x − y| < 2^(l−1).
func bitsUsed(p *fixed.Program, maxAbs []uint64) (int, string) {
	compared := make([]bool, len(p.Tensors))
	for _, in := range p.Instrs {
		if in.Op == fixed.OpMaxPool || in.Op == fixed.OpArgMax {
			for _, t := range in.In {
				compared[t] = true
			}
		}
	}
	best, name := 0, ""
	for t, m := range maxAbs {
		b := bitsOfMagnitude(m)
		if compared[t] && m != 0 {
			b++
		}
		if b > best {
			best, name = b, p.Tensors[t].Name
		}
	}
	for _, w := range p.Weights {
		for _, v := range w.Data {
			if b := ring.BitsFor(v); b > best {
				best, name = b, "weight "+w.Name
			}
		}
	}
	for _, in := range p.Instrs {
		if in.Op == fixed.OpPad {
			if b := ring.BitsFor(in.PadValue); b > best {
				best, name = b, "pad value of "+in.Source
			}
		}
	}
	return best + 1, name
}

func bitsOfMagnitude(m uint64) int {
	n := 0
	for m != 0 {
		n++
		m >>= 1
	}
	return n
}

// progress serialises progress callbacks.
type progress struct {
	mu    sync.Mutex
	fn    func(done, total int)
	done  int
	total int
}

func (p *progress) add(n int) {
	if p == nil || p.fn == nil {
		return
	}
	p.mu.Lock()
	p.done += n
	p.fn(p.done, p.total)
	p.mu.Unlock()
}

// parallel runs work(worker, i) for i < n on the given number of workers; every worker first
// calls setup(worker). The first error stops the run.
func parallel(n, workers int, setup func(w int) error, work func(w, i int) error) error {
	workers = max(1, min(workers, n))
	var next atomic.Int64
	errs := make([]error, workers)
	var failed atomic.Bool
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			if err := setup(w); err != nil {
				errs[w] = err
				failed.Store(true)
				return
			}
			for !failed.Load() {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := work(w, i); err != nil {
					errs[w] = err
					failed.Store(true)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	return errors.Join(errs...)
}

// floatPredictions runs the float reference on every sample and returns the top-1 class.
func floatPredictions(g *ir.Graph, samples []dataset.Sample, workers int, prog *progress) ([]int, error) {
	top := make([]int, len(samples))
	its := make([]*interp.Interpreter, workers)
	in := g.Inputs[0]
	out := g.Outputs[0]
	isIndex := false
	for _, n := range g.Nodes {
		if n.Op == ir.ArgMax && n.Outputs[0] == out {
			isIndex = true
		}
	}
	err := parallel(len(samples), workers, func(w int) error {
		it, err := interp.New(g)
		its[w] = it
		return err
	}, func(w, i int) error {
		res, err := its[w].Run(map[string]*ir.Tensor{in.Name: {Shape: in.Shape, Data: samples[i].Input}})
		if err != nil {
			return fmt.Errorf("float model on %s: %w", samples[i].Name, err)
		}
		if isIndex {
			top[i] = int(res[out].Data[0])
		} else {
			top[i] = argmaxFloat(res[out].Data)
		}
		prog.add(1)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("autotune: %w", err)
	}
	return top, nil
}

func argmaxFloat(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

type clearRun struct {
	top    []int
	outs   [][]int64 // signed first output per sample
	maxAbs []uint64  // per tensor
}

// runClear runs program p on the clear backend over all samples.
func runClear(p *fixed.Program, samples []dataset.Sample, workers int, track bool, prog *progress) (*clearRun, error) {
	r, err := p.Ring()
	if err != nil {
		return nil, err
	}
	be, err := cleartext.New(r)
	if err != nil {
		return nil, err
	}
	run := &clearRun{top: make([]int, len(samples)), outs: make([][]int64, len(samples))}
	workers = max(1, min(workers, len(samples)))
	machines := make([]*vm.Machine, workers)
	maxAbs := make([][]uint64, workers)
	inputs := make([][]ring.Tensor, workers)
	in := p.Tensors[p.Inputs[0].Tensor]
	scale := in.Scale
	// A program whose output is an ArgMax reveals the class itself.
	isIndex := false
	for _, ins := range p.Instrs {
		if ins.Op == fixed.OpArgMax && ins.Out == p.Outputs[0].Tensor {
			isIndex = true
		}
	}
	err = parallel(len(samples), workers, func(w int) error {
		m, err := vm.New(p, be)
		if err != nil {
			return err
		}
		machines[w] = m
		inputs[w] = []ring.Tensor{ring.NewTensor(in.Shape)}
		if track {
			mx := make([]uint64, len(p.Tensors))
			maxAbs[w] = mx
			m.Observe = func(t int, v ring.Tensor) {
				cur := mx[t]
				for _, e := range v.Data {
					s := r.Signed(e)
					a := uint64(s)
					if s < 0 {
						a = uint64(-s)
					}
					if a > cur {
						cur = a
					}
				}
				mx[t] = cur
			}
		}
		return nil
	}, func(w, i int) error {
		x := inputs[w][0]
		for j, v := range samples[i].Input {
			e, err := r.Encode(float64(v), scale)
			if err != nil {
				return fmt.Errorf("input %s: %w", samples[i].Name, err)
			}
			x.Data[j] = e
		}
		outs, err := machines[w].Run(context.Background(), inputs[w])
		if err != nil {
			return fmt.Errorf("input %s: %w", samples[i].Name, err)
		}
		o := outs[0].Value.Data
		signed := make([]int64, len(o))
		for j, v := range o {
			signed[j] = r.Signed(v)
		}
		run.outs[i] = signed
		if isIndex {
			run.top[i] = int(signed[0])
		} else {
			run.top[i] = r.ArgMax(o)
		}
		prog.add(1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if track {
		run.maxAbs = make([]uint64, len(p.Tensors))
		for _, mx := range maxAbs {
			for t, v := range mx {
				run.maxAbs[t] = max(run.maxAbs[t], v)
			}
		}
	}
	return run, nil
}
