package vm

import (
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// IndexPlan is the VM's gather table of one instruction, for an executor that evaluates the same
// program another way (the fhe mode composes the linear instructions into matrices, vm/fhe) and
// must read exactly the elements the Machine reads.
//
//   - OpTranspose, OpPad, OpGather: Idx[i] is the input element of output element i (-1: the
//     pad value).
//   - OpAdd, OpSub, OpMul: Idx and Idx2 broadcast the operands (nil: same shape as the output).
//   - OpSumPool: Idx[o·D+k] is the k-th input element of output o's window (-1: padding).
//   - OpConv: Idx[t·P+q] is the offset within one group's input planes (channel c of the group at
//     c·InPlane) of im2col row t (channel, kernel offset; D rows) at output position q (P per
//     image), -1 in the padding; the weights are [M, D] per group, in output-channel order.
type IndexPlan struct {
	Idx, Idx2 []int32
	D, P      int
	InPlane   int
}

// PlanIndex returns the gather table the Machine uses for instruction in of program p.
func PlanIndex(p *fixed.Program, in *fixed.Instr) (IndexPlan, error) {
	m := &Machine{prog: p}
	pl, _, err := m.makePlan(in)
	if err != nil {
		return IndexPlan{}, err
	}
	ip := IndexPlan{Idx: pl.idx, Idx2: pl.idx2, D: pl.d, P: pl.p, InPlane: pl.inPlane}
	if in.Op == fixed.OpConv {
		x := p.Tensors[in.In[0]].Shape
		ip.InPlane = x.Size() / max(x[0]*x[1], 1)
	}
	return ip, nil
}

// BroadcastIndex returns, for every element of a tensor of shape out, the element of a tensor of
// shape src that numpy broadcasting reads (as the Machine expands constants and operands).
func BroadcastIndex(src, out ir.Shape) []int32 { return broadcastIndex(src, out) }
