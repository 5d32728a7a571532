package scheme

import (
	"fmt"

	lring "github.com/tuneinsight/lattigo/v6/ring"

	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
)

// monomials evaluates the NTT of sparse polynomials directly: lattigo's NTT maps X to a vector
// whose slot i is ψ^e_i for a primitive 2N-th root ψ of unity mod q and an odd exponent e_i, so
// X^c maps to ψ^(c·e_i mod 2N), and a polynomial with k non-zero coefficients maps to a sum of k
// table look-ups per slot: k·N products instead of the N/2·log2 N butterflies of an NTT. The
// results are the same residues as lattigo's NTT (TestSparseNTT).
type monomials struct {
	pow [][]uint64 // per prime: ψ^k in Montgomery form, k < 2N
	exp [][]uint32 // per prime: e_i of slot i
}

// sparseMaxTerms is the largest number of non-zero coefficients a weight polynomial may have to be
// transformed by monomials rather than by lattigo's NTT: the look-ups cost ≈ k/3 of an NTT on
// this project's machine (BenchmarkWeightTransform), so up to 2 terms they are clearly cheaper.
const sparseMaxTerms = heplan.SparseTerms

func newMonomials(rq *lring.Ring) (*monomials, error) {
	n := rq.N()
	x := rq.NewPoly()
	for i := range x.Coeffs {
		x.Coeffs[i][1] = 1
	}
	rq.NTT(x, x)
	m := &monomials{}
	for i, s := range rq.SubRings {
		q := s.Modulus
		v := x.Coeffs[i]
		psi := v[0] % q
		pow := make([]uint64, 2*n)
		log := make(map[uint64]uint32, 2*n)
		cur := uint64(1)
		for k := range pow {
			if _, dup := log[cur]; dup {
				return nil, fmt.Errorf("scheme: NTT of X has slot 0 of order below 2N mod %d", q)
			}
			log[cur] = uint32(k)
			pow[k] = lring.MForm(cur, q, s.BRedConstant)
			cur = mulModQ(cur, psi, q)
		}
		if cur != 1 {
			return nil, fmt.Errorf("scheme: NTT of X has slot 0 of order above 2N mod %d", q)
		}
		exp := make([]uint32, n)
		for j := range exp {
			e, ok := log[v[j]%q]
			if !ok {
				return nil, fmt.Errorf("scheme: NTT of X has slot %d outside the powers of slot 0 mod %d", j, q)
			}
			exp[j] = e
		}
		m.pow = append(m.pow, pow)
		m.exp = append(m.exp, exp)
	}
	return m, nil
}

// mulModQ is a·b mod q.
func mulModQ(a, b, q uint64) uint64 { return mulMod(a, b, q) }

// encode sets dst (NTT domain, Montgomery form, every residue below its prime) to the transform of
// Σ_j X^coef[j]·v_j, where v_j has residue vals[j*L+i] mod prime i in Montgomery form.
func (m *monomials) encode(rq *lring.Ring, dst lring.Poly, coef []int32, vals []uint64) {
	L := len(m.pow)
	mask := uint32(2*rq.N() - 1)
	for i, s := range rq.SubRings[:L] {
		q, mrc := s.Modulus, s.MRedConstant
		pow, exp, out := m.pow[i], m.exp[i], dst.Coeffs[i]
		switch len(coef) {
		case 0:
			clear(out)
		case 1:
			c, v := uint32(coef[0]), vals[i]
			for j, e := range exp {
				out[j] = lring.MRed(v, pow[(c*e)&mask], q, mrc)
			}
		default:
			c0, v0 := uint32(coef[0]), vals[i]
			for j, e := range exp {
				out[j] = lring.MRed(v0, pow[(c0*e)&mask], q, mrc)
			}
			for t := 1; t < len(coef); t++ {
				c, v := uint32(coef[t]), vals[t*L+i]
				for j, e := range exp {
					r := out[j] + lring.MRed(v, pow[(c*e)&mask], q, mrc)
					if r >= q {
						r -= q
					}
					out[j] = r
				}
			}
		}
	}
}
