package scheme

import (
	"errors"
	"fmt"

	lring "github.com/tuneinsight/lattigo/v6/ring"
)

// Decryptor is party 1's decryption of replies: its secret key and scratch. One per goroutine.
type Decryptor struct {
	p      *Params
	sk     *SecretKey
	c1, cs lring.Poly
	wd     wideDecoder
}

// NewDecryptor returns a decryptor under sk.
func NewDecryptor(p *Params, sk *SecretKey) *Decryptor {
	return &Decryptor{p: p, sk: sk, c1: p.rr.NewPoly(), cs: p.rr.NewPoly(), wd: wideDecoder{c: p.cd.wide, l: uint(p.L)}}
}

// Decrypt decrypts a reply (Evaluator.Finish) that carries the coefficients need and calls
// emit(i, res, hi, lo) with needed coefficient i's result res = round(t·v/Qr) mod t and its phase
// v = c0 + c1·s mod Qr = hi·2^64 + lo.
func (d *Decryptor) Decrypt(reply []byte, need []int32, emit func(i int, res, hi, lo uint64)) error {
	p := d.p
	if len(reply) != p.ReplyBytes(len(need)) {
		return fmt.Errorf("reply of %d bytes, want %d", len(reply), p.ReplyBytes(len(need)))
	}
	r := bitReader{buf: reply}
	if p.R == 2 {
		d.decryptWide(&r, need, emit)
	} else {
		q0 := p.Q[0]
		c1 := d.c1.Coeffs[0]
		for j := range c1 {
			v := r.get(p.W1) << p.Drop1
			if v >= q0 {
				v -= q0
			}
			c1[j] = v
		}
		p.rr.NTT(d.c1, d.c1)
		p.rr.MulCoeffsMontgomery(d.c1, d.sk.sk.Value.Q, d.cs)
		p.rr.INTT(d.cs, d.cs)
		cs := d.cs.Coeffs[0]
		for i, pos := range need {
			v := r.get(p.W0) << p.Drop0
			if v >= q0 {
				v -= q0
			}
			v += cs[pos]
			if v >= q0 {
				v -= q0
			}
			emit(i, p.cd.decode(v), 0, v)
		}
	}
	if r.over {
		return errors.New("short reply")
	}
	return nil
}

// decryptWide is Decrypt's body for a reply modulus of two primes.
func (d *Decryptor) decryptWide(r *bitReader, need []int32, emit func(i int, res, hi, lo uint64)) {
	p := d.p
	q0, q1 := p.Q[0], p.Q[1]
	get := func(w, drop int) (uint64, uint64) {
		lo := r.get(min(w, 64))
		var hi uint64
		if w > 64 {
			hi = r.get(w - 64)
		}
		hi, lo = shl128(hi, lo, uint(drop))
		return mod128(hi, lo, q0), mod128(hi, lo, q1)
	}
	for j := range d.c1.Coeffs[0] {
		d.c1.Coeffs[0][j], d.c1.Coeffs[1][j] = get(p.W1, p.Drop1)
	}
	p.rr.NTT(d.c1, d.c1)
	p.rr.MulCoeffsMontgomery(d.c1, d.sk.sk.Value.Q, d.cs)
	p.rr.INTT(d.cs, d.cs)
	for i, pos := range need {
		v0, v1 := get(p.W0, p.Drop0)
		v0 = (v0 + d.cs.Coeffs[0][pos]) % q0
		v1 = (v1 + d.cs.Coeffs[1][pos]) % q1
		hi, lo := p.cd.wide.compose(v0, v1)
		emit(i, d.wd.decode(hi, lo), hi, lo)
	}
}
