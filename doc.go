// Package cryptflow is the Go API of cryptflow-go: compile a classifier into a secure two-party
// inference program, serve it, and run inferences against it from Go code, without the athosc
// and scirun commands.
//
//   - Compile (or CompileBytes) reads an ONNX or TensorFlow model, autotunes the ring bitwidth and
//     fixed-point scale on validation samples, and returns a Program (the server's copy, with the
//     weights). Program.WriteFiles writes it and its client copy as athosc -o does;
//     Program.ClientCopy gives the copy without weights to hand to clients.
//   - Serve runs the server (party 0, the model owner) on a net.Listener until its context ends.
//   - Infer runs the client (party 1, the input owner): it connects, runs one secure inference on
//     an input tensor and returns the decoded output, the top class and its name (the names given
//     as CompileOptions.Classes or recorded by athosc). InferBatch runs a list of inputs in one
//     session, the set-up paid once. InferLocal runs
//     both parties in one process; Program.Clear runs the cleartext fixed-point reference, which
//     the secure output equals bitwise.
//
// The commands remain the reference for flags and behaviour (docs/usage.md, docs/usage-athosc.md);
// this package makes the same choices by default (backend auto planned for a LAN; IKNP OT unless
// the program was planned for a link slow enough for silent OT; min(2, CPUs) connections per
// session), so a Go client talks to a scirun server and a scirun client to Serve.
package cryptflow
