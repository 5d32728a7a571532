package fixed

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// WriteText prints the program in a readable assembly-like form (one instruction per line, with
// the result's shape, scale and slot). It is what `athosc disasm` shows below the file header.
func (p *Program) WriteText(w io.Writer) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, "ring %v  scale %d  (%d tensors, %d weights, %d instructions)\n",
		p.ringName(), p.Scale, len(p.Tensors), len(p.Weights), len(p.Instrs))
	if p.FHE != nil {
		fmt.Fprintf(b, "fhe: %s\n", p.FHE)
	}
	fmt.Fprintf(b, "\ninputs:\n")
	for i, io := range p.Inputs {
		fmt.Fprintf(b, "  in%d %q = %%%d %s from party %d", i, io.Name, io.Tensor, p.tensorType(io.Tensor), io.Party)
		if io.Bounded {
			fmt.Fprintf(b, " in [%d, %d]", io.Lo, io.Hi)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(b, "outputs:\n")
	for i, io := range p.Outputs {
		fmt.Fprintf(b, "  out%d %q = %%%d %s to party %d\n", i, io.Name, io.Tensor, p.tensorType(io.Tensor), io.Party)
	}
	fmt.Fprintf(b, "weights (party 0):\n")
	for i, wt := range p.Weights {
		state := ""
		if wt.Data == nil && wt.Shape.Size() > 0 {
			state = "  (no data)"
		}
		fmt.Fprintf(b, "  w%d %q %v s%d%s\n", i, wt.Name, wt.Shape, wt.Scale, state)
	}
	fmt.Fprintf(b, "\ncode:\n")
	for i, in := range p.Instrs {
		line := p.InstrText(in)
		if in.Op != OpOutput && in.Out >= 0 && in.Out < len(p.Tensors) {
			line = fmt.Sprintf("%-58s ; %s", line, p.tensorType(in.Out))
			if s := p.Tensors[in.Out].Slot; s >= 0 {
				line += fmt.Sprintf(" slot %d", s)
			}
		}
		fmt.Fprintf(b, "  %4d  %s\n", i, line)
	}
	return b.Flush()
}

func (p *Program) tensorType(t int) string {
	if t < 0 || t >= len(p.Tensors) {
		return "?"
	}
	return fmt.Sprintf("%v s%d", p.Tensors[t].Shape, p.Tensors[t].Scale)
}

// InstrText returns one instruction in the text form, e.g. `%7 = trunc %6 by 12 nonneg`.
func (p *Program) InstrText(in *Instr) string {
	var b strings.Builder
	if in.Op != OpOutput {
		fmt.Fprintf(&b, "%%%d = ", in.Out)
	}
	b.WriteString(in.Op.String())
	for i, t := range in.In {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%%%d", t)
	}
	if in.Weight >= 0 {
		if len(in.In) > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, " w%d", in.Weight)
	}
	ints := func(v []int) string {
		s := make([]string, len(v))
		for i, x := range v {
			s[i] = fmt.Sprint(x)
		}
		return strings.Join(s, ",")
	}
	win := func() {
		fmt.Fprintf(&b, " kernel=%s strides=%s pads=%s dilations=%s", ints(in.Win.Kernel), ints(in.Win.Strides),
			ints(in.Win.Pads), ints(in.Win.Dilations))
		if in.Win.CeilMode {
			b.WriteString(" ceil")
		}
	}
	switch in.Op {
	case OpInput:
		fmt.Fprintf(&b, " in%d", in.Index)
	case OpOutput:
		fmt.Fprintf(&b, " -> out%d", in.Index)
	case OpScaleUp:
		fmt.Fprintf(&b, " by %d", in.Shift)
	case OpReLU:
		if in.Bits > 0 {
			fmt.Fprintf(&b, " low %d bits", in.Bits)
		}
	case OpTrunc:
		fmt.Fprintf(&b, " by %d", in.Shift)
		if in.NonNeg {
			b.WriteString(" nonneg")
		}
	case OpConv:
		fmt.Fprintf(&b, " group=%d", in.Group)
		win()
	case OpMaxPool, OpSumPool:
		win()
	case OpDiv:
		if len(in.Divisors) <= 8 {
			fmt.Fprintf(&b, " by %s", ints(in.Divisors))
		} else {
			fmt.Fprintf(&b, " by %s,... (%d divisors)", ints(in.Divisors[:8]), len(in.Divisors))
		}
	case OpArgMax, OpConcat:
		fmt.Fprintf(&b, " axis=%d", in.Axis)
	case OpTranspose:
		fmt.Fprintf(&b, " perm=%s", ints(in.Perm))
	case OpGather:
		for a, s := range in.Select {
			switch {
			case len(s) == 0:
				continue
			case len(s) <= 8:
				fmt.Fprintf(&b, " axis%d=%s", a, ints(s))
			default:
				fmt.Fprintf(&b, " axis%d=%s,... (%d)", a, ints(s[:8]), len(s))
			}
		}
	case OpPad:
		fmt.Fprintf(&b, " %s pads=%s", in.PadMode, ints(in.Pads))
		if in.PadMode == PadConstant && in.PadValue != 0 {
			fmt.Fprintf(&b, " value=%d", in.PadValue)
		}
	}
	if in.Block != 0 {
		how := "dense"
		if in.Spectral {
			how = "frequency domain"
		}
		fmt.Fprintf(&b, " block-circulant %dx%d (fhe: %s)", in.Block, in.Block, how)
	}
	if in.Engine != EngineDefault {
		fmt.Fprintf(&b, " by %s", in.Engine)
	}
	return b.String()
}
