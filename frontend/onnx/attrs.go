package onnx

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir"
)

// Typed attribute access with defaults. A present attribute of the wrong type is an error.

func (n *Node) attrOfType(name string, t AttrType) (*Attribute, error) {
	a := n.Attr(name)
	if a == nil {
		return nil, nil
	}
	if a.Type != t {
		return nil, fmt.Errorf("attribute %q has type %s, want %s", name, a.Type, t)
	}
	return a, nil
}

func (n *Node) intAttr(name string, def int64) (int64, error) {
	a, err := n.attrOfType(name, AttrInt)
	if err != nil || a == nil {
		return def, err
	}
	return a.I, nil
}

func (n *Node) floatAttr(name string, def float32) (float32, error) {
	a, err := n.attrOfType(name, AttrFloat)
	if err != nil || a == nil {
		return def, err
	}
	return a.F, nil
}

func (n *Node) stringAttr(name, def string) (string, error) {
	a, err := n.attrOfType(name, AttrString)
	if err != nil || a == nil {
		return def, err
	}
	return a.S, nil
}

// intsAttr returns an INTS attribute as ints and whether it was present.
func (n *Node) intsAttr(name string) ([]int, bool, error) {
	a, err := n.attrOfType(name, AttrInts)
	if err != nil || a == nil {
		return nil, false, err
	}
	out := make([]int, len(a.Ints))
	for i, v := range a.Ints {
		if v > 1<<40 || v < -(1<<40) {
			return nil, false, fmt.Errorf("attribute %q value %d out of range", name, v)
		}
		out[i] = int(v)
	}
	return out, true, nil
}

// requiredInts returns an INTS attribute that must be present.
func (n *Node) requiredInts(name string) ([]int, error) {
	v, ok, err := n.intsAttr(name)
	if err == nil && !ok {
		err = fmt.Errorf("missing attribute %s", name)
	}
	return v, err
}

// normAxis maps a possibly negative axis into [0, rank).
func normAxis(axis, rank int) (int, error) {
	if axis < -rank || axis >= rank {
		return 0, fmt.Errorf("axis %d out of range for rank %d", axis, rank)
	}
	if axis < 0 {
		axis += rank
	}
	return axis, nil
}

// normAxis64 is normAxis for an int64 attribute value, clamped so that a huge value cannot wrap
// when converted to int.
func normAxis64(axis int64, rank int) (int, error) {
	return normAxis(int(max(min(axis, 1<<30), -(1<<30))), rank)
}

// attrReader reads several typed attributes with defaults and keeps the first error, so that an
// importer checks once after reading them all. Once an error is kept, later reads return their
// defaults.
type attrReader struct {
	n   *Node
	err error
}

func (r *attrReader) int(name string, def int64) int64 {
	if r.err != nil {
		return def
	}
	v, err := r.n.intAttr(name, def)
	r.err = err
	return v
}

func (r *attrReader) float(name string, def float32) float32 {
	if r.err != nil {
		return def
	}
	v, err := r.n.floatAttr(name, def)
	r.err = err
	return v
}

// flag reads an int attribute as the canonical HLIL 0/1 int.
func (r *attrReader) flag(name string, def int64) ir.Attr {
	return ir.IntAttr(boolInt(r.int(name, def) != 0))
}

// ints reads an INTS attribute; an absent or empty one gives def.
func (r *attrReader) ints(name string, def []int) []int {
	if r.err != nil {
		return def
	}
	v, ok, err := r.n.intsAttr(name)
	if r.err = err; err != nil || !ok || len(v) == 0 {
		return def
	}
	return v
}
