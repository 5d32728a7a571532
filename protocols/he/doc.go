// Package he implements the linear layers of a Cheetah-style HE backend (Huang, Lu, Hong, Ding, "Cheetah:
// Lean and Fast Secure Two-Party Deep Neural Network Inference", USENIX Security 2022): products
// of a matrix or convolution kernel that party 0 holds in the clear with a tensor shared
// additively over Z_{2^l}, by RLWE ciphertexts under party 1's key (lattigo v6, packages
// core/rlwe and ring only), with results exact in Z_{2^l}.
//
// # Protocol
//
// Party 1 packs its share x1 into polynomials (Cheetah's packing, heplan.ConvPlan) and encrypts each
// with its secret key as (c0, c1) = (−c1·s + e + round(Q·m/t), c1), c1 expanded from a 16-byte
// seed, so that an upload is c0 and the seed. Party 0 adds round(Q·x0/t) (its own share in the
// same packing), multiplies by the weight polynomials in the NTT domain and sums over input
// blocks, subtracts round(Q·r/t) for a uniform mask r at the coefficients that hold results, adds
// an encryption of zero under party 1's public key (re-randomisation of c1) and a flooding noise
// to c0, switches the modulus down to the reply modulus Qr (one 60-bit prime, two for l > 46),
// and sends c1 and only the needed coefficients of c0, each without its low bits. Party 1
// decrypts: its share is (x0+x1)·W − r, party 0's share is r.
//
// # Exactness and privacy
//
// Every noise term has a worst-case bound (docs/he.md); heplan.ParamsFor sizes Q so that the
// flooded noise after switching, the switching rounding and the dropped bits stay below Qr/(2t):
// decryption is exact on every coefficient, always. The flooding noise is 2^40·N times the
// noise that depends on the weights, so a reply is within statistical distance 2^-40 of one that
// depends only on party 1's masked output (circuit privacy).
//
// # Layout
//
// This package is the two-party protocol: the Session, its messages and who sends what when.
// The RLWE scheme it runs (encoding, keys, encryption, evaluation, decryption, on lattigo) is
// package scheme; the public parameters, the packing and the exact cost of each call, which the
// compiler needs without lattigo, are package heplan.
package he
