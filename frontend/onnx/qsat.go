package onnx

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
)

// ONNX Runtime's x86-64 U8S8 kernels without VNNI (AVX2: the machine the references come from)
// multiply uint8 activations by int8 weights with vpmaddubsw, which adds two adjacent products
// into an int16 with saturation. So for QLinearConv with group 1 (im2col in NHWC order, K index
// (kh·KW + kw)·C + c) and QLinearMatMul (K index k), ORT's accumulator is
//
//	acc = Σ_p sat16(x[2p]·w[2p] + x[2p+1]·w[2p+1]) − x_zp·Σw + bias
//
// on the raw uint8 x (padding reads x_zp), not the exact Σ (x − x_zp)·w + bias
// (docs/fixed-point.md, "Quantized operators"; checked bit for bit against ORT on
// mobilenetv2-12-int8's first convolution). The difference is a sum of corrections, one per pair
// that can leave int16 for some input: ReLU(−P − 32768) − ReLU(P − 32767), P the pair sum. The
// pair sums are themselves a convolution (or matrix product) of x − x_zp with two-weight rows
// plus the constant x_zp·(w_a + w_b), so the corrections use Conv/MatMul, Relu, Reshape and
// ReduceSum only — exact integer operations.

// satRow is one pair of one output that can saturate: its two weights (K indices) and the sign of
// the bound it can cross (+1: above 32767, −1: below −32768).
type satRow struct {
	out    int
	ka, kb int
	wa, wb int64
	sign   int
}

// saturatingPairs lists the pairs of each output (K order given by weights k → value) that can
// leave int16 for uint8 inputs.
func saturatingPairs(outs, K int, w func(o, k int) int64) ([]satRow, int) {
	var rows []satRow
	counts := make([]int, outs)
	for o := 0; o < outs; o++ {
		for k := 0; k < K; k += 2 {
			a, b := w(o, k), int64(0)
			if k+1 < K {
				b = w(o, k+1)
			}
			if 255*(max(a, 0)+max(b, 0)) > 32767 {
				rows = append(rows, satRow{out: o, ka: k, kb: k + 1, wa: a, wb: b, sign: 1})
				counts[o]++
			}
			if 255*(min(a, 0)+min(b, 0)) < -32768 {
				rows = append(rows, satRow{out: o, ka: k, kb: k + 1, wa: a, wb: b, sign: -1})
				counts[o]++
			}
		}
	}
	most := 0
	for _, c := range counts {
		most = max(most, c)
	}
	return rows, most
}

// saturationFix returns the name of acc + the saturation corrections. xc is x − x_zp; rows the
// saturating pairs; slots the most rows of one output. linear(weights, bias, out) emits the
// layer's linear operator (Conv with the layer's window, or MatMul) with R = outs·slots rows laid
// out output-major, and returns its rank-r output of shape [N, R, ...] (Conv) or [N, R] (MatMul).
// place(dst, row, k, v) puts weight v of K index k of row into the dense weight tensor.
func (im *importer) saturationFix(n *Node, acc string, xz int64, outs, slots int, rows []satRow,
	wshape ir.Shape, place func(dst []float32, row, k int, v float32),
	linear func(w, b string, out string) error) (string, error) {
	if len(rows) == 0 {
		return acc, nil
	}
	ashape := im.g.Values[acc].Shape
	var parts [2]string
	for si, sign := range []int{1, -1} {
		R := outs * slots
		ws := wshape.Clone()
		ws[0] = R
		if len(ws) == 2 { // MatMul weights [K, R]
			ws = ir.Shape{wshape[0], R}
		}
		wd := make([]float32, ws.Size())
		bd := make([]float32, R)
		for i := range bd {
			bd[i] = -1 // an unused slot: ReLU(−1) = 0
		}
		used := make([]int, outs)
		any := false
		for _, r := range rows {
			if r.sign != sign {
				continue
			}
			any = true
			row := r.out*slots + used[r.out]
			used[r.out]++
			s := float32(sign) // +1: P − 32767; −1: −P − 32768
			place(wd, row, r.ka, s*float32(r.wa))
			if r.wb != 0 {
				place(wd, row, r.kb, s*float32(r.wb))
			}
			c := xz * (r.wa + r.wb)
			if sign > 0 {
				bd[row] = float32(c - 32767)
			} else {
				bd[row] = float32(-c - 32768)
			}
		}
		if !any {
			continue
		}
		wn := im.floatConst(acc+"/sat_w", ws, wd)
		bn := im.floatConst(acc+"/sat_b", ir.Shape{R}, bd)
		lin := im.fresh(acc + "/sat_pairs")
		if err := linear(wn, bn, lin); err != nil {
			return "", err
		}
		relu := im.fresh(acc + "/sat_excess")
		if err := im.addNode(&ir.Node{Name: n.Name + "/sat", Op: ir.Relu, Inputs: []string{lin}, Outputs: []string{relu}, Attrs: ir.Attrs{}}); err != nil {
			return "", err
		}
		// [N, outs·slots, rest...] → [N, outs, slots, rest] → sum over slots → the shape of acc.
		ls := im.g.Values[relu].Shape
		rest := 1
		for _, d := range ls[2:] {
			rest *= d
		}
		v := im.fresh(acc + "/sat_view")
		if err := im.addNode(&ir.Node{Name: n.Name + "/sat", Op: ir.Reshape, Inputs: []string{relu}, Outputs: []string{v},
			Attrs: ir.Attrs{"shape": ir.IntsAttr([]int{ls[0], outs, slots, rest})}}); err != nil {
			return "", err
		}
		sum := im.fresh(acc + "/sat_sum")
		if err := im.addNode(&ir.Node{Name: n.Name + "/sat", Op: ir.ReduceSum, Inputs: []string{v}, Outputs: []string{sum},
			Attrs: ir.Attrs{"axes": ir.IntsAttr([]int{2}), "keepdims": ir.IntAttr(0)}}); err != nil {
			return "", err
		}
		back := im.fresh(acc + "/sat_corr")
		if err := im.addNode(&ir.Node{Name: n.Name + "/sat", Op: ir.Reshape, Inputs: []string{sum}, Outputs: []string{back},
			Attrs: ir.Attrs{"shape": ir.IntsAttr([]int(ashape.Clone()))}}); err != nil {
			return "", err
		}
		parts[si] = back
	}
	out := acc
	for si, op := range []ir.Op{ir.Sub, ir.Add} { // − over + under
		if parts[si] == "" {
			continue
		}
		nxt := im.fresh(acc + "/saturated")
		if err := im.addNode(&ir.Node{Name: n.Name + "/sat", Op: op, Inputs: []string{out, parts[si]}, Outputs: []string{nxt}, Attrs: ir.Attrs{}}); err != nil {
			return "", err
		}
		out = nxt
	}
	return out, nil
}

// u8s8 reports whether ORT's saturating U8S8 kernel applies: uint8 activations, int8 weights
// with zero points 0 (the case checked against ORT), and the import not asking for the exact
// integer semantics.
func (im *importer) u8s8(xlo int, w *constant, wz []int64) (bool, error) {
	if im.opts.ExactInt8 || xlo != 0 || w.dtype != Int8 {
		return false, nil
	}
	for _, z := range wz {
		if z != 0 {
			return false, fmt.Errorf("%w: uint8×int8 with a non-zero weight zero point (ONNX Runtime's saturating kernel is reproduced for symmetric weights only; Options.ExactInt8 gives the exact integer semantics)", ErrUnsupported)
		}
	}
	return true, nil
}
