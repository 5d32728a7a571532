package scheme

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// negacyclic returns a·b mod (X^N + 1, t) for vectors of ring elements.
func negacyclic(mask uint64, a, b []uint64) []uint64 {
	n := len(a)
	out := make([]uint64, n)
	for i, av := range a {
		if av == 0 {
			continue
		}
		for j, bv := range b {
			if k := i + j; k < n {
				out[k] += av * bv
			} else {
				out[k-n] -= av * bv
			}
		}
	}
	for i := range out {
		out[i] &= mask
	}
	return out
}

// party is the state of both parties of oneReply: party 1's key and decryptor, party 0's
// evaluator under the matching public key.
type party struct {
	p   *Params
	sk  *SecretKey
	en  *Encryptor
	ev  *Evaluator
	dec *Decryptor
}

func newParty(t *testing.T, p *Params) *party {
	t.Helper()
	sk := GenSecretKey(p)
	en, err := NewEncryptor(p, sk)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := p.DecodePublicKey(en.Encrypt(nil, nil, nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(p, pk)
	if err != nil {
		t.Fatal(err)
	}
	return &party{p: p, sk: sk, en: en, ev: ev, dec: NewDecryptor(p, sk)}
}

// withParams is the same keys on other parameters of the same ring (other drops and widths).
func (pt *party) withParams(t *testing.T, p *Params) *party {
	t.Helper()
	en, err := NewEncryptor(p, pt.sk)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := NewEvaluator(p, pt.ev.pk)
	if err != nil {
		t.Fatal(err)
	}
	return &party{p: p, sk: pt.sk, en: en, ev: ev, dec: NewDecryptor(p, pt.sk)}
}

// oneReply runs one ciphertext through the scheme: party 1 encrypts m, party 0 multiplies by the
// weight polynomial w (coefficients in Z_t) and finishes a reply with the needed coefficients
// need; party 1 decrypts. It returns the decoded values, party 0's mask, the centred phase noise
// of every needed coefficient and the reply's c1 coefficients.
func oneReply(t *testing.T, pt *party, m, w []uint64, need []int32) (got, mask []uint64, noise []float64, c1 []uint64) {
	t.Helper()
	pp := pt.p
	n := pp.N()
	tmask := uint64(1)<<pp.L - 1
	if pp.L == 64 {
		tmask = ^uint64(0)
	}
	pos := make([]int32, n)
	for i := range pos {
		pos[i] = int32(i)
	}
	in := pp.NewCiphertext()
	if err := pp.DecodeUpload(pt.en.Encrypt(nil, pos, pos, m), in); err != nil {
		t.Fatal(err)
	}
	wp := pp.NewPlaintext()
	pp.EncodeWeights(wp, pos[:len(w)], pos[:len(w)], w)
	acc := pp.NewCiphertext()
	pt.ev.MulAdd(acc, in, wp)
	mask = make([]uint64, len(need))
	reply := pt.ev.Finish(nil, acc, need, mask)
	if len(reply) != pp.ReplyBytes(len(need)) {
		t.Fatalf("reply of %d bytes, want %d", len(reply), pp.ReplyBytes(len(need)))
	}
	prod := negacyclic(tmask, m, w)
	qr := qrOf(pp)
	half := new(big.Int).Rsh(qr, 1)
	got = make([]uint64, len(need))
	noise = make([]float64, len(need))
	ph, ideal := new(big.Int), new(big.Int)
	err := pt.dec.Decrypt(reply, need, func(i int, res, hi, lo uint64) {
		got[i] = res
		y := (prod[need[i]] - mask[i]) & tmask
		// noise = v − round(Qr·y/t), centred mod Qr, in exact integer arithmetic.
		ph.SetUint64(hi).Lsh(ph, 64).Or(ph, new(big.Int).SetUint64(lo))
		ideal.Mul(qr, new(big.Int).SetUint64(y))
		ideal.Add(ideal, new(big.Int).Lsh(big.NewInt(1), uint(pp.L-1)))
		ideal.Rsh(ideal, uint(pp.L))
		ph.Sub(ph, ideal).Mod(ph, qr)
		if ph.Cmp(half) > 0 {
			ph.Sub(ph, qr)
		}
		noise[i], _ = new(big.Float).SetInt(ph).Float64()
		if got[i] != y {
			t.Errorf("coefficient %d: decoded %d, want %d (noise %v)", need[i], got[i], y, ph)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	// c1 as fractions of Qr (high bits only).
	r := bitReader{buf: reply}
	c1 = make([]uint64, n)
	for j := range c1 {
		lo := r.get(min(pp.W1, 64))
		var hi uint64
		if pp.W1 > 64 {
			hi = r.get(pp.W1 - 64)
		}
		hi, lo = shl128(hi, lo, uint(pp.Drop1))
		// Keep the top 62 bits of the value and of Qr's scale: value / 2^(bitlen(Qr) − 62).
		sh := uint(max(qr.BitLen()-62, 0))
		_, c1[j] = shr128(hi, lo, sh)
	}
	return got, mask, noise, c1
}

func stats(v []float64) (mean, std float64) {
	for _, x := range v {
		mean += x
	}
	mean /= float64(len(v))
	for _, x := range v {
		std += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(std / float64(len(v)))
}

// chi2Uniform is the chi-square statistic of the top 4 bits of values below bound.
func chi2Uniform(v []uint64, bound float64) float64 {
	var h [16]float64
	for _, x := range v {
		h[min(int(float64(x)/bound*16), 15)]++
	}
	exp := float64(len(v)) / 16
	var c float64
	for _, o := range h {
		c += (o - exp) * (o - exp) / exp
	}
	return c
}

// TestReplyHidesWeights plants two weight polynomials at the extremes (all zero, and every
// coefficient t/2−1, the largest ℓ1 norm the bounds allow) and checks what party 1 receives: its
// decrypted values are exact and uniform (masked), the phase noise has the flooding's
// distribution in both cases (so it does not depend on the weights), and the reply's c1 is
// uniform even for the zero weights (it is re-randomised: without the public-key encryption of
// zero it would be 0).
func TestReplyHidesWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, l := range []int{32, 44, 64} {
		pp, err := ParamsFor(l)
		if err != nil {
			t.Fatal(err)
		}
		r := ring.Must(l)
		p := newParty(t, pp)
		n := pp.N()
		m := ringtest.Values(r, rng, n)
		need := make([]int32, 0, n/2)
		for i := 0; i < n; i += 2 {
			need = append(need, int32(i))
		}
		zero := make([]uint64, n)
		maxW := make([]uint64, n)
		for i := range maxW {
			maxW[i] = r.Mask() >> 1
		}
		Q := 1.0
		for _, q := range pp.Q {
			Q *= float64(q)
		}
		// Uniform on [−F, F) switched to q0: standard deviation F·q0/Q/√3; the dropped low bits of
		// c0 add a rounding of ±2^(Drop0−1) (standard deviation 2^(Drop0−1)/√3).
		qrf, _ := new(big.Float).SetInt(qrOf(pp)).Float64()
		floodStd := math.Ldexp(1, pp.FloodBits-1) * qrf / Q / math.Sqrt(3)
		dropStd := 0.0
		if pp.Drop0 > 0 {
			dropStd = math.Ldexp(1, pp.Drop0-1) / math.Sqrt(3)
		}
		// Party 0 without the dropping of low bits, to see the flooding alone.
		full := *pp
		full.Drop0, full.W0 = 0, qrOf(pp).BitLen()
		full.Drop1, full.W1 = 0, qrOf(pp).BitLen()
		exact := p.withParams(t, &full)
		for name, w := range map[string][]uint64{"zero": zero, "max": maxW} {
			got, _, noise, c1 := oneReply(t, p, m, w, need)
			if c := chi2Uniform(got, math.Ldexp(1, l)); c > 60 {
				t.Errorf("l=%d %s weights: party 1's values are not uniform (chi2 %.1f)", l, name, c)
			}
			want := math.Hypot(floodStd, dropStd)
			mean, std := stats(noise)
			if math.Abs(std/want-1) > 0.05 || math.Abs(mean) > 0.1*want {
				t.Errorf("l=%d %s weights: noise mean %.1f std %.1f, flooding and dropping predict 0 and %.1f", l, name, mean, std, want)
			}
			qrf, _ := new(big.Float).SetInt(new(big.Int).Rsh(qrOf(pp), uint(max(qrOf(pp).BitLen()-62, 0)))).Float64()
			if c := chi2Uniform(c1, qrf); c > 60 {
				t.Errorf("l=%d %s weights: reply c1 is not uniform (chi2 %.1f)", l, name, c)
			}
			_, _, noise, _ = oneReply(t, exact, m, w, need)
			mean, std = stats(noise)
			if math.Abs(std/floodStd-1) > 0.05 || math.Abs(mean) > 0.1*floodStd {
				t.Errorf("l=%d %s weights, c0 in full: noise mean %.1f std %.1f, flooding predicts 0 and %.1f", l, name, mean, std, floodStd)
			}
		}
	}
}

// TestEncodeDecode checks the exact encoding round(Q·m/t) of a fresh ciphertext at the edges of
// the ring and the decoding threshold.
func TestEncodeDecode(t *testing.T) {
	for _, l := range []int{8, 32, 37, 41, 44, 46, 47, 64} {
		pp, err := ParamsFor(l)
		if err != nil {
			t.Fatal(err)
		}
		cd := pp.cd
		mask := uint64(1)<<l - 1
		Q := new(big.Int).SetInt64(1)
		for _, q := range pp.Q {
			Q.Mul(Q, new(big.Int).SetUint64(q))
		}
		poly := pp.rq.NewPoly()
		ms := []uint64{0, 1, 2, mask, mask >> 1, mask>>1 + 1, 12345 & mask}
		for j, m := range ms {
			cd.encodeAdd(poly, j, m)
			// round(Q·m/t) mod q_i, computed with big integers.
			want := new(big.Int).Mul(Q, new(big.Int).SetUint64(m))
			want.Add(want, new(big.Int).Lsh(big.NewInt(1), uint(l-1)))
			want.Rsh(want, uint(l))
			for i, q := range pp.Q {
				if r := new(big.Int).Mod(want, new(big.Int).SetUint64(q)).Uint64(); poly.Coeffs[i][j] != r {
					t.Fatalf("l=%d m=%d prime %d: %d, want %d", l, m, i, poly.Coeffs[i][j], r)
				}
			}
			// Decoding of Qr·m/t ± (threshold−1).
			qr := big.NewInt(1)
			for _, q := range pp.Q[:pp.R] {
				qr.Mul(qr, new(big.Int).SetUint64(q))
			}
			base := new(big.Int).Mul(qr, new(big.Int).SetUint64(m))
			base.Add(base, new(big.Int).Lsh(big.NewInt(1), uint(l-1)))
			base.Rsh(base, uint(l))
			thr := new(big.Int).Sub(qr, big.NewInt(1))
			thr.Rsh(thr, uint(l+1))
			one := big.NewInt(1)
			for _, d := range []*big.Int{big.NewInt(0), one, new(big.Int).Neg(one), new(big.Int).Sub(thr, one), new(big.Int).Sub(one, thr)} {
				v := new(big.Int).Add(base, d)
				v.Mod(v, qr)
				var got uint64
				if pp.R == 1 {
					got = cd.decode(v.Uint64())
				} else {
					wd := wideDecoder{c: cd.wide, l: uint(l)}
					lo := new(big.Int).And(v, new(big.Int).SetUint64(^uint64(0))).Uint64()
					got = wd.decode(new(big.Int).Rsh(v, 64).Uint64(), lo)
					// The CRT composition of v's residues gives v back.
					hi2, lo2 := cd.wide.compose(new(big.Int).Mod(v, new(big.Int).SetUint64(pp.Q[0])).Uint64(),
						new(big.Int).Mod(v, new(big.Int).SetUint64(pp.Q[1])).Uint64())
					if hi2 != new(big.Int).Rsh(v, 64).Uint64() || lo2 != lo {
						t.Fatalf("l=%d: CRT composition of %v wrong", l, v)
					}
				}
				if got != m {
					t.Fatalf("l=%d: decode(Qr·%d/t %+v) = %d", l, m, d, got)
				}
			}
		}
	}
}

// TestFloodResidues checks the flooding sample against big-integer arithmetic: words w give
// f = (w mod 2^k) − 2^(k−1), and every residue must be f mod q_i (two words at l = 32, three at
// l = 64).
func TestFloodResidues(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, l := range []int{32, 64} {
		pp, err := ParamsFor(l)
		if err != nil {
			t.Fatal(err)
		}
		cd := pp.cd
		if want := (pp.FloodBits + 63) / 64; cd.fWords != want {
			t.Fatalf("l=%d: %d words per sample, want %d", l, cd.fWords, want)
		}
		poly := pp.rq.NewPoly()
		words := make([]uint64, cd.fWords)
		for j := 0; j < 200; j++ {
			for i := range words {
				words[i] = rng.Uint64()
			}
			switch j {
			case 0:
				clear(words) // f = −2^(k−1)
			case 1:
				for i := range words {
					words[i] = ^uint64(0) // f = 2^(k−1) − 1
				}
			}
			cd.addFlood(poly, j, words)
			v := new(big.Int)
			for i := len(words) - 1; i >= 0; i-- {
				v.Lsh(v, 64)
				v.Or(v, new(big.Int).SetUint64(words[i]))
			}
			v.Mod(v, new(big.Int).Lsh(big.NewInt(1), uint(pp.FloodBits)))
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(pp.FloodBits-1)))
			for i, q := range pp.Q {
				if want := new(big.Int).Mod(v, new(big.Int).SetUint64(q)).Uint64(); poly.Coeffs[i][j] != want {
					t.Fatalf("l=%d sample %d prime %d: %d, want %d", l, j, i, poly.Coeffs[i][j], want)
				}
			}
		}
	}
}

// qrOf is the reply modulus.
func qrOf(pp *Params) *big.Int {
	qr := big.NewInt(1)
	for _, q := range pp.Q[:pp.R] {
		qr.Mul(qr, new(big.Int).SetUint64(q))
	}
	return qr
}

// TestSparseNTT checks the table look-ups of EncodeWeights on sparse polynomials against
// lattigo's NTT: the same residues for 0..sparseMaxTerms terms, at the edges (coefficients 0 and
// N−1, weights 0, ±1, t/2, t/2 − 1) and at random, for every ring degree and number of primes
// ParamsFor uses.
func TestSparseNTT(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, l := range []int{8, 37, 52, 64} {
		p, err := ParamsFor(l)
		if err != nil {
			t.Fatal(err)
		}
		n := p.N()
		t2 := uint64(1) << (l - 1)
		edge := []uint64{0, 1, (t2 << 1) - 1, t2, t2 - 1}
		a, b := p.NewPlaintext(), p.NewPlaintext()
		for trial := 0; trial < 40; trial++ {
			k := trial % (sparseMaxTerms + 1)
			coef := make([]int32, 0, k)
			for _, c := range rng.Perm(n)[:k] {
				coef = append(coef, int32(c))
			}
			if trial < 10 && k > 0 {
				coef[0] = int32((n - 1) * (trial % 2))
				if k > 1 && coef[1] == coef[0] {
					coef[1] = int32(n / 2)
				}
			}
			w := make([]uint64, k)
			elem := make([]int32, k)
			for j := range w {
				elem[j] = int32(j)
				w[j] = rng.Uint64()
				if trial < 20 {
					w[j] = edge[(trial+j)%len(edge)]
				}
			}
			p.EncodeWeights(a, coef, elem, w)
			p.encodeWeightsNTT(b, coef, elem, w)
			for i, q := range p.Q {
				for j := 0; j < n; j++ {
					if a.poly.Coeffs[i][j] >= q || a.poly.Coeffs[i][j] != b.poly.Coeffs[i][j]%q {
						t.Fatalf("l=%d %d terms at %v: prime %d slot %d: look-ups %d, NTT %d", l, k, coef, i, j, a.poly.Coeffs[i][j], b.poly.Coeffs[i][j])
					}
				}
			}
		}
	}
}

// BenchmarkWeightTransform is the transform of one weight polynomial (all primes) with k terms,
// by table look-ups (sparse-k) and by lattigo's NTT (ntt).
func BenchmarkWeightTransform(b *testing.B) {
	p, err := ParamsFor(benchL)
	if err != nil {
		b.Fatal(err)
	}
	pt := p.NewPlaintext()
	w := []uint64{3, 5, 7, 11, 13, 17, 19, 23}
	elem := []int32{0, 1, 2, 3, 4, 5, 6, 7}
	coef := []int32{5, 900, 1700, 3000, 4100, 5000, 6100, 8000}
	for k := 1; k <= sparseMaxTerms; k++ {
		b.Run(fmt.Sprintf("sparse-%d", k), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				p.EncodeWeights(pt, coef[:k], elem[:k], w)
			}
		})
	}
	b.Run("ntt", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			p.encodeWeightsNTT(pt, coef[:2], elem[:2], w)
		}
	})
}

// TestMulAddWide checks the unreduced accumulator against MulAdd on sums of 1, foldEvery and
// more than two folds' worth of products of random residues, residues q − 1 and zeros.
func TestMulAddWide(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	for _, l := range []int{16, 37, 64} {
		p, err := ParamsFor(l)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := NewEvaluator(p, &PublicKey{p0: p.rq.NewPoly(), p1: p.rq.NewPoly()})
		if err != nil {
			t.Fatal(err)
		}
		ct, pt := p.NewCiphertext(), p.NewPlaintext()
		want, got := p.NewCiphertext(), p.NewCiphertext()
		acc := p.NewAccumulator()
		for _, terms := range []int{1, foldEvery, 2*foldEvery + 7} {
			want.Zero()
			acc.Zero()
			for k := 0; k < terms; k++ {
				for i, q := range p.Q {
					for j := 0; j < p.N(); j++ {
						switch {
						case k%3 == 0:
							ct.c0.Coeffs[i][j], ct.c1.Coeffs[i][j], pt.poly.Coeffs[i][j] = q-1, q-1, q-1
						case k%7 == 1:
							ct.c0.Coeffs[i][j], ct.c1.Coeffs[i][j], pt.poly.Coeffs[i][j] = 0, q-1, 0
						default:
							ct.c0.Coeffs[i][j], ct.c1.Coeffs[i][j], pt.poly.Coeffs[i][j] = rng.Uint64N(q), rng.Uint64N(q), rng.Uint64N(q)
						}
					}
				}
				ev.MulAdd(want, ct, pt)
				ev.MulAddWide(acc, ct, pt)
			}
			ev.Reduce(got, acc)
			for i := range p.Q {
				for j := 0; j < p.N(); j++ {
					if got.c0.Coeffs[i][j] != want.c0.Coeffs[i][j] || got.c1.Coeffs[i][j] != want.c1.Coeffs[i][j] {
						t.Fatalf("l=%d %d terms, prime %d coefficient %d: wide (%d, %d), MulAdd (%d, %d)", l, terms, i, j,
							got.c0.Coeffs[i][j], got.c1.Coeffs[i][j], want.c0.Coeffs[i][j], want.c1.Coeffs[i][j])
					}
				}
			}
		}
	}
}
