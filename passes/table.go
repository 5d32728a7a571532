package passes

import (
	"fmt"
	"math"
	"time"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// compileTable is the compiler pipeline, in order: the clean-up table on the HLIL graph, autotune,
// the build table that makes the program for one (l, s), then the passes on the final program.
// Compile runs every enabled pass and checks the IR after each (see Options.Check). Each table's
// Order states the constraints its passes (its sub-tables' included) must satisfy.
var compileTable = table{
	Name: "compile",
	Passes: []pass{
		subTable(&cleanTable, OnHLIL),
		{Name: "autotune", IR: HLILToFixed, Doc: "choose l and s on the validation samples; its verified program is the one emitted",
			run: runAutotune, builds: &buildTable, skip: func(o *Options) string {
				if len(o.Samples) == 0 {
					return "no validation samples"
				}
				return ""
			}},
		// When autotune ran, the program it verified was built by this table and recorded
		// there: the driver passes a program-making entry by once a program exists.
		subTable(&buildTable, HLILToFixed),
		{Name: "plan-engines", IR: OnFixed, Doc: "backend auto: choose OT or HE for every matmul and conv by exact traffic and a time model of --net",
			run: runPlanEngines, skip: func(o *Options) string {
				if o.Backend != "auto" {
					return "the backend is not auto"
				}
				return ""
			}},
		{Name: "slots", IR: OnFixed, Required: true, Doc: "assign tensor storage slots by liveness (tensors not live together share)",
			run: runSlots},
	},
	Order: []OrderRule{
		{"compile", "drop-softmax", "lower", "a trailing Softmax or LogSoftmax is dropped before lowering, which would otherwise compute it (exp, reciprocal or log, products of shares)"},
		{"compile", "fold-batchnorm", "lower", "a folded BatchNormalization costs nothing; lowered alone it costs a multiply by a constant, an add and a truncation per element"},
		{"compile", "dead-code", "autotune", "autotune measures programs built from the final HLIL: every clean-up pass runs before it"},
		{"compile", "autotune", "lower", "lowering needs the l and s autotune chooses; autotune's verified program is the one emitted, not lowered again"},
		{"compile", "lower", "slots", "slots are assigned to the fixed-point program's tensors"},
		{"compile", "peephole-*", "plan-engines", "engines are planned for the final linear layers (peepholes change their neighbours, and a planned engine must survive)"},
		{"compile", "peephole-*", "slots", "peepholes add and remove tensors: slots are assigned on the final program"},
	},
}

// cleanTable holds the clean-up passes on the float HLIL graph.
var cleanTable = table{
	Name: "clean",
	Passes: []pass{
		hlilPass("drop-identity", false, "drop Identity nodes (and Dropout, which the front end imports as Identity)",
			(*cleaner).dropIdentity),
		hlilPass("fold-constants", true, "evaluate nodes whose inputs are all constants into constants",
			(*cleaner).foldConstants),
		hlilPass("matmul-to-gemm", false, "rewrite a 2-D MatMul with one constant operand as a Gemm",
			(*cleaner).matmulToGemm),
		hlilPass("fuse-bias", false, "fuse Add(Conv/Gemm, constant) into the layer's bias",
			(*cleaner).fuseBias),
		hlilPass("fold-batchnorm", false, "fold BatchNormalization into the preceding Conv/Gemm's weights and bias",
			(*cleaner).foldBatchNorm),
		withSkip(hlilPass("drop-softmax", false, "drop a Softmax or LogSoftmax producing a graph output (a classifier's argmax is the same)",
			(*cleaner).dropSoftmax), func(o *Options) string {
			if o.KeepSoftmax {
				return "KeepSoftmax is set"
			}
			return ""
		}),
		hlilPass("dead-code", true, "remove nodes and constants nothing reads",
			(*cleaner).dead),
	},
	Order: []OrderRule{
		{"clean", "drop-identity", "fuse-bias", "an Identity or Dropout between a Conv/Gemm and its Add hides the pair from bias fusion"},
		{"clean", "drop-identity", "fold-batchnorm", "an Identity or Dropout between a Conv/Gemm and its BatchNormalization hides the pair from folding"},
		{"clean", "fold-constants", "fuse-bias", "a bias computed from constants (say Mul(b, 2)) is a constant only once folded"},
		{"clean", "fold-constants", "fold-batchnorm", "BatchNormalization parameters computed from constants are constants only once folded"},
		{"clean", "matmul-to-gemm", "fuse-bias", "bias fusion knows Conv and Gemm, not MatMul"},
		{"clean", "matmul-to-gemm", "fold-batchnorm", "BatchNorm folding knows Conv and Gemm, not MatMul"},
		{"clean", "fuse-bias", "fold-batchnorm", "folding wants the BatchNormalization right after the Conv/Gemm: Conv, Add, BatchNorm folds only once the Add is the Conv's bias"},
		{"clean", "fold-constants", "dead-code", "a folded node leaves its constant inputs unread; dead-code removes them"},
		{"clean", "fold-batchnorm", "dead-code", "folding leaves the original weights and the BatchNorm parameters unread; dead-code removes them"},
	},
}

// buildTable makes the program of a cleaned graph for one (l, s): autotune runs it once per
// candidate scale and once more for the program it verifies, which is the one Compile goes on with.
var buildTable = table{
	Name: "build",
	Passes: []pass{
		{Name: "lower", IR: HLILToFixed, Required: true, Doc: "float HLIL -> fixed-point program over Z_2^l at scale s",
			run: runLower},
		subTable(&peepholeTable, OnFixed),
	},
	Order: []OrderRule{
		{"build", "lower", "peephole-*", "peepholes rewrite the fixed-point program that lowering makes"},
	},
}

// peepholeTable holds the peepholes on the fixed-point program. The rewrites are exact — the
// optimised program computes bit-identical results (docs/fixed-point.md) — and apply only when the
// intermediate value has no other reader and is not an output.
var peepholeTable = table{
	Name: "peephole",
	Passes: []pass{
		// A Trunc followed by ReLU or MaxPool is moved after it: truncation is monotone, so
		// ReLU(Trunc(x)) = Trunc(ReLU(x)) and MaxPool(Trunc(x)) = Trunc(MaxPool(x)).
		peepholePass("peephole-trunc-hoist", "move a Trunc after the ReLU or MaxPool reading it (exact: truncation is monotone)",
			func(q *fixed.Program, r *PeepholeReport) { r.Hoisted += rewriteAll(q, hoistTrunc) }),
		// ReLU is monotone, so it commutes with max, and runs on the smaller pooled tensor.
		peepholePass("peephole-relu-maxpool", "rewrite MaxPool(ReLU(x)) as ReLU(MaxPool(x)): fewer ReLUs",
			func(q *fixed.Program, r *PeepholeReport) { r.Swapped += rewriteAll(q, swapReLUMaxPool) }),
		// The floor of a floor.
		peepholePass("peephole-trunc-merge", "merge Trunc(Trunc(x, a), b) into Trunc(x, a+b)",
			func(q *fixed.Program, r *PeepholeReport) { r.Merged += rewriteAll(q, mergeTruncs) }),
		peepholePass("peephole-reshape-merge", "merge Reshape(Reshape(x)) into Reshape(x)",
			func(q *fixed.Program, r *PeepholeReport) { r.Merged += rewriteAll(q, mergeReshapes) }),
		// A ReLU result, or a value computed from such values by pooling, data movement or
		// scaling, is non-negative: a secure backend can use the cheaper truncation of
		// CrypTFlow2 §6.2.
		peepholePass("peephole-trunc-nonneg", "mark each Trunc whose input is provably non-negative (cheaper secure truncation)",
			func(q *fixed.Program, r *PeepholeReport) { r.MarkedNonNeg += markNonNeg(q) }),
		// A ReLU whose operand is provably a signed b-bit value (b < l) compares on the low b
		// bits of the shares (docs/fixed-point.md, "Comparisons on the low bits").
		{Name: "peephole-low-bits", IR: OnFixed, Doc: "compare each ReLU on the low bits of its operand's exact bound (from the inputs' ranges and the weights)",
			run: runLowBits},
	},
	Order: []OrderRule{
		{"peephole", "peephole-trunc-hoist", "peephole-low-bits", "hoisting a Trunc past a ReLU widens the ReLU's operand: its bound is computed after the move"},
		{"peephole", "peephole-relu-maxpool", "peephole-low-bits", "the bounds are computed on the final ReLUs"},
		{"peephole", "peephole-trunc-hoist", "peephole-relu-maxpool", "hoisting a Trunc past a ReLU and then a MaxPool leaves ReLU->MaxPool pairs to swap"},
		{"peephole", "peephole-trunc-hoist", "peephole-trunc-merge", "hoisting moves Truncs next to each other"},
		{"peephole", "peephole-trunc-hoist", "peephole-trunc-nonneg", "a Trunc hoisted past a ReLU has a provably non-negative input only after the move"},
	},
}

// PassInfo describes one pass for listings (athosc compile --list-passes).
type PassInfo struct {
	Name     string
	Table    string // the table that holds the pass: compile, or a sub-table (clean, build, peephole)
	IR       IR
	Required bool
	Doc      string
}

// PassTable returns the compiler's passes in the order Compile runs them, sub-tables' passes in
// place, each with the table that holds it.
func PassTable() []PassInfo {
	leaves, tables := compileTable.leaves()
	out := make([]PassInfo, len(leaves))
	for i, p := range leaves {
		out[i] = PassInfo{Name: p.Name, Table: tables[i], IR: p.IR, Required: p.Required, Doc: p.Doc}
	}
	return out
}

// OrderRules returns the ordering constraints the pass tables satisfy, with their reasons: the
// compile table's, then each sub-table's.
func OrderRules() []OrderRule {
	var out []OrderRule
	_ = compileTable.walk(func(t *table) error {
		out = append(out, t.Order...)
		return nil
	})
	return out
}

func withSkip(p pass, skip func(o *Options) string) pass {
	p.skip = skip
	return p
}

// hlilPass makes a clean-up pass from a cleaner step.
func hlilPass(name string, required bool, doc string, step func(*cleaner) error) pass {
	return pass{Name: name, IR: OnHLIL, Required: required, Doc: doc, run: func(st *state) error {
		c := &cleaner{g: st.g}
		err := step(c)
		st.log = append(st.log, c.log...)
		return err
	}}
}

// peepholePass makes an optional fixed-program pass from a peephole rewrite.
func peepholePass(name, doc string, rewrite func(q *fixed.Program, r *PeepholeReport)) pass {
	return pass{Name: name, IR: OnFixed, Doc: doc, run: func(st *state) error {
		before := st.peep
		rewrite(st.p, &st.peep)
		st.peepRan = true
		st.peep.After = tally(st.p)
		d := st.peep
		if n := d.Hoisted - before.Hoisted + d.Swapped - before.Swapped + d.Merged - before.Merged +
			d.MarkedNonNeg - before.MarkedNonNeg; n > 0 {
			st.logf("%d rewrite(s)", n)
		}
		return nil
	}}
}

func runLower(st *state) error {
	if st.lnVar == nil && len(st.opts.Samples) > 0 {
		v, err := layerNormVariances(st.g, st.opts.Samples)
		if err != nil {
			return err
		}
		st.lnVar = v
	}
	p, err := lower(st.g, lowerOptions{Bits: st.bits, Scale: st.scale, LayerNormVar: st.lnVar})
	if err != nil {
		return err
	}
	st.p = p
	st.peep = PeepholeReport{Before: tally(p), After: tally(p)}
	st.logf("Z_2^%d, scale %d: %d instructions, %d tensors, %d weights", p.Bits, p.Scale, len(p.Instrs), len(p.Tensors), len(p.Weights))
	return nil
}

func runAutotune(st *state) error {
	o := st.opts
	topts := tuneOptions{Scales: o.Scales, Bits: o.Bits, Scale: o.Scale, Headroom: o.Headroom,
		Workers: o.Workers, Progress: o.Progress}
	res, err := autotune(st.g, st.ref, o.Samples, topts, st.build)
	if err != nil {
		return err
	}
	st.tune, st.p = res, res.Program
	st.bits, st.scale = res.Bits, res.Scale
	st.logf("chose l=%d s=%d over %d sample(s); verified: %v", res.Bits, res.Scale, res.Samples, res.Verified)
	return nil
}

// runLowBits sets every ReLU's operand width from the program's bounds (fixed.Program.Bounds),
// when some input has a value range (a quantized model's); else it leaves the program as it is.
func runLowBits(st *state) error {
	bounded := false
	for _, io := range st.p.Inputs {
		bounded = bounded || io.Bounded
	}
	if !bounded {
		return nil
	}
	n, err := st.p.LowBitReLUs()
	if err != nil {
		return err
	}
	st.peep.LowBits = n
	st.peep.After = tally(st.p)
	st.peepRan = true
	st.logf("%d ReLU elements compare on the low bits", n)
	return nil
}

func runSlots(st *state) error {
	st.mem = assignSlots(st.p)
	st.logf("%d slots for %d tensors", st.mem.Slots, st.mem.Tensors)
	return nil
}

func runPlanEngines(st *state) error {
	net, err := NetModelNamed(st.opts.Net)
	if err != nil {
		return err
	}
	est, err := PlanEngines(st.p, net)
	if err != nil {
		return err
	}
	st.engines = est
	var ot, heN int
	var otB, heB int64
	for _, e := range est {
		in := st.p.Instrs[e.Instr]
		heBytes := "-"
		if e.HEBytes != math.MaxInt64 {
			heBytes = fmt.Sprint(e.HEBytes)
		}
		st.logf("%s %s: %s (OT %d B %v, HE %s B %v)", in.Op, in.Source, e.Chosen, e.OTBytes,
			e.OTTime.Round(time.Millisecond), heBytes, e.HETime.Round(time.Millisecond))
		if e.Chosen == fixed.EngineHE {
			heN++
			heB += e.HEBytes
		} else {
			ot++
			otB += e.OTBytes
		}
	}
	link := st.opts.Net
	if link == "" {
		link = "lan"
	}
	st.logf("planned %d linear layers for %s: %d by HE (%.1f MiB), %d by OT (%.1f MiB)", len(est), link,
		heN, float64(heB)/(1<<20), ot, float64(otB)/(1<<20))
	return nil
}
