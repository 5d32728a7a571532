package tf

import (
	"github.com/cryptflow-go/cryptflow/frontend/pbwire"
	"google.golang.org/protobuf/encoding/protowire"
)

// LooksLikeGraphDef reports whether b looks like a binary TensorFlow GraphDef rather than an
// ONNX ModelProto (or anything else), from the bytes alone. A GraphDef holds only NodeDefs
// (field 1), a function library (2), a deprecated version (3, varint) and versions (4); its first
// node has a printable name and op. An ONNX model starts with ir_version, a varint in field 1,
// and has its graph in field 7, so it never passes.
func LooksLikeGraphDef(b []byte) bool {
	nodes := 0
	ok := true
	err := pbwire.Each(b, func(f pbwire.Field) error {
		switch {
		case f.Num == 1 && f.Type == protowire.BytesType:
			if nodes == 0 && !looksLikeNode(f.B) {
				ok = false
			}
			nodes++
		case (f.Num == 2 || f.Num == 4) && f.Type == protowire.BytesType:
		case f.Num == 3 && f.Type == protowire.VarintType:
		default:
			ok = false
		}
		if !ok {
			return errStop
		}
		return nil
	})
	return err == nil && ok && nodes > 0
}

type stopError struct{}

func (stopError) Error() string { return "stop" }

var errStop error = stopError{}

// looksLikeNode reports whether b parses as a NodeDef with a printable name and op.
func looksLikeNode(b []byte) bool {
	var name, op string
	err := pbwire.Each(b, func(f pbwire.Field) error {
		switch f.Num {
		case 1, 2, 3, 4, 5, 6:
			if f.Type != protowire.BytesType {
				return errStop
			}
			if f.Num == 1 {
				name = string(f.B)
			} else if f.Num == 2 {
				op = string(f.B)
			}
		}
		return nil
	})
	return err == nil && printable(name) && printable(op)
}

// looksLikeSavedModel reports whether b looks like a SavedModel protobuf: an int64 schema
// version in field 1 and MetaGraphDefs in field 2, nothing else.
func looksLikeSavedModel(b []byte) bool {
	metas := 0
	err := pbwire.Each(b, func(f pbwire.Field) error {
		switch {
		case f.Num == 1 && f.Type == protowire.VarintType:
		case f.Num == 2 && f.Type == protowire.BytesType:
			metas++
		default:
			return errStop
		}
		return nil
	})
	return err == nil && metas > 0
}

// StartsLikeGraphDef reports whether b begins as a GraphDef does (its first field is a NodeDef
// with a printable name and op) even if the rest does not parse: a truncated or corrupted .pb,
// which the caller should report as such rather than as a malformed model of another format.
func StartsLikeGraphDef(b []byte) bool {
	first := false
	_ = pbwire.Each(b, func(f pbwire.Field) error {
		first = f.Num == 1 && f.Type == protowire.BytesType && looksLikeNode(f.B)
		return errStop
	})
	return first
}
