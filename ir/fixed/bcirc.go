package fixed

import (
	"fmt"
	"math"
)

// MaxBlock is the largest block size DetectBlock tries.
const MaxBlock = 64

// BlockCirculant reports whether the rows×cols matrix w (row-major) is block-circulant with k×k
// blocks: entry (I·k + i, J·k + j) equals c_IJ[(j − i) mod k] for one vector c_IJ per block, i.e.
// every row of a block is the block's first row rotated right by the row's index (Falcon,
// CirCNN). The comparison is exact. A matrix whose dimensions are not multiples of k is read as
// the top-left corner of one whose are (its missing rows and columns are free), so that a layer
// padded to multiples of k for training but exported at its real size is still recognised.
func BlockCirculant(w []int64, rows, cols, k int) bool {
	if k < 1 || rows < 1 || cols < 1 || len(w) != rows*cols {
		return false
	}
	seen := make([]bool, k)
	first := make([]int64, k)
	for I := 0; I*k < rows; I++ {
		for J := 0; J*k < cols; J++ {
			clear(seen)
			for i := I * k; i < min(rows, I*k+k); i++ {
				for j := J * k; j < min(cols, J*k+k); j++ {
					d := ((j - J*k) - (i - I*k) + k) % k
					v := w[i*cols+j]
					if !seen[d] {
						seen[d], first[d] = true, v
					} else if first[d] != v {
						return false
					}
				}
			}
		}
	}
	return true
}

// DetectBlock returns the largest block size k (a power of two from 2 to MaxBlock, with k ≤ rows
// and k ≤ cols) for which w is block-circulant with more than one block in some dimension and
// not zero, or 0 when there is none. A zero matrix, or one whose k×k blocks would cover it
// whole, gains nothing from the structure and is not reported.
func DetectBlock(w []int64, rows, cols int) int {
	nonzero := false
	for _, v := range w {
		if v != 0 {
			nonzero = true
			break
		}
	}
	if !nonzero {
		return 0
	}
	for k := MaxBlock; k >= 2; k /= 2 {
		if k > rows || k > cols || (k >= rows && k >= cols) {
			continue
		}
		if BlockCirculant(w, rows, cols, k) {
			return k
		}
	}
	return 0
}

// BlockMode is how the compiler has the fhe mode evaluate matmuls with block-circulant weights.
type BlockMode int

const (
	// BlockAuto: in the frequency domain when SpectralWins says so for the layer's shape.
	BlockAuto BlockMode = iota
	// BlockSpectral: always in the frequency domain.
	BlockSpectral
	// BlockDense: by the dense diagonal method (the structure is still recorded).
	BlockDense
)

// ParseBlockMode reads auto, frequency or dense.
func ParseBlockMode(s string) (BlockMode, error) {
	switch s {
	case "auto", "":
		return BlockAuto, nil
	case "frequency", "freq":
		return BlockSpectral, nil
	case "dense":
		return BlockDense, nil
	}
	return 0, fmt.Errorf("block-circulant evaluation %q: want auto, frequency or dense", s)
}

// MarkBlockCirculant records in every matmul instruction of p whether its weight is
// block-circulant (Instr.Block, from DetectBlock on the fixed-point weights) and whether the fhe
// mode evaluates it in the frequency domain (Instr.Spectral, by mode); it returns how many it
// marked. The program must carry its weights.
func (p *Program) MarkBlockCirculant(mode BlockMode) int {
	n := 0
	for _, in := range p.Instrs {
		if in.Op != OpMatMul || in.Weight < 0 || in.Weight >= len(p.Weights) {
			continue
		}
		w := p.Weights[in.Weight]
		if w.Data == nil || len(w.Shape) != 2 {
			continue
		}
		in.Block = DetectBlock(w.Data, w.Shape[0], w.Shape[1])
		in.Spectral = false
		if in.Block == 0 {
			continue
		}
		n++
		switch mode {
		case BlockSpectral:
			in.Spectral = true
		case BlockAuto:
			in.Spectral = SpectralWins(w.Shape[0], w.Shape[1], in.Block)
		}
	}
	return n
}

// SpectralWins is the rule (shapes only) by which the compiler evaluates an M×K block-circulant
// matmul with k×k blocks in the frequency domain: when the estimated rotations of its three maps
// are at most 0.8 times those of the dense map (the two extra levels make every later operation
// dearer). A map with d diagonals takes about 2·sqrt(d) − 1 rotations (baby and giant steps)
// plus one per fold. The dense map, folded to m = pow2(M), has m diagonals and log2(Q/m) folds
// (Q = pow2(K)); the transforms have 2k − 1 diagonals each, the eigenvalue map m'/k diagonals
// (m' = pow2(nbOut·k)) and log2(Q'/m') folds (Q' = pow2(nbIn·k)). docs/fhe.md compares the
// estimate with measured counts: LoLa's 845→100 layer (m = 128, folded 8×) stays dense, a
// square 512×512 layer goes to the frequency domain.
func SpectralWins(M, K, k int) bool {
	est := func(d int) float64 { return 2*math.Sqrt(float64(d)) - 1 }
	folds := func(q, m int) float64 {
		n := 0.0
		for ; m < q; m *= 2 {
			n++
		}
		return n
	}
	m, q := pow2(M), pow2(K)
	dense := est(m) + folds(q, m)
	nbIn, nbOut := (K+k-1)/k, (M+k-1)/k
	mo, qi := pow2(nbOut*k), pow2(nbIn*k)
	spectral := 2*est(2*k-1) + est(max(1, mo/k)) + folds(qi, mo)
	return spectral <= 0.8*dense
}

func pow2(n int) int {
	m := 1
	for m < n {
		m *= 2
	}
	return m
}

// checkBlock checks an instruction's Block: only a matmul records one, a power of two from 2 to
// MaxBlock, and its weight (when the program carries it) has that structure.
func (p *Program) checkBlock(in *Instr) error {
	if in.Block == 0 {
		if in.Spectral {
			return fmt.Errorf("%s is marked for the frequency domain without a block-circulant weight", in.Op)
		}
		return nil
	}
	if in.Op != OpMatMul {
		return fmt.Errorf("%s records a block-circulant block size, but only matmul has one", in.Op)
	}
	if in.Block < 2 || in.Block > MaxBlock || in.Block&(in.Block-1) != 0 {
		return fmt.Errorf("matmul block-circulant block size %d: not a power of two from 2 to %d", in.Block, MaxBlock)
	}
	if in.Weight < 0 || in.Weight >= len(p.Weights) {
		return nil // the weight check reports it
	}
	w := p.Weights[in.Weight]
	if len(w.Shape) != 2 || w.Data == nil {
		return nil
	}
	if !BlockCirculant(w.Data, w.Shape[0], w.Shape[1], in.Block) {
		return fmt.Errorf("matmul records %dx%d block-circulant weights, but weight %s (%v) is not", in.Block, in.Block, w.Name, w.Shape)
	}
	return nil
}

// FrequencyDomain reports whether the fhe mode evaluates instruction in in the frequency domain
// (vm/fhe, docs/fhe.md "Block-circulant layers"): a matmul with block-circulant weights, marked
// Spectral by the compiler, applied to one column (a [K, 1] operand, the form a fully-connected layer lowers to). Such a matmul takes
// three plaintext-multiplication levels instead of one: the blockwise number-theoretic transform
// of its input, the products by the blocks' eigenvalues, and the inverse transform.
func (p *Program) FrequencyDomain(in *Instr) bool {
	if in.Op != OpMatMul || in.Block == 0 || !in.Spectral || len(in.In) != 1 {
		return false
	}
	s := p.Tensors[in.In[0]].Shape
	return len(s) == 2 && s[1] == 1
}
