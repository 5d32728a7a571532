package scheme

import (
	"fmt"

	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	lring "github.com/tuneinsight/lattigo/v6/ring"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// Evaluator is party 0's evaluation state: party 1's public key, a private randomness source for
// masks, re-randomisation and flooding, and scratch polynomials. One per goroutine.
type Evaluator struct {
	p         *Params
	pk        *PublicKey
	rnd       *prg.PRG
	ts, gs    lring.Sampler
	u, e, buf lring.Poly
	words     []uint64
}

// NewEvaluator returns an evaluator for replies under pk, with randomness from crypto/rand.
func NewEvaluator(p *Params, pk *PublicKey) (*Evaluator, error) {
	rnd, err := prg.NewRandom()
	if err != nil {
		return nil, fmt.Errorf("scheme: evaluator: %w", err)
	}
	ts, err := lring.NewSampler(rnd, p.rq, lring.Ternary{P: 2.0 / 3}, false)
	if err != nil {
		return nil, fmt.Errorf("scheme: ternary sampler: %w", err)
	}
	gs, err := lring.NewSampler(rnd, p.rq, rlwe.DefaultXe, false)
	if err != nil {
		return nil, fmt.Errorf("scheme: gaussian sampler: %w", err)
	}
	return &Evaluator{p: p, pk: pk, rnd: rnd, ts: ts, gs: gs, u: p.rq.NewPoly(), e: p.rq.NewPoly(), buf: p.rq.NewPoly(),
		words: make([]uint64, p.cd.fWords*p.N())}, nil
}

// AddShare adds round(Q·m/t) to ct's c0, where m has coefficient coef[j] = x[src[j]] mod t (the
// others 0): party 0 adds its own share of a block to party 1's encryption of the other.
func (ev *Evaluator) AddShare(ct *Ciphertext, coef, src []int32, x []uint64) {
	p := ev.p
	pt := ev.buf
	pt.Zero()
	mask := ^uint64(0) >> (64 - p.L)
	for j, c := range coef {
		p.cd.encodeAdd(pt, int(c), x[src[j]]&mask)
	}
	p.rq.NTT(pt, pt)
	p.rq.Add(ct.c0, pt, ct.c0)
}

// MulAdd adds ct·pt to acc.
func (ev *Evaluator) MulAdd(acc, ct *Ciphertext, pt *Plaintext) {
	rq := ev.p.rq
	rq.MulCoeffsMontgomeryThenAdd(ct.c0, pt.poly, acc.c0)
	rq.MulCoeffsMontgomeryThenAdd(ct.c1, pt.poly, acc.c1)
}

// Finish turns the product acc into a reply, appended to dst: it subtracts a uniform mask r at
// the needed coefficients need (mask[i] receives the r of need[i]: party 0's share), adds an
// encryption of zero under the public key, floods c0, switches to the reply modulus and packs c1
// and the needed coefficients of c0 without their low bits. acc is consumed (left switched).
func (ev *Evaluator) Finish(dst []byte, acc *Ciphertext, need []int32, mask []uint64) []byte {
	p := ev.p
	rq := p.rq
	cd := p.cd
	c0, c1 := acc.c0, acc.c1
	// Re-randomisation: + (u·p0 + e0, u·p1 + e1), u·p in the NTT domain, the rest in the
	// coefficient domain, where the modulus switching needs no further transform.
	ev.ts.Read(ev.u)
	rq.NTT(ev.u, ev.u)
	rq.MForm(ev.u, ev.u)
	rq.MulCoeffsMontgomeryThenAdd(ev.u, ev.pk.p0, c0)
	rq.MulCoeffsMontgomeryThenAdd(ev.u, ev.pk.p1, c1)
	rq.INTT(c0, c0)
	rq.INTT(c1, c1)
	ev.gs.Read(ev.e)
	rq.Add(c1, ev.e, c1)
	// e0 + Δ·(−r) + flood.
	ev.gs.Read(ev.e)
	tmask := ^uint64(0) >> (64 - p.L)
	ev.rnd.Uint64s(ev.words[:len(need)])
	for i, pos := range need {
		r := ev.words[i] & tmask
		mask[i] = r
		cd.encodeAdd(ev.e, int(pos), (-r)&tmask)
	}
	ev.rnd.Uint64s(ev.words)
	fw := cd.fWords
	for j := 0; j < p.N(); j++ {
		cd.addFlood(ev.e, j, ev.words[fw*j:fw*j+fw])
	}
	rq.Add(c0, ev.e, c0)
	// Modulus switching to the reply modulus: round(c·Qr/Q), one prime at a time.
	for lvl := len(p.Q) - 1; lvl >= p.R; lvl-- {
		r := rq.AtLevel(lvl)
		r.DivRoundByLastModulus(c0, c0)
		r.DivRoundByLastModulus(c1, c1)
	}
	bw := bitWriter{buf: dst}
	if p.R == 1 {
		for _, v := range c1.Coeffs[0] {
			bw.put(roundShift(v, p.Drop1), p.W1)
		}
		for _, pos := range need {
			bw.put(roundShift(c0.Coeffs[0][pos], p.Drop0), p.W0)
		}
		return bw.bytes()
	}
	put := func(v0, v1 uint64, d, w int) {
		hi, lo := cd.wide.compose(v0, v1)
		hi, lo = roundShift128(hi, lo, d)
		bw.put(lo, min(w, 64))
		if w > 64 {
			bw.put(hi, w-64)
		}
	}
	for j, v := range c1.Coeffs[0] {
		put(v, c1.Coeffs[1][j], p.Drop1, p.W1)
	}
	for _, pos := range need {
		put(c0.Coeffs[0][pos], c0.Coeffs[1][pos], p.Drop0, p.W0)
	}
	return bw.bytes()
}

// roundShift is round(c / 2^d) = (c + 2^(d-1)) >> d (c itself for d = 0).
func roundShift(c uint64, d int) uint64 {
	if d == 0 {
		return c
	}
	return (c + 1<<(d-1)) >> d
}
