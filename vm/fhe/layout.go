package fhe

import (
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// Element positions. A vector of n elements has period pow2(n); where each element sits in its
// period is the vector's layout, nil for row-major (element j at position j). A layout chosen to
// suit the linear map that reads or writes the vector cuts that map's diagonals (LoLa's
// per-layer representations): the client encrypts an input read by a strided convolution in its
// polyphase layout (inputLayout), and the server writes a convolution's output in the layout with
// the fewest diagonals among a family of strided ones (chooseLayout). Layouts stay within
// pow2(n), so the periods, hence the rotations and the keys, do not depend on them; results are
// always returned row-major.

// inputLayout returns the layout the client encrypts program input t in: for an input of shape
// [1, C, H, W] read first by a 2-D convolution with strides (sh, sw) other than (1, 1) and no
// dilation, the polyphase layout — per channel, the padded pixels (y+ph, x+pw) grouped by their
// residues mod the strides, each group row-major with a common row length — in which every tap
// of the convolution is one shift for all outputs; nil (row-major) otherwise.
func inputLayout(p *fixed.Program, t int) []int32 {
	s := p.Tensors[t].Shape
	if len(s) != 4 || s[0] != 1 {
		return nil
	}
	var conv *fixed.Instr
	for _, in := range p.Instrs {
		for _, id := range in.In {
			if id == t && conv == nil {
				conv = in
			}
		}
		if conv != nil {
			break
		}
	}
	if conv == nil || conv.Op != fixed.OpConv || conv.In[0] != t || len(conv.Win.Strides) != 2 || len(conv.Win.Pads) < 2 {
		return nil
	}
	for _, d := range conv.Win.Dilations {
		if d != 1 {
			return nil
		}
	}
	sh, sw := conv.Win.Strides[0], conv.Win.Strides[1]
	ph, pw := conv.Win.Pads[0], conv.Win.Pads[1]
	if sh < 1 || sw < 1 || sh == 1 && sw == 1 {
		return nil
	}
	C, H, W := s[1], s[2], s[3]
	// Residue classes of the padded rows (a = y + ph) mod sh: the first quotient and the count.
	classes := func(n, pad, st int) (lo, cnt []int) {
		lo, cnt = make([]int, st), make([]int, st)
		for i := range lo {
			lo[i] = -1
		}
		for y := 0; y < n; y++ {
			a := y + pad
			r := a % st
			if lo[r] < 0 {
				lo[r] = a / st
			}
			cnt[r]++
		}
		return lo, cnt
	}
	loA, hA := classes(H, ph, sh)
	loB, wB := classes(W, pw, sw)
	wp := 0
	for _, w := range wB {
		wp = max(wp, w)
	}
	off := make([]int, sh*sw+1)
	for k := 0; k < sh*sw; k++ {
		off[k+1] = off[k] + hA[k/sw]*wp
	}
	block := off[sh*sw]
	if C*block > pow2(s.Size()) {
		return nil
	}
	pos := make([]int32, s.Size())
	for c := 0; c < C; c++ {
		for y := 0; y < H; y++ {
			a := y + ph
			ra := a % sh
			for x := 0; x < W; x++ {
				b := x + pw
				rb := b % sw
				pos[(c*H+y)*W+x] = int32(c*block + off[ra*sw+rb] + (a/sh-loA[ra])*wp + (b/sw - loB[rb]))
			}
		}
	}
	return pos
}

// sameLayout reports whether two layouts of n elements are equal (nil is row-major).
func sameLayout(a, b []int32) bool {
	if a == nil || b == nil {
		for i, v := range a {
			if int(v) != i {
				return false
			}
		}
		for i, v := range b {
			if int(v) != i {
				return false
			}
		}
		return true
	}
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// chooseLayout returns the layout for the value of form f, a tensor of the given shape, with the
// fewest folded diagonals: row-major, or for a shape [1, C, H, W], position c·A + y·B + x for
// a row length B from W to 2W and a channel length A from H·B to what pow2(n) allows.
func (x *executor) chooseLayout(f *form, shape []int) []int32 {
	m := pow2(f.n)
	var best []int32
	bestCount := x.diagCount(f, nil, m)
	if len(shape) != 4 || shape[0] != 1 || shape[1] < 2 || bestCount <= 1 {
		return nil
	}
	C, H, W := shape[1], shape[2], shape[3]
	tried := 0
	for B := W; B <= 2*W; B++ {
		plane := (H-1)*B + W // positions one channel spans
		for A := plane; (C-1)*A+plane <= m && tried < 4096; A++ {
			tried++
			pos := make([]int32, f.n)
			for c := 0; c < C; c++ {
				for y := 0; y < H; y++ {
					for xx := 0; xx < W; xx++ {
						pos[(c*H+y)*W+xx] = int32(c*A + y*B + xx)
					}
				}
			}
			if k := x.diagCount(f, pos, m); k < bestCount {
				best, bestCount = pos, k
			}
		}
	}
	return best
}

// diagCount is the number of folded diagonals (over all terms) form f needs written in layout
// pos with m = pow2(n).
func (x *executor) diagCount(f *form, pos []int32, m int) int {
	total := 0
	seen := make([]bool, m)
	for _, t := range f.terms {
		clear(seen)
		src := x.pos[t.src]
		for r, row := range t.m {
			rp := r
			if pos != nil {
				rp = int(pos[r])
			}
			for _, e := range row {
				jp := int(e.col)
				if src != nil {
					jp = int(src[e.col])
				}
				d := ((jp-rp)%m + m) % m
				if !seen[d] {
					seen[d] = true
					total++
				}
			}
		}
	}
	return total
}
