// Package sci holds the SCI backends of the VM. A Backend runs a fixed-point program between the
// server (party 0, holds the weights) and the client (party 1) on additive shares over Z_{2^l}:
//
//   - the nonlinear layers (ReLU, truncation, division, maximum, argmax) by CrypTFlow2's protocols
//     (package nonlinear), elementwise products of two shared tensors and with party 0's constants
//     by correlated OT (package linear), input sharing with a PRG seed, reveal to one party — the
//     same code in every mode;
//   - the linear layers (matrix products and convolutions with party 0's weights) by its Mode:
//     "sciot" by correlated OT (package linear: convolutions with the OTs on the input elements —
//     vm.ConvBackend — where that communicates less than a product with the im2col matrix),
//     "scihe" by coefficient-encoded RLWE over Z_2^l (package he, Cheetah-style), or "auto" per
//     layer as the program records it (fixed.Engine, planned by athosc --backend auto; the VM
//     passes it with every MatMul and Conv2D call).
//
// Every OT-based protocol draws from the session's OT source: IKNP extension (package ot) or
// Ferret silent OT (package ferret), with bitwise identical results. Local operations on shares
// (additions, constants added by party 0, scaling, data movement, im2col, window gathers) are done
// by the VM.
//
// A Backend is one party's end of a session: New runs the setup (base OTs, the silent-OT
// bootstrap, party 1's HE key) once, and the Backend can then run any number of inferences
// (Machine.Run calls) one after the other. The secure run's revealed outputs equal the cleartext
// backend's (cleartext.Backend) bit for bit.
//
// Party 1 never receives weights: it runs the client copy of the program (no weights section) and
// every message it receives is an OT message, a PRG seed, a share masked by fresh randomness, or
// an HE reply masked and noise-flooded by party 0.
package sci
