package fixed

import (
	"math/rand/v2"
	"testing"
)

// randomBlockCirculant returns a rows×cols matrix, the top-left corner of a block-circulant one
// with k×k blocks, values from vals.
func randomBlockCirculant(rng *rand.Rand, rows, cols, k int, vals []int64) []int64 {
	nbIn, nbOut := (cols+k-1)/k, (rows+k-1)/k
	first := make([]int64, nbIn*nbOut*k)
	for i := range first {
		first[i] = vals[rng.IntN(len(vals))]
	}
	w := make([]int64, rows*cols)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			w[i*cols+j] = first[((i/k)*nbIn+j/k)*k+((j%k)-(i%k)+k)%k]
		}
	}
	return w
}

func TestBlockCirculantDetection(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	edge := []int64{0, 1, -1, 1<<62 - 1, -(1 << 62), 7, -7}
	for _, c := range []struct{ rows, cols, k int }{{16, 32, 8}, {112, 845, 16}, {104, 845, 8}, {21, 75, 4}, {8, 8, 2}, {3, 40, 4}} {
		w := randomBlockCirculant(rng, c.rows, c.cols, c.k, edge)
		if !BlockCirculant(w, c.rows, c.cols, c.k) {
			t.Errorf("%dx%d k=%d: not detected", c.rows, c.cols, c.k)
		}
		if got := DetectBlock(w, c.rows, c.cols); c.k <= c.rows && got < c.k {
			t.Errorf("%dx%d k=%d: DetectBlock %d", c.rows, c.cols, c.k, got)
		}
		// The transpose of a block-circulant matrix is block-circulant.
		tr := make([]int64, len(w))
		for i := 0; i < c.rows; i++ {
			for j := 0; j < c.cols; j++ {
				tr[j*c.rows+i] = w[i*c.cols+j]
			}
		}
		if !BlockCirculant(tr, c.cols, c.rows, c.k) {
			t.Errorf("%dx%d k=%d: transpose not detected", c.rows, c.cols, c.k)
		}
		// Any one entry changed by one breaks the structure (when its diagonal has another
		// present entry in its block: always, for a block with two or more rows and columns).
		for range 20 {
			i, j := rng.IntN(c.rows), rng.IntN(c.cols)
			bi, bj := min(c.k, c.rows-i/c.k*c.k), min(c.k, c.cols-j/c.k*c.k)
			if bi < 2 || bj < 2 {
				continue
			}
			w[i*c.cols+j]++
			if BlockCirculant(w, c.rows, c.cols, c.k) {
				t.Errorf("%dx%d k=%d: entry (%d, %d) changed, still detected", c.rows, c.cols, c.k, i, j)
			}
			w[i*c.cols+j]--
		}
	}
	// Dense random weights: nothing. A zero matrix (block-circulant for every k): nothing.
	dense := make([]int64, 100*845)
	for i := range dense {
		dense[i] = rng.Int64N(31) - 15
	}
	if k := DetectBlock(dense, 100, 845); k != 0 {
		t.Errorf("dense random weights detected as block-circulant with k = %d", k)
	}
	if k := DetectBlock(make([]int64, 64), 8, 8); k != 0 {
		t.Errorf("a zero matrix detected with k = %d", k)
	}
	if BlockCirculant([]int64{1, 2, 3}, 2, 2, 2) {
		t.Error("a matrix of the wrong size was accepted")
	}
}

// TestCheckBlock: Validate refuses a recorded block size the weights do not have, on a non-matmul,
// or not a power of two.
func TestCheckBlock(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	w := randomBlockCirculant(rng, 8, 16, 4, []int64{-3, -1, 0, 2, 5})
	p := &Program{Weights: []Weight{{Name: "w", Shape: []int{8, 16}, Data: w}}}
	in := &Instr{Op: OpMatMul, Weight: 0, Block: 4}
	if err := p.checkBlock(in); err != nil {
		t.Fatal(err)
	}
	w[17]++
	if err := p.checkBlock(in); err == nil {
		t.Error("a broken structure passed the check")
	}
	w[17]--
	for _, bad := range []*Instr{{Op: OpMatMul, Weight: 0, Block: 3}, {Op: OpMatMul, Weight: 0, Block: 128}, {Op: OpConv, Weight: 0, Block: 4}} {
		if err := p.checkBlock(bad); err == nil {
			t.Errorf("%s with block %d passed the check", bad.Op, bad.Block)
		}
	}
}

// TestSpectralWins: the rule keeps LoLa's 845→100..112 layers dense (their dense map folds to
// 128 diagonals) and puts square layers of 256 (k = 8) and 512 (k = 8, 16) in the frequency
// domain.
func TestSpectralWins(t *testing.T) {
	for _, c := range []struct {
		M, K, k int
		want    bool
	}{{104, 845, 8, false}, {112, 845, 16, false}, {256, 256, 8, true}, {256, 256, 16, false}, {512, 512, 8, true}, {512, 512, 16, true}, {24, 75, 8, false}} {
		if got := SpectralWins(c.M, c.K, c.k); got != c.want {
			t.Errorf("%d×%d, k = %d: frequency domain %v, want %v", c.M, c.K, c.k, got, c.want)
		}
	}
	if _, err := ParseBlockMode("sometimes"); err == nil {
		t.Error("a bad mode was accepted")
	}
}
