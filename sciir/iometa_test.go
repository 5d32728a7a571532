package sciir

import (
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

// TestQuantize checks QuantizeLinear as ONNX Runtime computes it on edge values: ties to even,
// the clamp at both ends, negative zero points of int8, NaN.
func TestQuantize(t *testing.T) {
	u := &Quant{Scale: 0.5, ZeroPoint: 10, Type: "uint8"}
	x := []float32{0, 1.25, 1.75, -1.25, 0.25, 0.75, -5, -5.25, 122.5, 200, float32(math.NaN()), float32(math.Inf(-1))}
	u.Quantize(x)
	want := []float32{10, 12, 14, 8, 10, 12, 0, 0, 255, 255, 10, 0}
	if !reflect.DeepEqual(x, want) {
		t.Errorf("uint8: %v, want %v", x, want)
	}
	s := &Quant{Scale: 0.1, ZeroPoint: -3, Type: "int8"}
	y := []float32{0, -12.5, 12.5, 0.05, float32(math.Inf(1))}
	s.Quantize(y)
	// 0.05/0.1 in float32 is 0.5 (a tie: 0), 12.5/0.1 = 125 + -3 = 122; -12.5/0.1 = -125 -> -128.
	if w := []float32{-3, -128, 122, -3, 127}; !reflect.DeepEqual(y, w) {
		t.Errorf("int8: %v, want %v", y, w)
	}
	for _, v := range []int64{0, 10, 255} {
		if got, want := u.Dequantize(v), float32(v-10)*0.5; got != want {
			t.Errorf("Dequantize(%d) = %g, want %g", v, got, want)
		}
	}
	for _, bad := range []Quant{{Scale: 0, Type: "uint8"}, {Scale: float32(math.Inf(1)), Type: "uint8"},
		{Scale: float32(math.NaN()), Type: "int8"}, {Scale: 1, Type: "int4"}, {Scale: 1, ZeroPoint: 256, Type: "uint8"},
		{Scale: 1, ZeroPoint: -129, Type: "int8"}} {
		if bad.Check() == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
}

// half returns the float16 value of bits h (finite values only).
func half(h uint16) float64 {
	e, m := int(h>>10)&0x1f, float64(h&0x3ff)
	v := math.Ldexp(m, -24)
	if e > 0 {
		v = math.Ldexp(1024+m, e-25)
	}
	if h&0x8000 != 0 {
		v = -v
	}
	return v
}

// TestRoundFloat16 checks the float16 rounding on every finite float16 value (kept), every
// midpoint between neighbours (ties to the even mantissa), and the overflow threshold.
func TestRoundFloat16(t *testing.T) {
	r := func(v float64) float64 { return float64(roundFloat(float32(v), 10, -14, 65504)) }
	for h := uint16(0); h < 0x7c00; h++ {
		v := half(h)
		if r(v) != v || r(-v) != -v {
			t.Fatalf("float16 %#04x = %g rounds to %g", h, v, r(v))
		}
		if h+1 < 0x7c00 {
			mid, even := (v+half(h+1))/2, half(h)
			if h&1 == 1 {
				even = half(h + 1)
			}
			if r(mid) != even || r(-mid) != -even {
				t.Fatalf("midpoint %g of %#04x and %#04x rounds to %g, want %g", mid, h, h+1, r(mid), even)
			}
		}
	}
	for _, c := range []struct{ in, want float64 }{{65519, 65504}, {65520, math.Inf(1)}, {-1e6, math.Inf(-1)}, {1e-8, 0}, {math.Ldexp(3, -25), math.Ldexp(1, -23)}} {
		if got := r(c.in); got != c.want {
			t.Errorf("float16 rounding of %g = %g, want %g", c.in, got, c.want)
		}
	}
	// bfloat16: 1 + 2^-8 is a tie (to 1), 1 + 3·2^-8 goes up to 1 + 2^-6.
	b := func(v float64) float64 { return float64(roundFloat(float32(v), 7, -126, math.MaxFloat32)) }
	if b(1+math.Ldexp(1, -8)) != 1 || b(1+math.Ldexp(3, -8)) != 1+math.Ldexp(1, -6) || b(3) != 3 {
		t.Errorf("bfloat16 rounding: %g %g %g", b(1+math.Ldexp(1, -8)), b(1+math.Ldexp(3, -8)), b(3))
	}
}

// TestIOInfoRoundTrip: the records built from a graph survive the file, drive PrepareInput and
// Dequantization, and bad records are refused on writing and on reading.
func TestIOInfoRoundTrip(t *testing.T) {
	f := testFile(t)
	g := &ir.Graph{Inputs: []ir.Value{{Name: "image"}}, Outputs: []string{"logits", "class"},
		InputQuant:  map[string]ir.Quant{"image": {Scale: 0.018658448, ZeroPoint: 114, Type: "uint8"}},
		OutputQuant: map[string]ir.Quant{"logits": {Scale: 0.16014458, ZeroPoint: 75, Type: "uint8"}}}
	f.Meta.Inputs, f.Meta.Outputs = IOInfo(g)
	b, err := Marshal(f, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got.Meta.Inputs, f.Meta.Inputs) || !reflect.DeepEqual(got.Meta.Outputs, f.Meta.Outputs) {
		t.Fatalf("records changed: %+v %+v", got.Meta.Inputs, got.Meta.Outputs)
	}
	x := []float32{0.5, -2.127}
	got.Meta.PrepareInput("image", x)
	// 0.5/0.018658448 = 26.797… -> 27 + 114; -2.127/0.018658448 = -113.99… -> -114 + 114 = 0.
	if x[0] != 141 || x[1] != 0 {
		t.Errorf("quantized input %v, want [141 0]", x)
	}
	if q := got.Meta.Dequantization("logits"); q == nil || q.Dequantize(76) != 0.16014458 {
		t.Errorf("dequantization of logits: %+v", q)
	}
	if got.Meta.Dequantization("class") != nil {
		t.Error("class has a dequantization")
	}
	if !strings.Contains(got.Meta.summary(), "quantized by the client to uint8") {
		t.Errorf("summary: %s", got.Meta.summary())
	}
	// A float16 input is rounded, not quantized.
	f16 := Meta{Inputs: []InputInfo{{Name: "x", Type: "float16"}}}
	y := []float32{1 + 1.0/4096, 70000}
	f16.PrepareInput("x", y)
	if y[0] != 1 || !math.IsInf(float64(y[1]), 1) {
		t.Errorf("float16 input %v", y)
	}
	for _, bad := range []Meta{
		{Inputs: []InputInfo{{Name: "nope", Type: "float16"}}},
		{Inputs: []InputInfo{{Name: "image", Type: "int32"}}},
		{Inputs: []InputInfo{{Name: "image", Type: "float16"}, {Name: "image", Type: "float16"}}},
		{Inputs: []InputInfo{{Name: "image", Quantize: &Quant{Scale: -1, Type: "uint8"}}}},
		{Outputs: []OutputInfo{{Name: "image", Dequantize: &Quant{Scale: 1, Type: "uint8"}}}},
		{Outputs: []OutputInfo{{Name: "logits", Dequantize: &Quant{Scale: 1, Type: "uint16"}}}},
	} {
		bf := testFile(t)
		bf.Meta.Inputs, bf.Meta.Outputs = bad.Inputs, bad.Outputs
		if _, err := Marshal(bf, true); err == nil {
			t.Errorf("writing %+v %+v succeeded", bad.Inputs, bad.Outputs)
		}
	}
}
