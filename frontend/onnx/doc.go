// Package onnx reads ONNX models and imports them into HLIL (package ir).
//
// The decoder is written directly on the protobuf wire format (google.golang.org/protobuf/
// encoding/protowire); it needs no generated code. It decodes ModelProto, GraphProto, NodeProto,
// AttributeProto, ValueInfoProto and TensorProto, including raw and typed tensor payloads,
// external tensor data and symbolic dimensions, and checks every length and count: a malformed
// file is an error, never a panic.
//
// The importer (Load, Import) turns a decoded model into a canonical HLIL graph: it resolves the
// differences between operator-set versions, makes every attribute explicit, folds constant
// subgraphs (in particular the Shape/Gather/Unsqueeze/Concat chains exporters emit for a dynamic
// flatten), fixes a symbolic batch dimension, and runs shape inference so that shape errors name
// the offending node. Constructs outside HLIL are errors wrapping ErrUnsupported.
package onnx
