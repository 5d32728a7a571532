package fhe

import (
	"math"
	"slices"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/vm"
)

// Element positions. A vector of n elements has period pow2(n); where each element sits in its
// period is the vector's layout, nil for row-major (element j at position j). A layout chosen to
// suit the linear map that reads or writes the vector cuts that map's diagonals (LoLa's
// per-layer representations): the client encrypts an input read by a strided convolution in its
// polyphase layout (inputLayout), and the server writes a convolution's output in the layout with
// the fewest diagonals among a family of strided ones (chooseLayout). Layouts stay within
// pow2(n), so the periods, hence the rotations and the keys, do not depend on them; results are
// always returned row-major.
//
// One exception: an input in the channel-minor layout (channelMinorLayout) may name positions up
// to the period of the convolution that reads it. A vector is replicated along its lane with its
// own period P, so position v names the slot v mod P: the element is found there and at every
// such v, and the diagonal method may read it from whichever copy suits the map. The client
// encrypts element j at position pos[j] mod P (Layout.place), one-to-one mod P.

// inputLayout returns the layout the client encrypts program input t in: for an input of shape
// [1, C, H, W] read first by a 2-D convolution with strides (sh, sw) other than (1, 1) and no
// dilation, the polyphase layout — per channel, the padded pixels (y+ph, x+pw) grouped by their
// residues mod the strides, each group row-major with a common row length — in which every tap
// of the convolution is one shift for all outputs; nil (row-major) otherwise. When the
// polyphase layout would leave the convolution's map with many diagonals (channelMinorWins),
// the channel-minor layout instead.
func inputLayout(p *fixed.Program, t int) []int32 {
	s := p.Tensors[t].Shape
	if len(s) != 4 || s[0] != 1 {
		return nil
	}
	uses := p.Uses()[t]
	if len(uses) == 0 {
		return nil
	}
	conv := p.Instrs[uses[0]] // the first reader
	if conv.Op != fixed.OpConv || conv.In[0] != t || len(conv.Win.Strides) != 2 || len(conv.Win.Pads) < 2 {
		return nil
	}
	for _, d := range conv.Win.Dilations {
		if d != 1 {
			return nil
		}
	}
	sh, sw := conv.Win.Strides[0], conv.Win.Strides[1]
	if sh < 1 || sw < 1 || sh == 1 && sw == 1 {
		return nil
	}
	if pos := channelMinorLayout(p, conv, s); pos != nil {
		return pos
	}
	return polyphaseLayout(conv, s)
}

// polyphaseLayout is the polyphase layout of input s (shape [1, C, H, W]) read by conv, or nil
// when it does not fit in the input's period.
func polyphaseLayout(conv *fixed.Instr, s ir.Shape) []int32 {
	sh, sw := conv.Win.Strides[0], conv.Win.Strides[1]
	ph, pw := conv.Win.Pads[0], conv.Win.Pads[1]
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

// channelMinorWins is the rule (shapes only, so that the client, without weights, decides as the
// server does) for the channel-minor input layout: with the input polyphase and one block per
// channel, every (output channel, input channel, tap) of the convolution tends to need a
// diagonal of its own, so when there are more of those than half the output's period, the
// diagonals would be dense (LoLa CIFAR's first layer: 83·3·64 = 15,936 triples for a period of
// 16,384; all 16,384 residues are diagonals), and the channel-minor layout does better (1,605
// there, testdata/lola-cifar).
func channelMinorWins(k, c, taps, outSize int) bool {
	return k*c*taps > pow2(outSize)/2
}

// channelMinorLayout is the channel-minor polyphase layout of input s (shape [1, C, H, W]) read
// by conv (strides sh, sw, pads ph, pw; output [1, K, Ho, Wo]), or nil when channelMinorWins says
// no or it does not apply. Input element (c, y, x), padded (a, b) = (y + ph, x + pw), in phase
// r = (a mod sh)·sw + b mod sw, goes ideally to position
//
//	c·sh·sw + r + K·((a/sh)·Wo + b/sw)   mod V, V = pow2(K·Ho·Wo),
//
// so that with the convolution's output at k + K·(y·Wo + x) (a candidate of chooseLayout) output
// (k, y, x) reads, for tap (i, j), the element on diagonal c·sh·sw + r − k + K·((i/sh)·Wo + j/sw):
// every tap is one shift for all outputs, and the output channels share diagonals. Positions
// are read mod the input's period P = pow2(C·H·W) (the vector is replicated with period P along
// the lane), so an element whose slot mod P is taken moves to the next position whose slot is
// free, which costs it a diagonal near the ideal one.
func channelMinorLayout(p *fixed.Program, conv *fixed.Instr, s ir.Shape) []int32 {
	out := p.Tensors[conv.Out].Shape
	if len(out) != 4 || out[0] != 1 || len(conv.Win.Kernel) != 2 {
		return nil
	}
	C, H, W := s[1], s[2], s[3]
	K, Wo := out[1], out[3]
	sh, sw := conv.Win.Strides[0], conv.Win.Strides[1]
	ph, pw := conv.Win.Pads[0], conv.Win.Pads[1]
	P, V := pow2(C*H*W), pow2(out.Size())
	if V < P || C*sh*sw > K || !channelMinorWins(K, C, conv.Win.Kernel[0]*conv.Win.Kernel[1], out.Size()) {
		return nil
	}
	pos := make([]int32, C*H*W)
	used := make([]bool, P)
	for c := 0; c < C; c++ {
		for y := 0; y < H; y++ {
			a := y + ph
			for x := 0; x < W; x++ {
				b := x + pw
				v := (c*sh*sw + (a%sh)*sw + b%sw + K*((a/sh)*Wo+b/sw)) % V
				for used[v%P] {
					v = (v + 1) % V
				}
				used[v%P] = true
				pos[(c*H+y)*W+x] = int32(v)
			}
		}
	}
	return pos
}

// inPeriod reports whether every position of layout pos is below pow2(n): false for a
// channel-minor input layout that names positions beyond the input's period (such a layout
// cannot be a product's layout).
func inPeriod(pos []int32, n int) bool {
	m := pow2(n)
	for _, v := range pos {
		if int(v) >= m {
			return false
		}
	}
	return true
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
// a row length B from W to 2W and a channel length A from H·B to what pow2(n) allows, or the
// channel-minor c + C·(y·W + x) (which a channel-minor input's convolution wants).
func (x *executor) chooseLayout(f *form, shape []int) []int32 {
	pos, _ := x.chooseLayoutNext(f, shape, 0)
	return pos
}

// phaseInfo describes a vector in the phase-blocked layout (chooseLayoutNext): C channels, each
// phase (y mod 2, x mod 2) in its own block of Block positions, channel-minor on the phase's
// grid of row length Wp: (c, y, x) at ((y%2)·2 + x%2)·Block + c + C·((y/2)·Wp + x/2).
type phaseInfo struct{ C, Wp, Block int }

// chooseLayoutNext is chooseLayout with two more candidates for LoLa CIFAR-10's pair of strided
// convolutions. (1) When the value is read next by a convolution of stride 2 (next = 2, no
// padding), the phase-blocked layout (phaseInfo, four blocks of pow2(n)/4): it is preferred on a
// tie, as it costs the map that writes it nothing when that map's diagonals depend only on the
// channel offset (an input in its convolution representation), and it lets the next convolution
// read every tap of a phase as one shift. (2) When the form reads one vector in the phase-blocked
// layout, the wide layout of the convolution's output: (k, y, x) at (k mod C) + C·(y·Wp + x) +
// m·⌊k/C⌋, m = pow2(n), for at most 2C maps — a period of 2m, so that the output maps beyond the
// input's C channels get their own half instead of sharing residues: LoLa CIFAR-10's second
// map needs 1,986 diagonals instead of 4,096. It returns the phase information of the layout
// chosen when it is the phase-blocked one.
func (x *executor) chooseLayoutNext(f *form, shape []int, next int) ([]int32, *phaseInfo) {
	m := pow2(f.n)
	var best []int32
	bestCount := x.diagCount(f, nil, m)
	if len(shape) != 4 || shape[0] != 1 || shape[1] < 2 || bestCount <= 1 {
		return nil, nil
	}
	C, H, W := shape[1], shape[2], shape[3]
	minor := make([]int32, f.n)
	for c := 0; c < C; c++ {
		for y := 0; y < H; y++ {
			for xx := 0; xx < W; xx++ {
				minor[(c*H+y)*W+xx] = int32(c + C*(y*W+xx))
			}
		}
	}
	if k := x.diagCount(f, minor, m); k < bestCount {
		best, bestCount = minor, k
	}
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
	if pos, ok := x.wideLayout(f, shape); ok {
		if k := x.diagCount(f, pos, 2*m); k < bestCount {
			best, bestCount = pos, k
		}
	}
	if next == 2 {
		if pos, ph := phaseLayout(shape); pos != nil && x.diagCount(f, pos, m) <= bestCount {
			return pos, ph
		}
	}
	return best, nil
}

// wideLayout is the wide candidate of chooseLayoutNext for form f (shape [1, K, Ho, Wo]), if f
// reads one vector in the phase-blocked layout, the maps fit two halves and the session's keys
// hold the fold by m that maps reading a vector of period 2m add.
func (x *executor) wideLayout(f *form, shape []int) ([]int32, bool) {
	if len(f.terms) != 1 || x.phase == nil {
		return nil, false
	}
	ph, ok := x.phase[f.terms[0].src]
	if !ok {
		return nil, false
	}
	K, Ho, Wo := shape[1], shape[2], shape[3]
	m := pow2(f.n)
	if K <= ph.C || K > 2*ph.C || Wo > ph.Wp || ph.C*((Ho-1)*ph.Wp+Wo) > m || !slices.Contains(x.l.Rotations, m*x.l.Stride) {
		return nil, false
	}
	pos := make([]int32, f.n)
	for k := 0; k < K; k++ {
		for y := 0; y < Ho; y++ {
			for xx := 0; xx < Wo; xx++ {
				pos[(k*Ho+y)*Wo+xx] = int32(k%ph.C + ph.C*(y*ph.Wp+xx) + m*(k/ph.C))
			}
		}
	}
	return pos, true
}

// layoutPeriod is the period of a vector of n elements written in layout pos: pow2(n), or twice
// that for a wide layout (positions up to 2·pow2(n)).
func layoutPeriod(n int, pos []int32) int {
	hi := 0
	for _, v := range pos {
		hi = max(hi, int(v))
	}
	return max(pow2(n), pow2(hi+1))
}

// nextStride is 2 when tensor t of program p is read only by a convolution (as its input) with
// strides (2, 2), no padding and no dilation, the case of the phase-blocked layout; 0 otherwise.
func nextStride(p *fixed.Program, t int) int {
	var conv *fixed.Instr
	for _, in := range p.Instrs {
		for _, id := range in.In {
			if id == t {
				if conv != nil {
					return 0
				}
				conv = in
			}
		}
	}
	if conv == nil || conv.Op != fixed.OpConv || conv.In[0] != t || conv.Group != 1 || !slices.Equal(conv.Win.Strides, []int{2, 2}) {
		return 0
	}
	for _, v := range conv.Win.Pads {
		if v != 0 {
			return 0
		}
	}
	for _, v := range conv.Win.Dilations {
		if v != 1 {
			return 0
		}
	}
	return 2
}

// phaseLayout is the phase-blocked layout of a tensor of shape [1, C, H, W] (its info and
// positions), or nil when it does not fit four blocks of pow2(n)/4.
func phaseLayout(shape []int) ([]int32, *phaseInfo) {
	C, H, W := shape[1], shape[2], shape[3]
	m := pow2(C * H * W)
	ph := &phaseInfo{C: C, Wp: (W + 1) / 2, Block: m / 4}
	if m%4 != 0 || C*((H+1)/2)*ph.Wp > ph.Block {
		return nil, nil
	}
	pos := make([]int32, C*H*W)
	for c := 0; c < C; c++ {
		for y := 0; y < H; y++ {
			for xx := 0; xx < W; xx++ {
				pos[(c*H+y)*W+xx] = int32(((y%2)*2+xx%2)*ph.Block + c + C*((y/2)*ph.Wp+xx/2))
			}
		}
	}
	return pos, ph
}

// gatherBase is where the convolution conv, whose input goes up in its convolution
// representation, writes output map 0 of each output position q (map k at base[q] + k): K·q
// (channel-minor), or the phase-blocked layout's when the square of its output (after a bias)
// is read by a stride-2 convolution (chooseLayoutNext then writes the square there). Both
// parties derive it from the shapes; the client's vectors hold tap g·K + u of position q at
// slot base[q] + u.
func gatherBase(p *fixed.Program, conv *fixed.Instr) []int32 {
	out := p.Tensors[conv.Out].Shape
	K, P := out[1], out[2]*out[3]
	base := make([]int32, P)
	for q := range base {
		base[q] = int32(K * q)
	}
	t := conv.Out
	for {
		var reader *fixed.Instr
		for _, in := range p.Instrs {
			if slices.Contains(in.In, t) {
				if reader != nil {
					return base
				}
				reader = in
			}
		}
		switch {
		case reader != nil && reader.Op == fixed.OpAddConst:
			t = reader.Out
			continue
		case reader != nil && reader.Op == fixed.OpMul && reader.In[0] == t && reader.In[1] == t && nextStride(p, reader.Out) == 2:
			if pos, _ := phaseLayout(out); pos != nil {
				for q := range base {
					base[q] = pos[q] // map 0 of position q
				}
			}
		}
		return base
	}
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

// LoLa's convolution representation. When a strided convolution with many output maps reads the
// input (channelMinorWins), the client may send the input already arranged per output position:
// with the convolution's K output maps, P output positions and T = C·kh·kw taps per output,
// vector g (g < ⌈T/K⌉) holds at slot u + K·q the input element that tap g·K + u reads for output
// position q (zero where the tap falls on the padding or past T; base[q] + u in general,
// gatherBase). With the output written at k + K·q, output k of tap g·K + u reads its vector on
// diagonal u − k, for every position at once:
// at most 2K − 1 diagonals per vector and no other rotation, where the channel-minor input needs
// one diagonal per (input channel·phase − output map, tap block) pair (LoLa CIFAR-10's first map:
// 3 vectors of 165, 165 and 108 diagonals against 1,605). The price is upload: ⌈T/K⌉ ciphertexts
// instead of one. gatherCost decides, with shapes only so that the client decides as the server.

// Time model of a linear map for the layout choice, in units of one diagonal product at the
// map's level: a key rotation costs rotationCost products (BenchmarkRotation against
// BenchmarkDiagonalProductMont, protocols/fhe), an uploaded ciphertext uploadCost (the client's
// encryption and the bytes: 3.7 MB per CRT component at N = 2^15, level 6). A map with d
// diagonals on one vector takes about 2·√d rotations (baby and giant steps).
const (
	rotationCost = 10
	uploadCost   = 8
)

func mapCost(diags []int) int {
	c := 0
	for _, d := range diags {
		c += d + rotationCost*2*int(math.Ceil(math.Sqrt(float64(d))))
	}
	return c
}

// inputGather returns input t's convolution representation (per vector, per slot, the input
// element it holds or -1), or nil when the input is not read by one such convolution alone or the
// time model prefers the single ciphertext in the channel-minor layout.
func inputGather(p *fixed.Program, t int) [][]int32 {
	s := p.Tensors[t].Shape
	if len(s) != 4 || s[0] != 1 {
		return nil
	}
	uses := p.Uses()[t]
	if len(uses) != 1 {
		return nil // unread, or read twice
	}
	conv := p.Instrs[uses[0]]
	if conv.Op != fixed.OpConv || conv.In[0] != t || conv.Group != 1 || len(conv.Win.Strides) != 2 || len(conv.Win.Kernel) != 2 {
		return nil
	}
	for _, d := range conv.Win.Dilations {
		if d != 1 {
			return nil
		}
	}
	out := p.Tensors[conv.Out].Shape
	if len(out) != 4 || out[0] != 1 {
		return nil
	}
	K, P := out[1], out[2]*out[3]
	taps := s[1] * conv.Win.Kernel[0] * conv.Win.Kernel[1]
	if !channelMinorWins(K, s[1], conv.Win.Kernel[0]*conv.Win.Kernel[1], out.Size()) {
		return nil
	}
	ip, err := vm.PlanIndex(p, conv)
	if err != nil || ip.D != taps || ip.P != P || len(ip.Idx) != taps*P {
		return nil
	}
	G := (taps + K - 1) / K
	var gdiags []int
	for g := 0; g < G; g++ {
		gdiags = append(gdiags, min(K, taps-g*K)+K-1)
	}
	minor := channelMinorLayout(p, conv, s)
	if minor == nil || mapCost(gdiags)+uploadCost*G >= mapCost([]int{channelMinorDiagonals(ip, minor, K, pow2(out.Size()))})+uploadCost {
		return nil
	}
	V := pow2(out.Size())
	gather := make([][]int32, G)
	for g := range gather {
		gather[g] = make([]int32, V)
		for i := range gather[g] {
			gather[g][i] = -1
		}
	}
	base := gatherBase(p, conv)
	for tap := 0; tap < taps; tap++ {
		g, u := tap/K, tap%K
		for q := 0; q < P; q++ {
			gather[g][gatherSlot(base, q, u, K, V)] = ip.Idx[tap*P+q]
		}
	}
	return gather
}

// gatherSlot is the slot of a vector of the convolution representation that holds tap g·K + u of
// output position q: base[q] + u, shifted by K − 1 (mod the period V) so that output map k reads
// it on diagonal u − k + K − 1, in [0, 2K − 2]: no negative diagonal, whose rotation the keys would
// have to compose from the far side of the period.
func gatherSlot(base []int32, q, u, K, V int) int {
	return (int(base[q]) + u + K - 1) % V
}

// channelMinorDiagonals counts the diagonals mod m of the convolution (its im2col table ip, K
// output maps) from an input in layout pos to its output at k + K·q, every weight taken non-zero.
func channelMinorDiagonals(ip vm.IndexPlan, pos []int32, K, m int) int {
	seen := make([]bool, m)
	n := 0
	for tap := 0; tap < ip.D; tap++ {
		for q := 0; q < ip.P; q++ {
			j := ip.Idx[tap*ip.P+q]
			if j < 0 {
				continue
			}
			for k := 0; k < K; k++ {
				d := ((int(pos[j])-k-K*q)%m + m) % m
				if !seen[d] {
					seen[d] = true
					n++
				}
			}
		}
	}
	return n
}
