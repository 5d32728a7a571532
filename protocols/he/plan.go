package he

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/ring"
)

// plan is the public packing of one product: which share elements go to which coefficient of
// which input ciphertext, which weights go to which coefficient of which plaintext polynomial,
// and which coefficients of which output ciphertext hold which result element. Both parties build
// the same plan from public dimensions.
type plan struct {
	nIn              int
	inStart          []int32 // CSR over input ciphertexts
	inCoef, inSrc    []int32
	nW               int
	wStart           []int32 // CSR over weight polynomials
	wCoef, wElem     []int32
	groups           []group
	outs             []output
	nDst, nX, nWelem int
	bytes            int64 // exact traffic of one call, frame headers included
	products         int
}

// group is a set of outputs that use the same weight polynomials: output o accumulates
// Σ_k in[o.in[k]] · w[ws[k]].
type group struct {
	ws   []int32
	outs []int32
}

type output struct {
	in        []int32
	need, dst []int32 // coefficient positions and the result elements they hold
}

// traffic is the exact bytes of nIn uploads and replies with the given needed counts, one frame
// (4-byte header) per ciphertext.
func traffic(p *Params, nIn int64, replies func(yield func(n, count int64))) int64 {
	b := nIn * int64(4+p.UploadBytes())
	replies(func(n, count int64) { b += count * int64(4+p.ReplyBytes(int(n))) })
	return b
}

// convDims are the chosen block sizes of a convolution.
type convDims struct {
	cg, mg, khe, kwe, hp, wp int
	cw, hw, ww               int // input block: Cw channels × Hw rows × Ww columns
	k                        int // output channels per output ciphertext
	stepH, stepW             int
	nCB, nBH, nBW            int
}

// neededAxis returns how many needed stride-1 outputs block b of an axis holds: positions
// Y = b·step + i (i < step) with Y ≤ (out−1)·s and Y ≡ 0 mod s.
func neededAxis(b, step, out, s int) int {
	lo, hi := b*step, min(b*step+step, (out-1)*s+1) // [lo, hi)
	if hi <= lo {
		return 0
	}
	return (hi-1)/s - (lo+s-1)/s + 1
}

// axisHist returns the distinct needed counts of an axis's blocks with their multiplicities.
func axisHist(nb, step, out, s int) (vals, cnts []int) {
	for b := 0; b < nb; b++ {
		v := neededAxis(b, step, out, s)
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

// convCost is the exact traffic of the convolution with block sizes d, given the histograms of
// needed counts per block along each axis.
func convCost(p *Params, c ring.ConvGeom, d convDims, hv, hc, wv, wc []int) int64 {
	nIn := int64(c.N) * int64(d.nCB) * int64(d.nBH) * int64(d.nBW)
	full, rem := c.M/d.k, c.M%d.k
	return traffic(p, nIn, func(yield func(n, count int64)) {
		for i, nh := range hv {
			for j, nw := range wv {
				blocks := int64(c.N) * int64(hc[i]) * int64(wc[j])
				yield(int64(d.k*nh*nw), blocks*int64(full))
				if rem > 0 {
					yield(int64(rem*nh*nw), blocks)
				}
			}
		}
	})
}

// chooseConv picks the input blocks Cw×Hw×Ww and the number K of output channels per output
// ciphertext (K·Cw·Hw·Ww ≤ N) of least traffic.
func chooseConv(p *Params, c ring.ConvGeom) (convDims, int64, error) {
	n := p.N()
	d := convDims{cg: c.C / c.Groups, mg: c.M / c.Groups, khe: (c.KH-1)*c.DH + 1, kwe: (c.KW-1)*c.DW + 1}
	d.hp, d.wp = (c.OH-1)*c.SH+d.khe, (c.OW-1)*c.SW+d.kwe
	if d.khe*d.kwe > n {
		return d, 0, fmt.Errorf("he: the dilated kernel %d×%d does not fit a polynomial of degree %d", d.khe, d.kwe, n)
	}
	best, bestCost := d, int64(-1)
	for hw := d.khe; hw <= d.hp; hw++ {
		for ww := d.kwe; ww <= d.wp && hw*ww <= n; ww++ {
			e := d
			e.hw, e.ww = hw, ww
			e.stepH, e.stepW = hw-d.khe+1, ww-d.kwe+1
			e.nBH = ((c.OH-1)*c.SH + e.stepH) / e.stepH
			e.nBW = ((c.OW-1)*c.SW + e.stepW) / e.stepW
			hv, hc := axisHist(e.nBH, e.stepH, c.OH, c.SH)
			wv, wc := axisHist(e.nBW, e.stepW, c.OW, c.SW)
			room := n / (hw * ww)
			for k := 1; k <= min(c.M, room); k++ {
				e.k = k
				e.cw = min(c.C, room/k)
				e.nCB = (c.C + e.cw - 1) / e.cw
				cost := convCost(p, c, e, hv, hc, wv, wc)
				if bestCost < 0 || cost < bestCost {
					best, bestCost = e, cost
				}
			}
		}
	}
	return best, bestCost, nil
}

// convPlan builds the plan of a convolution (Cheetah's packing, with several output channels per
// ciphertext): per image and block of Cw channels × Hw rows × Ww columns of the zero-padded input,
// the polynomial Σ x[c,y,x]·X^(c·Hw·Ww + y·Ww + x); per chunk of K output channels and channel
// block that holds channels of their groups, the kernels reversed and stacked,
// Σ_k Σ w_k[c,ky,kx]·X^(k·S + O − c·Hw·Ww − ky·DH·Ww − kx·DW) with S = Cw·Hw·Ww and O = (Cw−1)·Hw·Ww
// + (KHe−1)·Ww + KWe−1. The product with kernel k alone spans [k·S, k·S + S + O) and holds the
// stride-1 output at block position (i, j) at k·S + O + i·Ww + j ∈ [k·S + O, k·S + S), which no
// other kernel's product reaches; K·S ≤ N keeps the negacyclic wrap-around below O. Channel
// blocks run over all C channels, whatever the groups: a kernel only has coefficients for its
// group's channels, so one input ciphertext serves several groups. Strided outputs are the needed
// coefficients; the others are never sent.
func convPlan(p *Params, c ring.ConvGeom) (*plan, error) {
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("he: %w", err)
	}
	d, cost, err := chooseConv(p, c)
	if err != nil {
		return nil, err
	}
	return convPlanWith(c, d, cost), nil
}

// convDimsFor completes block sizes (Cw, Hw, Ww, K) into convDims and returns their traffic.
func convDimsFor(p *Params, c ring.ConvGeom, cw, hw, ww, k int) (convDims, int64) {
	d := convDims{cg: c.C / c.Groups, mg: c.M / c.Groups, khe: (c.KH-1)*c.DH + 1, kwe: (c.KW-1)*c.DW + 1, cw: cw, hw: hw, ww: ww, k: k}
	d.hp, d.wp = (c.OH-1)*c.SH+d.khe, (c.OW-1)*c.SW+d.kwe
	d.stepH, d.stepW = hw-d.khe+1, ww-d.kwe+1
	d.nBH = ((c.OH-1)*c.SH + d.stepH) / d.stepH
	d.nBW = ((c.OW-1)*c.SW + d.stepW) / d.stepW
	d.nCB = (c.C + cw - 1) / cw
	hv, hc := axisHist(d.nBH, d.stepH, c.OH, c.SH)
	wv, wc := axisHist(d.nBW, d.stepW, c.OW, c.SW)
	return d, convCost(p, c, d, hv, hc, wv, wc)
}

// convPlanWith builds the plan of c with the block sizes d (cost: its traffic).
func convPlanWith(c ring.ConvGeom, d convDims, cost int64) *plan {
	pl := &plan{bytes: cost, nDst: c.N * c.M * c.OH * c.OW, nX: c.N * c.C * c.H * c.W, nWelem: c.M * d.cg * c.KH * c.KW}
	hwww := d.hw * d.ww
	inIdx := func(n, cb, bh, bw int) int { return ((n*d.nCB+cb)*d.nBH+bh)*d.nBW + bw }
	pl.nIn = c.N * d.nCB * d.nBH * d.nBW
	pl.inStart = make([]int32, 0, pl.nIn+1)
	for n := 0; n < c.N; n++ {
		for cb := 0; cb < d.nCB; cb++ {
			for bh := 0; bh < d.nBH; bh++ {
				for bw := 0; bw < d.nBW; bw++ {
					pl.inStart = append(pl.inStart, int32(len(pl.inCoef)))
					for ci := 0; ci < min(d.cw, c.C-cb*d.cw); ci++ {
						ch := cb*d.cw + ci
						for y := 0; y < d.hw; y++ {
							iy := bh*d.stepH + y - c.PH
							if iy < 0 || iy >= c.H {
								continue
							}
							for x := 0; x < d.ww; x++ {
								ix := bw*d.stepW + x - c.PW
								if ix < 0 || ix >= c.W {
									continue
								}
								pl.inCoef = append(pl.inCoef, int32(ci*hwww+y*d.ww+x))
								pl.inSrc = append(pl.inSrc, int32(((n*c.C+ch)*c.H+iy)*c.W+ix))
							}
						}
					}
				}
			}
		}
	}
	pl.inStart = append(pl.inStart, int32(len(pl.inCoef)))
	O := (d.cw-1)*hwww + (d.khe-1)*d.ww + d.kwe - 1
	S := d.cw * hwww // span of an input block; output channel k of a ciphertext sits at k·S
	pl.wStart = make([]int32, 0, c.M*d.nCB+1)
	for m0 := 0; m0 < c.M; m0 += d.k {
		m1 := min(c.M, m0+d.k)
		// Output channels m0..m1−1 read channels [cLo, cHi) of their groups, in blocks cbLo..cbHi.
		cLo, cHi := m0/d.mg*d.cg, (m1-1)/d.mg*d.cg+d.cg
		cbLo, cbHi := cLo/d.cw, (cHi-1)/d.cw
		grp := group{}
		for cb := cbLo; cb <= cbHi; cb++ {
			grp.ws = append(grp.ws, int32(pl.nW))
			pl.nW++
			pl.wStart = append(pl.wStart, int32(len(pl.wCoef)))
			for m := m0; m < m1; m++ {
				gLo := m / d.mg * d.cg
				for ch := max(gLo, cb*d.cw); ch < min(gLo+d.cg, (cb+1)*d.cw); ch++ {
					ci := ch - cb*d.cw
					for ky := 0; ky < c.KH; ky++ {
						for kx := 0; kx < c.KW; kx++ {
							pl.wCoef = append(pl.wCoef, int32((m-m0)*S+O-(ci*hwww+ky*c.DH*d.ww+kx*c.DW)))
							pl.wElem = append(pl.wElem, int32(((m*d.cg+ch-gLo)*c.KH+ky)*c.KW+kx))
						}
					}
				}
			}
		}
		for n := 0; n < c.N; n++ {
			for bh := 0; bh < d.nBH; bh++ {
				for bw := 0; bw < d.nBW; bw++ {
					o := output{}
					for cb := cbLo; cb <= cbHi; cb++ {
						o.in = append(o.in, int32(inIdx(n, cb, bh, bw)))
					}
					for m := m0; m < m1; m++ {
						for i := 0; i < d.stepH; i++ {
							Y := bh*d.stepH + i
							if Y%c.SH != 0 || Y/c.SH >= c.OH {
								continue
							}
							for j := 0; j < d.stepW; j++ {
								X := bw*d.stepW + j
								if X%c.SW != 0 || X/c.SW >= c.OW {
									continue
								}
								o.need = append(o.need, int32((m-m0)*S+O+i*d.ww+j))
								o.dst = append(o.dst, int32(((n*c.M+m)*c.OH+Y/c.SH)*c.OW+X/c.SW))
							}
						}
					}
					grp.outs = append(grp.outs, int32(len(pl.outs)))
					pl.outs = append(pl.outs, o)
					pl.products += len(o.in)
				}
			}
		}
		pl.groups = append(pl.groups, grp)
	}
	pl.wStart = append(pl.wStart, int32(len(pl.wCoef)))
	return pl
}

// chooseMatMul picks the block d0×d1 (d0 rows of W, d1 of its columns, d0·d1 ≤ N) of least
// traffic (fewest products on ties).
func chooseMatMul(p *Params, m, k, n int) (d0, d1 int, cost int64) {
	N := p.N()
	cost = -1
	for b1 := 1; b1 <= min(k, N); b1++ {
		b0 := min(m, N/b1)
		nKB, nRB := (k+b1-1)/b1, (m+b0-1)/b0
		c := traffic(p, int64(n)*int64(nKB), func(yield func(nn, count int64)) {
			yield(int64(b0), int64(n)*int64(m/b0))
			if r := m % b0; r != 0 {
				yield(int64(r), int64(n))
			}
		})
		if cost < 0 || c < cost || (c == cost && nKB*nRB < ((k+d1-1)/d1)*((m+d0-1)/d0)) {
			d0, d1, cost = b0, b1, c
		}
	}
	return
}

// matMulPlan builds the plan of W (m×k) times X (k×n): per column j of X and block of d1 rows
// of X, the polynomial Σ_c x[kb·d1+c, j]·X^c; per block of d0 rows and d1 columns of W,
// Σ_{r,c} W[r,c]·X^(r·d1 + d1−1−c); coefficient r·d1 + d1−1 of the product is row r's dot product.
func matMulPlan(p *Params, m, k, n int) (*plan, error) {
	if m < 1 || k < 1 || n < 1 {
		return nil, fmt.Errorf("he: MatMul %d×%d times %d×%d: dimensions must be positive", m, k, k, n)
	}
	if int64(m)*int64(k) > 1<<30 || int64(k)*int64(n) > 1<<30 || int64(m)*int64(n) > 1<<30 {
		return nil, fmt.Errorf("he: MatMul %d×%d times %d×%d: operands of more than 2^30 elements", m, k, k, n)
	}
	d0, d1, cost := chooseMatMul(p, m, k, n)
	nKB, nRB := (k+d1-1)/d1, (m+d0-1)/d0
	pl := &plan{bytes: cost, nDst: m * n, nX: k * n, nWelem: m * k, nIn: n * nKB, nW: nRB * nKB}
	for j := 0; j < n; j++ {
		for kb := 0; kb < nKB; kb++ {
			pl.inStart = append(pl.inStart, int32(len(pl.inCoef)))
			for c := 0; c < min(d1, k-kb*d1); c++ {
				pl.inCoef = append(pl.inCoef, int32(c))
				pl.inSrc = append(pl.inSrc, int32((kb*d1+c)*n+j))
			}
		}
	}
	pl.inStart = append(pl.inStart, int32(len(pl.inCoef)))
	for rb := 0; rb < nRB; rb++ {
		for kb := 0; kb < nKB; kb++ {
			pl.wStart = append(pl.wStart, int32(len(pl.wCoef)))
			for r := 0; r < min(d0, m-rb*d0); r++ {
				for c := 0; c < min(d1, k-kb*d1); c++ {
					pl.wCoef = append(pl.wCoef, int32(r*d1+d1-1-c))
					pl.wElem = append(pl.wElem, int32((rb*d0+r)*k+kb*d1+c))
				}
			}
		}
	}
	pl.wStart = append(pl.wStart, int32(len(pl.wCoef)))
	for rb := 0; rb < nRB; rb++ {
		grp := group{}
		for kb := 0; kb < nKB; kb++ {
			grp.ws = append(grp.ws, int32(rb*nKB+kb))
		}
		for j := 0; j < n; j++ {
			o := output{}
			for kb := 0; kb < nKB; kb++ {
				o.in = append(o.in, int32(j*nKB+kb))
			}
			for r := 0; r < min(d0, m-rb*d0); r++ {
				o.need = append(o.need, int32(r*d1+d1-1))
				o.dst = append(o.dst, int32((rb*d0+r)*n+j))
			}
			grp.outs = append(grp.outs, int32(len(pl.outs)))
			pl.outs = append(pl.outs, o)
			pl.products += nKB
		}
		pl.groups = append(pl.groups, grp)
	}
	return pl, nil
}
