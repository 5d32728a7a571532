package tf

import (
	"fmt"
	"math"
)

var float32PosInf = float32(math.Inf(1))

func (n *NodeDef) attr(name string, kind AttrKind) (*AttrValue, error) {
	a, ok := n.Attr[name]
	if !ok {
		return nil, nil
	}
	if a.Kind != kind && !(kind == AttrList && a.Kind == AttrNone) {
		return nil, fmt.Errorf("attribute %q has the wrong kind", name)
	}
	return a, nil
}

func (n *NodeDef) str(name, def string) (string, error) {
	a, err := n.attr(name, AttrS)
	if err != nil || a == nil {
		return def, err
	}
	return a.S, nil
}

func (n *NodeDef) int(name string, def int64) (int64, error) {
	a, err := n.attr(name, AttrI)
	if err != nil || a == nil {
		return def, err
	}
	return a.I, nil
}

func (n *NodeDef) float(name string, def float32) (float32, error) {
	a, err := n.attr(name, AttrF)
	if err != nil || a == nil {
		return def, err
	}
	return a.F, nil
}

func (n *NodeDef) bool(name string, def bool) (bool, error) {
	a, err := n.attr(name, AttrB)
	if err != nil || a == nil {
		return def, err
	}
	return a.B, nil
}

func (n *NodeDef) dtype(name string, def DataType) (DataType, error) {
	a, err := n.attr(name, AttrType)
	if err != nil || a == nil {
		return def, err
	}
	return a.Type, nil
}

// ints reads a list(int) attribute; def is returned when it is absent.
func (n *NodeDef) ints(name string, def []int) ([]int, error) {
	a, err := n.attr(name, AttrList)
	if err != nil || a == nil {
		return def, err
	}
	if a.List == nil {
		return []int{}, nil
	}
	out := make([]int, len(a.List.I))
	for i, v := range a.List.I {
		if v > 1<<40 || v < -(1<<40) {
			return nil, fmt.Errorf("attribute %q value %d out of range", name, v)
		}
		out[i] = int(v)
	}
	return out, nil
}
