package nonlinear

import "math/bits"

// Communication formulas, in bits per element with λ = 128, excluding the
// one-time base OTs and the per-batch constants of the OT layer (headers,
// acknowledgements, frame headers). Tests assert measured traffic against
// them, and against the paper's published numbers.

const lambda = 128

// otnBits is one KK13 (N choose 1)-OT_l: 2λ + N·l.
func otnBits(N, l int) int { return 2*lambda + N*l }

// cotBits is one correlated OT_l: λ + l.
func cotBits(l int) int { return lambda + l }

// treeBits is the communication of one comparison with the given digit
// widths and combination tree: digit 0 is a (2^w choose 1)-OT_1, every other
// digit a (2^w choose 1)-OT_2; a combination involving digit 0 is one AND
// with a regular triple (half a (16 choose 1)-OT_2 plus 4 bits), any other
// two ANDs with a correlated pair (an (8 choose 1)-OT_2 plus 6 bits).
func treeBits(widths []int, levels [][]treeOp) int {
	t := 0
	for j, w := range widths {
		if j == 0 {
			t += otnBits(1<<w, 1)
		} else {
			t += otnBits(1<<w, 2)
		}
	}
	for _, ops := range levels {
		for _, op := range ops {
			switch {
			case op.hi < 0:
			case op.lo == 0:
				t += otnBits(16, 2)/2 + 4
			default:
				t += otnBits(8, 2) + 6
			}
		}
	}
	return t
}

// MillionairesBits is the communication of one comparison of b-bit values
// with leaf width m. For q = ⌈b/m⌉ ≥ 2 digits it equals CrypTFlow2 §3.1.2's
// λ(4q−L−2) + M(2q−3) + 2R + 22(q−1) − 2L with L = ⌈log2 q⌉, M = 2^m,
// R = 2^(b−(q−1)m); for q = 1 it is one (2^b choose 1)-OT_1.
func MillionairesBits(b, m int) int {
	if b <= 0 {
		return 0
	}
	g := newMillGroup(nil, b, m, true)
	return treeBits(g.widths, g.levels)
}

// paperMillionairesBits is §3.1.2's closed form (q ≥ 2).
func paperMillionairesBits(b, m int) int {
	q := (b + m - 1) / m
	r := b - (q-1)*m
	L := bits.Len(uint(q - 1))
	M, R := 1<<m, 1<<r
	return lambda*(4*q-L-2) + M*(2*q-3) + 2*R + 22*(q-1) - 2*L
}

// splitMillionairesBits is the communication of the l-bit comparison of
// truncation by s, whose tree yields the comparison of the low s bits too.
func splitMillionairesBits(l, s, m int) int {
	g := newSplitGroup(nil, l, s, m, true)
	return treeBits(g.widths, g.levels)
}

// ReLUBits is the communication of ReLU over Z_2^l: DReLU (a millionaires'
// of l−1 bits) and a MUX of two COT_l.
func ReLUBits(l, m int) int { return MillionairesBits(l-1, m) + 2*cotBits(l) }

// ReLULowBits is the communication of ReLULow over Z_2^l for b-bit
// operands: DReLU on the low b bits (a millionaires' of b−1 bits) and the
// MUX of two COT_l. ReLULowBits(l, l, m) = ReLUBits(l, m).
func ReLULowBits(b, l, m int) int { return MillionairesBits(b-1, m) + 2*cotBits(l) }

// ReLUTruncBits is the communication of ReLUTrunc over Z_2^l for b-bit operands and a shift by
// s: the DReLU's millionaires' of b−1 bits split at s (its tree also compares the low s bits) and
// two (4 choose 1)-OT_l.
func ReLUTruncBits(b, l, s, m int) int {
	g := newShallowSplitGroup(nil, b-1, s, m, true)
	return treeBits(g.widths, g.levels) + 2*otnBits(4, l)
}

// TruncBits is the communication of Trunc by 0 < s < l: an l-bit
// millionaires' whose tree also compares the low s bits, and two B2A (of
// s and l bits). With knownNonNeg: a millionaires' of s bits, a B2A and a
// COT_s.
func TruncBits(l, s, m int, knownNonNeg bool) int {
	if knownNonNeg {
		return MillionairesBits(s, m) + cotBits(l) + cotBits(s)
	}
	return splitMillionairesBits(l, s, m) + cotBits(l) + cotBits(s)
}

// PaperTruncBits is the communication of Alg. 5 as published (Options.
// PaperTrunc): DReLU, a (4 choose 1)-OT_l, a millionaires' of s bits and a
// B2A.
func PaperTruncBits(l, s, m int) int {
	return MillionairesBits(l-1, m) + otnBits(4, l) + MillionairesBits(s, m) + cotBits(l)
}

// divDelta is δ = ⌈log2(6d)⌉ of Alg. 9.
func divDelta(d uint64) int {
	hi, lo := bits.Mul64(d, 6)
	if hi != 0 {
		return 64 + bits.Len64(hi)
	}
	return bits.Len64(lo - 1)
}

// DivBits is the communication of division by a d that is not a power of
// two: DReLU over l bits, a (4 choose 1)-OT of max(l, δ) bits for the wrap
// correction in Z_2^l and Z_2^δ, three comparisons of δ−1 bits (the three
// DReLUs over δ bits), and three B2A.
func DivBits(l int, d uint64, m int) int {
	delta := divDelta(d)
	return MillionairesBits(l-1, m) + otnBits(4, max(l, delta)) + 3*MillionairesBits(delta-1, m) + 3*cotBits(l)
}

// Published communication (CrypTFlow2, bits per element, λ = 128).
const (
	PaperMillionaires32M4 = 3844 // Table 1, l = 32, m = 4
	PaperMillionaires32M7 = 2930 // Table 1, l = 32, m = 7
	PaperReLU32M7         = 3298 // Table 2, l = 32, m = 7
	PaperTrunc32S12M7     = 4310 // §4.2.1, l = 32, s = 12, m = 7
	PaperAvgPool49L32M8   = 5570 // Table 3 / App. D, l = 32, d = 49, m = 8
)
