package golden

import (
	"encoding/binary"
	"errors"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// Small hand-made int8 graphs (QOperator format, opsets ai.onnx 13 + com.microsoft 1), checked
// against ONNX Runtime outputs produced once by testdata/int8/gen.sh (INT8_WRITE=DIR makes this
// test write the models and inputs instead), and run securely: secure == clear bit for bit.

const (
	onnxUint8 = 2
	onnxInt8  = 3
	onnxInt32 = 6
	nodeDom   = 7
)

type qgraph struct {
	nodes, inits pb
}

func rawTensor(name string, dtype int, shape []int, vals []int64, f []float32) pb {
	var t pb
	for _, d := range shape {
		t = t.varint(tensorDims, uint64(d))
	}
	t = t.varint(tensorDataType, uint64(dtype)).str(tensorName, name)
	var raw []byte
	switch dtype {
	case onnxUint8, onnxInt8:
		for _, v := range vals {
			raw = append(raw, byte(v))
		}
	case onnxInt32:
		for _, v := range vals {
			raw = binary.LittleEndian.AppendUint32(raw, uint32(int32(v)))
		}
	default:
		for _, v := range f {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
	}
	return t.bytes(tensorRawData, raw)
}

func (g *qgraph) init(name string, dtype int, shape []int, vals []int64, f ...float32) string {
	g.inits = g.inits.bytes(graphInitializer, rawTensor(name, dtype, shape, vals, f))
	return name
}

// q adds a scale and zero point (uint8) and returns their names.
func (g *qgraph) q(name string, scale float32, zp int64) (string, string) {
	return g.init(name+"_s", dataFloat, nil, nil, scale), g.init(name+"_z", onnxUint8, nil, []int64{zp})
}

func (g *qgraph) node(domain, op string, ins []string, out string, ints map[string][]int64) {
	n := pb(nil)
	for _, in := range ins {
		n = n.str(nodeInput, in)
	}
	n = n.str(nodeOutput, out).str(nodeName, out).str(nodeOpType, op)
	for k, v := range ints {
		a := pb(nil).str(attrName, k)
		if len(v) == 1 && k == "group" {
			a = a.varint(attrI, uint64(v[0])).varint(attrType, attrTypeInt)
		} else {
			for _, x := range v {
				a = a.varint(attrInts, uint64(x))
			}
			a = a.varint(attrType, attrTypeInts)
		}
		n = n.bytes(nodeAttribute, a)
	}
	if domain != "" {
		n = n.str(nodeDom, domain)
	}
	g.nodes = g.nodes.bytes(graphNode, n)
}

func (g *qgraph) model(t testing.TB, in []int, out []int) []byte {
	t.Helper()
	info := func(name string, shape []int) pb {
		var sh pb
		for _, d := range shape {
			sh = sh.bytes(shapeDim, pb(nil).varint(dimValue, uint64(d)))
		}
		tt := pb(nil).varint(tensorTypeElem, dataFloat).bytes(tensorTypeShape, sh)
		return pb(nil).str(valueName, name).bytes(valueType, pb(nil).bytes(typeTensor, tt))
	}
	gr := append(pb(nil), g.nodes...).str(graphName, "int8")
	gr = append(gr, g.inits...)
	gr = gr.bytes(graphInput, info("x", in)).bytes(graphOutput, info("y", out))
	m := pb(nil).varint(modelIRVersion, 7).str(modelProducer, "cryptflow-go golden")
	m = m.bytes(modelOpset, pb(nil).str(opsetDomain, "").varint(opsetVersion, 13))
	m = m.bytes(modelOpset, pb(nil).str(opsetDomain, "com.microsoft").varint(opsetVersion, 1))
	return m.bytes(modelGraph, gr)
}

func randInts(r *rand.Rand, n int, lo, hi int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = lo + r.Int64N(hi-lo+1)
	}
	return out
}

// int8Case builds one small quantized model: QuantizeLinear, a 3×3 QLinearConv (per-channel int8
// weights, full range so that ORT's int16 pairs saturate), a 1×1 QLinearConv, a QLinearAdd of the
// two branches, a depthwise QLinearConv, QLinearGlobalAveragePool, Reshape, QLinearMatMul,
// QLinearAdd with a constant, DequantizeLinear. tie = true uses power-of-two scale ratios, so that
// ORT's rounding meets exact halves (round half to even). The other case's scales are arbitrary,
// as calibration makes them; ratios with small denominators (0.5/0.6 = 5/6) put many sums within
// float32 rounding of a half, and the importer refuses them (frontend/onnx TestFitAddRNEMatchesORT).
func int8Case(t testing.TB, seed uint64, tie bool) (model []byte, xshape []int) {
	r := rand.New(rand.NewPCG(seed, 7))
	g := &qgraph{}
	sc := func(v float32) float32 {
		if tie {
			return float32(math.Exp2(math.Round(math.Log2(float64(v)))))
		}
		return v
	}
	C, M, H := 4, 8, 6
	xs, xz := g.q("x", sc(0.02), 120)
	g.node("", "QuantizeLinear", []string{"x", xs, xz}, "xq", nil)
	// 3×3 conv, per-channel weights.
	w1 := g.init("w1", onnxInt8, []int{M, C, 3, 3}, randInts(r, M*C*9, -127, 127))
	ws := make([]float32, M)
	for i := range ws {
		ws[i] = sc(0.002 + 0.001*float32(i))
	}
	w1s := g.init("w1_s", dataFloat, []int{M}, nil, ws...)
	w1z := g.init("w1_z", onnxInt8, []int{M}, make([]int64, M))
	b1 := g.init("b1", onnxInt32, []int{M}, randInts(r, M, -3000, 3000))
	a1s, a1z := g.q("a1", sc(0.4731), 110)
	g.node("", "QLinearConv", []string{"xq", xs, xz, w1, w1s, w1z, a1s, a1z, b1}, "a1", map[string][]int64{"pads": {1, 1, 1, 1}})
	// 1×1 conv of the input, same output size.
	w2 := g.init("w2", onnxInt8, []int{M, C, 1, 1}, randInts(r, M*C, -127, 127))
	w2s := g.init("w2_s", dataFloat, nil, nil, sc(0.004))
	w2z := g.init("w2_z", onnxInt8, nil, []int64{0})
	a2s, a2z := g.q("a2", sc(0.2917), 128)
	g.node("", "QLinearConv", []string{"xq", xs, xz, w2, w2s, w2z, a2s, a2z}, "a2", nil)
	a3s, a3z := g.q("a3", sc(0.6173), 100)
	g.node("com.microsoft", "QLinearAdd", []string{"a1", a1s, a1z, "a2", a2s, a2z, a3s, a3z}, "a3", nil)
	// Depthwise 3×3, stride 2.
	w4 := g.init("w4", onnxInt8, []int{M, 1, 3, 3}, randInts(r, M*9, -127, 127))
	w4s := g.init("w4_s", dataFloat, nil, nil, sc(0.01))
	w4z := g.init("w4_z", onnxInt8, nil, []int64{0})
	a4s, a4z := g.q("a4", sc(0.3), 90)
	g.node("", "QLinearConv", []string{"a3", a3s, a3z, w4, w4s, w4z, a4s, a4z}, "a4",
		map[string][]int64{"group": {int64(M)}, "pads": {1, 1, 1, 1}, "strides": {2, 2}})
	a5s, a5z := g.q("a5", sc(0.1), 80)
	g.node("com.microsoft", "QLinearGlobalAveragePool", []string{"a4", a4s, a4z, a5s, a5z}, "a5", nil)
	g.inits = g.inits.bytes(graphInitializer, tensorInt64("flat", []int64{1, int64(M)}))
	g.node("", "Reshape", []string{"a5", "flat"}, "a6", nil)
	N := 5
	w7 := g.init("w7", onnxInt8, []int{M, N}, randInts(r, M*N, -127, 127))
	w7s := g.init("w7_s", dataFloat, nil, nil, sc(0.02))
	w7z := g.init("w7_z", onnxInt8, nil, []int64{0})
	a7s, a7z := g.q("a7", sc(0.2), 128)
	g.node("", "QLinearMatMul", []string{"a6", a5s, a5z, w7, w7s, w7z, a7s, a7z}, "a7", nil)
	b8 := g.init("b8", onnxUint8, []int{N}, randInts(r, N, 0, 255))
	b8s, b8z := g.q("b8", sc(0.05), 130)
	a8s, a8z := g.q("a8", sc(0.25), 120)
	g.node("com.microsoft", "QLinearAdd", []string{"a7", a7s, a7z, b8, b8s, b8z, a8s, a8z}, "a8", nil)
	g.node("", "DequantizeLinear", []string{"a8", a8s, a8z}, "y", nil)
	return g.model(t, []int{1, C, H, H}, []int{1, N}), []int{1, C, H, H}
}

func TestInt8SmallGraphsORT(t *testing.T) {
	cases := []struct {
		name string
		seed uint64
		tie  bool
	}{{"mixed", 1, false}, {"ties", 2, true}}
	write := os.Getenv("INT8_WRITE")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			model, xshape := int8Case(t, c.seed, c.tie)
			n := 1
			for _, d := range xshape {
				n *= d
			}
			if write != "" {
				dir := filepath.Join(write, c.name)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "model.onnx"), model, 0o644); err != nil {
					t.Fatal(err)
				}
				r := rand.New(rand.NewPCG(c.seed, 11))
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64() * 1.5)
				}
				if err := npy.WriteFileFloat32(filepath.Join(dir, "x.npy"), xshape, x); err != nil {
					t.Fatal(err)
				}
				return
			}
			xa, err := npy.ReadFile(filepath.Join("testdata", "int8", "small", c.name+".x.npy"))
			if err != nil {
				t.Skipf("no fixture (run testdata/int8/gen.sh): %v", err)
			}
			x, _ := xa.Float32()
			ya, err := npy.ReadFile(filepath.Join("testdata", "int8", "small", c.name+".y.npy"))
			if err != nil {
				t.Fatal(err)
			}
			want, _ := ya.Float32()
			m, err := onnx.Decode(model)
			if err != nil {
				t.Fatal(err)
			}
			g, err := onnx.Import(m, onnx.Options{Batch: 1})
			if err != nil {
				t.Fatal(err)
			}
			prog := compileGraph(t, g, 64, 0)
			inScale, inZP := float32(initValue(t, m, "x_s")[0]), int(initValue(t, m, "x_z")[0])
			outScale, outZP := float32(initValue(t, m, "a8_s")[0]), int(initValue(t, m, "a8_z")[0])
			// The program records the quantization the client applies (scirun, the Go API) and
			// the output's dequantization: the same as ONNX Runtime's.
			var meta sciir.Meta
			meta.Inputs, meta.Outputs = sciir.IOInfo(g)
			qx := append([]float32(nil), x...)
			meta.PrepareInput("x", qx)
			if want := ortQuantize(x, inScale, inZP, 0, 255); !reflect.DeepEqual(qx, want) {
				t.Fatalf("recorded input quantization %+v gives %v, want %v", meta.Inputs, qx[:8], want[:8])
			}
			dq := meta.Dequantization("y")
			if dq == nil || dq.Scale != outScale || dq.ZeroPoint != int64(outZP) || dq.Type != "uint8" {
				t.Fatalf("recorded output dequantization %+v, want scale %g zero point %d", dq, outScale, outZP)
			}
			inputs := encodeInputs(t, prog.server, [][]float32{qx})
			clear := runClear(t, prog.server, inputs)
			got := ring.Must(64).SignedValues(clear[0][0].Value)
			for i, v := range got {
				if d := dq.Dequantize(v); math.Float32bits(d) != math.Float32bits(want[i]) {
					t.Fatalf("output %d: ours q=%d (%g), ONNX Runtime %g", i, v, d, want[i])
				}
			}
			t.Logf("%d outputs equal ONNX Runtime's: %v", len(got), got)
			// Every comparison of a quantized program runs on the low bits of its operand's
			// exact bound (the input's uint8 range and the weights), two-party and three-party.
			var relus, low int
			for _, in := range prog.server.Instrs {
				if in.Op == fixed.OpReLU {
					relus++
					if in.Bits > 0 {
						low++
					}
				}
			}
			if relus == 0 || low != relus {
				t.Fatalf("%d of %d ReLUs compare on the low bits, want all", low, relus)
			}
			compareRuns(t, clear, runSecure(t, prog, inputs, secureOptions{}))
			sec3, _ := runSci3(t, prog, inputs, 1, false)
			compareRuns(t, clear, sec3)
		})
	}
}

// TestInt8QDQRefused: a DequantizeLinear read by arithmetic (a QDQ graph) is refused, not
// silently run on the integers.
func TestInt8QDQRefused(t *testing.T) {
	g := &qgraph{}
	xs, xz := g.q("x", 0.02, 120)
	g.node("", "QuantizeLinear", []string{"x", xs, xz}, "xq", nil)
	g.node("", "DequantizeLinear", []string{"xq", xs, xz}, "xd", nil)
	g.node("", "Relu", []string{"xd"}, "y", nil)
	m, err := onnx.Decode(g.model(t, []int{1, 4}, []int{1, 4}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := onnx.Import(m, onnx.Options{Batch: 1}); !errors.Is(err, onnx.ErrUnsupported) {
		t.Fatalf("QDQ graph: %v, want an ErrUnsupported refusal", err)
	}
}
