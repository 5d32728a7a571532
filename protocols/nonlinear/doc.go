// Package nonlinear implements CrypTFlow2's nonlinear two-party protocols
// over Z_{2^l} (2 ≤ l ≤ 64) on whole vectors of additive shares: Beaver bit
// triples and AND, MUX, B2A, the millionaires' protocol with leaf width m,
// DReLU and ReLU, faithful truncation (and its cheaper form for inputs known
// to be non-negative), division by a public integer, and the row-wise
// maximum and argmax used by MaxPool and ArgMax; table lookup by 1-out-of-N
// OT (LUT) and the fixed-point math functions of ring/fxmath (Math).
//
// Algorithm numbers refer to CrypTFlow2 (Rathee et al., CCS 2020);
// docs/protocols.md gives each protocol's cost and the choices made here.
//
// # Shares
//
// Arithmetic shares are uint64 words below 2^l whose sum mod 2^l is the
// value, read as a two's-complement signed integer. Boolean shares are packed
// bit vectors (package bitvec): bit i of v is v[i/64]>>(i%64)&1,
// and the shared bit is the XOR of the two parties' bits.
//
// # Sessions and streams
//
// A Session runs over one or more ot.Session streams (an OT session and its
// forks, each on its own connection). Batches are split across the streams
// and run concurrently; large batches are processed in chunks so memory stays
// bounded, and the chunks are interleaved round by round so that a batch
// costs the protocol's depth in flights, not the depth times the number of
// chunks (see chunks in pipeline.go). Both parties must call the same methods with the same lengths and
// public parameters in the same order.
//
// # OT sources and plans
//
// The streams are any *ot.Session: IKNP (*ot.Session) or Ferret's silent OT
// (*ferret.Session), all of one kind. Results are the same on either; the
// traffic is not, and New picks the plan for the source (ChoosePlan): on
// IKNP CrypTFlow2's (m = 4, bit triples from 1-out-of-N OT), on silent OT
// small digits and bit triples from random OT, chosen by the exact cost
// formulas of Plan (Cost: wire bits and COTs drawn per element).
//
// # Security
//
// Semi-honest security with 128-bit computational security (λ = 128, from the
// OT layer) and perfect statistical hiding of shares (no statistical
// parameter is consumed). All randomness comes from crypto/rand-seeded
// AES-CTR generators.
package nonlinear
