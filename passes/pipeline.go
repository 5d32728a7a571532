package passes

import (
	"fmt"
	"path"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// IR names the representation a pass reads and the one it leaves.
type IR int

const (
	// OnHLIL passes rewrite the float HLIL graph.
	OnHLIL IR = iota
	// HLILToFixed passes read the HLIL graph and make the fixed-point program (lower, autotune).
	HLILToFixed
	// OnFixed passes rewrite the fixed-point program.
	OnFixed
)

func (r IR) String() string {
	switch r {
	case OnHLIL:
		return "hlil"
	case HLILToFixed:
		return "hlil->fixed"
	case OnFixed:
		return "fixed"
	}
	return fmt.Sprintf("IR(%d)", int(r))
}

// leavesHLIL reports whether a pass working on r leaves the HLIL graph (false: the fixed program).
func (r IR) leavesHLIL() bool { return r == OnHLIL }

// Pass is one entry of the pass table.
type Pass struct {
	Name     string
	IR       IR
	Required bool   // a required pass cannot be disabled (Options.Disable)
	Doc      string // one line for --list-passes

	// build marks the passes that make the program from the HLIL graph for one (l, s): lower
	// and the peepholes. Autotune runs them once per candidate scale and once more for the
	// program it verifies, which is the one Compile continues with.
	build bool
	// skip returns why the pass does not run under o ("" when it runs), besides Disable.
	skip func(o *Options) string
	run  func(st *state) error
	// peephole is the rewrite of a peephole pass (Peephole runs these alone).
	peephole func(q *fixed.Program, r *PeepholeReport)
}

// passTable is the compiler pipeline, in order. Compile runs every enabled entry and checks the IR
// after each (see Options.Check); passOrder states the constraints this order must satisfy.
var passTable = []Pass{
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
	withSkip(hlilPass("drop-softmax", false, "drop a Softmax producing a graph output (a classifier's argmax is the same)",
		(*cleaner).dropSoftmax), func(o *Options) string {
		if o.KeepSoftmax {
			return "KeepSoftmax is set"
		}
		return ""
	}),
	hlilPass("dead-code", true, "remove nodes and constants nothing reads",
		(*cleaner).dead),
	{Name: "autotune", IR: HLILToFixed, Doc: "choose l and s on the validation samples; its verified program is the one emitted",
		run: runAutotune, skip: func(o *Options) string {
			if len(o.Samples) == 0 {
				return "no validation samples"
			}
			return ""
		}},
	{Name: "lower", IR: HLILToFixed, Required: true, build: true, Doc: "float HLIL -> fixed-point program over Z_2^l at scale s",
		run: runLower},
	peepholePass("peephole-trunc-hoist", "move a Trunc after the ReLU or MaxPool reading it (exact: truncation is monotone)",
		func(q *fixed.Program, r *PeepholeReport) { r.Hoisted += rewriteAll(q, hoistTrunc) }),
	peepholePass("peephole-relu-maxpool", "rewrite MaxPool(ReLU(x)) as ReLU(MaxPool(x)): fewer ReLUs",
		func(q *fixed.Program, r *PeepholeReport) { r.Swapped += rewriteAll(q, swapReLUMaxPool) }),
	peepholePass("peephole-trunc-merge", "merge Trunc(Trunc(x, a), b) into Trunc(x, a+b)",
		func(q *fixed.Program, r *PeepholeReport) { r.Merged += rewriteAll(q, mergeTruncs) }),
	peepholePass("peephole-reshape-merge", "merge Reshape(Reshape(x)) into Reshape(x)",
		func(q *fixed.Program, r *PeepholeReport) { r.Merged += rewriteAll(q, mergeReshapes) }),
	peepholePass("peephole-trunc-nonneg", "mark each Trunc whose input is provably non-negative (cheaper secure truncation)",
		func(q *fixed.Program, r *PeepholeReport) { r.MarkedNonNeg += markNonNeg(q) }),
	{Name: "plan-engines", IR: OnFixed, Doc: "backend auto: choose OT or HE for every matmul and conv by exact traffic and a time model of --net",
		run: runPlanEngines, skip: func(o *Options) string {
			if o.Backend != "auto" {
				return "the backend is not auto"
			}
			return ""
		}},
	{Name: "slots", IR: OnFixed, Required: true, Doc: "assign tensor storage slots by liveness (tensors not live together share)",
		run: runSlots},
}

// OrderRule says that the passes matching Before (a name or a path.Match pattern) must all come
// before those matching After, and why.
type OrderRule struct {
	Before, After, Why string
}

// passOrder holds the ordering constraints of passTable. Compile checks them before it runs
// anything (checkOrder); a test breaks one on purpose.
var passOrder = []OrderRule{
	{"drop-identity", "fuse-bias", "an Identity or Dropout between a Conv/Gemm and its Add hides the pair from bias fusion"},
	{"drop-identity", "fold-batchnorm", "an Identity or Dropout between a Conv/Gemm and its BatchNormalization hides the pair from folding"},
	{"fold-constants", "fuse-bias", "a bias computed from constants (say Mul(b, 2)) is a constant only once folded"},
	{"fold-constants", "fold-batchnorm", "BatchNormalization parameters computed from constants are constants only once folded"},
	{"matmul-to-gemm", "fuse-bias", "bias fusion knows Conv and Gemm, not MatMul"},
	{"matmul-to-gemm", "fold-batchnorm", "BatchNorm folding knows Conv and Gemm, not MatMul"},
	{"fuse-bias", "fold-batchnorm", "folding wants the BatchNormalization right after the Conv/Gemm: Conv, Add, BatchNorm folds only once the Add is the Conv's bias"},
	{"fold-constants", "dead-code", "a folded node leaves its constant inputs unread; dead-code removes them"},
	{"fold-batchnorm", "dead-code", "folding leaves the original weights and the BatchNorm parameters unread; dead-code removes them"},
	{"drop-softmax", "lower", "lowering has no Softmax: a trailing Softmax must be gone"},
	{"fold-batchnorm", "lower", "a folded BatchNormalization costs nothing; lowered alone it costs a multiply by a constant, an add and a truncation per element"},
	{"dead-code", "autotune", "autotune measures programs built from the final HLIL: every clean-up pass runs before it"},
	{"autotune", "lower", "lowering needs the l and s autotune chooses; autotune's verified program is the one emitted, not lowered again"},
	{"lower", "peephole-*", "peepholes rewrite the fixed-point program that lowering makes"},
	{"peephole-trunc-hoist", "peephole-relu-maxpool", "hoisting a Trunc past a ReLU and then a MaxPool leaves ReLU->MaxPool pairs to swap"},
	{"peephole-trunc-hoist", "peephole-trunc-merge", "hoisting moves Truncs next to each other"},
	{"peephole-trunc-hoist", "peephole-trunc-nonneg", "a Trunc hoisted past a ReLU has a provably non-negative input only after the move"},
	{"lower", "slots", "slots are assigned to the fixed-point program's tensors"},
	{"peephole-*", "plan-engines", "engines are planned for the final linear layers (peepholes change their neighbours, and a planned engine must survive)"},
	{"peephole-*", "slots", "peepholes add and remove tensors: slots are assigned on the final program"},
}

// checkOrder verifies that table satisfies rules: every pattern matches at least one pass and
// every pass matching Before comes before every pass matching After.
func checkOrder(table []Pass, rules []OrderRule) error {
	match := func(pattern string) ([]int, error) {
		var idx []int
		for i, p := range table {
			ok, err := path.Match(pattern, p.Name)
			if err != nil {
				return nil, fmt.Errorf("pass order rule %q: %w", pattern, err)
			}
			if ok {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return nil, fmt.Errorf("pass order rule names %q, which is not in the pass table", pattern)
		}
		return idx, nil
	}
	for _, r := range rules {
		before, err := match(r.Before)
		if err != nil {
			return err
		}
		after, err := match(r.After)
		if err != nil {
			return err
		}
		for _, b := range before {
			for _, a := range after {
				if b >= a {
					return fmt.Errorf("pass %s must run before %s (%s), but the table has it at position %d, after position %d",
						table[b].Name, table[a].Name, r.Why, b+1, a+1)
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, p := range table {
		if seen[p.Name] {
			return fmt.Errorf("pass %s appears twice in the pass table", p.Name)
		}
		seen[p.Name] = true
	}
	return nil
}

// PassInfo describes one pass for listings (athosc compile --list-passes).
type PassInfo struct {
	Name     string
	IR       IR
	Required bool
	Doc      string
}

// Table returns the compiler's passes in the order Compile runs them.
func Table() []PassInfo {
	out := make([]PassInfo, len(passTable))
	for i, p := range passTable {
		out[i] = PassInfo{Name: p.Name, IR: p.IR, Required: p.Required, Doc: p.Doc}
	}
	return out
}

// OrderRules returns the ordering constraints the pass table satisfies, with their reasons.
func OrderRules() []OrderRule { return append([]OrderRule(nil), passOrder...) }

func withSkip(p Pass, skip func(o *Options) string) Pass {
	p.skip = skip
	return p
}

// hlilPass makes a clean-up pass from a cleaner step.
func hlilPass(name string, required bool, doc string, step func(*cleaner) error) Pass {
	return Pass{Name: name, IR: OnHLIL, Required: required, Doc: doc, run: func(st *state) error {
		c := &cleaner{g: st.g}
		err := step(c)
		st.log = append(st.log, c.log...)
		return err
	}}
}

// peepholePass makes an optional fixed-program pass from a peephole rewrite.
func peepholePass(name, doc string, rewrite func(q *fixed.Program, r *PeepholeReport)) Pass {
	return Pass{Name: name, IR: OnFixed, build: true, Doc: doc, peephole: rewrite, run: func(st *state) error {
		before := st.peep
		rewrite(st.p, &st.peep)
		st.peepRan = true
		st.peep.After = Count(st.p)
		d := st.peep
		if n := d.Hoisted - before.Hoisted + d.Swapped - before.Swapped + d.Merged - before.Merged +
			d.MarkedNonNeg - before.MarkedNonNeg; n > 0 {
			st.logf("%d rewrite(s)", n)
		}
		return nil
	}}
}
