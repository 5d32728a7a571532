// Package ferret is silent OT: correlated OT with a global Δ produced by
// Ferret's LPN-based expansion (Yang, Weng, Lan, Zhang, Wang, "Ferret: Fast
// Extension for coRRElated oT with small communication", CCS 2020), in its
// semi-honest form.
//
// # COTs
//
// A [COT] is one direction of a stream of 128-bit correlated OTs: the
// sender holds Δ and keys K_i, the receiver holds choice bits b_i and
// M_i = K_i ⊕ b_i·Δ. Both parties draw from a reservoir ([COT.Send],
// [COT.Recv]); when it runs dry, one Ferret iteration refills it:
//
//  1. Base COTs: the previous iteration's first M = K + T·LogBin outputs
//     (the first iteration's come from IKNP through
//     ot.Session.SendBlockCOT, optionally via a smaller pre-iteration).
//  2. Multi-point COT with regular noise: T single-point COTs on bins of
//     2^LogBin. The sender expands a GGM tree per bin with a fixed-key-AES
//     PRG (children π_L(x) ⊕ x and π_R(x) ⊕ x), all trees of a frame level
//     by level so every AES call is batched. For level i it sends
//     c^0 = K_i^0 ⊕ H(q) and c^1 = K_i^1 ⊕ H(q ⊕ Δ), the XORs of the
//     level's left and right children masked with one base COT (q), and
//     finally Δ ⊕ (XOR of the leaves). The receiver's punctured point α is
//     given by the (random) choice bits of those base COTs — bit i of α is
//     the complement of the base choice bit — so it needs no message:
//     it decrypts the sum of the side off its path, rebuilds every leaf but
//     α, and gets leaf α as M = K ⊕ Δ from the last block.
//  3. LPN: outputs = spcot outputs ⊕ A·(first K base COTs), with A a
//     public local linear code of 10 ones per row, drawn from a seed the
//     sender sends once (the receiver's bits likewise: e ⊕ A·b).
//
// An iteration is one flight (sender to receiver). Only the outputs that
// become the next base are built then; the others are built a GGM tree at
// a time (steps 2 and 3 for that tree's rows) when they are drawn, into a
// small cache, so a stream holds tens of MB rather than an iteration's
// outputs. The receiver's choice bit is the low bit of its block: Δ's low
// bit is 1 and the sender's keys have it clear. There is no consistency
// check: the protocol is secure against semi-honest parties only.
//
// # OT on top
//
// [Core] pairs two COT streams (one per direction) on one connection and is an ot.Core (random
// choice bits), an ot.Reservoir and an ot.Forker; [NewSession] returns the *ot.Session that
// derives every OT kind of package ot from it, written once for all sources: random OT (no
// communication), COT_l with random choice bits (l bits per instance), COT_l, chosen-message OT
// and random OT with chosen choice bits (plus one derandomisation bit per instance from the
// receiver), and 1-out-of-N OT from log2 N COTs per instance (N·l + log2 N bits). So every
// protocol, which takes *ot.Session, runs on Ferret or IKNP unchanged.
//
// # Use
//
// Both parties, after iknp.NewSession on their connection:
//
//	fs, err := ferret.NewSession(ctx, otSession, ferret.B13(), ferret.Options{}) // an *ot.Session
//	// party 0:                      party 1:
//	err = fs.SendCOT(ctx, l, x, r)   err = fs.RecvCOT(ctx, l, b, y)
//
// Setup costs SetupBytes per direction (≈ 0.94 MB for B13, 1.2 MB for
// Small) and, for B13, about 25 MB of memory per direction (an iteration's
// outputs are built a unit at a time as they are drawn, see COT); Small
// needs about 7 MB and suits sessions of up to a few million OTs.
//
// See docs/ferret.md for parameters, communication and measurements.
package ferret
