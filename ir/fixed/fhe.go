package fixed

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"

	"github.com/cryptflow-go/cryptflow/ring"
)

// FHEParams are the encryption parameters of a program compiled for the non-interactive fhe mode
// (athosc --backend fhe): BGV over the cyclotomic ring of degree 2^LogN, one plaintext prime per
// CRT component (T, product = Program.Modulus), the ciphertext modulus chain Q (bit sizes, q_0
// first) and the key-switching modulus P. Both parties derive the same primes from these sizes
// (lattigo's deterministic NTT-friendly prime generator), so the bit sizes are all the file needs.
// They are public and part of the program ID (metadata).
type FHEParams struct {
	LogN     int      `json:"log_n"`
	T        []uint64 `json:"t"`         // the CRT plaintext primes, each ≡ 1 mod 2N
	LogQ     []int    `json:"log_q"`     // the ciphertext modulus chain, q_0 first
	LogP     []int    `json:"log_p"`     // the key-switching primes
	Depth    int      `json:"depth"`     // multiplicative levels the program consumes (FHEDepth)
	OutLevel int      `json:"out_level"` // the level the result is returned at (its modulus holds the flooding)
	Security string   `json:"security"`  // where the (LogN, log QP) pair's security comes from
}

func (f *FHEParams) clone() *FHEParams {
	if f == nil {
		return nil
	}
	c := *f
	c.T, c.LogQ, c.LogP = slices.Clone(f.T), slices.Clone(f.LogQ), slices.Clone(f.LogP)
	return &c
}

// LogQP is the total bit size of the ciphertext and key-switching moduli.
func (f *FHEParams) LogQP() int {
	n := 0
	for _, v := range f.LogQ {
		n += v
	}
	for _, v := range f.LogP {
		n += v
	}
	return n
}

func (f *FHEParams) String() string {
	t := make([]string, len(f.T))
	for i, v := range f.T {
		t[i] = fmt.Sprint(v)
	}
	return fmt.Sprintf("BGV N=2^%d, log QP=%d (Q %v, P %v), t = %s, depth %d, result at level %d (%s)",
		f.LogN, f.LogQP(), f.LogQ, f.LogP, strings.Join(t, "·"), f.Depth, f.OutLevel, f.Security)
}

// Ring returns the program's ring: Z_{2^Bits}, or Z_Modulus.
func (p *Program) Ring() (ring.Ring, error) {
	if p.Modulus != 0 {
		return ring.NewMod(p.Modulus)
	}
	return ring.New(p.Bits)
}

func (p *Program) ringName() string {
	if p.Modulus != 0 {
		return fmt.Sprintf("Z_%d (%d bits)", p.Modulus, p.Bits)
	}
	return fmt.Sprintf("Z_2^%d", p.Bits)
}

// checkModulus checks the Z_n fields: an odd modulus of Bits bits equal to the product of the
// FHE plaintext primes (when the parameters are given), and no FHE parameters without it.
func (p *Program) checkModulus() error {
	if p.Modulus == 0 {
		if p.FHE != nil {
			return fmt.Errorf("fhe parameters on a program over Z_2^%d (the fhe mode computes mod the CRT product)", p.Bits)
		}
		return nil
	}
	if p.Modulus < 3 || p.Modulus&1 == 0 || bits.Len64(p.Modulus) != p.Bits {
		return fmt.Errorf("ring Z_%d: the modulus must be odd, at least 3 and %d bits long", p.Modulus, p.Bits)
	}
	if p.FHE == nil {
		return nil
	}
	f := p.FHE
	if len(f.T) == 0 || len(f.LogQ) < 2 || len(f.LogP) == 0 || f.LogN < 10 || f.LogN > 17 {
		return fmt.Errorf("fhe parameters %s are incomplete", f)
	}
	prod := uint64(1)
	for _, t := range f.T {
		hi, lo := bits.Mul64(prod, t)
		if hi != 0 {
			return fmt.Errorf("fhe: the product of the plaintext primes %v does not fit 64 bits", f.T)
		}
		if t%(2<<uint(f.LogN)) != 1 {
			return fmt.Errorf("fhe: plaintext modulus %d is not 1 mod 2N = 2^%d", t, f.LogN+1)
		}
		prod = lo
	}
	if prod != p.Modulus {
		return fmt.Errorf("fhe: the plaintext primes multiply to %d, the ring is Z_%d", prod, p.Modulus)
	}
	if f.Depth < 0 || f.OutLevel < 0 || f.Depth+f.OutLevel+1 > len(f.LogQ) {
		return fmt.Errorf("fhe: depth %d and result level %d need %d ciphertext primes, the chain has %d",
			f.Depth, f.OutLevel, f.Depth+f.OutLevel+1, len(f.LogQ))
	}
	return nil
}

// Polynomial reports whether op is computed by the fhe mode: additions, products with constants,
// products of two runtime tensors, and data movement. Truncation, ReLU, max, division and argmax
// are not polynomials over the plaintext ring.
func (o Opcode) Polynomial() bool {
	switch o {
	case OpTrunc, OpReLU, OpMaxPool, OpDiv, OpArgMax:
		return false
	}
	return true
}

// NonPolynomial returns the model nodes (instruction sources) of every instruction the fhe mode
// cannot compute, each once, in program order.
func (p *Program) NonPolynomial() []string {
	var out []string
	for _, in := range p.Instrs {
		if in.Op.Polynomial() {
			continue
		}
		s := fmt.Sprintf("%s (%s)", in.Source, in.Op)
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// FHEDepth returns the multiplicative depth of the program under the fhe mode's evaluation rule,
// which the compiler sizes the modulus chain with and the evaluator (vm/fhe) never exceeds:
// linear operations are composed lazily into one affine map of the ciphertexts they read, and
// that map is applied (one plaintext-multiplication level, unless it is the identity up to a scalar
// and a constant) only when a product of two runtime tensors or an output needs its value; the
// product itself takes one level. A block-circulant matmul evaluated in the frequency domain
// (FrequencyDomain) applies two maps at once and leaves the third lazy: two more levels.
// Reshape, scale-up, constant addition and the addition of same-shaped tensors keep a map
// trivial; every other linear operation makes it non-trivial. A non-polynomial instruction is an
// error naming it.
func (p *Program) FHEDepth() (int, error) {
	if bad := p.NonPolynomial(); len(bad) > 0 {
		return 0, fmt.Errorf("the fhe mode computes only polynomials; not polynomial: %s", strings.Join(bad, ", "))
	}
	level := make([]int, len(p.Tensors))
	lin := make([]bool, len(p.Tensors))
	mat := func(t int) int {
		if lin[t] {
			return level[t] + 1
		}
		return level[t]
	}
	depth := 0
	for _, in := range p.Instrs {
		switch in.Op {
		case OpInput:
			level[in.Out], lin[in.Out] = 0, false
		case OpOutput:
			depth = max(depth, mat(in.In[0]))
		case OpMul:
			level[in.Out], lin[in.Out] = max(mat(in.In[0]), mat(in.In[1]))+1, false
		default:
			l, nontrivial := 0, false
			for _, t := range in.In {
				l = max(l, level[t])
				nontrivial = nontrivial || lin[t]
			}
			if p.FrequencyDomain(in) {
				// The transform and the products by the eigenvalues are applied at once, the
				// inverse transform lazily like any linear map.
				l += 2
			}
			switch in.Op {
			case OpReshape, OpScaleUp, OpAddConst:
			case OpAdd, OpSub:
				if !p.Tensors[in.In[0]].Shape.Equal(p.Tensors[in.In[1]].Shape) {
					nontrivial = true
				}
			default:
				nontrivial = true
			}
			level[in.Out], lin[in.Out] = l, nontrivial
		}
	}
	return depth, nil
}
