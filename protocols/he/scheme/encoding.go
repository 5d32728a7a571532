package scheme

import (
	"math/big"
	"math/bits"

	lring "github.com/tuneinsight/lattigo/v6/ring"
)

// codec holds the constants of the exact encoding of Z_{2^l} into R_Q: m ↦ round(Q·m/t).
// With Q = A·t + B (A = floor(Q/t), B = Q mod t), round(Q·m/t) = A·m + round(B·m/t).
type codec struct {
	p      *Params
	aModQ  []uint64 // A mod q_i
	b      uint64   // Q mod t (t ≤ 2^46, so it fits)
	brc    [][2]uint64
	halfK  []uint64 // 2^(FloodBits-1) mod q_i
	fWords int      // 64-bit words of one flooding sample
	fTop   uint64   // mask of the sample's most significant word
	wide   *crt2    // the reply modulus of two primes (nil with one)
}

func newCodec(p *Params) *codec {
	c := &codec{p: p}
	Q := big.NewInt(1)
	for _, v := range p.Q {
		Q.Mul(Q, new(big.Int).SetUint64(v))
	}
	t := new(big.Int).Lsh(big.NewInt(1), uint(p.L))
	A, B := new(big.Int).QuoRem(Q, t, new(big.Int))
	c.b = B.Uint64()
	half := new(big.Int).Lsh(big.NewInt(1), uint(p.FloodBits-1))
	for _, q := range p.Q {
		bq := new(big.Int).SetUint64(q)
		c.aModQ = append(c.aModQ, new(big.Int).Mod(A, bq).Uint64())
		c.halfK = append(c.halfK, new(big.Int).Mod(half, bq).Uint64())
		c.brc = append(c.brc, lring.GenBRedConstant(q))
	}
	k := p.FloodBits
	c.fWords = (k + 63) / 64
	c.fTop = ^uint64(0) >> uint(64*c.fWords-k)
	if p.R == 2 {
		q0, q1 := p.Q[0], p.Q[1]
		inv := new(big.Int).ModInverse(new(big.Int).SetUint64(q0), new(big.Int).SetUint64(q1)).Uint64()
		qr := new(big.Int).Mul(new(big.Int).SetUint64(q0), new(big.Int).SetUint64(q1))
		c.wide = &crt2{q0: q0, q1: q1, q0inv: inv, qr: qr, halfQr: new(big.Int).Rsh(qr, 1)}
	}
	return c
}

// scaled returns round(B·m/t) for m < t.
func (c *codec) scaled(m uint64) uint64 {
	hi, lo := bits.Mul64(c.b, m)
	l := uint(c.p.L)
	lo, carry := bits.Add64(lo, 1<<(l-1), 0)
	hi += carry
	return hi<<(64-l) | lo>>l
}

// encodeAdd adds round(Q·m/t) to coefficient j of every residue of poly (coefficient domain).
func (c *codec) encodeAdd(poly lring.Poly, j int, m uint64) {
	r := c.scaled(m)
	for i, q := range c.p.Q {
		v := lring.BRed(c.aModQ[i], m%q, q, c.brc[i]) + r%q
		v += poly.Coeffs[i][j]
		v %= q
		poly.Coeffs[i][j] = v
	}
}

// setCentered sets coefficient j of poly to the centred lift of w ∈ Z_t (w − t when w ≥ t/2).
func (c *codec) setCentered(poly lring.Poly, j int, w uint64) {
	var res [maxPrimes]uint64
	c.centered(res[:len(c.p.Q)], w)
	for i, r := range res[:len(c.p.Q)] {
		poly.Coeffs[i][j] = r
	}
}

// centered sets res[i] to the centred lift of w ∈ Z_t modulo prime i.
func (c *codec) centered(res []uint64, w uint64) {
	l := uint(c.p.L)
	mask := ^uint64(0) >> (64 - l)
	w &= mask
	neg := w>>(l-1) == 1
	mag := w
	if neg {
		mag = (-w) & mask // t − w
	}
	for i, q := range c.p.Q {
		r := mag % q
		if neg && r != 0 {
			r = q - r
		}
		res[i] = r
	}
}

// addFlood adds to coefficient j of every residue a value f uniform in [-2^(k-1), 2^(k-1)) drawn
// from the fWords words w (most significant last).
func (c *codec) addFlood(poly lring.Poly, j int, w []uint64) {
	top := w[c.fWords-1] & c.fTop
	for i, q := range c.p.Q {
		r := top % q
		for k := c.fWords - 2; k >= 0; k-- {
			_, r = bits.Div64(r, w[k], q)
		}
		r += q - c.halfK[i]
		r += poly.Coeffs[i][j]
		poly.Coeffs[i][j] = r % q
	}
}

// decode returns round(t·v/q0) mod t for v < q0 (one reply prime, l ≤ 46).
func (c *codec) decode(v uint64) uint64 {
	q0 := c.p.Q[0]
	l := uint(c.p.L)
	hi, lo := v>>(64-l), v<<l
	lo, carry := bits.Add64(lo, q0>>1, 0)
	hi += carry
	quo, _ := bits.Div64(hi, lo, q0)
	return quo & (1<<l - 1)
}
