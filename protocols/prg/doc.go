// Package prg holds the symmetric primitives of the OT stack: an AES-128-CTR
// pseudorandom generator (seeded from crypto/rand, with seed splitting and
// independent numbered streams per seed) and a fixed-key-AES hash family used
// as the correlation-robust hash of OT extension.
//
// # Hashes
//
// Let π be AES-128 under a fixed, public key (see [NewHash]). The package
// provides two hashes, both in the ideal-permutation model:
//
//   - [Hash.TCCR]: H(τ, x) = π(π(x) ⊕ τ) ⊕ π(x), the tweakable circular
//     correlation-robust hash of Guo, Katz, Wang and Yu ("Efficient and Secure
//     Multiparty Computation from Fixed-Key Block Ciphers", S&P 2020). It is
//     used on the 128-bit rows of IKNP OT extension, with the OT index (and a
//     domain word naming stream, direction and output block) as tweak.
//   - [Hash.Hash256]: H(τ, x_lo‖x_hi) = MMO(x_lo ⊕ MMO(x_hi ⊕ τ)) with
//     MMO(y) = π(y) ⊕ y, a 256-bit-input hash for the 256-bit rows of the
//     Kolesnikov–Kumaresan 1-out-of-N extension. Both halves pass through π
//     before the output is formed, so evaluating it needs the whole input; in
//     KK13 the unknown part of an input is a Walsh–Hadamard codeword masked by
//     the sender's secret (128 unknown bits), so a generic attack must guess
//     all 128 bits at once. XOR-combining independent per-half hashes would
//     not have this property (a meet-in-the-middle on two 64-bit halves works
//     against it), which is why the halves are chained.
//
// Security of the OT extension rests on these hashes behaving as
// correlation-robust functions when π is modelled as a random permutation;
// this is the standard assumption of fixed-key-AES OT implementations.
//
// On amd64 with AES-NI the fixed-key permutation runs in an 8-way interleaved
// assembly kernel; elsewhere it falls back to crypto/aes one block at a time
// (same results, slower). The PRG always uses crypto/aes in CTR mode. Keys are
// expanded once; nothing re-keys per block.
package prg
