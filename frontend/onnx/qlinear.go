package onnx

import (
	"fmt"
	"math"

	"github.com/cryptflow-go/cryptflow/ir"
)

// Quantized operators (QOperator format): every quantized tensor is imported as its integer
// values (uint8/int8 as integers), and each operator as exact integer arithmetic — zero points
// subtracted by Add, Conv/MatMul on integer weights (the int32 accumulator), then ir.Requant,
// the integer rule that equals ONNX Runtime's float requantisation on every accumulator that can
// occur (qfit.go; docs/fixed-point.md, "Quantized operators").

// qRange returns the saturation range of a zero point's type (uint8 when absent).
func qRange(c *constant) (int, int, error) {
	if c == nil {
		return 0, 255, nil
	}
	switch c.dtype {
	case Uint8:
		return 0, 255, nil
	case Int8:
		return -128, 127, nil
	}
	return 0, 0, fmt.Errorf("%w: zero point of type %s (uint8 and int8 are supported)", ErrUnsupported, c.dtype)
}

// quantType names the integer type of a quantized tensor from the low end of its range.
func quantType(lo int) string {
	if lo < 0 {
		return "int8"
	}
	return "uint8"
}

// qConst returns the values of a constant as int64 (an absent name gives zeros of length 1).
func (im *importer) qInts(name, what string) ([]int64, error) {
	if name == "" {
		return []int64{0}, nil
	}
	c := im.constOf(name)
	if c == nil {
		return nil, fmt.Errorf("%w: %s %q is not a constant", ErrUnsupported, what, name)
	}
	if !c.isInt() {
		return nil, fmt.Errorf("%s %q is not an integer tensor", what, name)
	}
	return c.i, nil
}

func (im *importer) qScales(name string) ([]float32, error) {
	c := im.constOf(name)
	if c == nil || c.isInt() {
		return nil, fmt.Errorf("%w: scale %q is not a float constant", ErrUnsupported, name)
	}
	return c.f, nil
}

// qScalar reads a per-tensor scale and zero point.
func (im *importer) qScalar(n *Node, si, zi int) (float32, int, int, int, error) {
	s, err := im.qScales(input(n, si))
	if err != nil {
		return 0, 0, 0, 0, err
	}
	z, err := im.qInts(input(n, zi), "zero point")
	if err != nil {
		return 0, 0, 0, 0, err
	}
	if len(s) != 1 || len(z) != 1 {
		return 0, 0, 0, 0, fmt.Errorf("%w: per-axis quantisation of an activation", ErrUnsupported)
	}
	lo, hi, err := qRange(im.constOf(input(n, zi)))
	return s[0], int(z[0]), lo, hi, err
}

// floatConst adds a float constant under a fresh name and returns the name.
func (im *importer) floatConst(base string, shape ir.Shape, v []float32) string {
	name := im.fresh(base)
	im.g.Consts[name] = &ir.Tensor{Shape: shape.Clone(), Data: v}
	return name
}

// centred emits x − zp (as Add of the constant −zp) and returns the new value's name.
func (im *importer) centred(n *Node, x string, zp int) (string, error) {
	if zp == 0 {
		return x, nil
	}
	c := im.floatConst(x+"/-zp", ir.Shape{}, []float32{float32(-zp)})
	out := im.fresh(x + "/centred")
	return out, im.addNode(&ir.Node{Name: n.Name + "/zero_point", Op: ir.Add, Inputs: []string{x, c}, Outputs: []string{out}, Attrs: ir.Attrs{}})
}

// intWeight returns w − zp as float data (zp one value or one per row of the first axis when
// perRow, else per column of the last axis), and the per-output L1 norms.
func intWeight(w *constant, zp []int64, outAxisFirst bool) ([]float32, []int64, error) {
	if !w.isInt() {
		return nil, nil, fmt.Errorf("%w: quantized weight of type %s", ErrUnsupported, w.dtype)
	}
	n := len(w.i)
	outs := w.shape[0]
	if !outAxisFirst {
		outs = w.shape[len(w.shape)-1]
	}
	if len(zp) != 1 && len(zp) != outs {
		return nil, nil, fmt.Errorf("weight zero point has %d values for %d outputs", len(zp), outs)
	}
	inner := n / max(outs, 1)
	data := make([]float32, n)
	l1 := make([]int64, outs)
	for i, v := range w.i {
		o := i / inner
		if !outAxisFirst {
			o = i % outs
		}
		z := zp[0]
		if len(zp) > 1 {
			z = zp[o]
		}
		d := v - z
		data[i] = float32(d)
		l1[o] += abs64(d)
	}
	return data, l1, nil
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// requantNode emits Requant(x) (one input) for per-channel requantisations f[c] (one, or one
// per channel along axis) of x ∈ [lo[c], hi[c]], each with approximate multiplier m[c] and offset
// off[c]: the linear rule plus the point corrections that make it equal f[c] on the whole range.
func (im *importer) requantNode(n *Node, x, out string, axis int, f []func(int64) int, m, off []float64, lo, hi []int64, qmin, qmax int) error {
	k := 52
	for c := range m {
		k = min(k, shiftFor(m[c], max(-lo[c], hi[c])))
	}
	C := len(m)
	mult, add := make([]int, C), make([]int, C)
	rules := make([]fixRule, C)
	J := 0
	for c := range m {
		r, err := fitFix(lo[c], hi[c], f[c], m[c], off[c], qmin, qmax, k)
		if err != nil {
			return fmt.Errorf("channel %d (multiplier %g): %w", c, m[c], err)
		}
		rules[c] = r
		mult[c], add[c] = int(r.A[0]), int(r.C)
		J = max(J, len(r.At))
	}
	fixAt, fixAdd := make([]int, J*C), make([]int, J*C)
	for c, r := range rules {
		for j := range r.At {
			fixAt[j*C+c], fixAdd[j*C+c] = int(r.At[j]), int(r.Add[j])
		}
	}
	return im.addNode(&ir.Node{Name: n.Name, Op: ir.Requant, Inputs: []string{x}, Outputs: []string{out}, Attrs: ir.Attrs{
		"axis": ir.IntAttr(axis), "mult": ir.IntsAttr(mult), "add": ir.IntsAttr(add),
		"shift": ir.IntAttr(k), "min": ir.IntAttr(qmin), "max": ir.IntAttr(qmax),
		"fix_at": ir.IntsAttr(fixAt), "fix_add": ir.IntsAttr(fixAdd),
	}})
}

// mlasRequant returns, per channel, MlasRequantizeOutput as a function of the accumulator, its
// multiplier and offset, and the accumulator range ±bound.
func mlasRequant(m []float32, bounds []int64, zp, qmin, qmax int) (f []func(int64) int, mm, off []float64, lo, hi []int64) {
	for c, sc := range m {
		f = append(f, func(acc int64) int { return ortRequant(acc, sc, zp, qmin, qmax) })
		mm = append(mm, float64(sc))
		off = append(off, float64(zp))
		lo = append(lo, -bounds[c])
		hi = append(hi, bounds[c])
	}
	return
}

// quantizeLinear accepts QuantizeLinear of a graph input only: the client quantizes its own
// input (in the clear, before sharing it), so the program's input is the quantized tensor.
func (im *importer) quantizeLinear(n *Node) error {
	out, err := arityOutput(n, 2, 3)
	if err != nil {
		return err
	}
	isInput := false
	for _, v := range im.g.Inputs {
		isInput = isInput || v.Name == n.Inputs[0]
	}
	if !isInput || im.uses[n.Inputs[0]] != 1 {
		return fmt.Errorf("%w: QuantizeLinear of anything but a graph input read by it alone (QDQ graphs are not supported)", ErrUnsupported)
	}
	s, z, lo, _, err := im.qScalar(n, 1, 2)
	if err != nil {
		return err
	}
	if !(s > 0) || math.IsInf(float64(s), 0) {
		return fmt.Errorf("QuantizeLinear of input %q: scale %g (want a positive finite float)", n.Inputs[0], s)
	}
	if im.g.InputQuant == nil {
		im.g.InputQuant = map[string]ir.Quant{}
	}
	im.g.InputQuant[n.Inputs[0]] = ir.Quant{Scale: s, ZeroPoint: int64(z), Type: quantType(lo)}
	return im.emit(n, ir.Identity, n.Inputs[:1], out, ir.Attrs{})
}

// dequantizeLinear passes the integers through: the program outputs the quantized tensor (the
// dequantisation (q − zp)·scale is the receiver's, in the clear). Read by anything but Shape or
// the graph outputs it would be wrong: checkDequantized refuses that (QDQ graphs).
func (im *importer) dequantizeLinear(n *Node) error {
	out, err := arityOutput(n, 2, 3)
	if err != nil {
		return err
	}
	s, z, lo, _, err := im.qScalar(n, 1, 2)
	if err != nil {
		return err
	}
	if im.dequantized == nil {
		im.dequantized = map[string]ir.Quant{}
	}
	im.dequantized[out] = ir.Quant{Scale: s, ZeroPoint: int64(z), Type: quantType(lo)}
	return im.emit(n, ir.Identity, n.Inputs[:1], out, ir.Attrs{})
}

// checkDequantized refuses a DequantizeLinear output read by anything but Shape.
func (im *importer) checkDequantized(src *Graph) error {
	for _, n := range src.Nodes {
		for _, in := range n.Inputs {
			if _, ok := im.dequantized[in]; ok && n.OpType != "Shape" {
				return fmt.Errorf("%s: %w: reads the DequantizeLinear output %q (only graph outputs and Shape may: QDQ graphs are not supported)", n, ErrUnsupported, in)
			}
		}
	}
	return nil
}

// qlinearConv imports QLinearConv: Conv(x − xz, w − wz, B) then Requant with the multipliers
// xs·ws/ys (float32, in that order, as onnxruntime's kernel computes them).
func (im *importer) qlinearConv(n *Node) error {
	out, err := arityOutput(n, 8, 9)
	if err != nil {
		return err
	}
	xs, xz, xlo, xhi, err := im.qScalar(n, 1, 2)
	if err != nil {
		return err
	}
	ys, yz, ylo, yhi, err := im.qScalar(n, 6, 7)
	if err != nil {
		return err
	}
	w := im.constOf(n.Inputs[3])
	if w == nil {
		return fmt.Errorf("%w: QLinearConv with runtime weights", ErrUnsupported)
	}
	ws, err := im.qScales(n.Inputs[4])
	if err != nil {
		return err
	}
	wz, err := im.qInts(n.Inputs[5], "weight zero point")
	if err != nil {
		return err
	}
	wdata, l1, err := intWeight(w, wz, true)
	if err != nil {
		return err
	}
	attrs, err := im.intConvAttrs(n, w)
	if err != nil {
		return err
	}
	x, err := im.centred(n, n.Inputs[0], xz)
	if err != nil {
		return err
	}
	M := w.shape[0]
	dev := int64(max(xz-xlo, xhi-xz))
	bounds := make([]int64, M)
	for c := range bounds {
		bounds[c] = l1[c] * dev
	}
	ins := []string{x, im.floatConst(n.Inputs[3]+"/int", w.shape, wdata)}
	if b := input(n, 8); b != "" {
		bv, err := im.qInts(b, "bias")
		if err != nil {
			return err
		}
		bf := make([]float32, len(bv))
		for i, v := range bv {
			if abs64(v) >= 1<<24 {
				return fmt.Errorf("%w: bias %d beyond 2^24", ErrUnsupported, v)
			}
			bf[i] = float32(v)
			bounds[i] += abs64(v)
		}
		ins = append(ins, im.floatConst(b+"/int", ir.Shape{len(bv)}, bf))
	}
	acc := im.fresh(out + "/acc")
	if err := im.addNode(&ir.Node{Name: n.Name + "/acc", Op: ir.Conv, Inputs: ins, Outputs: []string{acc}, Attrs: attrs}); err != nil {
		return err
	}
	if sat, err := im.u8s8(xlo, w, wz); err != nil {
		return err
	} else if sat && attrs["group"].Int == 1 {
		C, KH, KW := w.shape[1], w.shape[2], w.shape[3]
		K := C * KH * KW
		idx := func(o, k int) int { // NHWC im2col order: k = (kh·KW + kw)·C + c
			c, pos := k%C, k/C
			return ((o*C+c)*KH+pos/KW)*KW + pos%KW
		}
		rows, slots := saturatingPairs(M, K, func(o, k int) int64 { return w.i[idx(o, k)] })
		cattrs := ir.Attrs{}
		for k, v := range attrs {
			cattrs[k] = v
		}
		if acc, err = im.saturationFix(n, acc, int64(xz), M, slots, rows, w.shape,
			func(dst []float32, row, k int, v float32) { dst[idx(row, k)] = v },
			func(wn, bn, o string) error {
				return im.addNode(&ir.Node{Name: n.Name + "/sat", Op: ir.Conv, Inputs: []string{x, wn, bn}, Outputs: []string{o}, Attrs: cattrs})
			}); err != nil {
			return err
		}
		for c := range bounds {
			bounds[c] *= 2
		}
	}
	if len(ws) != 1 && len(ws) != M {
		return fmt.Errorf("weight scale has %d values for %d channels", len(ws), M)
	}
	m := make([]float32, len(ws))
	for i, s := range ws {
		m[i] = xs * s / ys
	}
	if len(m) == 1 {
		var b int64
		for _, v := range bounds {
			b = max(b, v)
		}
		bounds = []int64{b}
	}
	f, mm, off, lo, hi := mlasRequant(m, bounds, yz, ylo, yhi)
	return im.requantNode(n, acc, out, 1, f, mm, off, lo, hi, ylo, yhi)
}

// qlinearMatMul imports QLinearMatMul with a constant B [K, N]: MatMul(a − az, b − bz), then
// Requant with as·bs/ys (per column when bs is).
func (im *importer) qlinearMatMul(n *Node) error {
	out, err := arityOutput(n, 8, 8)
	if err != nil {
		return err
	}
	as, az, alo, ahi, err := im.qScalar(n, 1, 2)
	if err != nil {
		return err
	}
	ys, yz, ylo, yhi, err := im.qScalar(n, 6, 7)
	if err != nil {
		return err
	}
	b := im.constOf(n.Inputs[3])
	if b == nil || len(b.shape) != 2 {
		return fmt.Errorf("%w: QLinearMatMul needs a constant 2-D B", ErrUnsupported)
	}
	bs, err := im.qScales(n.Inputs[4])
	if err != nil {
		return err
	}
	bz, err := im.qInts(n.Inputs[5], "zero point")
	if err != nil {
		return err
	}
	bdata, l1, err := intWeight(b, bz, false)
	if err != nil {
		return err
	}
	a, err := im.centred(n, n.Inputs[0], az)
	if err != nil {
		return err
	}
	acc := im.fresh(out + "/acc")
	if err := im.addNode(&ir.Node{Name: n.Name + "/acc", Op: ir.MatMul, Inputs: []string{a, im.floatConst(n.Inputs[3]+"/int", b.shape, bdata)}, Outputs: []string{acc}, Attrs: ir.Attrs{}}); err != nil {
		return err
	}
	dev := int64(max(az-alo, ahi-az))
	if sat, err := im.u8s8(alo, b, bz); err != nil {
		return err
	} else if sat {
		K, N := b.shape[0], b.shape[1]
		rows, slots := saturatingPairs(N, K, func(o, k int) int64 { return b.i[k*N+o] })
		R := N * slots
		if acc, err = im.saturationFix(n, acc, int64(az), N, slots, rows, b.shape,
			func(dst []float32, row, k int, v float32) { dst[k*R+row] = v },
			func(wn, bn, o string) error {
				mm := im.fresh(o + "/mm")
				if err := im.addNode(&ir.Node{Name: n.Name + "/sat", Op: ir.MatMul, Inputs: []string{a, wn}, Outputs: []string{mm}, Attrs: ir.Attrs{}}); err != nil {
					return err
				}
				return im.addNode(&ir.Node{Name: n.Name + "/sat", Op: ir.Add, Inputs: []string{mm, bn}, Outputs: []string{o}, Attrs: ir.Attrs{}})
			}); err != nil {
			return err
		}
		dev *= 2
	}
	m := make([]float32, len(bs))
	for i, s := range bs {
		m[i] = as * s / ys
	}
	var bounds []int64
	if len(m) == 1 {
		var mx int64
		for _, v := range l1 {
			mx = max(mx, v)
		}
		bounds = []int64{mx * dev}
	} else {
		for _, v := range l1 {
			bounds = append(bounds, v*dev)
		}
	}
	rank := len(im.g.Values[acc].Shape)
	f, mm, off, lo, hi := mlasRequant(m, bounds, yz, ylo, yhi)
	return im.requantNode(n, acc, out, rank-1, f, mm, off, lo, hi, ylo, yhi)
}

// qlinearAdd imports com.microsoft QLinearAdd with MLAS's AVX2 kernel as the definition: two
// runtime tensors of one shape (the rule is checked on all 65,536 input pairs), or a runtime
// tensor and a constant along its last axis (one rule per column, checked on all 256 inputs).
func (im *importer) qlinearAdd(n *Node) error {
	out, err := arityOutput(n, 8, 8)
	if err != nil {
		return err
	}
	sa, za, lo, hi, err := im.qScalar(n, 1, 2)
	if err != nil {
		return err
	}
	sb, zb, _, _, err := im.qScalar(n, 4, 5)
	if err != nil {
		return err
	}
	sc, zc, _, _, err := im.qScalar(n, 6, 7)
	if err != nil {
		return err
	}
	q := newORTQLinearAdd(sa, za, sb, zb, sc, zc, lo, hi)
	a, b := n.Inputs[0], n.Inputs[3]
	if cb := im.constOf(b); cb != nil && im.constOf(a) == nil {
		xs, err := im.shape(a)
		if err != nil {
			return err
		}
		N := xs[len(xs)-1]
		if cb.size() != N || !cb.isInt() {
			return fmt.Errorf("%w: QLinearAdd with a constant that does not run along the last axis", ErrUnsupported)
		}
		var f []func(int64) int
		var mm, off []float64
		var los, his []int64
		for _, bv := range cb.i {
			bj := int(bv)
			f = append(f, func(x int64) int { return q.at(int(x), bj) })
			mm = append(mm, float64(q.rA))
			off = append(off, float64(q.fixed)+float64(bj)*float64(q.rB))
			los, his = append(los, int64(lo)), append(his, int64(hi))
		}
		return im.requantNode(n, a, out, len(xs)-1, f, mm, off, los, his, lo, hi)
	}
	if im.constOf(a) != nil || im.constOf(b) != nil {
		return fmt.Errorf("%w: QLinearAdd with a constant first operand", ErrUnsupported)
	}
	r, err := fitAdd(q, lo, hi)
	if err != nil {
		e, err := fitAddRNE(q, lo, hi)
		if err != nil {
			return err
		}
		var at []int
		for _, v := range e.At {
			at = append(at, int(v))
		}
		add := make([]int, len(e.Add))
		for i, v := range e.Add {
			add[i] = int(v)
		}
		return im.addNode(&ir.Node{Name: n.Name, Op: ir.Requant, Inputs: []string{a, b}, Outputs: []string{out}, Attrs: ir.Attrs{
			"axis": ir.IntAttr(0), "mult": ir.IntsAttr([]int{int(e.A), int(e.B)}), "add": ir.IntsAttr([]int{int(e.C)}),
			"shift": ir.IntAttr(e.K), "rne": ir.IntAttr(1), "fix_v": ir.IntAttr(1), "min": ir.IntAttr(lo), "max": ir.IntAttr(hi),
			"fix_at": ir.IntsAttr(at), "fix_add": ir.IntsAttr(add),
		}})
	}
	return im.addNode(&ir.Node{Name: n.Name, Op: ir.Requant, Inputs: []string{a, b}, Outputs: []string{out}, Attrs: ir.Attrs{
		"axis": ir.IntAttr(0), "mult": ir.IntsAttr([]int{int(r.A[0]), int(r.A[1])}), "add": ir.IntsAttr([]int{int(r.C)}),
		"shift": ir.IntAttr(r.K), "min": ir.IntAttr(lo), "max": ir.IntAttr(hi),
	}})
}

// qlinearGlobalAveragePool imports com.microsoft QLinearGlobalAveragePool (NCHW): the window sum
// (ReduceSum) then Requant with MLAS's rule: acc = sum − xz·n, scale xs/(ys·n) in float32.
func (im *importer) qlinearGlobalAveragePool(n *Node) error {
	out, err := arityOutput(n, 5, 5)
	if err != nil {
		return err
	}
	if cl, err := n.intAttr("channels_last", 0); err != nil || cl != 0 {
		return fmt.Errorf("%w: QLinearGlobalAveragePool with channels_last", ErrUnsupported)
	}
	xs, xz, lo, hi, err := im.qScalar(n, 1, 2)
	if err != nil {
		return err
	}
	ys, yz, ylo, yhi, err := im.qScalar(n, 3, 4)
	if err != nil {
		return err
	}
	shape, err := im.shape(n.Inputs[0])
	if err != nil {
		return err
	}
	if len(shape) < 3 {
		return fmt.Errorf("input rank %d < 3", len(shape))
	}
	pix := 1
	var axes []int
	for i := 2; i < len(shape); i++ {
		pix *= shape[i]
		axes = append(axes, i)
	}
	sum := im.fresh(out + "/sum")
	if err := im.emit(n, ir.ReduceSum, n.Inputs[:1], sum, ir.Attrs{"axes": ir.IntsAttr(axes), "keepdims": ir.IntAttr(1)}); err != nil {
		return err
	}
	scale := xs / (ys * float32(pix))
	f := func(s int64) int { return ortRequant(s-int64(xz*pix), scale, yz, ylo, yhi) }
	smin, smax := int64(lo*pix), int64(hi*pix)
	return im.requantNode(n, sum, out, 0, []func(int64) int{f}, []float64{float64(scale)},
		[]float64{float64(yz) - float64(xz*pix)*float64(scale)}, []int64{smin}, []int64{smax}, ylo, yhi)
}

// convInteger imports ConvInteger: the int32 accumulator Conv(x − xz, w − wz).
func (im *importer) convInteger(n *Node) error {
	out, err := arityOutput(n, 2, 4)
	if err != nil {
		return err
	}
	xz, err := im.qInts(input(n, 2), "zero point")
	if err != nil || len(xz) != 1 {
		return fmt.Errorf("%w: ConvInteger input zero point", ErrUnsupported)
	}
	w := im.constOf(n.Inputs[1])
	if w == nil {
		return fmt.Errorf("%w: ConvInteger with runtime weights", ErrUnsupported)
	}
	wz, err := im.qInts(input(n, 3), "zero point")
	if err != nil {
		return err
	}
	wdata, _, err := intWeight(w, wz, true)
	if err != nil {
		return err
	}
	attrs, err := im.intConvAttrs(n, w)
	if err != nil {
		return err
	}
	x, err := im.centred(n, n.Inputs[0], int(xz[0]))
	if err != nil {
		return err
	}
	return im.addNode(&ir.Node{Name: n.Name, Op: ir.Conv, Inputs: []string{x, im.floatConst(n.Inputs[1]+"/int", w.shape, wdata)}, Outputs: []string{out}, Attrs: attrs})
}

// matMulInteger imports MatMulInteger with a constant 2-D B: MatMul(a − az, b − bz).
func (im *importer) matMulInteger(n *Node) error {
	out, err := arityOutput(n, 2, 4)
	if err != nil {
		return err
	}
	az, err := im.qInts(input(n, 2), "zero point")
	if err != nil || len(az) != 1 {
		return fmt.Errorf("%w: MatMulInteger A zero point", ErrUnsupported)
	}
	b := im.constOf(n.Inputs[1])
	if b == nil || len(b.shape) != 2 {
		return fmt.Errorf("%w: MatMulInteger needs a constant 2-D B", ErrUnsupported)
	}
	bz, err := im.qInts(input(n, 3), "zero point")
	if err != nil {
		return err
	}
	bdata, _, err := intWeight(b, bz, false)
	if err != nil {
		return err
	}
	a, err := im.centred(n, n.Inputs[0], int(az[0]))
	if err != nil {
		return err
	}
	return im.addNode(&ir.Node{Name: n.Name, Op: ir.MatMul, Inputs: []string{a, im.floatConst(n.Inputs[1]+"/int", b.shape, bdata)}, Outputs: []string{out}, Attrs: ir.Attrs{}})
}

// intConvAttrs are the window and group attributes of an integer convolution (QLinearConv,
// ConvInteger) whose input is n.Inputs[0] and whose constant weights are w.
func (im *importer) intConvAttrs(n *Node, w *constant) (ir.Attrs, error) {
	xshape, err := im.shape(n.Inputs[0])
	if err != nil {
		return nil, err
	}
	attrs, err := n.windowAttrs(xshape, []int(w.shape[2:].Clone()))
	if err != nil {
		return nil, err
	}
	group, err := n.intAttr("group", 1)
	if err != nil {
		return nil, err
	}
	attrs["group"] = ir.IntAttr(int(group))
	return attrs, nil
}
