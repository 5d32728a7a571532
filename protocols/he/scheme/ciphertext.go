package scheme

import (
	"errors"
	"fmt"

	lring "github.com/tuneinsight/lattigo/v6/ring"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// Ciphertext is an RLWE ciphertext (c0, c1) at the full modulus Q in the NTT domain.
type Ciphertext struct {
	c0, c1 lring.Poly
}

// NewCiphertext returns a zero ciphertext.
func (p *Params) NewCiphertext() *Ciphertext {
	return &Ciphertext{c0: p.rq.NewPoly(), c1: p.rq.NewPoly()}
}

// Zero sets c to zero.
func (c *Ciphertext) Zero() {
	c.c0.Zero()
	c.c1.Zero()
}

// Plaintext is a polynomial of weights in Z_t, lifted centred to R_Q, in the NTT domain and
// Montgomery form: the operand of Evaluator.MulAdd.
type Plaintext struct {
	poly lring.Poly
}

// NewPlaintext returns a zero plaintext.
func (p *Params) NewPlaintext() *Plaintext { return &Plaintext{poly: p.rq.NewPoly()} }

// EncodeWeights sets pt to Σ_j w[elem[j]]·X^coef[j], each weight taken in Z_t and lifted to
// (−t/2, t/2].
//
// A polynomial of at most sparseMaxTerms terms is transformed by table look-ups (monomials), the
// others by lattigo's NTT; both give the same residues.
func (p *Params) EncodeWeights(pt *Plaintext, coef, elem []int32, w []uint64) {
	dst := pt.poly
	if len(coef) <= sparseMaxTerms {
		var vals [sparseMaxTerms * maxPrimes]uint64
		L := len(p.Q)
		for j := range coef {
			p.cd.centered(vals[j*L:j*L+L], w[elem[j]])
			for k, q := range p.Q {
				vals[j*L+k] = lring.MForm(vals[j*L+k], q, p.cd.brc[k])
			}
		}
		p.mono.encode(p.rq, dst, coef, vals[:])
		return
	}
	p.encodeWeightsNTT(pt, coef, elem, w)
}

// encodeWeightsNTT is EncodeWeights by lattigo's NTT, whatever the number of terms.
func (p *Params) encodeWeightsNTT(pt *Plaintext, coef, elem []int32, w []uint64) {
	dst := pt.poly
	dst.Zero()
	for j, c := range coef {
		p.cd.setCentered(dst, int(c), w[elem[j]])
		// Montgomery form on the non-zero coefficients only: the NTT is linear.
		for k, q := range p.Q {
			dst.Coeffs[k][c] = lring.MForm(dst.Coeffs[k][c], q, p.cd.brc[k])
		}
	}
	p.rq.NTT(dst, dst)
}

// The upload format: a 16-byte seed from which c1 is expanded, then c0 (NTT domain), every
// residue at the bit width of its prime, least significant bit first.

// appendUpload appends seed and c0 to dst.
func (p *Params) appendUpload(dst []byte, seed prg.Seed, c0 lring.Poly) []byte {
	w := bitWriter{buf: append(dst, seed[:]...)}
	for i, b := range p.QBits {
		for _, v := range c0.Coeffs[i] {
			w.put(v, b)
		}
	}
	return w.bytes()
}

// DecodeUpload reads an upload into ct, expanding c1 from its seed.
func (p *Params) DecodeUpload(buf []byte, ct *Ciphertext) error {
	if len(buf) != p.UploadBytes() {
		return fmt.Errorf("ciphertext of %d bytes, want %d", len(buf), p.UploadBytes())
	}
	var seed prg.Seed
	copy(seed[:], buf)
	r := bitReader{buf: buf[prg.SeedSize:]}
	for i, b := range p.QBits {
		q := p.Q[i]
		c0 := ct.c0.Coeffs[i]
		for j := range c0 {
			v := r.get(b)
			if v >= q {
				return errors.New("ciphertext coefficient out of range")
			}
			c0[j] = v
		}
	}
	lring.NewUniformSampler(prg.New(seed), p.rq).Read(ct.c1)
	return nil
}
