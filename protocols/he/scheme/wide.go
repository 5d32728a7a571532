package scheme

import (
	"math/big"
	"math/bits"
)

// 128-bit helpers for replies modulo two primes (l > 46).

// shr128 is (hi:lo) >> d for d < 128.
func shr128(hi, lo uint64, d uint) (uint64, uint64) {
	switch {
	case d == 0:
		return hi, lo
	case d >= 64:
		return 0, hi >> (d - 64)
	}
	return hi >> d, lo>>d | hi<<(64-d)
}

// shl128 is (hi:lo) << d for d < 128 (bits shifted past 128 are lost).
func shl128(hi, lo uint64, d uint) (uint64, uint64) {
	switch {
	case d == 0:
		return hi, lo
	case d >= 64:
		return lo << (d - 64), 0
	}
	return hi<<d | lo>>(64-d), lo << d
}

// roundShift128 is round((hi:lo) / 2^d).
func roundShift128(hi, lo uint64, d int) (uint64, uint64) {
	if d == 0 {
		return hi, lo
	}
	h, l := shl128(0, 1, uint(d-1))
	var c uint64
	lo, c = bits.Add64(lo, l, 0)
	hi, _ = bits.Add64(hi, h, c)
	return shr128(hi, lo, uint(d))
}

// crt2 composes residues v0 mod q0 and v1 mod q1 into the value mod q0·q1 (below 2^128).
type crt2 struct {
	q0, q1, q0inv uint64 // q0^-1 mod q1
	qr, halfQr    *big.Int
}

func (c *crt2) compose(v0, v1 uint64) (hi, lo uint64) {
	d := v1 + c.q1 - v0%c.q1
	if d >= c.q1 {
		d -= c.q1
	}
	k := mulMod(d, c.q0inv, c.q1)
	hi, lo = bits.Mul64(c.q0, k)
	var carry uint64
	lo, carry = bits.Add64(lo, v0, 0)
	hi += carry
	return hi, lo
}

func mulMod(a, b, q uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	_, r := bits.Div64(hi%q, lo, q)
	return r
}

// mod128 is (hi:lo) mod q.
func mod128(hi, lo, q uint64) uint64 {
	_, r := bits.Div64(hi%q, lo, q)
	return r
}

// wideDecoder decodes a phase v < Qr (two primes) as round(t·v/Qr) mod t; its big integers are
// scratch reused across calls.
type wideDecoder struct {
	c    *crt2
	l    uint
	v, w big.Int
}

func (d *wideDecoder) decode(hi, lo uint64) uint64 {
	d.v.SetUint64(hi)
	d.v.Lsh(&d.v, 64)
	d.w.SetUint64(lo)
	d.v.Or(&d.v, &d.w)
	d.v.Lsh(&d.v, d.l)
	d.v.Add(&d.v, d.c.halfQr)
	d.v.Quo(&d.v, d.c.qr)
	d.w.SetUint64(1)
	d.w.Lsh(&d.w, d.l)
	d.v.Mod(&d.v, &d.w)
	return d.v.Uint64()
}
