package fhe

import (
	"fmt"
	"math/big"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// Block-circulant matmuls in the frequency domain (docs/fhe.md, "Block-circulant layers").
//
// A k×k circulant block C (row i is the first row c rotated right by i: C[i][j] = c[(j − i) mod
// k]) is diagonalised by the discrete Fourier transform over Z_n when n has a primitive k-th
// root of unity ω and k is invertible, which holds for every fhe program: each plaintext prime t
// is 1 mod 2N, so k | t − 1 for k ≤ 2N. With X̂[f] = Σ_j ω^(f·j)·x[j] (F) and λ[f] = Σ_t
// c[t]·ω^(−f·t), (C·x)^ = λ ⊙ X̂, and x = F⁻¹·X̂ with F⁻¹[i][f] = k⁻¹·ω^(−f·i). A block-circulant
// weight W (nbOut × nbIn blocks) is therefore F⁻¹·Λ·F, F and F⁻¹ blockwise, Λ one nbOut × nbIn
// matrix per frequency f with entries λ_IJ[f]. All three are exact mod n, and the executor checks
// that their product is W before it uses them.
//
// Element (J, f) of the transformed input (and (I, f) of the transformed output) is at position
// J·k + f: then Λ maps position J·k + f to I·k + f, on diagonal k·(J − I), and folded to
// m = pow2(nbOut·k) it needs only m/k diagonals (8 for 112 outputs at k = 16), where the dense
// map needs m. The transforms each need about 2k − 1 diagonals (the input's layout decides).

// freqMaps are the three matrices of a block-circulant matmul with one column: fwd (nbIn·k rows,
// reading the K input elements), mix (nbOut·k rows reading fwd's) and inv (M rows reading mix's).
type freqMaps struct {
	k, nbIn, nbOut int
	fwd, mix, inv  matrix
}

// rootOfUnity returns a primitive k-th root of unity mod n = Π primes (k a power of two dividing
// every p − 1), by the Chinese remainder theorem over the primes.
func rootOfUnity(primes []uint64, k int) (uint64, error) {
	n := big.NewInt(1)
	for _, t := range primes {
		n.Mul(n, new(big.Int).SetUint64(t))
	}
	w := new(big.Int)
	one := big.NewInt(1)
	for _, t := range primes {
		if (t-1)%uint64(k) != 0 {
			return 0, fmt.Errorf("plaintext prime %d has no %d-th root of unity (it is not 1 mod %d)", t, k, k)
		}
		bt := new(big.Int).SetUint64(t)
		e := new(big.Int).SetUint64((t - 1) / uint64(k))
		var r *big.Int
		for a := int64(2); a < 1000; a++ {
			c := new(big.Int).Exp(big.NewInt(a), e, bt)
			if k == 1 || new(big.Int).Exp(c, big.NewInt(int64(k/2)), bt).Cmp(one) != 0 {
				r = c
				break
			}
		}
		if r == nil {
			return 0, fmt.Errorf("no primitive %d-th root of unity found mod %d", k, t)
		}
		mi := new(big.Int).Div(n, bt)
		inv := new(big.Int).ModInverse(new(big.Int).Mod(mi, bt), bt)
		if inv == nil {
			return 0, fmt.Errorf("plaintext primes %v are not coprime", primes)
		}
		w.Add(w, new(big.Int).Mul(r, new(big.Int).Mul(mi, inv)))
	}
	return w.Mod(w, n).Uint64(), nil
}

// frequencyMaps builds the maps of matmul in (Program.FrequencyDomain) from its weights (values
// mod n) and checks that inv·mix·fwd equals the weight matrix exactly.
func (x *executor) frequencyMaps(in *fixed.Instr, w []uint64) (*freqMaps, error) {
	ws := x.p.Weights[in.Weight].Shape
	M, K, k := ws[0], ws[1], in.Block
	if k < 2 || k&(k-1) != 0 {
		return nil, fmt.Errorf("block-circulant matmul: block size %d is not a power of two >= 2", k)
	}
	omega, err := rootOfUnity(x.p.FHE.T, k)
	if err != nil {
		return nil, fmt.Errorf("block-circulant matmul: %w", err)
	}
	r := x.r
	pw := make([]uint64, k) // ω^e, e mod k
	pw[0] = 1
	for e := 1; e < k; e++ {
		pw[e] = r.Mul(pw[e-1], omega)
	}
	if r.Mul(pw[k-1], omega) != 1 {
		return nil, fmt.Errorf("block-circulant matmul: internal error: ω^%d != 1", k)
	}
	kinv := new(big.Int).ModInverse(big.NewInt(int64(k)), new(big.Int).SetUint64(x.p.Modulus))
	if kinv == nil {
		return nil, fmt.Errorf("block-circulant matmul: %d is not invertible mod %d", k, x.p.Modulus)
	}
	ki := kinv.Uint64()
	fm := &freqMaps{k: k, nbIn: (K + k - 1) / k, nbOut: (M + k - 1) / k}
	// The blocks' first rows c_IJ[t] = W[I·k + i][J·k + (i + t) mod k] for any present entry
	// (fixed.BlockCirculant: every present entry of a diagonal is equal; absent ones are free and
	// meet only padded, zero inputs or discarded outputs).
	c := make([]uint64, fm.nbOut*fm.nbIn*k)
	for i := 0; i < M; i++ {
		for j := 0; j < K; j++ {
			I, J := i/k, j/k
			c[(I*fm.nbIn+J)*k+((j%k)-(i%k)+k)%k] = w[i*K+j]
		}
	}
	fm.fwd = make(matrix, fm.nbIn*k)
	for J := 0; J < fm.nbIn; J++ {
		for f := 0; f < k; f++ {
			var row []entry
			for j := 0; j < k && J*k+j < K; j++ {
				row = append(row, entry{col: int32(J*k + j), v: pw[(f*j)%k]})
			}
			fm.fwd[J*k+f] = row
		}
	}
	fm.mix = make(matrix, fm.nbOut*k)
	for I := 0; I < fm.nbOut; I++ {
		for f := 0; f < k; f++ {
			var row []entry
			for J := 0; J < fm.nbIn; J++ {
				var lam uint64
				for t := 0; t < k; t++ {
					lam = r.Add(lam, r.Mul(c[(I*fm.nbIn+J)*k+t], pw[(k-(f*t)%k)%k]))
				}
				if lam != 0 {
					row = append(row, entry{col: int32(J*k + f), v: lam})
				}
			}
			fm.mix[I*k+f] = row
		}
	}
	fm.inv = make(matrix, M)
	for i := 0; i < M; i++ {
		I := i / k
		row := make([]entry, k)
		for f := 0; f < k; f++ {
			row[f] = entry{col: int32(I*k + f), v: r.Mul(ki, pw[(k-(f*(i%k))%k)%k])}
		}
		fm.inv[i] = row
	}
	// inv·mix·fwd must be W, entry for entry.
	var comp composer
	comp.r = r
	prod := comp.mul(fm.inv, comp.mul(fm.mix, fm.fwd, K), K)
	for i, row := range prod {
		got := make(map[int32]uint64, len(row))
		for _, e := range row {
			got[e.col] = e.v
		}
		for j := 0; j < K; j++ {
			if got[int32(j)] != w[i*K+j] {
				return nil, fmt.Errorf("block-circulant matmul: internal error: the frequency-domain maps give %d at (%d, %d), the weight is %d", got[int32(j)], i, j, w[i*K+j])
			}
		}
	}
	return fm, nil
}

// frequencyDomain evaluates matmul in (Program.FrequencyDomain) on form src: the blockwise
// transform and the products by the eigenvalues are applied (one level each), and the inverse
// transform is returned as a form, applied lazily like every linear map.
func (x *executor) frequencyDomain(in *fixed.Instr, src *form) (*form, error) {
	fm, err := x.frequencyMaps(in, x.weight(in))
	if err != nil {
		return nil, err
	}
	k := fm.k
	posF := shifted(len(fm.fwd), -(k - 1))
	fwd, err := x.materialize(x.c.apply(fm.fwd, src, x.srcLen), posF)
	if err != nil {
		return nil, fmt.Errorf("block-circulant matmul, transform: %w", err)
	}
	ff := x.newVec(fwd, len(fm.fwd), posF)
	posG := shifted(len(fm.mix), k-1)
	mix, err := x.materialize(x.c.apply(fm.mix, ff, x.srcLen), posG)
	if err != nil {
		return nil, fmt.Errorf("block-circulant matmul, eigenvalues: %w", err)
	}
	fmix := x.newVec(mix, len(fm.mix), posG)
	return x.c.apply(fm.inv, fmix, x.srcLen), nil
}

// shifted is the layout of n elements at positions (q + s) mod pow2(n): row-major moved by s.
// The transform reads block J's elements J·k + j (row-major input) for output J·k + f, on
// diagonal j − f, from −(k−1) to k−1; a negative diagonal is a rotation by nearly the whole
// period, which the keys make only in many steps. With the transform's output moved by −(k−1)
// and the eigenvalue map's by k−1, the transform's diagonals are j − f + k − 1 (0 to 2k−2),
// the inverse transform's (to row-major) f − i + k − 1 likewise, and the eigenvalue map's
// k·(J − I) − 2(k−1): one baby step for all.
func shifted(n, s int) []int32 {
	m := pow2(n)
	pos := make([]int32, n)
	for q := range pos {
		pos[q] = int32(((q+s)%m + m) % m)
	}
	return pos
}

// frequencyReader returns the matmul that reads tensor t (directly or through reshapes) and that
// the fhe mode evaluates in the frequency domain, or nil.
func frequencyReader(p *fixed.Program, t int) *fixed.Instr {
	for _, in := range p.Instrs {
		if len(in.In) == 0 || in.In[0] != t {
			continue
		}
		switch {
		case in.Op == fixed.OpReshape:
			if mm := frequencyReader(p, in.Out); mm != nil {
				return mm
			}
		case p.FrequencyDomain(in):
			return in
		}
	}
	return nil
}

// transformLayout returns the layout for the value of form f (a tensor of the given shape) that
// matmul mm transforms: chooseLayout's (the fewest diagonals for the map that writes the value)
// or row-major (the fewest for the transform that reads it: 2k − 1, each block's elements
// consecutive), whichever needs fewer diagonals for both maps together. LoLa's bc8: the
// convolution's strided layout, 63 + 135 diagonals, against 631 + 15 row-major.
func (x *executor) transformLayout(f *form, shape []int, mm *fixed.Instr) []int32 {
	chosen := x.chooseLayout(f, shape)
	if chosen == nil {
		return nil
	}
	m := pow2(f.n)
	cost := func(pos []int32) int { return x.diagCount(f, pos, m) + transformDiagonals(pos, f.n, mm.Block) }
	if cost(nil) <= cost(chosen) {
		return nil
	}
	return chosen
}

// transformDiagonals is the number of folded diagonals of the blockwise transform (k×k blocks)
// of n elements in layout pos (nil: row-major) to its output layout shifted(nbIn·k, −(k−1)).
func transformDiagonals(pos []int32, n, k int) int {
	nb := (n + k - 1) / k
	out := shifted(nb*k, -(k - 1))
	m := pow2(nb * k)
	seen := make([]bool, m)
	count := 0
	for J := 0; J < nb; J++ {
		for f := 0; f < k; f++ {
			r := int(out[J*k+f])
			for j := J * k; j < min(n, J*k+k); j++ {
				jp := j
				if pos != nil {
					jp = int(pos[j])
				}
				if d := ((jp-r)%m + m) % m; !seen[d] {
					seen[d] = true
					count++
				}
			}
		}
	}
	return count
}
