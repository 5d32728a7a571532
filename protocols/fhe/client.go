package fhe

import (
	"fmt"

	"github.com/tuneinsight/lattigo/v6/core/rlwe"
	"github.com/tuneinsight/lattigo/v6/schemes/bgv"
)

// Vector is one encrypted vector of values mod n, or several sharing the slots (lanes, see
// Client.Encrypt): one BGV ciphertext per CRT component, each holding the values mod t_i in its
// slots, every lane's vector replicated with a power-of-two period along its row.
type Vector struct {
	Ct []*rlwe.Ciphertext
}

// Level is the level of the vector's ciphertexts (the lowest, should they differ).
func (v *Vector) Level() int {
	l := v.Ct[0].Level()
	for _, c := range v.Ct[1:] {
		l = min(l, c.Level())
	}
	return l
}

// Keys are what the client uploads once per session for the server to evaluate with: the public
// key (the server re-randomises the result with an encryption of zero), the relinearisation key
// and the Galois keys of exactly the rotations the plan needs.
type Keys struct {
	PK        *rlwe.PublicKey
	RLK       *rlwe.RelinearizationKey
	Rotations []int
	GK        []*rlwe.GaloisKey
}

// Client holds the secret key: it encrypts inputs and decrypts results.
type Client struct {
	p   *Params
	sk  *rlwe.SecretKey
	enc []*rlwe.Encryptor
	dec []*rlwe.Decryptor
	ecd []*bgv.Encoder
	buf []uint64 // N slot values
}

// NewClient generates a fresh secret key (lattigo's key generator draws from a crypto/rand-keyed
// PRNG; the secret is uniform ternary, as the security table assumes).
func NewClient(p *Params) (*Client, error) {
	kg := rlwe.NewKeyGenerator(p.comp[0].Parameters)
	c := &Client{p: p, sk: kg.GenSecretKeyNew(), buf: make([]uint64, p.comp[0].MaxSlots())}
	for _, bp := range p.comp {
		c.enc = append(c.enc, rlwe.NewEncryptor(bp, c.sk))
		c.dec = append(c.dec, rlwe.NewDecryptor(bp, c.sk))
		c.ecd = append(c.ecd, bgv.NewEncoder(bp))
	}
	return c, nil
}

// Keys generates the evaluation keys for the given column rotations (the plan's).
func (c *Client) Keys(rotations []int) (*Keys, error) {
	kg := rlwe.NewKeyGenerator(c.p.comp[0].Parameters)
	k := &Keys{PK: kg.GenPublicKeyNew(c.sk), RLK: kg.GenRelinearizationKeyNew(c.sk), Rotations: append([]int(nil), rotations...)}
	for _, r := range rotations {
		k.GK = append(k.GK, kg.GenGaloisKeyNew(c.p.comp[0].GaloisElementForColRotation(r), c.sk))
	}
	return k, nil
}

// Encrypt encrypts up to 2·stride vectors (values mod n, each of at most period values), one per
// lane: with stride lanes per row, element j of lane k is in row k / stride, column
// j·stride + k mod stride, for every j along the row (the vector is replicated with the given
// power-of-two period and zero-padded to it); lanes with no vector hold zeros. A rotation by
// stride columns moves every lane by one element, cyclically over N/(2·stride) elements.
func (c *Client) Encrypt(lanes [][]uint64, period, stride int) (_ *Vector, err error) {
	defer recoverErr(&err)
	if err := c.p.checkStride(stride); err != nil {
		return nil, err
	}
	length := c.p.Slots() / stride
	if period < 1 || period > length || period&(period-1) != 0 {
		return nil, fmt.Errorf("fhe encrypt: period %d (a power of two up to %d at stride %d)", period, length, stride)
	}
	if len(lanes) == 0 || len(lanes) > 2*stride {
		return nil, fmt.Errorf("fhe encrypt: %d vectors for %d lanes", len(lanes), 2*stride)
	}
	for k, x := range lanes {
		if len(x) > period {
			return nil, fmt.Errorf("fhe encrypt: lane %d has %d values, more than the period %d", k, len(x), period)
		}
	}
	half := c.p.Slots()
	v := &Vector{}
	for i, bp := range c.p.comp {
		t := bp.PlaintextModulus()
		clear(c.buf)
		for k, x := range lanes {
			base := (k/stride)*half + k%stride
			for j := 0; j < length; j++ {
				if e := j % period; e < len(x) {
					c.buf[base+j*stride] = x[e] % t
				}
			}
		}
		pt := bgv.NewPlaintext(bp, bp.MaxLevel())
		if err := c.ecd[i].Encode(c.buf, pt); err != nil {
			return nil, fmt.Errorf("fhe encrypt: encode mod %d: %w", t, err)
		}
		ct := bgv.NewCiphertext(bp, 1, bp.MaxLevel())
		if err := c.enc[i].Encrypt(pt, ct); err != nil {
			return nil, fmt.Errorf("fhe encrypt mod %d: %w", t, err)
		}
		v.Ct = append(v.Ct, ct)
	}
	return v, nil
}

// Decrypt decrypts the first n elements of the first count lanes of v (packed with stride lanes
// per row, as Encrypt packs) and recombines the components by the CRT: the values mod n (the
// caller reads them as signed).
func (c *Client) Decrypt(v *Vector, n, stride, count int) (_ [][]uint64, err error) {
	defer recoverErr(&err)
	if v == nil || len(v.Ct) != len(c.p.comp) {
		return nil, fmt.Errorf("fhe decrypt: %d ciphertexts for %d plaintext moduli", lenCt(v), len(c.p.comp))
	}
	if err := c.p.checkStride(stride); err != nil {
		return nil, err
	}
	if n > c.p.Slots()/stride {
		return nil, fmt.Errorf("fhe decrypt: %d values, more than the %d elements of a lane", n, c.p.Slots()/stride)
	}
	if count < 1 || count > 2*stride {
		return nil, fmt.Errorf("fhe decrypt: %d lanes of %d", count, 2*stride)
	}
	half := c.p.Slots()
	out := make([][]uint64, count)
	for k := range out {
		out[k] = make([]uint64, n)
	}
	for i, bp := range c.p.comp {
		if v.Ct[i] == nil || v.Ct[i].Degree() != 1 {
			return nil, fmt.Errorf("fhe decrypt: component %d is not a degree-1 ciphertext", i)
		}
		pt := c.dec[i].DecryptNew(v.Ct[i])
		if err := c.ecd[i].Decode(pt, c.buf); err != nil {
			return nil, fmt.Errorf("fhe decrypt: decode mod %d: %w", bp.PlaintextModulus(), err)
		}
		for k, o := range out {
			base := (k/stride)*half + k%stride
			for j := range o {
				o[j] = addMod(o[j], mulMod(c.buf[base+j*stride], c.p.crt[i], c.p.n), c.p.n)
			}
		}
	}
	return out, nil
}

func lenCt(v *Vector) int {
	if v == nil {
		return 0
	}
	return len(v.Ct)
}
