// Package lincost holds the exact communication formulas of package linear's OT-based products
// (MatMul, MulElem, Conv2D and its im2col form) and the choice between direct and im2col
// convolution, with the OT-layer constants they need, so that the compiler can plan layers from
// them without linking the protocols, the OT layer or the transport (as heplan does for HE).
// Package linear checks them against measured traffic.
package lincost

import "github.com/cryptflow-go/cryptflow/ring"

// Lambda is the computational security parameter of the OT layer (bits per OT instance sent by
// the receiver): ot.Lambda.
const Lambda = 128

// MaxWidth is the largest number of 64-bit words per OT instance of the OT layer (ot.MaxWidth):
// a W of more rows runs in blocks of rows.
const MaxWidth = 1 << 16

// MaxPadBits bounds the pad of one OT of Conv2D: 2^22 bits (512 KiB, as wide as the OT layer's
// widest message, MaxWidth words of 64 bits), which keeps the expander's scratch small and the
// block index below the tweak's 2^24 blocks.
const MaxPadBits = 1 << 22

// MatMulBits is the communication of linear's MatMul for W m×k and X k×n over Z_{2^l}, in bits, both
// directions together, without the per-batch constants of the OT layer (batch header,
// acknowledgement, frame headers) and without the one-time base OTs: k·n·l correlated OTs of
// m·(l+1)/2 bits on average, k·n·l·λ + k·n·m·l(l+1)/2. (A W of more than MaxWidth rows runs
// in blocks of rows, each with its own k·n·l OTs: the λ term is then multiplied by the number of
// blocks.) In the one-batch mode (linear.Options.OneBatch) add k·n·l flip bits per block.
func MatMulBits(m, k, n, l int) int64 {
	kn := int64(k) * int64(n)
	blocks := int64(max(1, (m+MaxWidth-1)/MaxWidth))
	return blocks*kn*int64(l)*Lambda + kn*int64(m)*int64(l*(l+1)/2)
}

// SharedMatMulTransposed reports whether linear's MatMulShared computes X·Y (X m×k, Y k×n, both
// shared) as (Yᵀ·Xᵀ)ᵀ: when that moves fewer bits (the OTs run on the entries of the right-hand
// factor, k·n of them against k·m).
func SharedMatMulTransposed(m, k, n, l int) bool {
	return MatMulBits(n, k, m, l) < MatMulBits(m, k, n, l)
}

// SharedMatMulBits is the communication of linear's MatMulShared on batch products of two shared
// matrices X (m×k) and Y (k×n), in bits, both directions together, with the same exclusions as
// MatMulBits: per product two cross terms, each a MatMul with one party's share as the private
// matrix (one with party 0 as the OT sender, one with party 1), in the cheaper orientation:
//
//	batch · 2 · min(MatMulBits(m, k, n, l), MatMulBits(n, k, m, l))
func SharedMatMulBits(batch, m, k, n, l int) int64 {
	if SharedMatMulTransposed(m, k, n, l) {
		m, n = n, m
	}
	return int64(batch) * 2 * MatMulBits(m, k, n, l)
}

// MulElemBits is the communication of linear's MulElem on n elements: n·l·λ + n·l(l+1)/2 bits.
func MulElemBits(n, l int) int64 { return MatMulBits(1, 1, n, l) }

// axisCover returns, for one spatial axis of n input positions, out output positions, kernel k,
// stride s, padding p and dilation d, how many (kernel offset, output position) pairs read each
// input position.
func axisCover(n, out, k, s, p, d int) []int32 {
	cnt := make([]int32, n)
	for kk := 0; kk < k; kk++ {
		for o := 0; o < out; o++ {
			if i := o*s - p + kk*d; i >= 0 && i < n {
				cnt[i]++
			}
		}
	}
	return cnt
}

// coverStats returns the number of positions read at least once, the total number of reads and
// the largest number of reads of one position.
func coverStats(cnt []int32) (touched, reads, most int) {
	for _, v := range cnt {
		if v > 0 {
			touched++
		}
		reads += int(v)
		most = max(most, int(v))
	}
	return
}

// planeCover returns, for one input plane (H×W), the number of positions that some window reads,
// the number of (kernel offset, output position) pairs that read an input position (the non-padding
// entries of one channel's im2col matrix) and the largest number of pairs reading one position.
// The window is separable, so each is a product of per-axis counts.
func planeCover(c ring.ConvGeom) (touched, nnz, most int) {
	th, nh, mh := coverStats(axisCover(c.H, c.OH, c.KH, c.SH, c.PH, c.DH))
	tw, nw, mw := coverStats(axisCover(c.W, c.OW, c.KW, c.SW, c.PW, c.DW))
	return th * tw, nh * nw, mh * mw
}

// ConvBits is the communication of linear's Conv2D over Z_{2^l} in bits, both directions together, without
// the OT layer's per-batch constants and the one-time base OTs. With t the input positions of a
// plane that some window reads and z the (kernel offset, output position) pairs that read an input
// position (the non-padding entries of one channel's im2col matrix):
//
//	N·C·t·l·(λ+1)  +  N·C·(M/Groups)·z·l(l+1)/2
//
// — one OT per bit of every read input element (λ bits from party 1 and one flip bit), and per
// element and bit i, l−i bits for each of the M/Groups output channels at each of the output
// positions it reaches. The second term is l(l+1)/2 bits per multiply-accumulate that does not
// touch padding. It is 0 for an invalid shape.
func ConvBits(c ring.ConvGeom, l int) int64 {
	if c.Validate() != nil {
		return 0
	}
	t, z, _ := planeCover(c)
	nc := int64(c.N) * int64(c.C)
	return nc*int64(t)*int64(l)*(Lambda+1) + nc*int64(c.M/c.Groups)*int64(z)*int64(l*(l+1)/2)
}

// ConvIm2colBits is the communication of the same convolution as one MatMul per group of the
// weights (M/Groups × C/Groups·KH·KW) with the im2col matrix (C/Groups·KH·KW × N·OH·OW, padding
// included): Groups·MatMulBits, plus one flip bit per OT in the one-batch mode. It is 0 for an
// invalid shape.
func ConvIm2colBits(c ring.ConvGeom, l int, oneBatch bool) int64 {
	if c.Validate() != nil {
		return 0
	}
	mg, kg, cols := c.M/c.Groups, c.C/c.Groups*c.KH*c.KW, c.N*c.OH*c.OW
	bits := int64(c.Groups) * MatMulBits(mg, kg, cols, l)
	if oneBatch {
		blocks := int64((mg + MaxWidth - 1) / MaxWidth)
		bits += int64(c.Groups) * blocks * int64(kg) * int64(cols) * int64(l)
	}
	return bits
}

// ConvDirectFor reports whether linear's Conv2D runs the convolution c over Z_{2^l} in the given
// mode with less communication than MatMul on its im2col matrix (ConvBits < ConvIm2colBits), as
// linear.Session.ConvDirect does. It is false for an invalid shape and for one whose widest
// element would need a pad of more than MaxPadBits (M/Groups times the positions it reaches
// times l).
func ConvDirectFor(c ring.ConvGeom, l int, oneBatch bool) bool {
	if c.Validate() != nil || l < 1 || l > 64 {
		return false
	}
	_, _, most := planeCover(c)
	if c.M/c.Groups*most*l > MaxPadBits {
		return false
	}
	return ConvBits(c, l) < ConvIm2colBits(c, l, oneBatch)
}
