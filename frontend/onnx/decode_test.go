package onnx

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func rawTensor(dt DataType, dims []int64, raw []byte) pb {
	return cat(dimsField(dims), fInt(tensorDataType, int64(dt)), fBytes(tensorRawData, raw))
}

func TestDecodeTensorTypes(t *testing.T) {
	le16 := func(vs ...uint16) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
		return b
	}
	le32 := func(vs ...uint32) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint32(b, v)
		}
		return b
	}
	le64 := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.LittleEndian.AppendUint64(b, v)
		}
		return b
	}
	neg := func(v int64) uint64 { return uint64(v) }
	cases := []struct {
		name   string
		enc    pb
		floats []float32 // nil when Float32s must fail
		ints   []int64   // nil when Int64s must fail
	}{
		{"float raw", tensorF("x", []int64{3}, []float32{1.5, -2, 0}), []float32{1.5, -2, 0}, nil},
		{"float typed", tensorFTyped("x", []int64{2}, []float32{3, 4}), []float32{3, 4}, nil},
		{"float typed unpacked", cat(dimsField([]int64{2}), fInt(tensorDataType, 1), fFloat(tensorFloatData, 7), fFloat(tensorFloatData, 8)), []float32{7, 8}, nil},
		{"float scalar", tensorF("s", nil, []float32{42}), []float32{42}, nil},
		{"double raw", rawTensor(Double, []int64{2}, le64(math.Float64bits(0.25), math.Float64bits(-8))), []float32{0.25, -8}, nil},
		{"double typed", cat(dimsField([]int64{1}), fInt(tensorDataType, int64(Double)), fBytes(tensorDoubleData, le64(math.Float64bits(2.5)))), []float32{2.5}, nil},
		{"float16 raw", rawTensor(Float16, []int64{4}, le16(0x3c00, 0xc000, 0x0001, 0x7c00)), []float32{1, -2, float32(math.Ldexp(1, -24)), float32(math.Inf(1))}, nil},
		{"float16 typed", cat(dimsField([]int64{1}), fInt(tensorDataType, int64(Float16)), packedInts(tensorInt32Data, []int64{0x3800})), []float32{0.5}, nil},
		{"bfloat16 raw", rawTensor(BFloat16, []int64{2}, le16(0x3f80, 0xc040)), []float32{1, -3}, nil},
		{"int64 typed", tensorI64("i", []int64{3}, []int64{-1, 0, 1 << 40}), []float32{-1, 0, 1 << 40}, []int64{-1, 0, 1 << 40}},
		{"int64 raw", rawTensor(Int64, []int64{2}, le64(neg(-5), 9)), []float32{-5, 9}, []int64{-5, 9}},
		{"int32 raw", rawTensor(Int32, []int64{2}, le32(uint32(0xffffffff), 7)), []float32{-1, 7}, []int64{-1, 7}},
		{"int32 typed", cat(dimsField([]int64{2}), fInt(tensorDataType, int64(Int32)), packedInts(tensorInt32Data, []int64{-3, 4})), []float32{-3, 4}, []int64{-3, 4}},
		{"int8 raw", rawTensor(Int8, []int64{3}, []byte{0xff, 0x80, 5}), []float32{-1, -128, 5}, []int64{-1, -128, 5}},
		{"int8 typed", cat(dimsField([]int64{1}), fInt(tensorDataType, int64(Int8)), packedInts(tensorInt32Data, []int64{-7})), []float32{-7}, []int64{-7}},
		{"uint8 raw", rawTensor(Uint8, []int64{2}, []byte{0xff, 1}), []float32{255, 1}, []int64{255, 1}},
		{"uint8 typed", cat(dimsField([]int64{1}), fInt(tensorDataType, int64(Uint8)), packedInts(tensorInt32Data, []int64{200})), []float32{200}, []int64{200}},
		{"bool raw", rawTensor(Bool, []int64{3}, []byte{0, 1, 2}), []float32{0, 1, 1}, []int64{0, 1, 1}},
		{"bool typed", cat(dimsField([]int64{2}), fInt(tensorDataType, int64(Bool)), packedInts(tensorInt32Data, []int64{1, 0})), []float32{1, 0}, []int64{1, 0}},
		{"int16 raw", rawTensor(Int16, []int64{1}, le16(0x8000)), []float32{-32768}, []int64{-32768}},
		{"uint16 raw", rawTensor(Uint16, []int64{1}, le16(0x8000)), []float32{32768}, []int64{32768}},
		{"uint32 typed", cat(dimsField([]int64{1}), fInt(tensorDataType, int64(Uint32)), packedInts(tensorUint64Data, []int64{4000000000})), []float32{4e9}, []int64{4000000000}},
		{"uint64 raw", rawTensor(Uint64, []int64{1}, le64(3)), []float32{3}, []int64{3}},
		{"zero-size float", cat(dimsField([]int64{0, 3}), fInt(tensorDataType, 1)), []float32{}, nil},
		{"zero-size raw int64", rawTensor(Int64, []int64{2, 0}, nil), []float32{}, []int64{}},
		{"string", cat(dimsField([]int64{1}), fInt(tensorDataType, int64(String)), fString(tensorStringData, "hi")), nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tn, err := DecodeTensor(c.enc)
			if err != nil {
				t.Fatal(err)
			}
			f, err := tn.Float32s()
			if c.floats == nil {
				if err == nil {
					t.Errorf("Float32s succeeded: %v", f)
				}
			} else if err != nil {
				t.Errorf("Float32s: %v", err)
			} else if !reflect.DeepEqual(f, c.floats) {
				t.Errorf("Float32s = %v, want %v", f, c.floats)
			}
			i, err := tn.Int64s()
			if c.ints == nil {
				if err == nil {
					t.Errorf("Int64s succeeded: %v", i)
				}
			} else if err != nil {
				t.Errorf("Int64s: %v", err)
			} else if !reflect.DeepEqual(i, c.ints) {
				t.Errorf("Int64s = %v, want %v", i, c.ints)
			}
		})
	}
}

func TestDecodeTensorErrors(t *testing.T) {
	cases := []struct {
		name string
		enc  pb
		want string
	}{
		{"raw too short", rawTensor(Float, []int64{3}, make([]byte, 8)), "raw_data has 8 bytes, want 12"},
		{"raw too long", rawTensor(Int8, []int64{1}, make([]byte, 2)), "raw_data has 2 bytes"},
		{"typed count", tensorFTyped("x", []int64{3}, []float32{1}), "holds 1 float32 values"},
		{"negative dim", tensorF("x", []int64{-1}, nil), "negative dimension"},
		{"too many elements", cat(dimsField([]int64{1 << 20, 1 << 20}), fInt(tensorDataType, 1)), "more than"},
		{"packed floats misaligned", cat(fInt(tensorDataType, 1), fBytes(tensorFloatData, []byte{1, 2, 3})), "not a multiple of 4"},
		{"wrong wire type", cat(fString(tensorDataType, "float")), "wire type"},
		{"segment", cat(fBytes(tensorSegment, nil)), "segmented"},
		{"undefined type", cat(dimsField([]int64{2})), "undefined"},
		{"bad location", cat(fInt(tensorDataType, 1), fInt(tensorDataLocation, 7)), "data_location"},
		{"truncated", tensorF("x", []int64{4}, []float32{1, 2, 3, 4})[:10], "field 9: unexpected EOF"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeTensor(c.enc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestExternalData(t *testing.T) {
	dir := t.TempDir()
	payload := make([]byte, 0, 24)
	payload = append(payload, 9, 9, 9, 9) // 4 bytes of padding before the tensor
	for _, v := range []float32{1, 2, 3, 4, 5} {
		payload = binary.LittleEndian.AppendUint32(payload, math.Float32bits(v))
	}
	if err := os.MkdirAll(filepath.Join(dir, "w"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "w", "data.bin"), payload, 0o644); err != nil {
		t.Fatal(err)
	}
	ext := func(dims []int64, kv ...string) pb {
		b := cat(dimsField(dims), fInt(tensorDataType, 1), fString(tensorName, "w"), fInt(tensorDataLocation, 1))
		for i := 0; i+1 < len(kv); i += 2 {
			b = append(b, fBytes(tensorExternalData, cat(fString(1, kv[i]), fString(2, kv[i+1])))...)
		}
		return b
	}
	load := func(enc pb) (*Tensor, error) {
		tn, err := DecodeTensor(enc)
		if err != nil {
			return nil, err
		}
		if !tn.IsExternal() {
			t.Fatal("tensor not marked external")
		}
		if _, err := tn.Float32s(); err == nil {
			t.Fatal("Float32s of an unloaded external tensor succeeded")
		}
		return tn, tn.LoadExternal(dir)
	}

	tn, err := load(ext([]int64{2, 2}, "location", "w/data.bin", "offset", "8", "length", "16"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := tn.Float32s()
	if err != nil || !reflect.DeepEqual(got, []float32{2, 3, 4, 5}) {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := load(ext([]int64{5}, "location", "w/data.bin", "offset", "4")); err != nil {
		t.Fatalf("without length: %v", err)
	}

	for _, c := range []struct {
		name string
		enc  pb
		want string
	}{
		{"escape", ext([]int64{1}, "location", "../data.bin"), "leaves the model's folder"},
		{"absolute", ext([]int64{1}, "location", "/etc/passwd"), "leaves the model's folder"},
		{"missing file", ext([]int64{1}, "location", "nope.bin"), "no such file"},
		{"short file", ext([]int64{6}, "location", "w/data.bin", "offset", "4"), "need 24"},
		{"bad offset", ext([]int64{1}, "location", "w/data.bin", "offset", "x"), "offset"},
		{"length mismatch", ext([]int64{2}, "location", "w/data.bin", "length", "4"), "length 4, want 8"},
		{"no location", ext([]int64{1}), "without a location"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := load(c.enc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
		})
	}

	// A model whose initializer is external, read through ReadModel.
	model := modelBytes(13, graphSpec{
		nodes:   []pb{node("Add", "add", []string{"x", "w"}, []string{"y"})},
		inits:   []pb{ext([]int64{4}, "location", "w/data.bin", "offset", "8")},
		inputs:  []pb{valueInfo("x", Float, 4)},
		outputs: []pb{valueInfo("y", Float, 4)},
	})
	path := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(path, model, 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := Load(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if w := g.Consts["w"]; w == nil || !reflect.DeepEqual(w.Data, []float32{2, 3, 4, 5}) {
		t.Fatalf("external initializer = %+v", g.Consts["w"])
	}
}

func TestReadTensorFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "input_0.pb")
	if err := os.WriteFile(path, tensorF("x", []int64{1, 2}, []float32{0.5, 1.5}), 0o644); err != nil {
		t.Fatal(err)
	}
	tn, err := ReadTensor(path)
	if err != nil {
		t.Fatal(err)
	}
	it, err := tn.ToIR()
	if err != nil {
		t.Fatal(err)
	}
	if tn.Name != "x" || !it.Shape.Equal([]int{1, 2}) || !reflect.DeepEqual(it.Data, []float32{0.5, 1.5}) {
		t.Fatalf("got %q %v %v", tn.Name, it.Shape, it.Data)
	}
	if err := os.WriteFile(path, []byte{0x0a, 0x05, 1}, 0o644); err == nil {
		if _, err := ReadTensor(path); err == nil || !strings.Contains(err.Error(), "input_0.pb") {
			t.Fatalf("truncated file: err = %v", err)
		}
	}
}

func TestDecodeModel(t *testing.T) {
	g := graphSpec{
		nodes: []pb{
			node("Conv", "conv", []string{"x", "w", ""}, []string{"y"},
				aInts("strides", 2, 2), aString("auto_pad", "VALID"), aFloat("f", 0.5), aInt("group", 1),
				aFloats("fs", 1, 2), aTensor("t", tensorF("", []int64{1}, []float32{3})),
				cat(fString(attrName, "ss"), fInt(attrType, int64(AttrStrings)), fString(attrStrings, "a"), fString(attrStrings, "b")),
				cat(fString(attrName, "ts"), fInt(attrType, int64(AttrTensors)), fBytes(attrTensors, tensorF("", nil, []float32{1}))),
				// IR-1 style attribute without a type: the value field says what it is.
				cat(fString(attrName, "untyped"), fInt(attrI, 5)),
				// Unpacked repeated ints.
				cat(fString(attrName, "unpacked"), fInt(attrType, int64(AttrInts)), fInt(attrInts, 3), fInt(attrInts, -4)),
			),
			cat(node("Relu", "", []string{"y"}, []string{"z", ""}), fString(nodeDomain, "ai.onnx")),
		},
		inits:   []pb{tensorF("w", []int64{1, 1, 1, 1}, []float32{1})},
		inputs:  []pb{valueInfo("x", Float, "N", 1, nil, 4)},
		outputs: []pb{valueInfo("z", Float)},
	}
	b := cat(modelBytes(13, g), opsetImport("com.microsoft", 1), fString(modelProducerVer, "9.9"), fString(99, "unknown field"))
	m, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if m.IRVersion != 8 || m.ProducerName != "cryptflow-test" || m.ProducerVersion != "9.9" {
		t.Errorf("header: %+v", m)
	}
	if m.Opset() != 13 || m.Opsets["com.microsoft"] != 1 {
		t.Errorf("opsets %v", m.Opsets)
	}
	if len(m.Graph.Nodes) != 2 || len(m.Graph.Initializers) != 1 {
		t.Fatalf("graph: %d nodes, %d initializers", len(m.Graph.Nodes), len(m.Graph.Initializers))
	}
	conv := m.Graph.Nodes[0]
	if !reflect.DeepEqual(conv.Inputs, []string{"x", "w", ""}) || conv.Name != "conv" || conv.OpType != "Conv" {
		t.Errorf("conv node %+v", conv)
	}
	check := func(name string, typ AttrType, get func(a *Attribute) any, want any) {
		t.Helper()
		a := conv.Attr(name)
		if a == nil {
			t.Errorf("attribute %q missing", name)
			return
		}
		if a.Type != typ || !reflect.DeepEqual(get(a), want) {
			t.Errorf("attribute %q = %v %v, want %v %v", name, a.Type, get(a), typ, want)
		}
	}
	check("strides", AttrInts, func(a *Attribute) any { return a.Ints }, []int64{2, 2})
	check("auto_pad", AttrString, func(a *Attribute) any { return a.S }, "VALID")
	check("f", AttrFloat, func(a *Attribute) any { return a.F }, float32(0.5))
	check("group", AttrInt, func(a *Attribute) any { return a.I }, int64(1))
	check("fs", AttrFloats, func(a *Attribute) any { return a.Floats }, []float32{1, 2})
	check("ss", AttrStrings, func(a *Attribute) any { return a.Strings }, []string{"a", "b"})
	check("untyped", AttrInt, func(a *Attribute) any { return a.I }, int64(5))
	check("unpacked", AttrInts, func(a *Attribute) any { return a.Ints }, []int64{3, -4})
	if a := conv.Attr("t"); a == nil || a.T == nil || a.T.NumElements() != 1 {
		t.Errorf("tensor attribute %+v", a)
	}
	if a := conv.Attr("ts"); a == nil || len(a.Tensors) != 1 {
		t.Errorf("tensors attribute %+v", a)
	}
	relu := m.Graph.Nodes[1]
	if relu.Domain != "ai.onnx" || !reflect.DeepEqual(relu.Outputs, []string{"z", ""}) {
		t.Errorf("relu node %+v", relu)
	}
	in := m.Graph.Inputs[0]
	wantDims := []Dim{{Param: "N"}, {Value: 1, HasValue: true}, {}, {Value: 4, HasValue: true}}
	if in.Kind != KindTensor || in.ElemType != Float || !in.HasShape || !reflect.DeepEqual(in.Shape, wantDims) {
		t.Errorf("input %+v", in)
	}
	if out := m.Graph.Outputs[0]; !out.HasShape || len(out.Shape) != 0 {
		t.Errorf("output %+v (a scalar shape)", out)
	}
}

func TestDecodeModelErrors(t *testing.T) {
	graphWith := func(nodes ...pb) pb { return modelBytes(13, graphSpec{nodes: nodes}) }
	// GRAPH attributes (If branches) are decoded; GRAPHS attributes are not.
	subgraph := cat(fString(attrName, "then_branch"), fInt(attrType, int64(AttrGraphs)), fBytes(attrGraphs, graphSpec{}.encode()))
	cases := []struct {
		name        string
		enc         pb
		want        string
		unsupported bool
	}{
		{"empty", nil, "no graph", false},
		{"not a model", []byte("hello world, this is text"), "decode model", false},
		{"graphs attribute", graphWith(node("If", "branch", []string{"c"}, []string{"y"}, subgraph)), `If node "branch": attribute "then_branch"`, true},
		{"untyped ambiguous attribute", graphWith(node("Relu", "r", nil, nil, cat(fString(attrName, "a"), fInt(attrI, 1), fFloat(attrF, 1)))), "has no type", false},
		{"unknown attribute type", graphWith(node("Relu", "r", nil, nil, cat(fString(attrName, "a"), fInt(attrType, 99)))), "unknown type 99", false},
		{"tensor attribute without tensor", graphWith(node("Constant", "c", nil, nil, cat(fString(attrName, "value"), fInt(attrType, int64(AttrTensor))))), "has no tensor", false},
		{"two graphs", cat(graphWith(), fBytes(modelGraph, nil)), "more than one graph", false},
		{"duplicate opset", cat(graphWith(), opsetImport("", 9)), "imported twice", false},
		{"sparse initializer", modelBytes(13, graphSpec{}) /* patched below */, "sparse", true},
		{"bad end group", cat(graphWith(), protowire.AppendTag(nil, 5, protowire.EndGroupType)), "decode model", false},
	}
	cases[8].enc = cat(fInt(modelIRVersion, 8), fBytes(modelGraph, fBytes(graphSparseInit, nil)))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode(c.enc)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one containing %q", err, c.want)
			}
			if errors.Is(err, ErrUnsupported) != c.unsupported {
				t.Fatalf("errors.Is(err, ErrUnsupported) = %v: %v", !c.unsupported, err)
			}
		})
	}
}

// Every truncation of a valid model decodes without panicking. A cut between two top-level fields
// after the graph leaves a valid model with the same graph; every other cut is a decode error.
func TestDecodeTruncations(t *testing.T) {
	// A top-level field after the graph, so that one cut leaves a smaller valid model.
	b := cat(convNetModel(13), fString(modelProducerVer, "1.2.3"))
	full, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Import(full, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The prefixes that are whole models: those ending on a top-level field boundary at or after
	// the end of the graph field.
	whole := map[int]bool{}
	graph := false
	for off := 0; off < len(b); {
		num, _, n := protowire.ConsumeField(b[off:])
		if n < 0 {
			t.Fatalf("test model: bad field at byte %d: %v", off, protowire.ParseError(n))
		}
		off += n
		graph = graph || num == modelGraph
		if graph && off < len(b) {
			whole[off] = true
		}
	}
	if len(whole) != 1 {
		t.Fatalf("test model: %d whole-model prefixes, want 1", len(whole))
	}
	for n := 0; n < len(b); n++ {
		m, err := Decode(b[:n])
		if !whole[n] {
			if err == nil {
				t.Fatalf("a cut at byte %d of %d decoded without error", n, len(b))
			}
			if !strings.HasPrefix(err.Error(), "decode model") {
				t.Fatalf("a cut at byte %d: error %q does not say what failed", n, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("a cut between top-level fields at byte %d: %v", n, err)
		}
		if m.ProducerVersion != "" {
			t.Fatalf("a cut before producer_version at byte %d still has it: %q", n, m.ProducerVersion)
		}
		g, err := Import(m, Options{})
		if err != nil {
			t.Fatalf("a cut between top-level fields at byte %d: import: %v", n, err)
		}
		if !reflect.DeepEqual(g, want) {
			t.Fatalf("a cut between top-level fields at byte %d imports a different graph", n)
		}
	}
}
