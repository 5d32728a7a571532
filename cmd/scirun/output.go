package main

// Inputs in, outputs out: encoding the input, printing and writing the revealed outputs.

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
)

// checkRange describes how far the input values x leave the range the program was validated on,
// or returns "" when they stay inside it (or no range is recorded). Values outside it may overflow
// the ring somewhere in the network and wrap around silently, in the secure and the clear run alike.
func checkRange(x []float32, r *sciir.Range) string {
	if r == nil || len(x) == 0 {
		return ""
	}
	lo, hi := float64(x[0]), float64(x[0])
	for _, v := range x {
		lo, hi = min(lo, float64(v)), max(hi, float64(v))
	}
	if r.Contains(lo) && r.Contains(hi) {
		return ""
	}
	out := max(r.Min-lo, hi-r.Max)
	msg := fmt.Sprintf("values in [%.4g, %.4g] leave the range [%.4g, %.4g] the program was validated on (by up to %.4g)", lo, hi, r.Min, r.Max, out)
	if r.Max <= 1.5 && hi > 2 && hi <= 255 {
		msg += "; raw 0-255 pixels for a model validated on 0-1 inputs?"
	}
	return msg
}

// emit prints the revealed outputs and writes --output.
func (c *config) emit(outs []vm.Output, f *sciir.File, e *env) error {
	r, err := f.Program.Ring() // Z_2^l, or the fhe mode's Z_n
	if err != nil {
		return err
	}
	classes := classNames(f)
	var revealed []vm.Output
	for _, o := range outs {
		if o.Revealed {
			revealed = append(revealed, o)
			printTop(e.stdout, r, o, c.top, classes, f.Meta.Dequantization(o.Name))
		}
	}
	if c.output == "" {
		return nil
	}
	if len(revealed) != 1 {
		return fmt.Errorf("--output: %d outputs are revealed to this party, want 1", len(revealed))
	}
	return c.writeOutput(c.output, r, revealed[0], f.Meta.Dequantization(revealed[0].Name))
}

// classNames returns the class names the program records (index k names class k), or nil.
func classNames(f *sciir.File) []string { return f.Meta.ClassNames() }

// classLabel returns how class j of an output of d classes is printed: "3 cat" when the
// program names its d classes, else "3".
func classLabel(classes []string, d int) func(j int) string {
	return func(j int) string {
		if len(classes) == d && j < d {
			return fmt.Sprintf("%d %s", j, classes[j])
		}
		return fmt.Sprint(j)
	}
}

// classRows returns how an output of this shape splits into rows of class scores: the leading and
// trailing 1-dimensions of a classifier output are one vector ([1,1000,1,1] is one row of 1000
// classes), and otherwise each row of the last remaining axis is one prediction ([2,10]: two rows).
func classRows(shape []int, n int) (rows, d int) {
	lo, hi := 0, len(shape)
	for lo < hi && shape[lo] == 1 {
		lo++
	}
	for hi > lo && shape[hi-1] == 1 {
		hi--
	}
	d = 1
	if hi > lo {
		d = shape[hi-1]
	}
	if d < 1 || n%d != 0 {
		return 1, n
	}
	return n / d, d
}

// decodeOutput returns the values of a revealed output: its ring elements decoded at its scale,
// or for an output the program dequantizes (dq: a quantized model's DequantizeLinear, as
// sciir.Meta.Dequantization records it) the integers dequantized as ONNX Runtime does,
// float32(q − zp)·scale.
func decodeOutput(r ring.Ring, o vm.Output, dq *sciir.Quant) []float32 {
	if dq == nil {
		return r.DecodeTensor(o.Value, o.Scale)
	}
	sv := r.SignedValues(o.Value)
	out := make([]float32, len(sv))
	for i, v := range sv {
		out[i] = dq.Dequantize(v)
	}
	return out
}

// printTop prints, for each row of class scores (see classRows), the top class and the k highest
// scores.
func printTop(w io.Writer, r ring.Ring, o vm.Output, k int, classes []string, dq *sciir.Quant) {
	vals := decodeOutput(r, o, dq)
	shape := o.Value.Shape
	rows, d := classRows(shape, len(vals))
	name := classLabel(classes, d)
	for row := range rows {
		data := o.Value.Data[row*d : (row+1)*d]
		v := vals[row*d : (row+1)*d]
		top := r.ArgMax(data)
		prefix := o.Name
		if rows > 1 {
			prefix = fmt.Sprintf("%s[%d]", o.Name, row)
		}
		fmt.Fprintf(w, "%s %v (%v, scale %d): top class %s (%.4g)\n", prefix, shape, r, o.Scale, name(top), v[top])
		if d < 2 {
			continue
		}
		idx := make([]int, d)
		for j := range idx {
			idx[j] = j
		}
		sort.SliceStable(idx, func(a, b int) bool { return r.Signed(data[idx[a]]) > r.Signed(data[idx[b]]) })
		parts := make([]string, 0, k)
		for _, j := range idx[:min(k, d)] {
			parts = append(parts, fmt.Sprintf("%s %.4g", name(j), v[j]))
		}
		fmt.Fprintf(w, "  top %d: %s\n", min(k, d), strings.Join(parts, ", "))
	}
}
