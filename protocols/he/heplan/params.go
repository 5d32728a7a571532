package heplan

import (
	"fmt"
	"math/big"
	"math/bits"
	"slices"
	"sync"
)

// StatSec is the statistical security parameter of the noise flooding: the reply of one
// ciphertext is within statistical distance 2^-StatSec of a simulation that knows only the masked
// output.
const StatSec = 40

// errBound bounds every coefficient of a fresh Gaussian error: lattigo's default error
// distribution (σ = 3.2) is truncated at 6σ = 19.2.
const errBound = 20

// replyBits is the size of each reply prime (the reply modulus Qr is one or two of them).
const replyBits = 60

// slackBits is how far below the decoding threshold Qr/(2t) the switched noise of the flooded
// ciphertext stays (a factor 2^slackBits), leaving the rest for the mod-switch rounding and for
// the dropped low bits of the reply.
const slackBits = 3

// MaxLogQ is the largest modulus (bits) of the HomomorphicEncryption.org standard (Albrecht et
// al., "Homomorphic Encryption Standard", 2018, Table 1, classical 128-bit security, uniform
// ternary secret) for ring degree 2^logN, and 0 for a degree outside the table.
func MaxLogQ(logN int) int {
	switch logN {
	case 10:
		return 27
	case 11:
		return 54
	case 12:
		return 109
	case 13:
		return 218
	case 14:
		return 438
	case 15:
		return 881
	}
	return 0
}

// Params are the RLWE parameters for one ring Z_{2^l}: the ring degree, the RNS primes of Q (the
// first R of them form the reply modulus Qr) and the noise-management choices derived from the worst-case error bounds
// (see docs/he.md). Both parties derive them from l alone (ParamsFor), so they always agree.
type Params struct {
	L         int      // plaintext modulus t = 2^L
	LogN      int      // ring degree N = 2^LogN
	Q         []uint64 // NTT primes; the first R form the reply modulus Qr
	R         int      // number of reply primes (1, or 2 for l > 46)
	FloodBits int      // flooding noise is uniform in [-2^(FloodBits-1), 2^(FloodBits-1))
	Drop0     int      // low bits dropped from each sent c0 coefficient of a reply
	Drop1     int      // low bits dropped from each c1 coefficient of a reply

	QBits  []int // bit length of each prime (the widths of an upload's residues)
	W0, W1 int   // bits per sent coefficient of c0 and of c1 in a reply
}

// N is the ring degree.
func (p *Params) N() int { return 1 << p.LogN }

// LogQ is the bit length of Q.
func (p *Params) LogQ() int {
	q := big.NewInt(1)
	for _, v := range p.Q {
		q.Mul(q, new(big.Int).SetUint64(v))
	}
	return q.BitLen()
}

// UploadBytes is the size of one uploaded ciphertext: a 16-byte seed for c1 and c0 with every
// residue at the width of its prime.
func (p *Params) UploadBytes() int {
	s := 0
	for _, b := range p.QBits {
		s += b
	}
	return 16 + (p.N()*s+7)/8
}

// ReplyBytes is the size of one reply that carries n needed coefficients: c1 in full at Drop1
// fewer bits and the n coefficients of c0 at Drop0 fewer bits.
func (p *Params) ReplyBytes(n int) int { return (p.N()*p.W1+7)/8 + (n*p.W0+7)/8 }

// KeyBytes is the size of the public key party 1 sends once: a 16-byte seed and p0 like an upload.
func (p *Params) KeyBytes() int { return p.UploadBytes() }

func (p *Params) String() string {
	return fmt.Sprintf("he params l=%d N=2^%d logQ=%d primes=%v reply primes %d flood=2^%d drop c0 %d bits, c1 %d bits (reply widths %d, %d)",
		p.L, p.LogN, p.LogQ(), p.QBits, p.R, p.FloodBits-1, p.Drop0, p.Drop1, p.W0, p.W1)
}

// paramsCache memoises ParamsFor: its values depend on l alone and are immutable once built, so
// the cache holds no state that could change a result (building one takes ≈ 12 ms).
var paramsCache sync.Map // int -> *Params

// ParamsFor returns the parameters for Z_{2^l}: the smallest ring degree whose modulus, sized by
// the worst-case noise bounds with 2^-40 flooding, stays within the 128-bit HE-standard bound.
// Rings for which one 60-bit reply prime cannot hold the decoding threshold (l > 46 at N = 8192)
// reply modulo two primes. The result is the caller's copy.
func ParamsFor(l int) (*Params, error) {
	p, err := paramsFor(l)
	if err != nil {
		return nil, err
	}
	return p.Clone(), nil
}

// Clone returns a copy that shares no slice with p.
func (p *Params) Clone() *Params {
	c := *p
	c.Q, c.QBits = slices.Clone(p.Q), slices.Clone(p.QBits)
	return &c
}

// paramsFor is ParamsFor without the copy: the shared, immutable parameters.
func paramsFor(l int) (*Params, error) {
	if l < 1 || l > 64 {
		return nil, fmt.Errorf("heplan: ring Z_2^%d: bitwidth must be 1..64", l)
	}
	if v, ok := paramsCache.Load(l); ok {
		return v.(*Params), nil
	}
	var lastErr error
	for logN := 12; logN <= 14; logN++ {
		p, err := buildParams(l, logN)
		if err != nil {
			lastErr = err
			continue
		}
		paramsCache.Store(l, p)
		return p, nil
	}
	return nil, fmt.Errorf("heplan: no parameters for Z_2^%d: %w", l, lastErr)
}

// bounds are the worst-case noise quantities of one parameter set (see docs/he.md).
type bounds struct {
	b     *big.Int // noise that depends on the weights or on party 0's randomness, before flooding
	flood *big.Int // 2^(FloodBits-1)
	total *big.Int // b + flood: the noise of a reply at Q
}

// noiseAtQ returns the bounds for ring degree n and t = 2^l:
//
//	b = N·(t/2)·(B_e+1) + (2N+1)·B_e + 1
//
// (the input's error and encoding rounding times the weights, the re-randomisation's
// u·e_pk + e0 + e1·s, the mask's encoding rounding) and the flooding bound 2^(k−1) ≥ 2^39·N·b,
// so that N·b/2^k ≤ 2^-40.
func noiseAtQ(n, l int) bounds {
	N := big.NewInt(int64(n))
	halfT := new(big.Int).Lsh(big.NewInt(1), uint(l-1))
	if l == 0 {
		halfT.SetInt64(1)
	}
	b := new(big.Int).Mul(N, halfT)
	b.Mul(b, big.NewInt(errBound+1))
	pk := new(big.Int).Mul(big.NewInt(int64(2*n+1)), big.NewInt(errBound))
	b.Add(b, pk)
	b.Add(b, big.NewInt(1))
	// 2^(k-1) >= 2^(StatSec-1) · N · b.
	need := new(big.Int).Mul(b, N)
	need.Lsh(need, StatSec-1)
	k1 := need.BitLen() // 2^k1 > need
	flood := new(big.Int).Lsh(big.NewInt(1), uint(k1))
	return bounds{b: b, flood: flood, total: new(big.Int).Add(b, flood)}
}

func buildParams(l, logN int) (*Params, error) {
	var err error
	for r := 1; r <= 2; r++ {
		var p *Params
		if p, err = buildParamsReply(l, logN, r); err == nil {
			return p, nil
		}
	}
	return nil, err
}

// buildParamsReply sizes the parameters with a reply modulus of nr primes of replyBits bits.
func buildParamsReply(l, logN, nr int) (*Params, error) {
	n := 1 << logN
	maxQ := MaxLogQ(logN)
	if maxQ == 0 {
		return nil, fmt.Errorf("no security bound for N = 2^%d", logN)
	}
	bd := noiseAtQ(n, l)
	t := new(big.Int).Lsh(big.NewInt(1), uint(l))
	nth := uint64(2 * n)
	reply, err := nttPrimesBelow(replyBits, nth, nr)
	if err != nil {
		return nil, fmt.Errorf("reply primes: %w", err)
	}
	qr := big.NewInt(1)
	for _, v := range reply {
		qr.Mul(qr, new(big.Int).SetUint64(v))
	}
	// Decoding threshold T = floor((Qr-1)/(2t)); the mod-switch rounding adds at most (N+1)/2+1.
	thr := new(big.Int).Sub(qr, big.NewInt(1))
	thr.Quo(thr, new(big.Int).Lsh(t, 1))
	rms := big.NewInt(int64(n/2 + 2))
	// Q/Qr >= total · 2t · 2^slack / Qr, so that total·Qr/Q <= T/2^slack.
	needRest := new(big.Int).Mul(bd.total, new(big.Int).Lsh(t, 1+slackBits))
	needRest.Quo(needRest, qr)
	needRest.Add(needRest, big.NewInt(1))
	needBits := needRest.BitLen()
	var rest []uint64
	if needBits > 1 {
		cnt := (needBits + 59) / 60
		for ; ; cnt++ {
			if cnt > 8 {
				return nil, fmt.Errorf("cannot size Q")
			}
			size := (needBits+cnt-1)/cnt + 1
			if size > 60 {
				continue
			}
			size = max(size, 30)
			ps, err := nttPrimesBelow(size, nth, cnt)
			if err != nil {
				return nil, fmt.Errorf("primes of %d bits: %w", size, err)
			}
			prod := big.NewInt(1)
			clash := false
			for _, v := range ps {
				prod.Mul(prod, new(big.Int).SetUint64(v))
				clash = clash || containsPrime(reply, v)
			}
			if prod.Cmp(needRest) >= 0 && !clash {
				rest = ps
				break
			}
		}
	}
	primes := append(append([]uint64(nil), reply...), rest...)
	Q := big.NewInt(1)
	for _, v := range primes {
		Q.Mul(Q, new(big.Int).SetUint64(v))
	}
	if Q.BitLen() > maxQ {
		return nil, fmt.Errorf("N = 2^%d: Q needs %d bits, the 128-bit bound is %d", logN, Q.BitLen(), maxQ)
	}
	// Switched noise: ceil(total·Qr/Q) + rms.
	sw := new(big.Int).Mul(bd.total, qr)
	sw.Quo(sw, Q)
	sw.Add(sw, big.NewInt(1))
	sw.Add(sw, rms)
	room := new(big.Int).Sub(thr, sw)
	if room.Sign() < 0 {
		return nil, fmt.Errorf("N = 2^%d: a reply modulus of %d primes leaves no room for t = 2^%d", logN, nr, l)
	}
	// Drop1: N·2^(d1-1) <= room/2. Drop0: 2^(d0-1) <= room - err1.
	d1 := 0
	for dropErr(d1+1, n).Cmp(new(big.Int).Rsh(room, 1)) <= 0 {
		d1++
	}
	left := new(big.Int).Sub(room, dropErr(d1, n))
	d0 := 0
	for dropErr(d0+1, 1).Cmp(left) <= 0 {
		d0++
	}
	p := &Params{L: l, LogN: logN, Q: primes, R: nr, FloodBits: bd.flood.BitLen(), Drop0: d0, Drop1: d1}
	for _, v := range primes {
		p.QBits = append(p.QBits, bits.Len64(v))
	}
	qr1 := new(big.Int).Sub(qr, big.NewInt(1))
	p.W0 = bigRoundShift(qr1, d0).BitLen()
	p.W1 = bigRoundShift(qr1, d1).BitLen()
	if p.W0 > 128 || p.W1 > 128 || p.FloodBits > 192 {
		return nil, fmt.Errorf("N = 2^%d: widths beyond the implementation", logN)
	}
	return p, nil
}

// bigRoundShift is round(c / 2^d).
func bigRoundShift(c *big.Int, d int) *big.Int {
	if d == 0 {
		return new(big.Int).Set(c)
	}
	v := new(big.Int).Add(c, new(big.Int).Lsh(big.NewInt(1), uint(d-1)))
	return v.Rsh(v, uint(d))
}

// dropErr is the error of rounding away d low bits of a coefficient, times mult (the l1 norm
// bound of what it is multiplied by): 0 for d = 0, mult·2^(d-1) otherwise.
func dropErr(d, mult int) *big.Int {
	if d == 0 {
		return new(big.Int)
	}
	return new(big.Int).Lsh(big.NewInt(int64(mult)), uint(d-1))
}

func containsPrime(ps []uint64, q uint64) bool {
	for _, v := range ps {
		if v == q {
			return true
		}
	}
	return false
}
