package onnx

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cryptflow-go/cryptflow/frontend/pbwire"
	"github.com/cryptflow-go/cryptflow/internal/readfile"
)

// ErrUnsupported is wrapped by every error about a construct this front end deliberately does not
// handle (an operator, a data type, a subgraph, a training-only output), as opposed to a malformed
// or inconsistent model. Test with errors.Is.
var ErrUnsupported = errors.New("unsupported")

// Model is a decoded ModelProto.
type Model struct {
	IRVersion       int64
	Opsets          map[string]int64 // opset version by domain; "" is the default ai.onnx domain
	ProducerName    string
	ProducerVersion string
	Graph           *Graph
}

// Opset returns the imported version of the default (ai.onnx) operator set. A model that imports
// none is treated as opset 1.
func (m *Model) Opset() int64 {
	if v, ok := m.Opsets[""]; ok {
		return v
	}
	if v, ok := m.Opsets["ai.onnx"]; ok {
		return v
	}
	return 1
}

// Graph is a decoded GraphProto.
type Graph struct {
	Name         string
	Nodes        []*Node
	Initializers []*Tensor
	Inputs       []*ValueInfo
	Outputs      []*ValueInfo
	ValueInfo    []*ValueInfo
}

// Node is a decoded NodeProto. Inputs and Outputs keep empty names (omitted optional arguments)
// in their positions.
type Node struct {
	Name    string
	OpType  string
	Domain  string
	Inputs  []string
	Outputs []string
	Attrs   []*Attribute
}

// Attr returns the attribute with the given name, or nil.
func (n *Node) Attr(name string) *Attribute {
	for _, a := range n.Attrs {
		if a.Name == name {
			return a
		}
	}
	return nil
}

// String describes the node for error messages.
func (n *Node) String() string {
	op := n.OpType
	if n.Domain != "" && n.Domain != "ai.onnx" {
		op = n.Domain + "::" + op
	}
	if n.Name != "" {
		return fmt.Sprintf("%s node %q", op, n.Name)
	}
	if len(n.Outputs) > 0 {
		return fmt.Sprintf("%s node producing %q", op, n.Outputs[0])
	}
	return op + " node"
}

// AttrType is ONNX's AttributeProto.AttributeType.
type AttrType int32

// Attribute types (values from onnx.proto).
const (
	AttrUndefined     AttrType = 0
	AttrFloat         AttrType = 1
	AttrInt           AttrType = 2
	AttrString        AttrType = 3
	AttrTensor        AttrType = 4
	AttrGraph         AttrType = 5
	AttrFloats        AttrType = 6
	AttrInts          AttrType = 7
	AttrStrings       AttrType = 8
	AttrTensors       AttrType = 9
	AttrGraphs        AttrType = 10
	AttrSparseTensor  AttrType = 11
	AttrSparseTensors AttrType = 12
	AttrTypeProto     AttrType = 13
	AttrTypeProtos    AttrType = 14
)

var attrTypeNames = map[AttrType]string{
	AttrUndefined: "UNDEFINED", AttrFloat: "FLOAT", AttrInt: "INT", AttrString: "STRING",
	AttrTensor: "TENSOR", AttrGraph: "GRAPH", AttrFloats: "FLOATS", AttrInts: "INTS",
	AttrStrings: "STRINGS", AttrTensors: "TENSORS", AttrGraphs: "GRAPHS",
	AttrSparseTensor: "SPARSE_TENSOR", AttrSparseTensors: "SPARSE_TENSORS",
	AttrTypeProto: "TYPE_PROTO", AttrTypeProtos: "TYPE_PROTOS",
}

func (a AttrType) String() string {
	if s, ok := attrTypeNames[a]; ok {
		return s
	}
	return fmt.Sprintf("attrtype(%d)", int32(a))
}

// Attribute is a decoded AttributeProto. The field that Type names holds the value.
type Attribute struct {
	Name    string
	Type    AttrType
	F       float32
	I       int64
	S       string
	T       *Tensor
	Floats  []float32
	Ints    []int64
	Strings []string
	Tensors []*Tensor
	G       *Graph // a GRAPH attribute's subgraph (If branches)
	RefName string // ref_attr_name (only meaningful inside function bodies)
}

// ValueKind is the kind of a ValueInfo's type.
type ValueKind int

// Value kinds (TypeProto's oneof).
const (
	KindUnknown ValueKind = iota
	KindTensor
	KindSequence
	KindMap
	KindOptional
	KindSparseTensor
)

func (k ValueKind) String() string {
	switch k {
	case KindTensor:
		return "tensor"
	case KindSequence:
		return "sequence"
	case KindMap:
		return "map"
	case KindOptional:
		return "optional"
	case KindSparseTensor:
		return "sparse tensor"
	}
	return "unknown type"
}

// Dim is one dimension of a declared shape: a number, a symbolic name, or neither (unknown).
type Dim struct {
	Value    int64
	Param    string
	HasValue bool
}

// ValueInfo is a decoded ValueInfoProto (graph inputs, outputs, value_info).
type ValueInfo struct {
	Name     string
	Kind     ValueKind
	ElemType DataType // for tensors
	Shape    []Dim    // for tensors; nil when HasShape is false
	HasShape bool     // false when the shape is unknown (not even the rank)
}

// Field numbers of onnx.proto messages.
const (
	modelIRVersion    = 1
	modelProducerName = 2
	modelProducerVer  = 3
	modelGraph        = 7
	modelOpsetImport  = 8

	graphNode        = 1
	graphName        = 2
	graphInitializer = 5
	graphInput       = 11
	graphOutput      = 12
	graphValueInfo   = 13
	graphSparseInit  = 15

	nodeInput     = 1
	nodeOutput    = 2
	nodeName      = 3
	nodeOpType    = 4
	nodeAttribute = 5
	nodeDomain    = 7

	attrName       = 1
	attrF          = 2
	attrI          = 3
	attrS          = 4
	attrT          = 5
	attrG          = 6
	attrFloats     = 7
	attrInts       = 8
	attrStrings    = 9
	attrTensors    = 10
	attrGraphs     = 11
	attrTP         = 14
	attrTypeProtos = 15
	attrType       = 20
	attrRefName    = 21
	attrSparseT    = 22
	attrSparseTs   = 23
)

// ReadModel reads and decodes an .onnx file, loading external tensor data relative to the file's
// folder.
func ReadModel(path string) (*Model, error) {
	b, err := readfile.ReadFile(context.Background(), path)
	if err != nil {
		return nil, err
	}
	m, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := m.LoadExternal(filepath.Dir(path)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// LoadExternal loads the data of every external initializer and Constant tensor from files
// relative to dir.
func (m *Model) LoadExternal(dir string) error {
	if m.Graph == nil {
		return nil
	}
	for _, t := range m.Graph.Initializers {
		if err := t.LoadExternal(dir); err != nil {
			return fmt.Errorf("initializer: %w", err)
		}
	}
	for _, n := range m.Graph.Nodes {
		for _, a := range n.Attrs {
			ts := a.Tensors
			if a.T != nil {
				ts = append([]*Tensor{a.T}, ts...)
			}
			for _, t := range ts {
				if err := t.LoadExternal(dir); err != nil {
					return fmt.Errorf("%s attribute %q: %w", n, a.Name, err)
				}
			}
		}
	}
	return nil
}

// Decode decodes a serialized ModelProto. The result aliases b (raw tensor data is not copied),
// so b must not be modified afterwards. External tensor data is not loaded (see LoadExternal).
func Decode(b []byte) (*Model, error) {
	m := &Model{Opsets: map[string]int64{}}
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case modelIRVersion:
			m.IRVersion, err = f.Int64("ir_version")
		case modelProducerName:
			m.ProducerName, err = f.Text("producer_name")
		case modelProducerVer:
			m.ProducerVersion, err = f.Text("producer_version")
		case modelOpsetImport:
			err = decodeOpset(f, m.Opsets)
		case modelGraph:
			var gb []byte
			if gb, err = f.Bytes("graph"); err == nil {
				if m.Graph != nil {
					return errors.New("model has more than one graph")
				}
				m.Graph, err = decodeGraph(gb, 0)
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("decode model: %w", err)
	}
	if m.Graph == nil {
		return nil, errors.New("decode model: no graph (is this an ONNX model file?)")
	}
	return m, nil
}

func decodeOpset(f pbwire.Field, opsets map[string]int64) error {
	b, err := f.Bytes("opset_import")
	if err != nil {
		return err
	}
	var domain string
	var version int64
	err = pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case 1:
			domain, err = f.Text("domain")
		case 2:
			version, err = f.Int64("version")
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("opset_import: %w", err)
	}
	if _, dup := opsets[domain]; dup {
		return fmt.Errorf("opset_import: domain %q imported twice", domain)
	}
	opsets[domain] = version
	return nil
}

// maxGraphDepth bounds the nesting of subgraphs (If branches inside If branches ...).
const maxGraphDepth = 16

// decodeGraph decodes a GraphProto; depth counts the enclosing graphs.
func decodeGraph(b []byte, depth int) (*Graph, error) {
	if depth > maxGraphDepth {
		return nil, fmt.Errorf("subgraphs nested more than %d deep", maxGraphDepth)
	}
	g := &Graph{}
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case graphNode:
			var nb []byte
			if nb, err = f.Bytes("node"); err == nil {
				var n *Node
				if n, err = decodeNode(nb, depth); err != nil {
					return fmt.Errorf("node %d: %w", len(g.Nodes), err)
				}
				g.Nodes = append(g.Nodes, n)
			}
		case graphName:
			g.Name, err = f.Text("name")
		case graphInitializer:
			var tb []byte
			if tb, err = f.Bytes("initializer"); err == nil {
				var t *Tensor
				if t, err = DecodeTensor(tb); err != nil {
					return fmt.Errorf("initializer %d: %w", len(g.Initializers), err)
				}
				g.Initializers = append(g.Initializers, t)
			}
		case graphInput, graphOutput, graphValueInfo:
			var vb []byte
			if vb, err = f.Bytes("value info"); err == nil {
				var v *ValueInfo
				if v, err = decodeValueInfo(vb); err != nil {
					return fmt.Errorf("value info: %w", err)
				}
				switch f.Num {
				case graphInput:
					g.Inputs = append(g.Inputs, v)
				case graphOutput:
					g.Outputs = append(g.Outputs, v)
				default:
					g.ValueInfo = append(g.ValueInfo, v)
				}
			}
		case graphSparseInit:
			return fmt.Errorf("%w: sparse initializers", ErrUnsupported)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("graph: %w", err)
	}
	return g, nil
}

func decodeNode(b []byte, depth int) (*Node, error) {
	n := &Node{}
	var graphAttr string
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case nodeInput:
			var s string
			s, err = f.Text("input")
			n.Inputs = append(n.Inputs, s)
		case nodeOutput:
			var s string
			s, err = f.Text("output")
			n.Outputs = append(n.Outputs, s)
		case nodeName:
			n.Name, err = f.Text("name")
		case nodeOpType:
			n.OpType, err = f.Text("op_type")
		case nodeDomain:
			n.Domain, err = f.Text("domain")
		case nodeAttribute:
			var ab []byte
			if ab, err = f.Bytes("attribute"); err == nil {
				var a *Attribute
				if a, err = decodeAttribute(ab, depth); err != nil {
					return fmt.Errorf("attribute %d: %w", len(n.Attrs), err)
				}
				if a.Type == AttrGraphs {
					graphAttr = a.Name
				}
				n.Attrs = append(n.Attrs, a)
			}
		}
		return err
	})
	if err != nil {
		if n.Name != "" || n.OpType != "" {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		return nil, err
	}
	if graphAttr != "" {
		return nil, fmt.Errorf("%s: attribute %q: %w: GRAPHS attributes are not supported", n, graphAttr, ErrUnsupported)
	}
	return n, nil
}

func decodeAttribute(b []byte, depth int) (*Attribute, error) {
	a := &Attribute{}
	seen := map[AttrType]bool{}
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case attrName:
			a.Name, err = f.Text("name")
		case attrType:
			var v int64
			v, err = f.Int64("type")
			a.Type = AttrType(v)
		case attrRefName:
			a.RefName, err = f.Text("ref_attr_name")
		case attrF:
			a.F, err = f.Float32("f")
			seen[AttrFloat] = true
		case attrI:
			a.I, err = f.Int64("i")
			seen[AttrInt] = true
		case attrS:
			a.S, err = f.Text("s")
			seen[AttrString] = true
		case attrT:
			var tb []byte
			if tb, err = f.Bytes("t"); err == nil {
				a.T, err = DecodeTensor(tb)
			}
			seen[AttrTensor] = true
		case attrG:
			var gb []byte
			if gb, err = f.Bytes("g"); err == nil {
				a.G, err = decodeGraph(gb, depth+1)
				seen[AttrGraph] = true
			}
		case attrFloats:
			a.Floats, err = f.AppendFloat32s(a.Floats, "floats")
			seen[AttrFloats] = true
		case attrInts:
			a.Ints, err = f.AppendInt64s(a.Ints, "ints")
			seen[AttrInts] = true
		case attrStrings:
			var s string
			s, err = f.Text("strings")
			a.Strings = append(a.Strings, s)
			seen[AttrStrings] = true
		case attrTensors:
			var tb []byte
			if tb, err = f.Bytes("tensors"); err == nil {
				var t *Tensor
				if t, err = DecodeTensor(tb); err == nil {
					a.Tensors = append(a.Tensors, t)
				}
			}
			seen[AttrTensors] = true
		case attrGraphs:
			if _, err = f.Bytes("graphs"); err == nil {
				seen[AttrGraphs] = true
			}
		case attrSparseT:
			seen[AttrSparseTensor] = true
		case attrSparseTs:
			seen[AttrSparseTensors] = true
		case attrTP:
			seen[AttrTypeProto] = true
		case attrTypeProtos:
			seen[AttrTypeProtos] = true
		}
		return err
	})
	if err != nil {
		if a.Name != "" {
			return nil, fmt.Errorf("%q: %w", a.Name, err)
		}
		return nil, err
	}
	if a.Type == AttrUndefined {
		// IR version 1 files may omit the type; infer it from the single value field present.
		if len(seen) != 1 {
			if a.RefName != "" {
				return a, nil
			}
			return nil, fmt.Errorf("attribute %q has no type", a.Name)
		}
		for t := range seen {
			a.Type = t
		}
	}
	if _, ok := attrTypeNames[a.Type]; !ok {
		return nil, fmt.Errorf("attribute %q has unknown type %d", a.Name, a.Type)
	}
	if a.Type == AttrTensor && a.T == nil {
		return nil, fmt.Errorf("attribute %q of type TENSOR has no tensor", a.Name)
	}
	return a, nil
}

// TypeProto / TensorShapeProto field numbers.
const (
	typeTensor       = 1
	typeSequence     = 4
	typeMap          = 5
	typeSparseTensor = 8
	typeOptional     = 9

	tensorTypeElem  = 1
	tensorTypeShape = 2
)

func decodeValueInfo(b []byte) (*ValueInfo, error) {
	v := &ValueInfo{}
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case 1:
			v.Name, err = f.Text("name")
		case 2:
			var tb []byte
			if tb, err = f.Bytes("type"); err == nil {
				err = decodeType(tb, v)
			}
		}
		return err
	})
	if err != nil {
		if v.Name != "" {
			return nil, fmt.Errorf("%q: %w", v.Name, err)
		}
		return nil, err
	}
	return v, nil
}

// decodeType decodes a TypeProto into v. Only tensor types are decoded in depth; the element
// types of sequences, maps and optionals are not needed by the importer, which rejects them.
func decodeType(b []byte, v *ValueInfo) error {
	return pbwire.Each(b, func(f pbwire.Field) error {
		switch f.Num {
		case typeTensor, typeSparseTensor:
			tb, err := f.Bytes("tensor_type")
			if err != nil {
				return err
			}
			v.Kind = KindTensor
			if f.Num == typeSparseTensor {
				v.Kind = KindSparseTensor
			}
			return decodeTensorType(tb, v)
		case typeSequence:
			v.Kind = KindSequence
		case typeMap:
			v.Kind = KindMap
		case typeOptional:
			v.Kind = KindOptional
		}
		return nil
	})
}

func decodeTensorType(b []byte, v *ValueInfo) error {
	return pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case tensorTypeElem:
			var e int64
			e, err = f.Int64("elem_type")
			v.ElemType = DataType(e)
		case tensorTypeShape:
			var sb []byte
			if sb, err = f.Bytes("shape"); err == nil {
				v.HasShape = true
				if v.Shape == nil {
					v.Shape = []Dim{}
				}
				err = pbwire.Each(sb, func(f pbwire.Field) error {
					if f.Num != 1 {
						return nil
					}
					db, err := f.Bytes("dim")
					if err != nil {
						return err
					}
					d, err := decodeDim(db)
					v.Shape = append(v.Shape, d)
					return err
				})
			}
		}
		return err
	})
}

func decodeDim(b []byte) (Dim, error) {
	var d Dim
	err := pbwire.Each(b, func(f pbwire.Field) error {
		var err error
		switch f.Num {
		case 1:
			d.Value, err = f.Int64("dim_value")
			d.HasValue = true
		case 2:
			d.Param, err = f.Text("dim_param")
		}
		return err
	})
	return d, err
}
