package onnx

import "fmt"

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
