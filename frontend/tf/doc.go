// Package tf reads TensorFlow frozen GraphDefs (binary GraphDef protobufs whose variables have been
// turned into constants) and imports them into HLIL (package ir).
//
// The decoder is written directly on the protobuf wire format (google.golang.org/protobuf/
// encoding/protowire), like the ONNX front end; it needs no generated code. It decodes GraphDef,
// NodeDef (data inputs "name" and "name:k", control inputs "^name"), AttrValue (scalars, lists,
// shapes, tensors, types) and TensorProto (tensor_content and the typed value lists, with TF's rule
// that a short list is padded with its last value), and checks every length and count: malformed
// bytes are an error, never a panic. A SavedModel (saved_model.pb with variables/) is refused with
// an error that says how to freeze it.
//
// The importer (Load, Import) walks the graph backwards from the requested outputs, stopping at
// the requested inputs (so a graph can be cut, e.g. below an audio front end), folds everything
// computable at import time (weights, Shape/StridedSlice/Pack chains, unfused batch-norm
// arithmetic, Cast of constants) and emits HLIL for the rest. HLIL convolutions and pools are
// NCHW while TF graphs are mostly NHWC: every runtime value carries the permutation between its
// TF shape and the HLIL tensor that holds it, a transpose is emitted only where an operator needs
// a different layout, and layout-neutral operators (elementwise ops, batch norm, softmax, pools,
// padding, concatenation, reductions, Transpose itself) work in whatever layout their input is
// in. Graph inputs and outputs keep the layout the model declares.
package tf
