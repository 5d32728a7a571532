package ir

import (
	"fmt"
	"sort"
)

// AttrKind is the type of an attribute value.
type AttrKind uint8

const (
	AttrInt AttrKind = iota + 1
	AttrFloat
	AttrString
	AttrInts
	AttrFloats
)

// Attr is one attribute value. Exactly the field that Kind names is meaningful.
type Attr struct {
	Kind   AttrKind
	Int    int64
	Float  float32
	String string
	Ints   []int64
	Floats []float32
}

// Attrs are a node's attributes by name.
type Attrs map[string]Attr

// Names returns the attribute names in sorted order (the printing order).
func (a Attrs) Names() []string {
	names := make([]string, 0, len(a))
	for n := range a {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Int returns an int attribute, or an error naming the attribute when it is missing or mistyped.
func (a Attrs) Int(name string) (int, error) {
	v, ok := a[name]
	if !ok {
		return 0, fmt.Errorf("missing attribute %q", name)
	}
	if v.Kind != AttrInt {
		return 0, fmt.Errorf("attribute %q is not an int", name)
	}
	return int(v.Int), nil
}

// Float returns a float attribute.
func (a Attrs) Float(name string) (float32, error) {
	v, ok := a[name]
	if !ok {
		return 0, fmt.Errorf("missing attribute %q", name)
	}
	if v.Kind != AttrFloat {
		return 0, fmt.Errorf("attribute %q is not a float", name)
	}
	return v.Float, nil
}

// Str returns a string attribute.
func (a Attrs) Str(name string) (string, error) {
	v, ok := a[name]
	if !ok {
		return "", fmt.Errorf("missing attribute %q", name)
	}
	if v.Kind != AttrString {
		return "", fmt.Errorf("attribute %q is not a string", name)
	}
	return v.String, nil
}

// Ints returns an ints attribute as []int.
func (a Attrs) Ints(name string) ([]int, error) {
	v, ok := a[name]
	if !ok {
		return nil, fmt.Errorf("missing attribute %q", name)
	}
	if v.Kind != AttrInts {
		return nil, fmt.Errorf("attribute %q is not a list of ints", name)
	}
	out := make([]int, len(v.Ints))
	for i, x := range v.Ints {
		out[i] = int(x)
	}
	return out, nil
}

// Floats returns a floats attribute.
func (a Attrs) Floats(name string) ([]float32, error) {
	v, ok := a[name]
	if !ok {
		return nil, fmt.Errorf("missing attribute %q", name)
	}
	if v.Kind != AttrFloats {
		return nil, fmt.Errorf("attribute %q is not a list of floats", name)
	}
	return v.Floats, nil
}

// IntAttr makes an int attribute.
func IntAttr(v int) Attr { return Attr{Kind: AttrInt, Int: int64(v)} }

// FloatAttr makes a float attribute.
func FloatAttr(v float32) Attr { return Attr{Kind: AttrFloat, Float: v} }

// StringAttr makes a string attribute.
func StringAttr(v string) Attr { return Attr{Kind: AttrString, String: v} }

// IntsAttr makes an ints attribute.
func IntsAttr(v []int) Attr {
	out := make([]int64, len(v))
	for i, x := range v {
		out[i] = int64(x)
	}
	return Attr{Kind: AttrInts, Ints: out}
}

// FloatsAttr makes a floats attribute.
func FloatsAttr(v []float32) Attr {
	return Attr{Kind: AttrFloats, Floats: append([]float32(nil), v...)}
}
