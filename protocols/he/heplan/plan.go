package heplan

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/ring"
)

// Plan is the public packing of one product: which share elements go to which coefficient of
// which input ciphertext, which weights go to which coefficient of which plaintext polynomial,
// and which coefficients of which output ciphertext hold which result element. Both parties build
// the same plan from public dimensions. Its slices are read-only once built.
type Plan struct {
	Inputs        int     // input ciphertexts
	InStart       []int32 // CSR over input ciphertexts: input i holds entries InStart[i]..InStart[i+1]−1
	InCoef, InSrc []int32 // entry: coefficient, and the share element it holds
	Weights       int     // weight polynomials
	WStart        []int32 // CSR over weight polynomials
	WCoef, WElem  []int32 // entry: coefficient, and the weight it holds
	Groups        []Group
	Outputs       []Output
	Bytes         int64 // exact traffic of one call, frame headers included
	Products      int   // ciphertext × plaintext products
}

// Group is a set of outputs that use the same weight polynomials: output Outs[j] accumulates
// Σ_k input[Outputs[Outs[j]].In[k]] · weight[Ws[k]].
type Group struct {
	Ws   []int32
	Outs []int32
}

// Output is one output ciphertext: the input ciphertexts it accumulates (one per weight
// polynomial of its group) and the coefficients that hold results.
type Output struct {
	In        []int32
	Need, Dst []int32 // coefficient positions and the result elements they hold
}

// traffic is the exact bytes of nIn uploads and replies with the given needed counts, one frame
// (4-byte header) per ciphertext.
func traffic(p *Params, nIn int64, replies func(yield func(n, count int64))) int64 {
	b := nIn * int64(4+p.UploadBytes())
	replies(func(n, count int64) { b += count * int64(4+p.ReplyBytes(int(n))) })
	return b
}

// convLayout is a convolution rewritten as a stride-1, dilation-1 one (the polyphase
// decomposition): input channel c and phase (py, px) < (PY, PX) become channel
// (c·PY + py)·PX + px of a phase image whose row Y is padded row Y·SH + py of the original, and
// the kernel of that channel has tap (ky', kx') where ky'·SH + py = ky·DH (and likewise for
// columns) for an original tap (ky, kx), a hole elsewhere. Then output (oy, ox) is the sum over
// channels and taps of phase-image position (oy + ky', ox + kx'): every stride-1 output is needed,
// so a strided convolution computes no discarded outputs, and dilation costs no extra channels.
// Only the phases that meet a tap are kept: PY = min(SH, (KH−1)·DH + 1) (a 1×1 kernel at stride 2
// reads one phase of four), and PX likewise.
type convLayout struct {
	g         ring.ConvGeom
	py, px    int // phases kept along each axis
	ph        int // phases py·px
	c, cg, mg int // channels C·ph, channels per group (C/Groups)·ph, outputs per group
	kh, kw    int // kernel ⌈KHe/SH⌉ × ⌈KWe/SW⌉ (KHe = (KH−1)·DH + 1)
	khe, kwe  int
	oh, ow    int
	hp, wp    int // phase-image extent oh−1+kh × ow−1+kw
}

func newLayout(g ring.ConvGeom) *convLayout {
	L := &convLayout{g: g, khe: (g.KH-1)*g.DH + 1, kwe: (g.KW-1)*g.DW + 1, oh: g.OH, ow: g.OW}
	L.py, L.px = min(g.SH, L.khe), min(g.SW, L.kwe)
	L.ph = L.py * L.px
	L.c, L.cg, L.mg = g.C*L.ph, g.C/g.Groups*L.ph, g.M/g.Groups
	L.kh, L.kw = (L.khe+g.SH-1)/g.SH, (L.kwe+g.SW-1)/g.SW
	L.hp, L.wp = L.oh-1+L.kh, L.ow-1+L.kw
	return L
}

// src is the index in X of image n, layout channel ch, phase-image position (y, x), or −1 for
// padding.
func (L *convLayout) src(n, ch, y, x int) int {
	g := &L.g
	c, phase := ch/L.ph, ch%L.ph
	iy := y*g.SH + phase/L.px - g.PH
	ix := x*g.SW + phase%L.px - g.PW
	if iy < 0 || iy >= g.H || ix < 0 || ix >= g.W {
		return -1
	}
	return ((n*g.C+c)*g.H+iy)*g.W + ix
}

// tap is the index in W of output channel m's weight at layout channel chl (within its group) and
// tap (ky, kx), or −1 for a hole.
func (L *convLayout) tap(m, chl, ky, kx int) int {
	g := &L.g
	c, phase := chl/L.ph, chl%L.ph
	a, b := ky*g.SH+phase/L.px, kx*g.SW+phase%L.px
	if a >= L.khe || b >= L.kwe || a%g.DH != 0 || b%g.DW != 0 {
		return -1
	}
	return ((m*(g.C/g.Groups)+c)*g.KH+a/g.DH)*g.KW + b/g.DW
}

// convDims are the chosen block sizes of a convolution layout.
type convDims struct {
	cw, hw, ww    int // input block: Cw layout channels × Hw rows × Ww columns
	k             int // output channels per output ciphertext
	stepH, stepW  int // outputs per block along each axis
	nCB, nBH, nBW int
}

// axisHist returns the distinct output counts of an axis's nb blocks of step outputs (out in
// all) with their multiplicities.
func axisHist(nb, step, out int) (vals, cnts []int) {
	for b := 0; b < nb; b++ {
		v := min(step, out-b*step)
		found := false
		for i, x := range vals {
			if x == v {
				cnts[i]++
				found = true
				break
			}
		}
		if !found {
			vals, cnts = append(vals, v), append(cnts, 1)
		}
	}
	return
}

// convCost is the exact traffic of the layout with block sizes d, given the histograms of
// output counts per block along each axis.
func convCost(p *Params, L *convLayout, d convDims, hv, hc, wv, wc []int) int64 {
	n, m := L.g.N, L.g.M
	nIn := int64(n) * int64(d.nCB) * int64(d.nBH) * int64(d.nBW)
	full, rem := m/d.k, m%d.k
	return traffic(p, nIn, func(yield func(cnt, count int64)) {
		for i, nh := range hv {
			for j, nw := range wv {
				blocks := int64(n) * int64(hc[i]) * int64(wc[j])
				yield(int64(d.k*nh*nw), blocks*int64(full))
				if rem > 0 {
					yield(int64(rem*nh*nw), blocks)
				}
			}
		}
	})
}

// dimsFor completes block sizes (Cw, Hw, Ww, K) into convDims and returns their traffic.
func (L *convLayout) dimsFor(p *Params, cw, hw, ww, k int) (convDims, int64) {
	d := convDims{cw: cw, hw: hw, ww: ww, k: k, stepH: hw - L.kh + 1, stepW: ww - L.kw + 1}
	d.nBH = (L.oh + d.stepH - 1) / d.stepH
	d.nBW = (L.ow + d.stepW - 1) / d.stepW
	d.nCB = (L.c + cw - 1) / cw
	hv, hc := axisHist(d.nBH, d.stepH, L.oh)
	wv, wc := axisHist(d.nBW, d.stepW, L.ow)
	return d, convCost(p, L, d, hv, hc, wv, wc)
}

// weightPolys is the number of weight polynomials of block sizes d: per chunk of K output
// channels, one per channel block that holds channels of the chunk's groups.
func (L *convLayout) weightPolys(d convDims) int {
	m := L.g.M
	if L.g.Groups == 1 {
		return (m + d.k - 1) / d.k * d.nCB
	}
	w := 0
	for m0 := 0; m0 < m; m0 += d.k {
		m1 := min(m, m0+d.k)
		w += ((m1-1)/L.mg*L.cg+L.cg-1)/d.cw - m0/L.mg*L.cg/d.cw + 1
	}
	return w
}

// The packing's time model, in nanoseconds of CPU (both parties together) on the project's
// machine, measured by BenchmarkResNet50's profile (docs/he.md): what the choice of blocks trades.
const (
	modelProduct = 90_000    // one ciphertext × plaintext product, accumulated unreduced
	modelNTT     = 450_000   // transform of a weight polynomial by NTT
	modelTerm    = 160_000   // transform by table look-ups, per non-zero coefficient
	modelUpload  = 4_700_000 // encrypt, pack, unpack, add party 0's share
	modelReply   = 3_500_000 // re-randomise, flood, switch, pack, unpack, decrypt
	modelByteNs  = 10        // a link of 100 MB/s
	// SparseTerms is the largest number of non-zero coefficients of a weight polynomial that the
	// scheme transforms by table look-ups instead of an NTT.
	SparseTerms = 2
)

// estimate is the modelled time of block sizes d (bytes: their traffic): the objective of
// chooseConv.
func (L *convLayout) estimate(d convDims, bytes int64) int64 {
	n := int64(L.g.N)
	blocks := n * int64(d.nBH) * int64(d.nBW)
	w := int64(L.weightPolys(d))
	wt := int64(modelNTT)
	// Non-zero coefficients of a full weight polynomial (at most; holes of the polyphase kernel
	// make fewer).
	if nz := int64(d.k) * int64(min(d.cw, L.cg)) * int64(L.kh*L.kw); nz <= SparseTerms {
		wt = nz * modelTerm
	}
	return blocks*w*modelProduct + w*wt + blocks*int64(d.nCB)*modelUpload +
		blocks*int64((L.g.M+d.k-1)/d.k)*modelReply + bytes*modelByteNs
}

// chooseConv picks the input blocks Cw×Hw×Ww and the number K of output channels per output
// ciphertext (K·Cw·Hw·Ww ≤ N) of least modelled time (estimate): ciphertext products, weight
// transforms, uploads, replies and the traffic on a 100 MB/s link.
func chooseConv(p *Params, L *convLayout) (convDims, int64, error) {
	n := p.N()
	if L.kh*L.kw > n {
		return convDims{}, 0, fmt.Errorf("heplan: the kernel (%d×%d after the polyphase split) does not fit a polynomial of degree %d", L.kh, L.kw, n)
	}
	var best convDims
	bestCost, bestEst := int64(-1), int64(-1)
	for hw := L.kh; hw <= L.hp; hw++ {
		for ww := L.kw; ww <= L.wp && hw*ww <= n; ww++ {
			e := convDims{hw: hw, ww: ww, stepH: hw - L.kh + 1, stepW: ww - L.kw + 1}
			e.nBH = (L.oh + e.stepH - 1) / e.stepH
			e.nBW = (L.ow + e.stepW - 1) / e.stepW
			hv, hc := axisHist(e.nBH, e.stepH, L.oh)
			wv, wc := axisHist(e.nBW, e.stepW, L.ow)
			room := n / (hw * ww)
			for k := 1; k <= min(L.g.M, room); k++ {
				e.k = k
				e.cw = min(L.c, room/k)
				e.nCB = (L.c + e.cw - 1) / e.cw
				cost := convCost(p, L, e, hv, hc, wv, wc)
				if est := L.estimate(e, cost); bestEst < 0 || est < bestEst {
					best, bestCost, bestEst = e, cost, est
				}
			}
		}
	}
	return best, bestCost, nil
}

// ConvPlan builds the plan of a convolution (Cheetah's packing on the polyphase layout, with
// several output channels per ciphertext): per image and block of Cw layout channels × Hw rows ×
// Ww columns, the polynomial Σ x[c,y,x]·X^(c·Hw·Ww + y·Ww + x); per chunk of K output channels and
// channel block that holds channels of their groups, the kernels reversed and stacked,
// Σ_k Σ w_k[c,ky,kx]·X^(k·S + O − c·Hw·Ww − ky·Ww − kx) with S = Cw·Hw·Ww and O = (Cw−1)·Hw·Ww +
// (KH'−1)·Ww + KW'−1. The product with kernel k alone spans [k·S, k·S + S + O) and holds the output
// at block position (i, j) at k·S + O + i·Ww + j ∈ [k·S + O, k·S + S), which no other kernel's
// product reaches; K·S ≤ N keeps the negacyclic wrap-around below O. Channel blocks run over all
// channels, whatever the groups: a kernel only has coefficients for its group's channels, so one
// input ciphertext serves several groups.
func ConvPlan(p *Params, c ring.ConvGeom) (*Plan, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("heplan: %w", err)
	}
	L := newLayout(c)
	d, cost, err := chooseConv(p, L)
	if err != nil {
		return nil, err
	}
	return L.plan(d, cost), nil
}

// plan builds the plan of the layout with the block sizes d (cost: its traffic).
func (L *convLayout) plan(d convDims, cost int64) *Plan {
	c := &L.g
	nX, nWelem := c.N*c.C*c.H*c.W, c.M*(c.C/c.Groups)*c.KH*c.KW
	pl := &Plan{Bytes: cost}
	hwww := d.hw * d.ww
	inIdx := func(n, cb, bh, bw int) int { return ((n*d.nCB+cb)*d.nBH+bh)*d.nBW + bw }
	pl.Inputs = c.N * d.nCB * d.nBH * d.nBW
	pl.InStart = make([]int32, 0, pl.Inputs+1)
	pl.InCoef, pl.InSrc = make([]int32, 0, nX), make([]int32, 0, nX)
	pl.WCoef, pl.WElem = make([]int32, 0, nWelem), make([]int32, 0, nWelem)
	for n := 0; n < c.N; n++ {
		for cb := 0; cb < d.nCB; cb++ {
			for bh := 0; bh < d.nBH; bh++ {
				for bw := 0; bw < d.nBW; bw++ {
					pl.InStart = append(pl.InStart, int32(len(pl.InCoef)))
					for ci := 0; ci < min(d.cw, L.c-cb*d.cw); ci++ {
						for y := 0; y < d.hw; y++ {
							for x := 0; x < d.ww; x++ {
								if src := L.src(n, cb*d.cw+ci, bh*d.stepH+y, bw*d.stepW+x); src >= 0 {
									pl.InCoef = append(pl.InCoef, int32(ci*hwww+y*d.ww+x))
									pl.InSrc = append(pl.InSrc, int32(src))
								}
							}
						}
					}
				}
			}
		}
	}
	pl.InStart = append(pl.InStart, int32(len(pl.InCoef)))
	O := (d.cw-1)*hwww + (L.kh-1)*d.ww + L.kw - 1
	S := d.cw * hwww // span of an input block; output channel k of a ciphertext sits at k·S
	pl.WStart = make([]int32, 0, c.M*d.nCB+1)
	for m0 := 0; m0 < c.M; m0 += d.k {
		m1 := min(c.M, m0+d.k)
		// Output channels m0..m1−1 read layout channels [cLo, cHi) of their groups, in blocks
		// cbLo..cbHi.
		cLo, cHi := m0/L.mg*L.cg, (m1-1)/L.mg*L.cg+L.cg
		cbLo, cbHi := cLo/d.cw, (cHi-1)/d.cw
		grp := Group{}
		for cb := cbLo; cb <= cbHi; cb++ {
			grp.Ws = append(grp.Ws, int32(pl.Weights))
			pl.Weights++
			pl.WStart = append(pl.WStart, int32(len(pl.WCoef)))
			for m := m0; m < m1; m++ {
				gLo := m / L.mg * L.cg
				for ch := max(gLo, cb*d.cw); ch < min(gLo+L.cg, (cb+1)*d.cw); ch++ {
					ci := ch - cb*d.cw
					for ky := 0; ky < L.kh; ky++ {
						for kx := 0; kx < L.kw; kx++ {
							if e := L.tap(m, ch-gLo, ky, kx); e >= 0 {
								pl.WCoef = append(pl.WCoef, int32((m-m0)*S+O-(ci*hwww+ky*d.ww+kx)))
								pl.WElem = append(pl.WElem, int32(e))
							}
						}
					}
				}
			}
		}
		for n := 0; n < c.N; n++ {
			for bh := 0; bh < d.nBH; bh++ {
				for bw := 0; bw < d.nBW; bw++ {
					cnt := (m1 - m0) * min(d.stepH, L.oh-bh*d.stepH) * min(d.stepW, L.ow-bw*d.stepW)
					o := Output{In: make([]int32, 0, cbHi-cbLo+1), Need: make([]int32, 0, cnt), Dst: make([]int32, 0, cnt)}
					for cb := cbLo; cb <= cbHi; cb++ {
						o.In = append(o.In, int32(inIdx(n, cb, bh, bw)))
					}
					for m := m0; m < m1; m++ {
						for i := 0; i < min(d.stepH, L.oh-bh*d.stepH); i++ {
							oy := bh*d.stepH + i
							for j := 0; j < min(d.stepW, L.ow-bw*d.stepW); j++ {
								ox := bw*d.stepW + j
								o.Need = append(o.Need, int32((m-m0)*S+O+i*d.ww+j))
								o.Dst = append(o.Dst, int32(((n*c.M+m)*c.OH+oy)*c.OW+ox))
							}
						}
					}
					grp.Outs = append(grp.Outs, int32(len(pl.Outputs)))
					pl.Outputs = append(pl.Outputs, o)
					pl.Products += len(o.In)
				}
			}
		}
		pl.Groups = append(pl.Groups, grp)
	}
	pl.WStart = append(pl.WStart, int32(len(pl.WCoef)))
	return pl
}

// MatMulGeom is the product W (m×k) · X (k×n) as a convolution: X is an image of k channels of
// 1×n pixels, W an m×k kernel of 1×1 taps, and the result an image of m channels of 1×n pixels,
// with the same row-major layouts. With one column, its packing is Cheetah's matrix-vector
// packing (d1 = Cw columns of W per block, d0 = K rows per output ciphertext); with several,
// blocks of Ww columns of X share ciphertexts.
func MatMulGeom(m, k, n int) ring.ConvGeom {
	return ring.ConvGeom{N: 1, C: k, H: 1, W: n, M: m, OH: 1, OW: n, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}
}

// Blocks are the block sizes of a convolution's packing: input blocks of C layout channels
// (channels × phases of the polyphase split) × H rows × W columns, and K output channels per
// output ciphertext.
type Blocks struct{ C, H, W, K int }

// ConvPlanBlocks is ConvPlan with the block sizes b instead of the ones of least traffic. It
// fails unless K·C·H·W ≤ N, the blocks hold the (polyphase) kernel and C, K do not exceed the
// layout's channels and the output channels (blocks larger than the padded image are allowed).
func ConvPlanBlocks(p *Params, c ring.ConvGeom, b Blocks) (*Plan, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("heplan: %w", err)
	}
	L := newLayout(c)
	switch {
	case b.C < 1 || b.K < 1 || b.C > L.c || b.K > c.M:
		return nil, fmt.Errorf("heplan: blocks %+v: C must be 1..%d and K 1..%d", b, L.c, c.M)
	case b.H < L.kh || b.W < L.kw:
		return nil, fmt.Errorf("heplan: blocks %+v: H must be at least %d and W at least %d", b, L.kh, L.kw)
	case b.K*b.C*b.H*b.W > p.N():
		return nil, fmt.Errorf("heplan: blocks %+v: K·C·H·W = %d exceeds N = %d", b, b.K*b.C*b.H*b.W, p.N())
	}
	d, cost := L.dimsFor(p, b.C, b.H, b.W, b.K)
	return L.plan(d, cost), nil
}
