package passes

import (
	"fmt"
	"slices"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// OpCounts counts the expensive non-linear work of a fixed-point program, in tensor elements.
type OpCounts struct {
	ReLU         int   // elements through ReLU
	ReLULow      int   // of which compared on fewer bits than the ring's (OpReLU with Bits)
	ReLUCmpBits  int64 // Σ over ReLU elements of the bits compared (l, or the operand's Bits)
	Comparisons  int   // pairwise comparisons in MaxPool and ArgMax windows
	Trunc        int   // elements truncated
	TruncNonNeg  int   // of which the input is known to be non-negative
	Div          int   // elements divided (average pooling)
	MACs         int64 // multiply-accumulates in MatMul and Conv
	Mul          int   // elements of products of two shared tensors (multiply-adds for bmatmul)
	Instructions int
}

// tally tallies the non-linear work of p.
func tally(p *fixed.Program) OpCounts {
	var c OpCounts
	c.Instructions = len(p.Instrs)
	for _, in := range p.Instrs {
		if in.Op == fixed.OpOutput || in.Op == fixed.OpInput {
			continue
		}
		out := p.Tensors[in.Out].Shape.Size()
		switch in.Op {
		case fixed.OpReLU:
			c.ReLU += out
			if in.Bits > 0 {
				c.ReLULow += out
				c.ReLUCmpBits += int64(out) * int64(in.Bits)
			} else {
				c.ReLUCmpBits += int64(out) * int64(p.Bits)
			}
		case fixed.OpMaxPool:
			d := 1
			for _, k := range in.Win.Kernel {
				d *= k
			}
			c.Comparisons += out * (d - 1)
		case fixed.OpArgMax:
			n := p.Tensors[in.In[0]].Shape.Size()
			c.Comparisons += n - out
		case fixed.OpTrunc:
			c.Trunc += out
			if in.NonNeg {
				c.TruncNonNeg += out
			}
		case fixed.OpDiv:
			c.Div += out
		case fixed.OpMul:
			c.Mul += out
		case fixed.OpBatchMatMul:
			x := p.Tensors[in.In[0]].Shape
			c.Mul += out * x[len(x)-1]
		case fixed.OpMatMul:
			w := p.Weights[in.Weight].Shape
			c.MACs += int64(out) * int64(w[1])
		case fixed.OpConv:
			w := p.Weights[in.Weight].Shape
			c.MACs += int64(out) * int64(w[1:].Size())
		}
	}
	return c
}

// PeepholeReport says what the peephole passes changed.
type PeepholeReport struct {
	Before, After OpCounts
	Swapped       int // MaxPool(ReLU(x)) rewritten as ReLU(MaxPool(x))
	Hoisted       int // Trunc moved past a ReLU or MaxPool
	Merged        int // Trunc(Trunc(x)) or Reshape(Reshape(x)) merged into one
	MarkedNonNeg  int // Trunc instructions marked "input known non-negative"
	LowBits       int // ReLU elements compared on the low bits of their operand's bound
}

// Lines renders the report for the compile report.
func (r PeepholeReport) Lines() []string {
	row := func(name string, a, b int) string {
		return fmt.Sprintf("%-34s %10d -> %10d", name, a, b)
	}
	lines := []string{
		fmt.Sprintf("rewrites: %d MaxPool/ReLU swaps, %d truncations hoisted, %d merged, %d marked non-negative",
			r.Swapped, r.Hoisted, r.Merged, r.MarkedNonNeg),
		row("ReLU elements", r.Before.ReLU, r.After.ReLU),
	}
	if r.After.ReLULow > 0 {
		mean := float64(r.After.ReLUCmpBits) / float64(max(r.After.ReLU, 1))
		lines = append(lines, row("  of which on the low bits", r.Before.ReLULow, r.After.ReLULow)+
			fmt.Sprintf("  (%.1f bits compared on average)", mean))
	}
	return append(lines,
		row("max comparisons (MaxPool, ArgMax)", r.Before.Comparisons, r.After.Comparisons),
		row("truncated elements", r.Before.Trunc, r.After.Trunc),
		row("  of which known non-negative", r.Before.TruncNonNeg, r.After.TruncNonNeg),
	)
}

// rewriteRule tries one rewrite at instruction i of q; sole(t) is the only reader of tensor t (an
// instruction index), or -1 when t has several readers or is a program output. A rule that
// rewrites may set instructions to nil (they are deleted) and must report true.
type rewriteRule func(q *fixed.Program, i int, sole func(t int) int) bool

// rewriteAll applies rule until it no longer applies anywhere and returns how many rewrites it
// made. After a rewrite the use lists are stale, so the scan starts over.
func rewriteAll(q *fixed.Program, rule rewriteRule) int {
	n := 0
	for {
		uses := q.Uses()
		outputs := map[int]bool{}
		for _, o := range q.Outputs {
			outputs[o.Tensor] = true
		}
		sole := func(t int) int {
			if outputs[t] || len(uses[t]) != 1 {
				return -1
			}
			return uses[t][0]
		}
		changed := false
		for i := range q.Instrs {
			if rule(q, i, sole) {
				changed = true
				break
			}
		}
		if !changed {
			break
		}
		n++
		q.Instrs = slices.DeleteFunc(q.Instrs, func(in *fixed.Instr) bool { return in == nil })
	}
	q.Compact()
	return n
}

// swapReLUMaxPool rewrites  i: r = ReLU(x); j: m = MaxPool(r)  as  i: m' = MaxPool(x); j: m = ReLU(m').
func swapReLUMaxPool(q *fixed.Program, i int, sole func(int) int) bool {
	in := q.Instrs[i]
	if in.Op != fixed.OpReLU {
		return false
	}
	j := sole(in.Out)
	if j < 0 || q.Instrs[j].Op != fixed.OpMaxPool {
		return false
	}
	mp := q.Instrs[j]
	x := in.In[0]
	mid := q.AddTensor(q.Tensors[mp.Out].Name+"_premax", q.Tensors[mp.Out].Shape, q.Tensors[x].Scale)
	newPool := mp.Clone()
	newPool.In, newPool.Out = []int{x}, mid
	newRelu := in.Clone()
	newRelu.In, newRelu.Out = []int{mid}, mp.Out
	q.Instrs[i], q.Instrs[j] = newPool, newRelu
	return true
}

// hoistTrunc rewrites  i: t = Trunc(x); j: u = Op(t)  as  i: u' = Op(x); j: u = Trunc(u')  for Op
// ReLU or MaxPool.
func hoistTrunc(q *fixed.Program, i int, sole func(int) int) bool {
	in := q.Instrs[i]
	if in.Op != fixed.OpTrunc {
		return false
	}
	j := sole(in.Out)
	if j < 0 || (q.Instrs[j].Op != fixed.OpReLU && q.Instrs[j].Op != fixed.OpMaxPool) {
		return false
	}
	next := q.Instrs[j]
	x := in.In[0]
	mid := q.AddTensor(q.Tensors[next.Out].Name+"_wide", q.Tensors[next.Out].Shape, q.Tensors[x].Scale)
	newOp := next.Clone()
	newOp.In, newOp.Out = []int{x}, mid
	newOp.Bits = 0 // the wider operand has another bound (peephole-low-bits runs later)
	newTrunc := in.Clone()
	newTrunc.In, newTrunc.Out = []int{mid}, next.Out
	q.Instrs[i], q.Instrs[j] = newOp, newTrunc
	return true
}

// mergeTruncs rewrites  i: t = Trunc(x, a); j: u = Trunc(t, b)  as  j: u = Trunc(x, a+b).
func mergeTruncs(q *fixed.Program, i int, sole func(int) int) bool {
	in := q.Instrs[i]
	if in.Op != fixed.OpTrunc {
		return false
	}
	j := sole(in.Out)
	if j < 0 || q.Instrs[j].Op != fixed.OpTrunc {
		return false
	}
	merged := q.Instrs[j].Clone()
	merged.In = []int{in.In[0]}
	merged.Shift += in.Shift
	merged.NonNeg = merged.NonNeg || in.NonNeg
	q.Instrs[j], q.Instrs[i] = merged, nil
	return true
}

// mergeReshapes rewrites  i: t = Reshape(x); j: u = Reshape(t)  as  j: u = Reshape(x).
func mergeReshapes(q *fixed.Program, i int, sole func(int) int) bool {
	in := q.Instrs[i]
	if in.Op != fixed.OpReshape {
		return false
	}
	j := sole(in.Out)
	if j < 0 || q.Instrs[j].Op != fixed.OpReshape {
		return false
	}
	merged := q.Instrs[j].Clone()
	merged.In = []int{in.In[0]}
	q.Instrs[j], q.Instrs[i] = merged, nil
	return true
}

// nonNegative returns, for every tensor of p, whether its values are provably non-negative:
// ReLU results, and what pooling, division, truncation, scaling, data movement, concatenation,
// addition and multiplication compute from non-negative values (assuming, as the autotuner
// ensures, no overflow).
func nonNegative(p *fixed.Program) []bool {
	nn := make([]bool, len(p.Tensors))
	for _, in := range p.Instrs {
		if in.Op == fixed.OpOutput {
			continue
		}
		all := len(in.In) > 0
		for _, t := range in.In {
			all = all && nn[t]
		}
		switch in.Op {
		case fixed.OpReLU, fixed.OpArgMax:
			nn[in.Out] = true
		case fixed.OpMaxPool, fixed.OpSumPool, fixed.OpDiv, fixed.OpTrunc, fixed.OpScaleUp, fixed.OpReshape,
			fixed.OpTranspose, fixed.OpGather, fixed.OpConcat, fixed.OpAdd, fixed.OpMul, fixed.OpBatchMatMul:
			nn[in.Out] = all
		case fixed.OpPad:
			nn[in.Out] = all && (in.PadMode != fixed.PadConstant || in.PadValue >= 0)
		}
	}
	return nn
}

// markNonNeg sets NonNeg on every Trunc whose input is provably non-negative and returns how many
// it marked.
func markNonNeg(p *fixed.Program) int {
	nn := nonNegative(p)
	n := 0
	for _, in := range p.Instrs {
		if in.Op == fixed.OpTrunc && !in.NonNeg && nn[in.In[0]] {
			in.NonNeg = true
			n++
		}
	}
	return n
}
