// Package iknp is the IKNP OT source: an ot.Core of 128-bit correlated OTs made by the IKNP
// extension (Ishai, Kilian, Nissim, Petrank, "Extending oblivious transfers efficiently",
// CRYPTO 2003) from 128 Chou–Orlandi base OTs per direction, with the receiver choosing its
// bits in the extension matrix (ot.ChosenCore), KK13 1-out-of-N OT (Kolesnikov–Kumaresan,
// ot.OTNCore) and forks that share the base OTs (ot.Forker).
//
// [NewSession] runs the handshake and base OTs on a connection and returns the *ot.Session that
// derives every OT kind from this core (the package documentation of ot lists the calls). The
// 128×128 bit transposes of the extension have an AVX-512 version on amd64 (build tag purego
// selects the portable one).
//
// # Sessions
//
// iknp.NewSession runs once per pair of parties and connection: a hello, 128
// Chou–Orlandi base OTs in each direction (over edwards25519 with cofactor
// clearing), and, bootstrapped from those by IKNP, 256 base OTs per
// direction for the KK13 1-out-of-N extension. Afterwards either party can be
// the OT sender at any time: a call SendX at one party must meet the
// matching RecvX at the other, in the same order on both sides. A Session is
// not safe for concurrent use; [ot.Session.Fork] gives an independent session
// (its own OT stream) over another connection without new base OTs, so two
// goroutines (e.g. one per core) can run OTs in parallel. This is also the
// way to run OTs in both directions at the same time (e.g. the two OTs of
// MUX): one direction on the session, the other on a fork.
//
// # Protocol and communication
//
// On IKNP each batch is two flights (one at each party, as counted by the
// transport), except a ROTChosen or block-COT batch, which is one flight. The receiver
// sends a 24-byte batch header and the extension matrix in frames of 8192
// instances (128 bits per instance for IKNP, 256 for KK13), flushing each
// frame so that the sender hashes one chunk while the receiver computes the
// next. The sender checks the header against its own call; on a mismatch
// it aborts the connection, so the peer fails at once (for ROTChosen, at
// its next receive). Then the sender replies with an 8-byte
// acknowledgement and its masked messages, bit-packed at l bits — except
// for ROTChosen, where the sender sends nothing at all. Per instance, not
// counting the per-batch constants (header, acknowledgement, 4-byte frame
// headers) and the one-time base OTs:
//
//	random OT (ROT_l)           λ            bits
//	ROTChosen_l                 λ            bits      (no acknowledgement)
//	correlated OT (COT_l)       λ + w·l      bits      (RCOT_l the same)
//	chosen 1-of-2 OT (OT_l)     λ + 2·w·l    bits
//	1-of-N OT (KK13)            2λ + N·l     bits      λ = 128
//
// rounded up to whole 64-bit words of extension matrix per column (so a
// batch whose size is a multiple of 64 has no padding at all).
//
// # Security
//
// Semi-honest security with 128-bit computational security. Semi-honest
// IKNP and KK13 involve no statistical security parameter, so the project's
// 40-bit statistical requirement is met trivially. The extension
// hashes rows with the fixed-key-AES hashes of package prg, whose security
// assumes AES under a fixed public key behaves as a random permutation
// (correlation robustness of the tweakable TCCR hash for IKNP, and of the
// chained 256-bit hash for KK13, where the Walsh–Hadamard code of length 256
// and distance 128 gives 128-bit security, matching the λ-bit IKNP). Every
// OT of a session stream has a distinct tweak (index, stream, direction,
// output block). Forked sessions reuse the base OTs with column PRGs keyed
// by the same base seeds but on disjoint AES-CTR streams, which is the same
// as continuing one longer extension. All randomness comes from crypto/rand
// seeded AES-CTR. The base OT is Chou–Orlandi "simplest OT"; its keys are
// derived with SHA-256 over the transcript (points and index) and received
// points are multiplied by the cofactor 8 before use. The receiver's choice
// bits in the Chou–Orlandi step are hidden by a constant-time point select.
package iknp
