package scheme

import (
	"fmt"

	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	lring "github.com/tuneinsight/lattigo/v6/ring"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// Encryptor is party 1's encryption state: its secret key, a private randomness source and
// scratch polynomials. One per goroutine.
type Encryptor struct {
	p     *Params
	sk    *SecretKey
	rnd   *prg.PRG
	gs    lring.Sampler
	e, c0 lring.Poly
	c1    lring.Poly
}

// NewEncryptor returns an encryptor under sk with randomness from crypto/rand.
func NewEncryptor(p *Params, sk *SecretKey) (*Encryptor, error) {
	rnd, err := prg.NewRandom()
	if err != nil {
		return nil, fmt.Errorf("scheme: encryptor: %w", err)
	}
	gs, err := lring.NewSampler(rnd, p.rq, rlwe.DefaultXe, false)
	if err != nil {
		return nil, fmt.Errorf("scheme: gaussian sampler: %w", err)
	}
	return &Encryptor{p: p, sk: sk, rnd: rnd, gs: gs, e: p.rq.NewPoly(), c0: p.rq.NewPoly(), c1: p.rq.NewPoly()}, nil
}

// Encrypt appends to dst the upload of a fresh symmetric encryption of the message whose
// coefficient coef[j] is x[src[j]] mod t (the others 0): (c0, c1) = (−c1·s + e + round(Q·m/t),
// c1), c1 expanded from a fresh seed. With no coefficients it is an encryption of zero, party 1's
// public key.
func (en *Encryptor) Encrypt(dst []byte, coef, src []int32, x []uint64) []byte {
	seed := en.rnd.Seed()
	en.encrypt(seed, coef, src, x)
	return en.p.appendUpload(dst, seed, en.c0)
}

// encrypt sets en.c0 to the encryption's c0 (NTT domain) with c1 expanded from seed.
func (en *Encryptor) encrypt(seed prg.Seed, coef, src []int32, x []uint64) {
	rq := en.p.rq
	lring.NewUniformSampler(prg.New(seed), rq).Read(en.c1)
	en.gs.Read(en.e)
	mask := ^uint64(0) >> (64 - en.p.L)
	for j, c := range coef {
		en.p.cd.encodeAdd(en.e, int(c), x[src[j]]&mask)
	}
	rq.NTT(en.e, en.e)
	rq.MulCoeffsMontgomery(en.c1, en.sk.sk.Value.Q, en.c0)
	rq.Sub(en.e, en.c0, en.c0)
}
