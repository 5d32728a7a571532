// Package scheme is the RLWE scheme of the HE engine on lattigo v6 (core/rlwe and ring): the
// exact encoding of Z_{2^l} into R_Q, party 1's keys, encryption of its share into an upload,
// party 0's evaluation (adding its own share, products with weight plaintexts, re-randomisation,
// flooding, modulus switching into a reply) and party 1's decryption of a reply, with the bit-packed
// formats of uploads and replies. The parameters come from package heplan; the two-party protocol
// that moves uploads and replies is package he.
//
// Encryptors, Decryptors and Evaluators hold per-goroutine scratch: use one per goroutine. Params,
// keys and weight plaintexts are read-only once built and may be shared.
package scheme
