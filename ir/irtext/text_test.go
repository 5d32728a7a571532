package irtext

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

// mnistGraph is a small hand-built graph in the shape of the ONNX model zoo's MNIST.
func mnistGraph() *ir.Graph {
	g := ir.NewGraph("mnist")
	g.Inputs = []ir.Value{{Name: "Input3", DType: ir.Float32, Shape: ir.Shape{1, 1, 28, 28}}}
	g.Consts["W0"] = &ir.Tensor{Shape: ir.Shape{2, 1, 1, 2}, Data: []float32{0.1, -2.5e-3, 1, float32(math.Inf(-1))}}
	g.Consts["onnx::B0"] = &ir.Tensor{Shape: ir.Shape{2}, Data: []float32{0, float32(math.Copysign(0, -1))}}
	g.Consts["scalar"] = &ir.Tensor{Shape: ir.Shape{}, Data: []float32{3}}
	g.Nodes = []*ir.Node{
		{Name: "Conv28", Op: ir.Conv, Inputs: []string{"Input3", "W0", "onnx::B0"}, Outputs: []string{"c1"}, Attrs: ir.Attrs{
			"group": ir.IntAttr(1), "kernel_shape": ir.IntsAttr([]int{1, 2}), "strides": ir.IntsAttr([]int{1, 1}),
			"pads": ir.IntsAttr([]int{0, 0, 0, 1}), "dilations": ir.IntsAttr([]int{1, 1}),
		}},
		{Op: ir.Relu, Inputs: []string{"c1"}, Outputs: []string{"/relu/Relu_output_0"}},
		{Name: "pad 1", Op: ir.Pad, Inputs: []string{"/relu/Relu_output_0"}, Outputs: []string{"p"}, Attrs: ir.Attrs{
			"mode": ir.StringAttr("constant"), "pads": ir.IntsAttr([]int{0, 0, 0, 0, 0, 0, 0, 0}), "value": ir.FloatAttr(0),
		}},
		{Op: ir.Squeeze, Inputs: []string{"p"}, Outputs: []string{"s"}, Attrs: ir.Attrs{"axes": ir.IntsAttr(nil)}},
		{Op: ir.Clip, Inputs: []string{"s"}, Outputs: []string{"out"}, Attrs: ir.Attrs{
			"min": ir.FloatAttr(float32(math.Inf(-1))), "max": ir.FloatAttr(6), "f": ir.FloatsAttr(nil), "g": ir.FloatsAttr([]float32{0.5, 2}),
		}},
	}
	g.Outputs = []string{"out"}
	g.Values["Input3"] = &ir.Value{Name: "Input3", DType: ir.Float32, Shape: ir.Shape{1, 1, 28, 28}}
	g.Values["c1"] = &ir.Value{Name: "c1", DType: ir.Float32, Shape: ir.Shape{1, 2, 28, 28}}
	g.Values["/relu/Relu_output_0"] = &ir.Value{Name: "/relu/Relu_output_0", DType: ir.Float32, Shape: ir.Shape{1, 2, 28, 28}}
	g.Values["p"] = &ir.Value{Name: "p", DType: ir.Float32} // shape not known
	return g
}

const mnistText = `graph "mnist" {
  input %Input3: f32[1,1,28,28]

  const %W0: f32[2,1,1,2] = [0.1, -0.0025, 1.0, -inf]
  const %"onnx::B0": f32[2] = [0.0, -0.0]
  const %scalar: f32[] = [3.0]

  %c1: f32[1,2,28,28] = Conv(%Input3, %W0, %"onnx::B0") {dilations=[1,1], group=1, kernel_shape=[1,2], pads=[0,0,0,1], strides=[1,1]} @Conv28
  %/relu/Relu_output_0: f32[1,2,28,28] = Relu(%c1)
  %p: f32[*] = Pad(%/relu/Relu_output_0) {mode="constant", pads=[0,0,0,0,0,0,0,0], value=0.0} @"pad 1"
  %s = Squeeze(%p) {axes=ints[]}
  %out = Clip(%s) {f=floats[], g=[0.5, 2.0], max=6.0, min=-inf}

  output %out
}
`

func TestTextGolden(t *testing.T) {
	g := mnistGraph()
	if got := Format(g); got != mnistText {
		t.Fatalf("Text() =\n%s\nwant\n%s", got, mnistText)
	}
	h, err := Parse(mnistText)
	if err != nil {
		t.Fatal(err)
	}
	if err := Compare(g, h); err != nil {
		t.Fatal(err)
	}
	if err := CheckRoundTrip(g); err != nil {
		t.Fatal(err)
	}
	// The parsed graph owns its memory: input shapes do not alias Values shapes.
	h.Inputs[0].Shape[0] = 7
	if h.Values["Input3"].Shape[0] != 1 {
		t.Error("input shape aliases its Values entry")
	}
}

func TestParseHandWritten(t *testing.T) {
	src := `
# A hand-written graph: comments, blank lines, spacing and forms the printer does not produce.
graph "hand \"written\"" {   # trailing comment

  input   %x : f32 [ 1 , 4 ]
  input %"имя 2": i64[]
  const %w: f32[2,2] = [
     1, 2,       # not allowed here
  ]
}`
	// Comments inside a list are rejected with a position.
	if _, err := Parse(src); err == nil || !strings.HasPrefix(err.Error(), "8:18: comments are not allowed inside a list") {
		t.Fatalf("comment inside a list: got %v, want a comment error at 8:18", err)
	}
	src = `
graph "hand \"written\"" {   # trailing comment

  input   %x : f32 [ 1 , 4 ]
  input %"имя 2": i64[]
  const %w: f32[2,2] = [
     1, 2,
     +3.5e0, -4
  ]
  = "no outputs"(%x)
  %y, %z: i64[*] = MatMul(%x, %w) {ints=[ -1 ], fl=floats[1, 2], s="tab\there", i=-9223372036854775808, e=+inf, n=nan(0x7fa00001)}
  %q = Identity() @"node/label"
  output %z
  output %x
  value %x: f32[*]
  value %z: none
  value %extra: f32[2]
}
`
	g, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	if g.Name != `hand "written"` {
		t.Errorf("name %q", g.Name)
	}
	if len(g.Inputs) != 2 || g.Inputs[1].Name != "имя 2" || g.Inputs[1].DType != ir.Int64 || g.Inputs[1].Shape == nil || len(g.Inputs[1].Shape) != 0 {
		t.Errorf("inputs %+v", g.Inputs)
	}
	if w := g.Consts["w"]; w == nil || !w.Shape.Equal(ir.Shape{2, 2}) || diffFloats(w.Data, []float32{1, 2, 3.5, -4}) != nil {
		t.Errorf("const w %+v", w)
	}
	if len(g.Nodes) != 3 || len(g.Nodes[0].Outputs) != 0 || g.Nodes[0].Op != "no outputs" || g.Nodes[2].Name != "node/label" || len(g.Nodes[2].Inputs) != 0 {
		t.Fatalf("nodes %+v", g.Nodes)
	}
	a := g.Nodes[1].Attrs
	want := ir.Attrs{
		"ints": ir.IntsAttr([]int{-1}), "fl": ir.FloatsAttr([]float32{1, 2}), "s": ir.StringAttr("tab\there"),
		"i": {Kind: ir.AttrInt, Int: math.MinInt64}, "e": ir.FloatAttr(float32(math.Inf(1))),
		"n": ir.FloatAttr(math.Float32frombits(0x7fa00001)),
	}
	if err := diffNodes(&ir.Node{Op: ir.MatMul, Inputs: []string{"x", "w"}, Outputs: []string{"y", "z"}, Attrs: want}, g.Nodes[1]); err != nil {
		t.Error(err)
	}
	if len(a) != len(want) {
		t.Errorf("attrs %v", a)
	}
	if diffStrings("outputs", g.Outputs, []string{"z", "x"}) != nil {
		t.Errorf("outputs %v", g.Outputs)
	}
	// Values: x's type was overridden to unknown shape, z's was removed, extra added, y never typed.
	if v := g.Values["x"]; v == nil || v.Shape != nil || v.DType != ir.Float32 {
		t.Errorf("Values[x] = %+v", v)
	}
	if g.Inputs[0].Shape == nil {
		t.Errorf("input x lost its shape")
	}
	if _, ok := g.Values["z"]; ok {
		t.Error("Values[z] survived `value %z: none`")
	}
	if _, ok := g.Values["y"]; ok {
		t.Error("untyped output y has a Values entry")
	}
	if v := g.Values["extra"]; v == nil || !v.Shape.Equal(ir.Shape{2}) || v.Name != "extra" {
		t.Errorf("Values[extra] = %+v", v)
	}
	if v := g.Values["имя 2"]; v == nil || v.DType != ir.Int64 {
		t.Errorf("Values[имя 2] = %+v", v)
	}
	if err := CheckRoundTrip(g); err != nil {
		t.Error(err)
	}
}

func TestFloatText(t *testing.T) {
	cases := map[uint32]string{
		0x00000000: "0.0", 0x80000000: "-0.0", 0x3f800000: "1.0", 0xbf800000: "-1.0",
		0x3dcccccd: "0.1", 0x00000001: "1e-45", 0x80000001: "-1e-45", 0x007fffff: "1.1754942e-38",
		0x7f7fffff: "3.4028235e+38", 0x7f800000: "inf", 0xff800000: "-inf", 0x7fc00000: "nan",
		0xffc00000: "-nan", 0x7f800001: "nan(0x7f800001)", 0xffffffff: "nan(0xffffffff)",
		0x4b800000: "1.6777216e+07", 0x49742400: "1e+06", 0x47c35000: "100000.0",
	}
	for bits, want := range cases {
		f := math.Float32frombits(bits)
		if got := string(AppendFloat32(nil, f)); got != want {
			t.Errorf("AppendFloat32(0x%08x) = %q, want %q", bits, got, want)
		}
		back, err := parseTextFloat32(want)
		if err != nil || math.Float32bits(back) != bits {
			t.Errorf("parse %q = 0x%08x, %v; want 0x%08x", want, math.Float32bits(back), err, bits)
		}
	}
	// Random bit patterns: every float32 (NaN payloads, denormals) survives, and always reads as a
	// float (a '.', an exponent, or inf/nan).
	r := rand.New(rand.NewPCG(1, 2))
	for range 200000 {
		bits := r.Uint32()
		s := string(AppendFloat32(nil, math.Float32frombits(bits)))
		if !strings.ContainsAny(s, ".ein") {
			t.Fatalf("%q (0x%08x) does not read as a float", s, bits)
		}
		end, isFloat, msg := scanTextNumber(s, 0)
		if end != len(s) || !isFloat || msg != "" {
			t.Fatalf("%q (0x%08x) does not scan as one float: %d %v %q", s, bits, end, isFloat, msg)
		}
		back, err := parseTextFloat32(s)
		if err != nil || math.Float32bits(back) != bits {
			t.Fatalf("%q: got 0x%08x (%v), want 0x%08x", s, math.Float32bits(back), err, bits)
		}
	}
	for _, bad := range []string{"1e39", "-1e39", "nan(0x3f800000)", "-nan(0x7fc00001)", "nan(0x1ffffffff)"} {
		if _, err := parseTextFloat32(bad); err == nil {
			t.Errorf("parseTextFloat32(%q) succeeded", bad)
		}
	}
}

// weirdNames are names that exercise quoting: keywords, numbers, sigils, spaces, escapes, control
// characters, unicode, invalid UTF-8, and the empty name.
var weirdNames = []string{
	"x", "Input3", "0", "123", "onnx::Conv_12", "/layer1/conv/Conv_output_0", "layer1.0.conv1.weight",
	"a-b", "", " ", "a b", "graph", "input", "const", "output", "value", "none", "elided", "inf", "nan",
	"ints", "floats", "f32", "%x", "@y", "#c", "[1]", "{a=1}", "x,y", "a:b", "a=b", "\"", "\\", "\\n",
	"line\nbreak", "tab\t", "nul\x00", "\x7f", "名前", "ünï", "emoji 🙂", "bad\xffutf8", "\xc3", "\u2028",
}

type graphGen struct{ r *rand.Rand }

func (gg graphGen) name() string {
	if gg.r.IntN(3) == 0 {
		return weirdNames[gg.r.IntN(len(weirdNames))]
	}
	b := make([]byte, 1+gg.r.IntN(6))
	for i := range b {
		switch gg.r.IntN(10) {
		case 0:
			b[i] = byte(gg.r.IntN(256)) // any byte, including invalid UTF-8
		case 1:
			b[i] = "./-_:%@\" \\#"[gg.r.IntN(11)]
		default:
			b[i] = "abcxyzABC019"[gg.r.IntN(12)]
		}
	}
	return string(b)
}

func (gg graphGen) float() float32 {
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 0.1, 1e-45, -1e-45, math.MaxFloat32,
		-math.MaxFloat32, math.SmallestNonzeroFloat32, float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00000), math.Float32frombits(0xffc00000), math.Float32frombits(0x7f800001),
		math.Float32frombits(0xff812345), math.Float32frombits(0x007fffff), 1 << 24, 16777217}
	switch gg.r.IntN(3) {
	case 0:
		return special[gg.r.IntN(len(special))]
	case 1:
		return float32(gg.r.NormFloat64())
	}
	return math.Float32frombits(gg.r.Uint32())
}

func (gg graphGen) shape(unknownOK bool) ir.Shape {
	if unknownOK && gg.r.IntN(6) == 0 {
		return nil
	}
	s := ir.Shape{}
	for range gg.r.IntN(4) {
		d := 1 + gg.r.IntN(3)
		switch gg.r.IntN(12) {
		case 0:
			d = 0
		case 1:
			if unknownOK {
				d = -1 // Value shapes are printed as they are, even when invalid
			}
		}
		s = append(s, d)
	}
	return s
}

func (gg graphGen) dtype() ir.DType { return ir.DType(gg.r.IntN(2)) }

func (gg graphGen) attr() ir.Attr {
	switch gg.r.IntN(5) {
	case 0:
		ints := []int64{0, 1, -1, math.MaxInt64, math.MinInt64, gg.r.Int64() - gg.r.Int64()}
		return ir.Attr{Kind: ir.AttrInt, Int: ints[gg.r.IntN(len(ints))]}
	case 1:
		return ir.FloatAttr(gg.float())
	case 2:
		return ir.StringAttr(gg.name())
	case 3:
		v := make([]int64, gg.r.IntN(4))
		for i := range v {
			v[i] = gg.r.Int64() >> gg.r.IntN(64)
			if gg.r.IntN(2) == 0 {
				v[i] = -v[i]
			}
		}
		return ir.Attr{Kind: ir.AttrInts, Ints: v}
	}
	v := make([]float32, gg.r.IntN(4))
	for i := range v {
		v[i] = gg.float()
	}
	return ir.Attr{Kind: ir.AttrFloats, Floats: v}
}

// graph returns a random graph. It is structurally arbitrary (names need not be defined, Values
// may disagree with inputs): the text form must carry any graph, not only valid programs.
func (gg graphGen) graph() *ir.Graph {
	r := gg.r
	g := ir.NewGraph(gg.name())
	var names []string
	pick := func() string {
		if len(names) == 0 || r.IntN(5) == 0 {
			return gg.name()
		}
		return names[r.IntN(len(names))]
	}
	for range r.IntN(4) {
		v := ir.Value{Name: gg.name(), DType: gg.dtype(), Shape: gg.shape(true)}
		g.Inputs = append(g.Inputs, v)
		names = append(names, v.Name)
		switch r.IntN(6) {
		case 0: // no Values entry
		case 1: // a different one
			g.Values[v.Name] = &ir.Value{Name: v.Name, DType: gg.dtype(), Shape: gg.shape(true)}
		default:
			g.Values[v.Name] = &ir.Value{Name: v.Name, DType: v.DType, Shape: v.Shape.Clone()}
		}
	}
	for range r.IntN(4) {
		s := gg.shape(false)
		if r.IntN(8) == 0 {
			s = nil // a scalar made by NewTensor(Shape{})
		}
		c := &ir.Tensor{Shape: s, Data: make([]float32, s.Size())}
		for i := range c.Data {
			c.Data[i] = gg.float()
		}
		name := gg.name()
		g.Consts[name] = c
		names = append(names, name)
	}
	ops := ir.AllOps()
	for range r.IntN(7) {
		n := &ir.Node{Op: ops[r.IntN(len(ops))]}
		if r.IntN(5) == 0 {
			n.Op = ir.Op(gg.name())
		}
		if r.IntN(2) == 0 {
			n.Name = gg.name()
		}
		for range r.IntN(4) {
			n.Inputs = append(n.Inputs, pick())
		}
		for range r.IntN(3) + map[bool]int{true: 0, false: 1}[r.IntN(8) == 0] {
			o := gg.name()
			n.Outputs = append(n.Outputs, o)
			switch r.IntN(5) {
			case 0:
			default:
				g.Values[o] = &ir.Value{Name: o, DType: gg.dtype(), Shape: gg.shape(true)}
			}
		}
		names = append(names, n.Outputs...)
		if k := r.IntN(6); k > 0 {
			n.Attrs = ir.Attrs{}
			for range k {
				n.Attrs[gg.name()] = gg.attr()
			}
		}
		g.Nodes = append(g.Nodes, n)
	}
	for range r.IntN(3) {
		g.Outputs = append(g.Outputs, pick())
	}
	for range r.IntN(2) { // Values entries that belong to nothing
		n := gg.name()
		g.Values[n] = &ir.Value{Name: n, DType: gg.dtype(), Shape: gg.shape(true)}
	}
	return g
}

func TestTextRoundTripRandom(t *testing.T) {
	gg := graphGen{rand.New(rand.NewPCG(7, 11))}
	for i := range 500 {
		g := gg.graph()
		if err := CheckRoundTrip(g); err != nil {
			t.Fatalf("graph %d: %v\n%s", i, err, Format(g))
		}
	}
}

func TestCompareGraphsFindsDifferences(t *testing.T) {
	mutations := map[string]func(g *ir.Graph){
		"name":        func(g *ir.Graph) { g.Name = "other" },
		"input shape": func(g *ir.Graph) { g.Inputs[0].Shape = ir.Shape{1, 1, 28, 27} },
		"input nil":   func(g *ir.Graph) { g.Inputs[0].Shape = nil },
		"const bit":   func(g *ir.Graph) { g.Consts["onnx::B0"].Data[1] = 0 },
		"const shape": func(g *ir.Graph) { g.Consts["W0"].Shape = ir.Shape{4} },
		"attr kind":   func(g *ir.Graph) { g.Nodes[0].Attrs["group"] = ir.FloatAttr(1) },
		"attr value":  func(g *ir.Graph) { g.Nodes[4].Attrs["g"] = ir.FloatsAttr([]float32{0.5, 2.0000002}) },
		"node name":   func(g *ir.Graph) { g.Nodes[1].Name = "r" },
		"node input":  func(g *ir.Graph) { g.Nodes[0].Inputs[2] = "B0" },
		"op":          func(g *ir.Graph) { g.Nodes[1].Op = ir.Sigmoid },
		"output":      func(g *ir.Graph) { g.Outputs = append(g.Outputs, "c1") },
		"value":       func(g *ir.Graph) { g.Values["p"].Shape = ir.Shape{} },
		"value gone":  func(g *ir.Graph) { delete(g.Values, "c1") },
		"value dtype": func(g *ir.Graph) { g.Values["c1"].DType = ir.Int64 },
	}
	for name, mutate := range mutations {
		g := mnistGraph()
		mutate(g)
		if err := Compare(mnistGraph(), g); err == nil {
			t.Errorf("%s: Compare found no difference", name)
		}
		if Format(g) == mnistText {
			t.Errorf("%s: the text does not show the difference", name)
		}
		if err := CheckRoundTrip(g); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// Equivalences the text form does not preserve are not differences.
	g := mnistGraph()
	g.Consts["scalar"].Shape = nil
	g.Nodes[1].Attrs = ir.Attrs{}
	g.Nodes[0].Inputs = append([]string{}, g.Nodes[0].Inputs...)
	if err := Compare(mnistGraph(), g); err != nil {
		t.Error(err)
	}
}

func TestWriteTextRejects(t *testing.T) {
	cases := map[string]func(g *ir.Graph){
		"nil node":          func(g *ir.Graph) { g.Nodes[1] = nil },
		"nil const":         func(g *ir.Graph) { g.Consts["W0"] = nil },
		"short const":       func(g *ir.Graph) { g.Consts["W0"].Data = g.Consts["W0"].Data[:3] },
		"negative dim":      func(g *ir.Graph) { g.Consts["W0"].Shape = ir.Shape{-1, -4} },
		"huge shape":        func(g *ir.Graph) { g.Consts["W0"].Shape = ir.Shape{1 << 40, 1 << 40} },
		"misfiled value":    func(g *ir.Graph) { g.Values["c1"] = &ir.Value{Name: "c2"} },
		"nil value":         func(g *ir.Graph) { g.Values["c1"] = nil },
		"bad dtype":         func(g *ir.Graph) { g.Values["c1"].DType = 9 },
		"bad input dtype":   func(g *ir.Graph) { g.Inputs[0].DType = 9 },
		"bad attr kind":     func(g *ir.Graph) { g.Nodes[0].Attrs["x"] = ir.Attr{} },
		"bad attr kind big": func(g *ir.Graph) { g.Nodes[0].Attrs["x"] = ir.Attr{Kind: 6} },
	}
	for name, mutate := range cases {
		g := mnistGraph()
		mutate(g)
		var b bytes.Buffer
		err := Write(&b, g, Options{})
		if err == nil {
			t.Errorf("%s: Write succeeded", name)
			continue
		}
		if b.Len() != 0 {
			t.Errorf("%s: Write wrote output before failing", name)
		}
		if txt := Format(g); !strings.HasPrefix(txt, "# cannot print HLIL graph: ") {
			t.Errorf("%s: Text() = %q", name, txt)
		} else if _, err := Parse(txt); err == nil {
			t.Errorf("%s: the error text parses", name)
		}
	}
	if err := Write(&bytes.Buffer{}, nil, Options{}); err == nil {
		t.Error("Write(nil graph) succeeded")
	}
	if err := Write(failingWriter{}, mnistGraph(), Options{}); err == nil {
		t.Error("a failing writer was not reported")
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestElidedData(t *testing.T) {
	g := mnistGraph()
	big := &ir.Tensor{Shape: ir.Shape{3, 100}, Data: make([]float32, 300)}
	for i := range big.Data {
		big.Data[i] = float32(i) / 3
	}
	g.Consts["big"] = big
	var b bytes.Buffer
	if err := Write(&b, g, Options{ElideData: true, KeepElems: 2}); err != nil {
		t.Fatal(err)
	}
	// The digest is SHA-256 of the little-endian float32 bytes, computed independently here.
	var raw bytes.Buffer
	if err := binary.Write(&raw, binary.LittleEndian, big.Data); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(raw.Bytes())
	digest := hex.EncodeToString(sum[:4])
	text := b.String()
	for _, want := range []string{
		`const %big: f32[3,100] = elided "sha256:` + digest + `"`,
		`const %W0: f32[2,1,1,2] = elided "sha256:`,
		`const %"onnx::B0": f32[2] = [0.0, -0.0]`, // small constants are kept
		`const %scalar: f32[] = [3.0]`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("elided text lacks %q:\n%s", want, text)
		}
	}
	if DataDigest(big.Data) != digest {
		t.Errorf("DataDigest = %s, want %s", DataDigest(big.Data), digest)
	}
	_, err := Parse(text)
	var te *Error
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "elided") || te.Line != 4 {
		t.Fatalf("parsing elided text: %v; want a Error on line 4 about elided data", err)
	}
	// Without ElideData, or with a large KeepElems, everything is printed.
	b.Reset()
	if err := Write(&b, g, Options{ElideData: true, KeepElems: 300}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "elided") {
		t.Error("KeepElems 300 still elided a 300-element constant")
	}
	if err := CheckRoundTrip(g); err != nil {
		t.Error(err)
	}
}

func TestParseErrors(t *testing.T) {
	head := "graph \"g\" {\n"
	cases := []struct{ src, want string }{
		{"", `1:1: unexpected end of input, expected "graph"`},
		{"graf \"g\" {}", `1:1: unexpected "graf", expected "graph"`},
		{"graph g {}", "1:7: unexpected \"g\", expected a quoted string"},
		{"graph \"g\" {\n", `2:1: unexpected end of input, expected "}"`},
		{"graph \"g\" {\n}\nmore", `3:1: unexpected "more" after the end of the graph`},
		{head + "  inptu %x: f32[1]\n}", `2:3: expected a statement (input, const, output, value, or a node %out = Op(%in)), found "inptu"`},
		{head + "  input %x f32[1]\n}", `2:12: unexpected "f32", expected ":"`},
		{head + "  input %x: f32[1] extra\n}", `2:20: unexpected "extra", expected the end of the line`},
		{head + "  input %x: f33[1]\n}", `2:13: unknown element type "f33" (want f32 or i64)`},
		{head + "  input %x: f32[1, 2.5]\n}", `2:20: dimension 2.5 is not an integer`},
		{head + "  input %x: f32[1,]\n}", `2:19: expected a number after ',' in list`},
		{head + "  input %x: f32[1 2]\n}", `2:19: expected ',' or ']' in list, found "2"`},
		{head + "  input %x: f32[99999999999999999999]\n}", `2:17: dimension 99999999999999999999 is out of range`},
		{head + "  input %x: f32[1\n}", `2:16: list opened here is never closed with ']'`},
		{head + "  input %: f32[1]\n}", `2:9: expected a name or a quoted string after '%'`},
		{head + "  input %\"x: f32[1]\n}", `2:9: string is not closed before the end of the line`},
		{head + "  input %\"a\\qb\": f32[1]\n}", `2:9: invalid escape in string "a\qb"`},
		{head + "  input %x: f32[1] ; \n}", `2:20: unexpected character ";"`},
		{head + "  const %c: f32[2] = [1, 2, 3]\n}", `2:29: constant %c: more than the 2 values of shape [2]`},
		{head + "  const %c: f32[3] = [1, 2]\n}", `2:22: constant %c: 2 values for shape [3] (3 elements)`},
		{head + "  const %c: f32[1000] = [1]\n}", `2:25: constant %c: shape [1000] needs 1000 values, the list has fewer`},
		{head + "  const %c: f32[2] = [1,\n    2x]\n}", `3:5: malformed number "2x"`},
		{head + "  const %c: f32[1] = [1e99]\n}", `2:23: 1e99 is out of the float32 range`},
		{head + "  const %c: f32[1] = [nan(0x1)]\n}", `2:23: nan(0x1) is not a float32 NaN bit pattern`},
		{head + "  const %c: f32[1] = [nan(1)]\n}", `2:23: malformed NaN`},
		{head + "  const %c: i64[1] = [1]\n}", `2:13: constant %c has element type i64; constants are f32`},
		{head + "  const %c: f32[*] = [1]\n}", `2:16: constant %c needs a known shape`},
		{head + "  const %c: f32[-1] = []\n}", `2:16: constant %c: negative dimension in shape [-1]`},
		{head + "  const %c: f32[1] = [1]\n  const %c: f32[1] = [2]\n}", `3:9: duplicate constant %c`},
		{head + "  const %c: f32[1] = 1\n}", `2:22: unexpected "1", expected a [list] of values`},
		{head + "  const %c: f32[1] = elided \"sha256:00000000\"\n}", `2:29: constant %c has elided data`},
		{head + "  %y = Relu(%x\n}", `2:15: unexpected end of line, expected ")"`},
		{head + "  %y = (%x)\n}", `2:8: unexpected "(", expected a name (an identifier or a quoted string)`},
		{head + "  %y: = Relu(%x)\n}", `2:7: unexpected "=", expected a type such as f32[1,3]`},
		{head + "  %y = Relu(%x) {a=1, a=2}\n}", `2:23: duplicate attribute a`},
		{head + "  %y = Relu(%x) {a=}\n}", `2:20: unexpected "}", expected a [list]`},
		{head + "  %y = Relu(%x) {a=[]}\n}", `2:20: empty list needs a kind: write ints[] or floats[]`},
		{head + "  %y = Relu(%x) {a=[1, 2.5]}\n}", `2:24: float 2.5 in a list of ints (write floats[...] for floats)`},
		{head + "  %y = Relu(%x) {a=ints[2.5]}\n}", `2:25: float 2.5 in a list of ints`},
		{head + "  %y = Relu(%x) {a=strs[]}\n}", `2:20: unknown list kind "strs" (want ints or floats)`},
		{head + "  %y = Relu(%x) {a=9223372036854775808}\n}", `2:20: integer 9223372036854775808 is out of the int64 range`},
		{head + "  %y = Relu(%x) {a=1.5e}\n}", `2:20: malformed number "1.5e": exponent has no digits`},
		{head + "  %y = Relu(%x) @a @b\n}", `2:20: unexpected "@b", expected the end of the line`},
		{head + "  value %y: none\n  value %y: f32[1]\n}", `3:9: duplicate value statement for %y`},
		{head + "  value %y: nonee\n}", `2:18: unexpected end of line, expected a [list]`},
		{head + "  %y = Relu(%x) {a=\"\n\"}\n}", `2:20: string is not closed before the end of the line`},
	}
	for _, c := range cases {
		_, err := Parse(c.src)
		if err == nil {
			t.Errorf("%q: parsed without error, want %q", c.src, c.want)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %q\nwant %q", c.src, err.Error(), c.want)
		}
		var te *Error
		if !errors.As(err, &te) || te.Line == 0 || te.Column == 0 {
			t.Errorf("%q: error %v is not a positioned *Error", c.src, err)
		}
	}
}

func TestParseConcurrent(t *testing.T) {
	// The parser is built once and shared; run under -race this checks that sharing is safe.
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 5 {
				if _, err := Parse(mnistText); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
}

// bigConstGraph is a graph with one constant of n elements.
func bigConstGraph(n int) *ir.Graph {
	g := ir.NewGraph("big")
	r := rand.New(rand.NewPCG(3, 4))
	c := &ir.Tensor{Shape: ir.Shape{n}, Data: make([]float32, n)}
	for i := range c.Data {
		c.Data[i] = float32(r.NormFloat64() * 0.05)
	}
	g.Consts["w"] = c
	g.Inputs = []ir.Value{{Name: "x", DType: ir.Float32, Shape: ir.Shape{1, n}}}
	g.Values["x"] = &ir.Value{Name: "x", DType: ir.Float32, Shape: ir.Shape{1, n}}
	g.Nodes = []*ir.Node{{Op: ir.Mul, Inputs: []string{"x", "w"}, Outputs: []string{"y"}}}
	g.Outputs = []string{"y"}
	return g
}

func TestTextLargeConst(t *testing.T) {
	g := bigConstGraph(100000)
	if err := CheckRoundTrip(g); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(Format(g), "\n") {
		if len(line) > textLineWidth {
			t.Fatalf("line %d is %d columns wide", i+1, len(line))
		}
	}
}

// chainGraph is a graph of n small nodes, like a deep CNN's structure.
func chainGraph(n int) *ir.Graph {
	g := ir.NewGraph("chain")
	g.Inputs = []ir.Value{{Name: "x0", DType: ir.Float32, Shape: ir.Shape{1, 8, 32, 32}}}
	g.Values["x0"] = &ir.Value{Name: "x0", DType: ir.Float32, Shape: ir.Shape{1, 8, 32, 32}}
	prev := "x0"
	for i := range n {
		out := "/block" + string(rune('a'+i%26)) + "/conv/Conv_output_" + strings.Repeat("0", i%3)
		out += string(rune('0' + i%10))
		g.Nodes = append(g.Nodes, &ir.Node{Name: "/block/Conv", Op: ir.Conv, Inputs: []string{prev, "w", "b"}, Outputs: []string{out},
			Attrs: ir.Attrs{"group": ir.IntAttr(1), "kernel_shape": ir.IntsAttr([]int{3, 3}), "strides": ir.IntsAttr([]int{1, 1}),
				"pads": ir.IntsAttr([]int{1, 1, 1, 1}), "dilations": ir.IntsAttr([]int{1, 1})}})
		g.Values[out] = &ir.Value{Name: out, DType: ir.Float32, Shape: ir.Shape{1, 8, 32, 32}}
		prev = out
	}
	g.Consts["w"] = &ir.Tensor{Shape: ir.Shape{8, 8, 3, 3}, Data: make([]float32, 8*8*9)}
	g.Consts["b"] = &ir.Tensor{Shape: ir.Shape{8}, Data: make([]float32, 8)}
	g.Outputs = []string{prev}
	return g
}

func BenchmarkWriteTextConst1M(b *testing.B) {
	g := bigConstGraph(1 << 20)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := Write(&buf, g, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(buf.Len()))
}

func BenchmarkParseTextConst1M(b *testing.B) {
	text := Format(bigConstGraph(1 << 20))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseText200Nodes(b *testing.B) {
	text := Format(chainGraph(200))
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteText200Nodes(b *testing.B) {
	g := chainGraph(200)
	var buf bytes.Buffer
	for b.Loop() {
		buf.Reset()
		if err := Write(&buf, g, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
