// Package iknp is the IKNP OT source: an ot.Core of 128-bit correlated OTs made by the IKNP
// extension (Ishai, Kilian, Nissim, Petrank, "Extending oblivious transfers efficiently",
// CRYPTO 2003) from 128 Chou–Orlandi base OTs per direction, with the receiver choosing its
// bits in the extension matrix (ot.ChosenCore), KK13 1-out-of-N OT (Kolesnikov–Kumaresan,
// ot.OTNCore) and forks that share the base OTs (ot.Forker).
//
// [NewSession] runs the handshake and base OTs on a connection and returns the *ot.Session that
// derives every OT kind from this core; the package documentation of ot describes the session's
// calls, traffic and security. The 128×128 bit transposes of the extension have an AVX-512
// version on amd64 (build tag purego selects the portable one).
package iknp
