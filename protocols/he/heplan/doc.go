// Package heplan is the public side of the HE engine (package he): the RLWE parameters of each
// ring Z_{2^l} (ring degree, moduli, flooding and reply widths, sized by the worst-case noise
// bounds of docs/he.md), the packing of a matrix product or convolution into polynomials, and the
// exact cost of a call. Everything in it follows from public dimensions, so both parties and the
// compiler's engine planner derive the same values; it imports neither lattigo nor the network
// (the scheme package builds lattigo's rings on these parameters and checks that they agree).
package heplan
