// Package ot provides oblivious transfer for the SCI protocols, with batched
// APIs on flat slices, in two layers.
//
// A [Core] is an OT source reduced to what only it can do: 128-bit correlated
// OTs with a global Δ in both directions (IKNP, with Chou–Orlandi base
// OTs, in package iknp; Ferret's silent OT in package ferret). [Session] derives every OT kind
// from any Core, once: COT_l with chosen or random choice bits, random OT,
// chosen-message OT, 1-out-of-N OT, block COTs, with batch headers, framing,
// argument checks and sticky errors. A core whose receiver chooses its bits
// ([ChosenCore], IKNP) needs no derandomisation bit; one with a native
// 1-out-of-N extension ([OTNCore], IKNP's Kolesnikov–Kumaresan) is used for
// 1-of-N in place of the derivation from log2 N COTs; a [Reservoir]
// (Ferret) can be carved into ranges for interleaved batches. A new source
// implements Core and passes the conformance suite of package ottest. Package iknp documents
// IKNP's session, traffic and security; docs/ferret.md Ferret's.
//
// # Calls
//
// Each kind has a SendX for the OT sender and a RecvX for the receiver (the
// 1-of-2 kinds also a Wide form with w words per instance):
//
//	COT        sender picks x, gets random r;  receiver picks b, gets r + b·x
//	RCOT       sender picks x, gets random r;  receiver gets random b and r + b·x
//	OT         sender picks m0, m1;            receiver picks b, gets m_b
//	ROT        sender gets random m0, m1;      receiver gets random b and m_b
//	ROTChosen  sender gets random m0, m1;      receiver picks b, gets m_b
//	OTN        sender picks N messages;        receiver picks c < N, gets m_c
//
// # Messages and choice bits
//
// Messages are l-bit values (1 ≤ l ≤ 64) in uint64 words, low bits; inputs
// are taken mod 2^l and outputs are masked to l bits. The Wide variants carry
// w such words per instance in flat slices (instance i owns words
// [i·w, (i+1)·w)). Choice bits of the 1-of-2 receivers are packed, LSB first:
// bit i is b[i/64]>>(i%64)&1 (the bit vectors of package bitvec, whose
// PackBytes, UnpackBytes and Bit convert); packing is what the extension
// needs internally, so it is the fastest form.
// The 1-of-N receiver gives one byte per instance.
//
// # Errors
//
// An error in the middle of a batch (a closed peer, a timeout, a cancelled
// context, a mismatch) leaves the extension state of the two parties out of
// step, so the Session then refuses further work; argument errors found
// before anything is sent leave it usable.
package ot
