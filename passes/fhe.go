package passes

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/fheparams"
)

// BackendFHE is Options.Backend for the non-interactive fhe mode (docs/fixed-point.md, "The fhe
// mode"): lowering without truncation, the program over Z_n for the CRT product n of the chosen
// plaintext primes, and its encryption parameters in the program.
const BackendFHE = "fhe"

// errNotPolynomial marks the refusal of a network with a non-polynomial layer.
var errNotPolynomial = errors.New("not a polynomial network")

// DefaultFHEScales are the scales tried for the fhe mode when none are given: scales add up
// through the network, so they are much smaller than the two-party modes'.
var DefaultFHEScales = []int{1, 2, 3, 4, 5, 6, 7, 8}

// fheTable is the pass table of the fhe mode: the HLIL clean-up table, then lower-fhe in place of
// autotune, lower and the peepholes (which rewrite truncations, ReLUs and max pools, none of which
// a polynomial program has), then slots.
var fheTable = table{
	Name: "fhe",
	Passes: []pass{
		subTable(&cleanTable, OnHLIL),
		{Name: "lower-fhe", IR: HLILToFixed, Required: true,
			Doc: "fhe mode: lower without truncation, measure the values on the validation data, choose the scale, the CRT plaintext primes and the BGV parameters",
			run: runLowerFHE},
		{Name: "slots", IR: OnFixed, Required: true, Doc: "assign tensor storage slots by liveness (tensors not live together share)",
			run: runSlots},
	},
	Order: []OrderRule{
		{"fhe", "dead-code", "lower-fhe", "lower-fhe measures programs built from the final HLIL: every clean-up pass runs before it"},
		{"fhe", "lower-fhe", "slots", "slots are assigned to the fixed-point program's tensors"},
	},
}

// runLowerFHE lowers the cleaned graph without truncation for every candidate scale, refuses a
// program with a non-polynomial layer (naming the nodes), measures on the validation samples the
// bits every value needs (with headroom), keeps the scale with the best accuracy (then the fewest
// bits, then the smaller scale), and sizes the encryption parameters from those bits and the
// program's multiplicative depth. Without samples, --bitwidth pins the bits (and --scale the
// scale, default 4) unmeasured.
func runLowerFHE(st *state) error {
	o := st.opts
	scales := o.Scales
	if o.Scale >= 0 {
		scales = []int{o.Scale}
	} else if len(scales) == 0 {
		scales = DefaultFHEScales
	}
	if len(o.Samples) == 0 {
		if o.Bits == 0 {
			return fmt.Errorf("the fhe mode needs --validate data to bound its values (scales add up, so the bits needed are measured), or --bitwidth to pin them")
		}
		s := 4
		if o.Scale >= 0 {
			s = o.Scale
		}
		p, depth, err := lowerFHE(st.g, s, o.FHEBlocks)
		if err != nil {
			return err
		}
		st.logf("no validation data: %d bits pinned, scale %d, unmeasured", o.Bits, s)
		return st.finishFHE(p, o.Bits, depth)
	}
	float, err := floatPredictions(st.ref, o.Samples, o.Workers, nil)
	if err != nil {
		return err
	}
	res := &TuneResult{Samples: len(o.Samples), Labelled: o.Samples[0].Label >= 0, Headroom: o.Headroom, FloatAccuracy: -1}
	if res.Labelled {
		res.FloatAccuracy = accuracy(float, o.Samples)
	}
	type cand struct {
		p     *fixed.Program
		depth int
		run   *clearRun
	}
	var cands []cand
	best := -1
	for k, s := range scales {
		p, depth, err := lowerFHE(st.g, s, o.FHEBlocks)
		if err != nil && k > 0 && !errors.Is(err, ErrNoLowering) && !errors.Is(err, errNotPolynomial) {
			// Scales add up: past some scale a tensor's scale exceeds the format's maximum.
			st.logf("scale %d: %v; larger scales not tried", s, err)
			break
		}
		if err != nil {
			return err
		}
		row := TuneRow{Scale: s, Accuracy: -1}
		run, err := runClear(p, o.Samples, o.Workers, true, nil)
		if err != nil {
			return fmt.Errorf("scale %d: %w", s, err)
		}
		row.BitsUsed, row.Widest = bitsUsed(p, run.maxAbs)
		row.Bits = row.BitsUsed + o.Headroom
		// In Z_2^64 a wrapped value looks like a random 64-bit word: anything past 62 bits is
		// treated as overflow of the measurement itself.
		row.Overflow = row.Bits > fheparams.MaxBits || row.BitsUsed > 62 || (o.Bits != 0 && row.Bits > o.Bits)
		if o.Bits != 0 && !row.Overflow {
			row.Bits = o.Bits
		}
		row.Agreement = agreement(run.top, float)
		if res.Labelled {
			row.Accuracy = accuracy(run.top, o.Samples)
		}
		st.logf("scale %d: %d bits used (widest %s), depth %d, agreement %.2f%%", s, row.BitsUsed, row.Widest, depth, 100*row.Agreement)
		res.Rows = append(res.Rows, row)
		cands = append(cands, cand{p, depth, run})
		if !row.Overflow && (best < 0 || better(row, res.Rows[best], res.Labelled)) {
			best = len(res.Rows) - 1
		}
	}
	if best < 0 {
		r := res.Rows[0]
		return fmt.Errorf("no scale fits the fhe mode: at scale %d the values need %d bits (widest %s), more than %d; try smaller --scales or a shallower network", r.Scale, r.Bits, r.Widest, fheparams.MaxBits)
	}
	c := cands[best]
	res.Chosen, res.Bits, res.Scale = res.Rows[best], res.Rows[best].Bits, res.Rows[best].Scale
	if err := st.finishFHE(c.p, res.Bits, c.depth); err != nil {
		return err
	}
	// Verify: the program in Z_n gives the 64-bit run's outputs (nothing wraps mod n).
	run, err := runClear(st.p, o.Samples, o.Workers, false, nil)
	if err != nil {
		return fmt.Errorf("verify in Z_%d: %w", st.p.Modulus, err)
	}
	res.Verified = equalOutputs(run.outs, c.run.outs)
	if !res.Verified {
		return fmt.Errorf("internal error: the program over Z_%d disagrees with the 64-bit run on the validation data", st.p.Modulus)
	}
	res.Program = st.p
	st.tune = res
	return nil
}

// lowerFHE lowers g without truncation at scale s (measured in Z_2^64), records which matmuls
// have block-circulant weights and which of those the fhe mode evaluates in the frequency domain
// (fixed.Program.MarkBlockCirculant with mode blocks) and returns its depth; a non-polynomial
// layer is an error naming every such node.
func lowerFHE(g *ir.Graph, s int, blocks fixed.BlockMode) (*fixed.Program, int, error) {
	p, err := lower(g, lowerOptions{Bits: 64, Scale: s, NoTrunc: true})
	if err != nil {
		return nil, 0, err
	}
	p.MarkBlockCirculant(blocks) // exact, on the fixed-point weights at this scale
	depth, err := p.FHEDepth()
	if err != nil {
		return nil, 0, fmt.Errorf("--backend fhe: %w: %w (the fhe mode evaluates only linear layers, sum pooling and square activations x·x)", errNotPolynomial, err)
	}
	return p, depth, nil
}

// finishFHE chooses the encryption parameters for bits and depth and turns p into the program
// over Z_n.
func (st *state) finishFHE(p *fixed.Program, need, depth int) error {
	prm, err := fheparams.Choose(need, depth)
	if err != nil {
		return fmt.Errorf("--backend fhe: %w", err)
	}
	p.Modulus = prm.Modulus()
	p.Bits = bits.Len64(p.Modulus)
	p.FHE = &fixed.FHEParams{LogN: prm.LogN, T: prm.T, LogQ: prm.LogQ, LogP: prm.LogP, Depth: depth,
		OutLevel: fheparams.OutLevel, Security: fheparams.SecurityCitation}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("internal error: %w", err)
	}
	st.p, st.bits, st.scale = p, p.Bits, p.Scale
	st.logf("fhe: %d bits, depth %d: %s", need, depth, p.FHE)
	st.logf("values need %d bits: CRT product n = %d (%.1f bits)", need, p.Modulus, math.Log2(float64(p.Modulus)))
	return nil
}
