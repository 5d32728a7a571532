// Package sciot is the SCI_OT backend of the VM: it runs a fixed-point program between the server
// (party 0, holds the weights) and the client (party 1) on additive shares over Z_{2^l}, with
// CrypTFlow2's OT-based protocols: linear layers (matrix products, convolutions with the OTs on
// the input elements — vm.ConvBackend — where that communicates less than a product with the
// im2col matrix, elementwise products with private constants) by correlated OT (package linear), ReLU,
// truncation, division, maximum and argmax by the nonlinear protocols (package nonlinear), input
// sharing with a PRG seed, and reveal to one party. Local operations on shares (additions,
// constants added by party 0, scaling, data movement, im2col, window gathers) are done by the VM.
//
// A Backend is one party's end of a session: New runs the OT setup (base OTs, KK13 bases) once,
// and the Backend can then run any number of inferences (Machine.Run calls) one after the other.
// The secure run's revealed outputs equal the cleartext backend's (cleartext.Backend) bit for bit.
//
// Party 1 never receives weights: it runs the client copy of the program (no weights section) and
// every message it receives is an OT message, a PRG seed or a share masked by fresh randomness.
package sciot
