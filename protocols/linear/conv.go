package linear

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/linear/lincost"
	"github.com/cryptflow-go/cryptflow/ring"
)

// ConvBits is the communication of Conv2D over Z_{2^l} in bits, both directions together, without
// the OT layer's per-batch constants and the one-time base OTs (lincost.ConvBits).
func ConvBits(c ring.ConvGeom, l int) int64 { return lincost.ConvBits(c, l) }

// ConvIm2colBits is the communication of the same convolution as one MatMul per group of the
// weights with the im2col matrix, plus one flip bit per OT in the one-batch mode
// (lincost.ConvIm2colBits).
func ConvIm2colBits(c ring.ConvGeom, l int, oneBatch bool) int64 {
	return lincost.ConvIm2colBits(c, l, oneBatch)
}

// ConvDirect reports whether Conv2D runs the convolution c with less communication than MatMul on
// its im2col matrix in this session's mode (ConvBits < ConvIm2colBits). It is false for an
// invalid shape and for one whose widest element would need a pad of more than 2^22 bits (M/Groups
// times the positions it reaches times l). Both formulas are exact and depend on public data only,
// so both parties decide alike. It is true for every kernel larger than 1×1 and for padded 1×1
// convolutions; an unpadded 1×1 convolution (any stride) costs the same either way up to the flip
// bits, and the matrix product is kept.
func (s *Session) ConvDirect(c ring.ConvGeom) bool { return ConvDirectFor(c, s.r.Bits, s.oneBatch) }

// ConvDirectFor is Session.ConvDirect for a session over Z_{2^l} in the given mode
// (lincost.ConvDirectFor).
func ConvDirectFor(c ring.ConvGeom, l int, oneBatch bool) bool {
	return lincost.ConvDirectFor(c, l, oneBatch)
}

// Conv2D sets dst ([N, M, OH, OW]) to this party's share of the convolution of the shared x
// ([N, C, H, W], this party's share) with party 0's weights w ([M, C/Groups, KH, KW]; nil at party
// 1). The OTs run on the input elements, not on the im2col matrix: for every input element read
// by some window and every bit i of party 1's share of it, one OT whose message, for each output
// channel of the group and each output position the element reaches, is the weight that joins
// them (l−i bits). Communication: ConvBits, in the one-batch flow (2 flights per chunk plus 2 per
// stream) whatever Options.OneBatch says. dst must not alias x.
func (s *Session) Conv2D(ctx context.Context, dst, w []uint64, c ring.ConvGeom, x []uint64) error {
	const op = "Conv2D"
	if err := s.usable(op); err != nil {
		return err
	}
	if err := c.Validate(); err != nil {
		return fmt.Errorf("linear: %s: %w", op, err)
	}
	cg, mg, kk, P, HW := c.C/c.Groups, c.M/c.Groups, c.KH*c.KW, c.OH*c.OW, c.H*c.W
	if err := s.checkOperands(op, dst, w, x, c.M*cg*kk, c.N*c.C*HW, c.N*c.M*P); err != nil {
		return err
	}
	ix := newConvIndex(c)
	l := s.r.Bits
	if bits := mg * ix.most * l; bits > maxPadBits {
		return fmt.Errorf("linear: %s: %d output channels per group reaching %d positions need OT messages of %d bits, more than %d",
			op, mg, ix.most, bits, maxPadBits)
	}
	nt := len(ix.touched)
	E := c.N * cg * nt
	mask := s.r.Mask()
	for g := 0; g < c.Groups; g++ {
		p := &convProduct{ix: ix, cg: cg, mg: mg, kk: kk, p: P, nt: nt}
		if s.party == 0 {
			// V[(ci·kk + k)·mg + j] = W[g·mg + j, ci, k]: the vector an element of channel ci
			// contributes through kernel offset k, contiguous.
			p.V = make([]uint64, cg*kk*mg)
			for j := 0; j < mg; j++ {
				row := w[(g*mg+j)*cg*kk : (g*mg+j+1)*cg*kk]
				for ck, v := range row {
					p.V[ck*mg+j] = v
				}
			}
		} else {
			p.x = make([]uint64, E)
			for e := range p.x {
				n, ci, t := p.coords(e)
				p.x[e] = x[(n*c.C+g*cg+ci)*HW+int(ix.touched[t])]
			}
		}
		var acc []uint64
		if E > 0 {
			// Split by the pairs the elements carry (N·C/groups·z), as MatMul splits the
			// im2col matrix's entries.
			parts := s.partsOf(E, c.N*cg*len(ix.k))
			var err error
			acc, err = s.crossWith(ctx, op, parts, c.N*P*mg, func(ctx context.Context, st *stream, lo, hi int, acc []uint64) error {
				return st.crossOneBatch(ctx, p, lo, hi, acc)
			})
			if err != nil {
				return err
			}
		} else {
			acc = make([]uint64, c.N*P*mg)
		}
		if s.party == 0 {
			p.addLocal(acc, x, c.N, c.C, g, HW)
		}
		// acc is [N][P][mg]: scatter into dst [N][M][P].
		for n := 0; n < c.N; n++ {
			for j := 0; j < mg; j++ {
				out := dst[(n*c.M+g*mg+j)*P : (n*c.M+g*mg+j+1)*P]
				src := acc[n*P*mg+j:]
				for q := range out {
					out[q] = src[q*mg] & mask
				}
			}
		}
	}
	return nil
}

// convIndex lists, for every input position of a plane that some window reads, the (kernel
// offset, output position) pairs that read it, in increasing kernel offset.
type convIndex struct {
	touched []int32 // the input positions (y·W + x) read by at least one window, increasing
	start   []int32 // the pairs of touched[t] are k[start[t]:start[t+1]], q[start[t]:start[t+1]]
	k, q    []int32 // kernel offset (ky·KW + kx) and output position (oy·OW + ox) of each pair
	most    int     // the largest number of pairs of one position
}

func newConvIndex(c ring.ConvGeom) *convIndex {
	HW := c.H * c.W
	pos := func(oy, ox, ky, kx int) int {
		iy := oy*c.SH - c.PH + ky*c.DH
		ix := ox*c.SW - c.PW + kx*c.DW
		if iy < 0 || iy >= c.H || ix < 0 || ix >= c.W {
			return -1
		}
		return iy*c.W + ix
	}
	// visit calls f for every pair in the order kernel offset, then output position.
	visit := func(f func(s, k, q int)) {
		for ky := 0; ky < c.KH; ky++ {
			for kx := 0; kx < c.KW; kx++ {
				for oy := 0; oy < c.OH; oy++ {
					for ox := 0; ox < c.OW; ox++ {
						if s := pos(oy, ox, ky, kx); s >= 0 {
							f(s, ky*c.KW+kx, oy*c.OW+ox)
						}
					}
				}
			}
		}
	}
	count := make([]int32, HW)
	visit(func(s, _, _ int) { count[s]++ })
	ix := &convIndex{}
	slot := make([]int32, HW) // where the next pair of position s goes
	n := int32(0)
	for s, v := range count {
		if v == 0 {
			continue
		}
		ix.touched = append(ix.touched, int32(s))
		ix.start = append(ix.start, n)
		slot[s] = n
		n += v
		ix.most = max(ix.most, int(v))
	}
	ix.start = append(ix.start, n)
	ix.k, ix.q = make([]int32, n), make([]int32, n)
	visit(func(s, k, q int) {
		ix.k[slot[s]], ix.q[slot[s]] = int32(k), int32(q)
		slot[s]++
	})
	return ix
}

// convProduct is one group of a convolution as a product over the input elements it reads:
// element e is (image n, channel ci of the group, read position t), in that nesting. Its message
// for bit i is, for each pair (k, q) of position t, the mg weights V[(ci·kk + k)·mg : +mg] at l−i
// bits, and its products go to accumulator rows (n·P + q)·mg : +mg.
type convProduct struct {
	ix                *convIndex
	cg, mg, kk, p, nt int
	V                 []uint64 // party 0: cg·kk·mg words
	x                 []uint64 // party 1: its share, one word per element
}

// pad is 2: the OTs of a convolution carry 128-bit seeds, which both parties expand to exactly the
// pad bits an element and bit need (expander), instead of pads of the widest message.
func (p *convProduct) pad(int) int      { return seedWords }
func (p *convProduct) shares() []uint64 { return p.x }

func (p *convProduct) coords(e int) (n, ci, t int) {
	t = e % p.nt
	e /= p.nt
	return e / p.cg, e % p.cg, t
}

// convFrameBits is the target size of one correction frame (2 MiB); a frame holds whole elements.
const convFrameBits = 1 << 24

// frame returns the end of the correction frame that starts at element f0 (at most c1) and its size
// in bits, half = l(l+1)/2.
func (p *convProduct) frame(f0, c1, half int) (f1, bits int) {
	for f1 = f0; f1 < c1; f1++ {
		_, _, t := p.coords(f1)
		b := p.mg * int(p.ix.start[t+1]-p.ix.start[t]) * half
		if f1 > f0 && bits+b > convFrameBits {
			break
		}
		bits += b
	}
	return f1, bits
}

// sendCorrections is party 0's side of the elements [c0, c1): per OT, with the seeds swapped when
// the flip bit is 1, it expands the pads ρ0, ρ1 and sends d = ρ0 − ρ1 + a mod 2^(l−i) for every
// weight a of the element's message, and keeps −2^i·ρ0 at the weight's output.
func (p *convProduct) sendCorrections(ctx context.Context, st *stream, b *oneBatchBufs, flips []uint64, c0, c1, pw int, acc []uint64) error {
	l, mg := st.l, p.mg
	half := l * (l + 1) / 2
	corr := grow(&st.corr, (max(convFrameBits, mg*p.ix.most*half)+63)/64)
	x := st.expander(mg * p.ix.most * l)
	var bw bitvec.Writer
	for f0 := c0; f0 < c1; {
		f1, bits := p.frame(f0, c1, half)
		bw.Reset(corr)
		for e := f0; e < f1; e++ {
			n, ci, t := p.coords(e)
			ks := p.ix.k[p.ix.start[t]:p.ix.start[t+1]]
			qs := p.ix.q[p.ix.start[t]:p.ix.start[t+1]]
			qs = qs[:len(ks)]
			for i := 0; i < l; i++ {
				inst := (e-c0)*l + i
				L, sh := uint(l-i), uint(i)
				s0, s1 := seedAt(b.m0, inst), seedAt(b.m1, inst)
				if bitvec.Bit(flips, inst) == 1 {
					s0, s1 = s1, s0
				}
				nbits := len(ks) * mg * int(L)
				pad0 := x.expand(x.pad0, s0, nbits, e, i)
				pad1 := x.expand(x.pad1, s1, nbits, e, i)
				mask := bitvec.Mask(int(L))
				var pos uint
				for pi, k := range ks {
					a := p.V[(ci*p.kk+int(k))*mg:][:mg]
					out := acc[(n*p.p+int(qs[pi]))*mg:][:mg]
					for j, aj := range a {
						v0 := bitvec.Peek(pad0, pos)
						v1 := bitvec.Peek(pad1, pos)
						pos += L
						bw.Put((v0-v1+aj)&mask, L)
						out[j] -= v0 << sh
					}
				}
			}
		}
		bw.Flush()
		if err := st.conn.SendBits(ctx, corr, bits); err != nil {
			return err
		}
		f0 = f1
	}
	return st.conn.Flush(ctx)
}

// recvCorrections is party 1's side: with its pad ρ_c = ρ_b after the flip (expanded from its
// seed), it adds 2^i·(ρ_b + b·d) at each weight's output (the corrections of an OT with b = 0 are
// skipped).
func (p *convProduct) recvCorrections(ctx context.Context, st *stream, b *oneBatchBufs, c0, c1, pw int, acc []uint64) error {
	l, mg := st.l, p.mg
	half := l * (l + 1) / 2
	words := (max(convFrameBits, mg*p.ix.most*half) + 63) / 64
	corr := grow(&st.corr, words+1)[:words+1] // one word past the stream for bitvec.Peek
	x := st.expander(mg * p.ix.most * l)
	for f0 := c0; f0 < c1; {
		f1, bits := p.frame(f0, c1, half)
		if err := st.conn.RecvBits(ctx, corr, bits); err != nil {
			return err
		}
		var cpos uint // position in the frame's corrections
		for e := f0; e < f1; e++ {
			xe := p.x[e]
			n, _, t := p.coords(e)
			qs := p.ix.q[p.ix.start[t]:p.ix.start[t+1]]
			for i := 0; i < l; i++ {
				inst := (e-c0)*l + i
				L, sh := uint(l-i), uint(i)
				nbits := len(qs) * mg * int(L)
				pad := x.expand(x.pad0, seedAt(b.m0, inst), nbits, e, i)
				var pos uint
				if xe>>sh&1 == 0 {
					for _, q := range qs {
						out := acc[(n*p.p+int(q))*mg:][:mg]
						for j := range out {
							out[j] += bitvec.Peek(pad, pos) << sh
							pos += L
						}
					}
					cpos += uint(nbits)
					continue
				}
				for _, q := range qs {
					out := acc[(n*p.p+int(q))*mg:][:mg]
					for j := range out {
						out[j] += (bitvec.Peek(pad, pos) + bitvec.Peek(corr, cpos)) << sh
						pos += L
						cpos += L
					}
				}
			}
		}
		f0 = f1
	}
	return nil
}

// addLocal adds party 0's local term, the convolution of its own share x with the weights of
// group g, to acc ([N][P][mg]): every element read by a window, times the weights of its pairs.
func (p *convProduct) addLocal(acc, x []uint64, N, C, g, HW int) {
	mg := p.mg
	for n := 0; n < N; n++ {
		for ci := 0; ci < p.cg; ci++ {
			plane := x[(n*C+g*p.cg+ci)*HW : (n*C+g*p.cg+ci+1)*HW]
			for t, s := range p.ix.touched {
				v := plane[s]
				lo, hi := p.ix.start[t], p.ix.start[t+1]
				for pi := lo; pi < hi; pi++ {
					a := p.V[(ci*p.kk+int(p.ix.k[pi]))*mg:][:mg]
					out := acc[(n*p.p+int(p.ix.q[pi]))*mg:][:mg]
					for j, aj := range a {
						out[j] += v * aj
					}
				}
			}
		}
	}
}

// chunk bounds a chunk by its OT seeds and choice bits, as the matrix product's one-batch chunks
// are bounded by their pads: l·seedWords words per element within the budget. The pads are expanded
// element by element and the corrections travel in frames, so a chunk needs no more memory; large
// chunks mean few OT batches and flights (measured: a 64→64-channel 16×16 layer at l = 41 takes
// 3.0 s in 3 chunks, 3.8–4.9 s in 257 chunks bounded by correction volume).
func (p *convProduct) chunk(l, budget int) int { return chunkElems(l*seedWords, budget) }
