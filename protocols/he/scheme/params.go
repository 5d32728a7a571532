package scheme

import (
	"fmt"
	"math/bits"

	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	lring "github.com/tuneinsight/lattigo/v6/ring"

	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
)

// Params are heplan's parameters with lattigo's rings built on them.
type Params struct {
	heplan.Params
	rl     rlwe.Parameters
	rq, rr *lring.Ring // the ring at Q and at the reply modulus
	cd     *codec
	mono   *monomials
}

// maxPrimes bounds the number of primes of Q (ParamsFor uses at most 6).
const maxPrimes = 8

// NewParams builds lattigo's rings for the parameters hp (which it copies). It fails if lattigo
// rejects the moduli (a prime that is not NTT-friendly for the ring degree) or if hp is
// inconsistent.
func NewParams(hp *heplan.Params) (*Params, error) {
	if hp.R < 1 || hp.R > 2 || hp.R > len(hp.Q) || len(hp.QBits) != len(hp.Q) {
		return nil, fmt.Errorf("scheme: parameters with %d primes, %d reply primes and %d widths", len(hp.Q), hp.R, len(hp.QBits))
	}
	for i, q := range hp.Q {
		if bits.Len64(q) != hp.QBits[i] {
			return nil, fmt.Errorf("scheme: prime %d has %d bits, the parameters say %d", q, bits.Len64(q), hp.QBits[i])
		}
		if hp.QBits[i] > 60 {
			// Accumulator sums foldEvery products below q² < 2^120 in 128 bits.
			return nil, fmt.Errorf("scheme: prime %d has %d bits, at most 60 supported", q, hp.QBits[i])
		}
	}
	if len(hp.Q) > maxPrimes {
		return nil, fmt.Errorf("scheme: %d primes, at most %d supported", len(hp.Q), maxPrimes)
	}
	if hp.L < 1 || hp.L > 64 || hp.FloodBits < 1 || hp.FloodBits > 192 || hp.W0 > 128 || hp.W1 > 128 {
		return nil, fmt.Errorf("scheme: parameters out of range: %v", hp)
	}
	p := &Params{Params: *hp.Clone()}
	var err error
	p.rl, err = rlwe.NewParametersFromLiteral(rlwe.ParametersLiteral{LogN: hp.LogN, Q: hp.Q, NTTFlag: true})
	if err != nil {
		return nil, fmt.Errorf("scheme: lattigo parameters: %w", err)
	}
	p.rq = p.rl.RingQ()
	p.rr = p.rq.AtLevel(hp.R - 1)
	p.cd = newCodec(p)
	if p.mono, err = newMonomials(p.rq); err != nil {
		return nil, err
	}
	return p, nil
}

// ParamsFor is NewParams of heplan.ParamsFor(l).
func ParamsFor(l int) (*Params, error) {
	hp, err := heplan.ParamsFor(l)
	if err != nil {
		return nil, err
	}
	return NewParams(hp)
}
