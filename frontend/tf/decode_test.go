package tf

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

func TestDecodeNodeAndAttrs(t *testing.T) {
	b := graphBytes(
		placeholder("x", -1, 4),
		node("y", "Foo", []string{"x", "x:1", "^init"},
			aS("s", "SAME"), aI("i", -3), aF("f", 0.5), aB("b", true), aType("t", DTHalf),
			aInts("l", 1, -2, 3), aShape("sh", 2, 3)),
	)
	g, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(g.Nodes) != 2 || g.Producer != 27 {
		t.Fatalf("decoded %d nodes, producer %d", len(g.Nodes), g.Producer)
	}
	y := g.Nodes[1]
	if y.Name != "y" || y.Op != "Foo" || strings.Join(y.Inputs, ",") != "x,x:1,^init" {
		t.Fatalf("node %+v", y)
	}
	a := y.Attr
	if a["s"].S != "SAME" || a["i"].I != -3 || a["f"].F != 0.5 || !a["b"].B || a["t"].Type != DTHalf {
		t.Errorf("scalar attrs %+v %+v %+v %+v %+v", a["s"], a["i"], a["f"], a["b"], a["t"])
	}
	if l := a["l"].List.I; len(l) != 3 || l[1] != -2 {
		t.Errorf("list attr %v", l)
	}
	if s := a["sh"].Shape; !s.Known() || len(s.Dims) != 2 || s.Dims[1] != 3 {
		t.Errorf("shape attr %+v", s)
	}
	if s := g.Nodes[0].Attr["shape"].Shape; s.Known() || s.Dims[0] != -1 {
		t.Errorf("placeholder shape %+v should have an unknown first dimension", s)
	}
	for _, c := range []struct {
		in      string
		node    string
		k       int
		control bool
	}{{"a/b", "a/b", 0, false}, {"a/b:2", "a/b", 2, false}, {"^a", "a", 0, true}} {
		n, k, ctl, err := parseInput(c.in)
		if err != nil || n != c.node || k != c.k || ctl != c.control {
			t.Errorf("parseInput(%q) = %q %d %v %v", c.in, n, k, ctl, err)
		}
	}
	for _, bad := range []string{"", "^", "a:x", ":1", "a:-1"} {
		if _, _, _, err := parseInput(bad); err == nil {
			t.Errorf("parseInput(%q) accepted", bad)
		}
	}
}

func TestDecodeTensor(t *testing.T) {
	check := func(name string, b pb, want []float64) {
		t.Helper()
		tn, err := DecodeTensor(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := tn.Float64s()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %v, want %v", name, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: %v, want %v", name, got, want)
			}
		}
	}
	check("float_val", tensorFloats([]int64{2, 2}, 1, 2, 3, 4), []float64{1, 2, 3, 4})
	check("tensor_content", tensorContent([]int64{3}, -1, 0.5, 2), []float64{-1, 0.5, 2})
	check("one value fills", tensorFloats([]int64{2, 3}, 7), []float64{7, 7, 7, 7, 7, 7})
	check("short list repeats its last value", tensorInts([]int64{4}, 1, 2), []float64{1, 2, 2, 2})
	check("no values is zeros", msg(fVarint(1, uint64(DTFloat)), fBytes(2, shapeBytes(2))), []float64{0, 0})
	check("scalar", tensorInts(nil, 6), []float64{6})
	var packed pb
	for _, v := range []int64{-5, 1 << 40} {
		packed = protowire.AppendVarint(packed, uint64(v))
	}
	check("int64_val", msg(fVarint(1, uint64(DTInt64)), fBytes(2, shapeBytes(2)), fBytes(10, packed)), []float64{-5, 1 << 40})
	check("bool_val", msg(fVarint(1, uint64(DTBool)), fBytes(2, shapeBytes(3)), fVarint(11, 1), fVarint(11, 0), fVarint(11, 1)), []float64{1, 0, 1})
	// half_val holds binary16 bits: 0x3c00 = 1, 0xc000 = -2, 0x0001 = 2^-24.
	check("half_val", msg(fVarint(1, uint64(DTHalf)), fBytes(2, shapeBytes(3)), fVarint(13, 0x3c00), fVarint(13, 0xc000), fVarint(13, 1)),
		[]float64{1, -2, math.Ldexp(1, -24)})
	check("double_val", msg(fVarint(1, uint64(DTDouble)), fBytes(2, shapeBytes(1)),
		fBytes(6, protowire.AppendFixed64(nil, math.Float64bits(0.1)))), []float64{0.1})
	raw16 := []byte{0x00, 0x3c, 0x00, 0x7c} // half 1, +Inf
	tn, err := DecodeTensor(msg(fVarint(1, uint64(DTHalf)), fBytes(2, shapeBytes(2)), fBytes(4, raw16)))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := tn.Float64s(); v[0] != 1 || !math.IsInf(v[1], 1) {
		t.Errorf("raw half %v", v)
	}

	bad := map[string]pb{
		"content too short": msg(fVarint(1, uint64(DTFloat)), fBytes(2, shapeBytes(2)), fBytes(4, []byte{1, 2, 3})),
		"too many values":   tensorFloats([]int64{1}, 1, 2),
		"huge shape":        msg(fVarint(1, uint64(DTFloat)), fBytes(2, shapeBytes(1<<20, 1<<20)), fBytes(5, protowire.AppendFixed32(nil, 0))),
		"unknown dim":       msg(fVarint(1, uint64(DTFloat)), fBytes(2, shapeBytes(-1))),
		"string tensor":     msg(fVarint(1, uint64(DTString)), fBytes(2, shapeBytes(1)), fString(8, "x")),
	}
	for name, b := range bad {
		tn, err := DecodeTensor(b)
		if err == nil {
			_, err = tn.Float64s()
		}
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestDecodeMalformed(t *testing.T) {
	good := graphBytes(placeholder("x", 1, 4), constF("w", []int64{4, 2}, 1, 2, 3, 4, 5, 6, 7, 8),
		node("y", "MatMul", []string{"x", "w"}))
	if _, err := Decode(good); err != nil {
		t.Fatal(err)
	}
	// Every truncation is either a clean error or a shorter valid message; never a panic.
	for i := 0; i < len(good); i++ {
		_, _ = Decode(good[:i])
	}
	for name, b := range map[string]pb{
		"bad tag":         {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff},
		"length overflow": {0x0a, 0xff, 0xff, 0x03},
		"node wire type":  fVarint(1, 3),
		"node without op": fBytes(1, fString(1, "a")),
		"nameless node":   fBytes(1, fString(2, "Relu")),
		"attr float type": fBytes(1, node("a", "Relu", nil, attrEntry("f", fVarint(4, 1)))),
		"bad packed ints": fBytes(1, node("a", "Relu", nil, attrEntry("l", fBytes(1, fBytes(3, []byte{0xff}))))),
		"bad tensor attr": fBytes(1, node("a", "Const", nil, aTensor("value", fBytes(4, nil)[:1]))),
		"negative dim -2": fBytes(1, node("a", "P", nil, aShape("shape", -2))),
	} {
		if _, err := Decode(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestLooksLikeGraphDef tells every shared TF graph from every shared ONNX model.
func TestLooksLikeGraphDef(t *testing.T) {
	root := testenv.SharedTestdata(t)
	var tfFiles, onnxFiles []string
	tfFiles, _ = filepath.Glob(filepath.Join(root, "tf", "*", "*.pb"))
	for _, pat := range []string{"models/*/*.onnx", "models/*/*/*.onnx", "onnx-node/*/*.onnx", "onnx-pytorch/*/*.onnx"} {
		m, _ := filepath.Glob(filepath.Join(root, pat))
		onnxFiles = append(onnxFiles, m...)
	}
	if len(tfFiles) < 8 || len(onnxFiles) == 0 {
		t.Fatalf("found %d TF graphs and %d ONNX models", len(tfFiles), len(onnxFiles))
	}
	for _, f := range tfFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !LooksLikeGraphDef(b) {
			t.Errorf("%s: not recognised as a GraphDef", f)
		}
	}
	for _, f := range onnxFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if LooksLikeGraphDef(b) {
			t.Errorf("%s: ONNX model taken for a GraphDef", f)
		}
	}
	t.Logf("%d GraphDefs and %d ONNX models told apart", len(tfFiles), len(onnxFiles))
	for name, b := range map[string][]byte{"empty": nil, "text": []byte("node { name: \"x\" op: \"Relu\" }"),
		"saved model": msg(fVarint(1, 1), fBytes(2, fBytes(2, graphBytes(placeholder("x", 1)))))} {
		if LooksLikeGraphDef(b) {
			t.Errorf("%s taken for a GraphDef", name)
		}
	}
}

func TestSavedModelRefused(t *testing.T) {
	dir := t.TempDir()
	sm := msg(fVarint(1, 1), fBytes(2, fBytes(2, graphBytes(placeholder("x", 1)))))
	if err := os.WriteFile(filepath.Join(dir, "saved_model.pb"), sm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "variables"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{dir, filepath.Join(dir, "saved_model.pb")} {
		_, err := Load(p, Options{})
		if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "SavedModel") || !strings.Contains(err.Error(), "freeze") {
			t.Errorf("Load(%s): %v", p, err)
		}
	}
	// The same bytes under another name are recognised too.
	other := filepath.Join(dir, "model.pb")
	if err := os.WriteFile(other, sm, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(other, Options{}); err == nil || !strings.Contains(err.Error(), "SavedModel") {
		t.Errorf("Load(%s): %v", other, err)
	}
}

func TestParseInput(t *testing.T) {
	for spec, want := range map[string]Input{
		"x":              {Name: "x"},
		"x:1":            {Name: "x:1"},
		"Mfcc:[1,49,10]": {Name: "Mfcc", Shape: []int{1, 49, 10}},
		"a/b:-1,784":     {Name: "a/b", Shape: []int{-1, 784}},
		"a:0:[784]":      {Name: "a:0", Shape: []int{784}},
		"s:[]":           {Name: "s", Shape: []int{}},
	} {
		got, err := ParseInput(spec)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		if got.Name != want.Name || len(got.Shape) != len(want.Shape) || (got.Shape == nil) != (want.Shape == nil) {
			t.Errorf("%q: %+v, want %+v", spec, got, want)
			continue
		}
		for i := range got.Shape {
			if got.Shape[i] != want.Shape[i] {
				t.Errorf("%q: %+v, want %+v", spec, got, want)
			}
		}
	}
	for _, bad := range []string{"", "x:abc", ":[1]", "x:[1,a]", "x:[-2]"} {
		if _, err := ParseInput(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
