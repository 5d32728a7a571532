package sciir

import (
	"fmt"
	"math"

	"github.com/cryptflow-go/cryptflow/ir"
)

// InputInfo is what a program records about one input beyond its shape.
type InputInfo struct {
	Name string `json:"name"`
	// Type is the element type the model declares when it is not float32 ("float16",
	// "bfloat16", "double"): HLIL computes in float32, and the client rounds its data to the
	// declared type first, as a runtime fed that type would see it.
	Type string `json:"type,omitempty"`
	// Quantize, for a quantized model whose graph quantizes this input at once (ONNX
	// QuantizeLinear), is how the client turns its float data into the integers the program
	// takes, before encoding them.
	Quantize *Quant `json:"quantize,omitempty"`
}

// OutputInfo is what a program records about one output beyond its shape.
type OutputInfo struct {
	Name string `json:"name"`
	// Dequantize, for an output the model dequantizes (ONNX DequantizeLinear), gives the
	// parameters the receiver turns the revealed integers into floats with.
	Dequantize *Quant `json:"dequantize,omitempty"`
}

// Quant is a scalar linear quantization to uint8 or int8 (ir.Quant).
type Quant struct {
	Scale     float32 `json:"scale"`
	ZeroPoint int64   `json:"zero_point"`
	Type      string  `json:"type"` // "uint8" or "int8"
}

// bounds is the integer range of the quantized type.
func (q *Quant) bounds() (int64, int64) {
	if q.Type == "int8" {
		return -128, 127
	}
	return 0, 255
}

// Check reports whether q is usable: a positive finite scale, a known type and a zero point
// inside its range.
func (q *Quant) Check() error {
	if q.Type != "uint8" && q.Type != "int8" {
		return fmt.Errorf("quantization type %q (want uint8 or int8)", q.Type)
	}
	if !(q.Scale > 0) || math.IsInf(float64(q.Scale), 0) {
		return fmt.Errorf("quantization scale %g (want a positive finite value)", q.Scale)
	}
	if lo, hi := q.bounds(); q.ZeroPoint < lo || q.ZeroPoint > hi {
		return fmt.Errorf("quantization zero point %d outside %s's range %d..%d", q.ZeroPoint, q.Type, lo, hi)
	}
	return nil
}

// Quantize replaces each value x by its quantized integer as ONNX Runtime's QuantizeLinear
// computes it on the CPU (MLAS): x/scale in float32, clamped to [qmin − zp, qmax − zp], rounded
// half to even, plus the zero point. A NaN (no defined result: runtimes differ) becomes the
// zero point, the quantized 0.
func (q *Quant) Quantize(x []float32) {
	lo, hi := q.bounds()
	flo, fhi := float32(lo-q.ZeroPoint), float32(hi-q.ZeroPoint)
	for i, v := range x {
		f := v / q.Scale
		switch {
		case f != f: // NaN
			f = 0
		case f < flo:
			f = flo
		case f > fhi:
			f = fhi
		}
		x[i] = float32(int64(math.RoundToEven(float64(f))) + q.ZeroPoint)
	}
}

// Dequantize is DequantizeLinear of one integer: float32(v − zp)·scale in float32.
func (q *Quant) Dequantize(v int64) float32 {
	return float32(v-q.ZeroPoint) * q.Scale
}

// IOInfo returns what a graph records about its inputs and outputs beyond their shapes (the
// declared input types, the input quantization and output dequantization of quantized models),
// for Meta.Inputs and Meta.Outputs; nil slices when there is nothing to record.
func IOInfo(g *ir.Graph) ([]InputInfo, []OutputInfo) {
	var ins []InputInfo
	for _, v := range g.Inputs {
		in := InputInfo{Name: v.Name, Type: g.InputTypes[v.Name]}
		if q, ok := g.InputQuant[v.Name]; ok {
			in.Quantize = &Quant{Scale: q.Scale, ZeroPoint: q.ZeroPoint, Type: q.Type}
		}
		if in.Type != "" || in.Quantize != nil {
			ins = append(ins, in)
		}
	}
	var outs []OutputInfo
	for _, name := range g.Outputs {
		if q, ok := g.OutputQuant[name]; ok {
			outs = append(outs, OutputInfo{Name: name, Dequantize: &Quant{Scale: q.Scale, ZeroPoint: q.ZeroPoint, Type: q.Type}})
		}
	}
	return ins, outs
}

// checkIO checks the input and output records against the program's inputs and outputs.
func (m *Meta) checkIO(inputs, outputs []string) error {
	set := func(names []string) map[string]bool {
		s := map[string]bool{}
		for _, n := range names {
			s[n] = true
		}
		return s
	}
	ins, outs := set(inputs), set(outputs)
	seen := map[string]bool{}
	for _, in := range m.Inputs {
		if !ins[in.Name] || seen[in.Name] {
			return fmt.Errorf("input record %q: no such program input, or listed twice", in.Name)
		}
		seen[in.Name] = true
		switch in.Type {
		case "", "float16", "bfloat16", "double":
		default:
			return fmt.Errorf("input %q: declared type %q (want float16, bfloat16 or double)", in.Name, in.Type)
		}
		if in.Quantize != nil {
			if err := in.Quantize.Check(); err != nil {
				return fmt.Errorf("input %q: %w", in.Name, err)
			}
		}
	}
	seen = map[string]bool{}
	for _, o := range m.Outputs {
		if !outs[o.Name] || seen[o.Name] {
			return fmt.Errorf("output record %q: no such program output, or listed twice", o.Name)
		}
		seen[o.Name] = true
		if o.Dequantize != nil {
			if err := o.Dequantize.Check(); err != nil {
				return fmt.Errorf("output %q: %w", o.Name, err)
			}
		}
	}
	return nil
}

// InputInfoOf returns the record of the input named name, or nil.
func (m *Meta) InputInfoOf(name string) *InputInfo {
	for i := range m.Inputs {
		if m.Inputs[i].Name == name {
			return &m.Inputs[i]
		}
	}
	return nil
}

// Dequantization returns the dequantization of the output named name, or nil.
func (m *Meta) Dequantization(name string) *Quant {
	for i := range m.Outputs {
		if m.Outputs[i].Name == name {
			return m.Outputs[i].Dequantize
		}
	}
	return nil
}

// PrepareInput turns the client's float32 data for the input named name into the values the
// program encodes, in place: rounded to the input's declared type (float16 and bfloat16 round to
// nearest, ties to even; double is exact), then quantized when the program records a
// quantization. Programs without records leave x unchanged.
func (m *Meta) PrepareInput(name string, x []float32) {
	in := m.InputInfoOf(name)
	if in == nil {
		return
	}
	switch in.Type {
	case "float16":
		for i, v := range x {
			x[i] = roundFloat(v, 10, -14, 65504)
		}
	case "bfloat16":
		for i, v := range x {
			x[i] = roundFloat(v, 7, -126, math.MaxFloat32)
		}
	}
	if in.Quantize != nil {
		in.Quantize.Quantize(x)
	}
}

// roundFloat rounds v to the nearest value (ties to even) of a binary floating-point format with
// mant fraction bits, smallest normal exponent emin and largest finite value maxv (subnormals
// included); values beyond maxv after rounding become infinities.
func roundFloat(v float32, mant, emin int, maxv float64) float32 {
	x := float64(v)
	if x == 0 || math.IsNaN(x) || math.IsInf(x, 0) {
		return v
	}
	_, e := math.Frexp(x) // |x| = m·2^e, m in [0.5, 1): the leading bit is 2^(e−1)
	q := max(e-1, emin) - mant
	r := math.RoundToEven(math.Ldexp(x, -q))
	r = math.Ldexp(r, q)
	if math.Abs(r) > maxv {
		return float32(math.Copysign(math.Inf(1), x))
	}
	return float32(r)
}
