// Package golden holds the project's synthetic reference networks — a MiniONN-shaped CIFAR-10
// CNN (CrypTFlow2 Table 5) and random small CNNs — built as HLIL graphs with random weights and
// written as ONNX files by Go code, and the end-to-end golden tests: every model the project
// ships (and, when present, the shared real models) is compiled, run by the cleartext backend and
// by SCI_OT between two parties, and the revealed outputs must be bitwise equal.
package golden
