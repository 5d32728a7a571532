package scheme

import (
	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	lring "github.com/tuneinsight/lattigo/v6/ring"
)

// SecretKey is party 1's secret key: a ternary s in the NTT domain, Montgomery form.
type SecretKey struct {
	sk *rlwe.SecretKey
}

// GenSecretKey draws a secret key (from crypto/rand).
func GenSecretKey(p *Params) *SecretKey {
	return &SecretKey{sk: rlwe.NewKeyGenerator(p.rl).GenSecretKeyNew()}
}

// PublicKey is an encryption of zero under party 1's secret key, (p0, p1) = (−a·s + e, a), in the
// NTT domain and normal form. Party 1 sends it as an upload (Encryptor.Encrypt of no coefficients);
// party 0 re-randomises its replies with it.
type PublicKey struct {
	p0, p1 lring.Poly
}

// DecodePublicKey reads a public key sent in the upload format.
func (p *Params) DecodePublicKey(buf []byte) (*PublicKey, error) {
	ct := p.NewCiphertext()
	if err := p.DecodeUpload(buf, ct); err != nil {
		return nil, err
	}
	return &PublicKey{p0: ct.c0, p1: ct.c1}, nil
}
