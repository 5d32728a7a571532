package dealer

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// Kind is the kind of a linear layer.
type Kind uint8

// The linear layers: products of party 0's weights with a shared tensor.
const (
	KindMatMul Kind = 1 // z[m,n] = W[m,k]·x[k,n]
	KindConv   Kind = 2 // z = conv(W, x) as ring.ConvGeom defines it
	KindElem   Kind = 3 // z = W ⊙ x elementwise
)

// Shape is the public shape of a linear layer.
type Shape struct {
	Kind    Kind
	M, K, N int           // KindMatMul
	Conv    ring.ConvGeom // KindConv
	Len     int           // KindElem
}

// Sizes returns the element counts of the weights, the input and the output.
func (s Shape) Sizes() (w, x, z int) {
	switch s.Kind {
	case KindMatMul:
		return s.M * s.K, s.K * s.N, s.M * s.N
	case KindConv:
		g := s.Conv
		return g.M * (g.C / g.Groups) * g.KH * g.KW, g.N * g.C * g.H * g.W, g.N * g.M * g.OH * g.OW
	case KindElem:
		return s.Len, s.Len, s.Len
	}
	return 0, 0, 0
}

// Validate checks the shape's sizes.
func (s Shape) Validate() error {
	switch s.Kind {
	case KindMatMul:
		if s.M < 1 || s.K < 1 || s.N < 1 || s.M > maxCount || s.K > maxCount || s.N > maxCount {
			return fmt.Errorf("dealer: matmul %d×%d×%d", s.M, s.K, s.N)
		}
	case KindConv:
		if err := s.Conv.Validate(); err != nil {
			return fmt.Errorf("dealer: %w", err)
		}
	case KindElem:
		if s.Len < 0 || s.Len > maxCount {
			return fmt.Errorf("dealer: elementwise product of %d elements", s.Len)
		}
	default:
		return fmt.Errorf("dealer: unknown linear kind %d", s.Kind)
	}
	w, x, z := s.Sizes()
	if w > maxCount || x > maxCount || z > maxCount {
		return fmt.Errorf("dealer: linear layer with %d, %d, %d elements exceeds %d", w, x, z, maxCount)
	}
	return nil
}

func (s Shape) words() []uint64 {
	g := s.Conv
	return []uint64{uint64(s.Kind), uint64(s.M), uint64(s.K), uint64(s.N), uint64(s.Len),
		uint64(g.N), uint64(g.C), uint64(g.H), uint64(g.W), uint64(g.M), uint64(g.OH), uint64(g.OW),
		uint64(g.KH), uint64(g.KW), uint64(g.SH), uint64(g.SW), uint64(g.PH), uint64(g.PW),
		uint64(g.DH), uint64(g.DW), uint64(g.Groups)}
}

func shapeOf(w []uint64) Shape {
	i := func(k int) int { return int(min(w[k], maxCount+1)) }
	return Shape{Kind: Kind(w[0]), M: i(1), K: i(2), N: i(3), Len: i(4), Conv: ring.ConvGeom{
		N: i(5), C: i(6), H: i(7), W: i(8), M: i(9), OH: i(10), OW: i(11), KH: i(12), KW: i(13),
		SH: i(14), SW: i(15), PH: i(16), PW: i(17), DH: i(18), DW: i(19), Groups: i(20)}}
}

// Apply sets dst = W ∘ x in the ring (the layer's operation on plain values: every party's local
// product).
func (s Shape) Apply(r ring.Ring, dst, w, x []uint64) {
	s.applyPar(r, dst, w, x, 1)
}

// ApplyPar is Apply with the products on up to workers goroutines (the same result): the
// plaintext ring kernels of the online step, which the two-party backend's linear layers made
// ahead by HE use too (vm/sci).
func (s Shape) ApplyPar(r ring.Ring, dst, w, x []uint64, workers int) {
	s.applyPar(r, dst, w, x, workers)
}

// applyPar is Apply with the products on up to workers goroutines (the same result).
func (s Shape) applyPar(r ring.Ring, dst, w, x []uint64, workers int) {
	switch s.Kind {
	case KindMatMul:
		matMulPar(r, dst, w, s.M, s.K, s.N, x, workers)
	case KindConv:
		conv(r, dst, w, s.Conv, x, workers)
	case KindElem:
		r.MulVec(dst, w, x)
	}
}

// conv is the convolution of ring.ConvGeom by im2col and one product per image and group.
func conv(r ring.Ring, dst, w []uint64, g ring.ConvGeom, x []uint64, workers int) {
	cg, mg := g.C/g.Groups, g.M/g.Groups
	kk, p := cg*g.KH*g.KW, g.OH*g.OW
	col := make([]uint64, kk*p)
	for n := 0; n < g.N; n++ {
		for grp := 0; grp < g.Groups; grp++ {
			for c := 0; c < cg; c++ {
				xc := x[(n*g.C+grp*cg+c)*g.H*g.W:][:g.H*g.W]
				for ky := 0; ky < g.KH; ky++ {
					for kx := 0; kx < g.KW; kx++ {
						row := col[((c*g.KH+ky)*g.KW+kx)*p:][:p]
						for oy := 0; oy < g.OH; oy++ {
							iy := oy*g.SH - g.PH + ky*g.DH
							out := row[oy*g.OW:][:g.OW]
							if iy < 0 || iy >= g.H {
								clear(out)
								continue
							}
							xr := xc[iy*g.W:][:g.W]
							for ox := range out {
								ix := ox*g.SW - g.PW + kx*g.DW
								if ix < 0 || ix >= g.W {
									out[ox] = 0
								} else {
									out[ox] = xr[ix]
								}
							}
						}
					}
				}
			}
			matMulPar(r, dst[(n*g.M+grp*mg)*p:][:mg*p], w[grp*mg*kk:][:mg*kk], mg, kk, p, col, workers)
		}
	}
}

// Linear runs the three-party linear layers between a data party and the other on conn, with
// the helper on link (see the package documentation). Both data parties make the same calls in
// the same order. A Linear is not safe for concurrent use.
type Linear struct {
	link  *Link
	conn  *transport.Conn
	r     ring.Ring
	party int
	calls uint64
	// Period is, at party 0, the number of calls per run of the program (the weights of call
	// t are those of call t − Period): a weight tensor is then identified by t mod Period and
	// its F crosses once per session. Zero: every call is a new weight tensor.
	Period int
	sums   map[uint64]uint64   // party 0: id → checksum of the weights (a local consistency check)
	seed   maphash.Seed        // for the checksums
	fs     map[uint64][]uint64 // party 1: id → F = W − B
	err    error

	// Workers is the number of goroutines a data party's product with the weights (party 0's
	// W·(x0 + u), party 1's F·A) may use; 0 or 1: one. The result does not depend on it.
	Workers int
	// PrecomputeCap bounds, in bytes (8 per element), party 1's shares z1 = F·A + D computed
	// by Prepare before the inference that uses them; 0: none are computed ahead.
	PrecomputeCap int64
	pre           map[uint64]preShare // party 1: call → z1 computed ahead
	preBytes      int64
	stats         LinearStats
}

// preShare is party 1's share z1 = F·A + D of a call, computed before the call (Prepare).
type preShare struct {
	id uint64
	sh Shape
	z  []uint64
}

// LinearStats counts party 1's products F·A: those computed during their call (on the
// inference's critical path) and those computed ahead by Prepare.
type LinearStats struct {
	Online, Ahead int64
}

// Stats returns the counts so far.
func (s *Linear) Stats() LinearStats { return s.stats }

// NewLinear returns the linear layers of a data party over the ring r.
func NewLinear(link *Link, conn *transport.Conn, r ring.Ring) (*Linear, error) {
	if link == nil || conn == nil {
		return nil, errors.New("dealer: NewLinear: nil link or connection")
	}
	if !r.Valid() {
		return nil, fmt.Errorf("dealer: NewLinear: ring %v", r)
	}
	return &Linear{link: link, conn: conn, r: r, party: link.party, sums: map[uint64]uint64{}, seed: maphash.MakeSeed(),
		fs: map[uint64][]uint64{}, pre: map[uint64]preShare{}}, nil
}

// checksum identifies party 0's weights of a call (a local consistency check, never sent).
func (s *Linear) checksum(w []uint64, kind Kind) uint64 {
	return maphash.Bytes(s.seed, bitvec.Bytes(w)) ^ uint64(len(w))<<8 ^ uint64(kind)
}

// Weights is a weight tensor for ShareWeights: the id of the calls that use it (the first such
// call, mod Linear.Period), its layer kind and element count, and at party 0 its values as
// signed integers (they are reduced into the ring; nil at party 1).
type Weights struct {
	ID     uint64
	Kind   Kind
	N      int
	Signed []int64
}

// ShareWeightsBytes is the wire size of ShareWeights's one message (party 0 → party 1): three
// words per tensor and every tensor's F, l bits per weight.
func ShareWeightsBytes(ws []Weights, l int) int64 {
	b := int64(8*3*len(ws) + transport.HeaderSize)
	for _, w := range ws {
		b += PackedFrames(w.N, l)
	}
	return b
}

// ShareWeights sends every F = W − B of the weight tensors ws at once (party 0 → party 1), at
// the session's set-up instead of at each tensor's first call, so that party 1 holds them
// before the first inference and can compute its shares F·A + D ahead (Prepare). Both data
// parties call it with the same ids, kinds and sizes (they follow from the program; party 1
// checks them against party 0's) before any Apply; party 0 needs Period > 0 (an id is a call
// mod Period). A later call of a tensor sent here sends no F. Failures are as Apply's.
func (s *Linear) ShareWeights(ctx context.Context, ws []Weights) error {
	if s.err != nil {
		return fmt.Errorf("dealer: share weights: unusable after an earlier failure: %w", s.err)
	}
	if s.calls > 0 {
		return errors.New("dealer: share weights: after the first linear call")
	}
	seen := map[uint64]bool{}
	for _, w := range ws {
		if w.N < 0 || w.N > maxCount || seen[w.ID] || w.Kind < KindMatMul || w.Kind > KindElem {
			return fmt.Errorf("dealer: share weights: tensor %d (kind %d, %d elements) invalid or repeated", w.ID, w.Kind, w.N)
		}
		seen[w.ID] = true
		if s.party == 0 && (len(w.Signed) != w.N || s.Period <= 0 || w.ID >= uint64(s.Period)) {
			return fmt.Errorf("dealer: share weights: party 0's tensor %d has %d of %d values (Period %d)", w.ID, len(w.Signed), w.N, s.Period)
		}
	}
	if err := s.shareWeights(ctx, ws); err != nil {
		s.err = err
		actx, cancel := context.WithTimeout(context.Background(), timeoutAbort)
		_ = s.conn.Abort(actx, "dealer: sharing the weights failed at the peer: "+err.Error())
		cancel()
		return err
	}
	return nil
}

func (s *Linear) shareWeights(ctx context.Context, ws []Weights) error {
	l := s.r.Bits
	hdr := make([]uint64, 0, 3*len(ws))
	for _, w := range ws {
		hdr = append(hdr, w.ID, uint64(w.N), uint64(w.Kind))
	}
	if s.party == 0 {
		if err := s.conn.SendUint64s(ctx, hdr); err != nil {
			return err
		}
		var w, f []uint64
		for _, t := range ws {
			if cap(w) < t.N {
				w, f = make([]uint64, t.N), make([]uint64, t.N)
			}
			w, f = w[:t.N], f[:t.N]
			s.r.FromSignedVec(w, t.Signed)
			s.sums[t.ID] = s.checksum(w, t.Kind)
			s.link.prg(purWeight, t.ID).Uint64s(f)
			s.r.SubVec(f, w, f)
			if err := sendPacked(ctx, s.conn, f, l); err != nil {
				return err
			}
		}
		return s.conn.Flush(ctx)
	}
	got := make([]uint64, len(hdr))
	if err := s.conn.RecvUint64s(ctx, got); err != nil {
		return err
	}
	if !slices.Equal(got, hdr) {
		return errors.New("dealer: share weights: party 0's weight tensors (ids, sizes, kinds) are not those of this party's program")
	}
	for _, t := range ws {
		f := make([]uint64, t.N)
		if err := recvPacked(ctx, s.conn, f, l); err != nil {
			return err
		}
		s.fs[t.ID] = f
	}
	return nil
}

// Prepare (party 1) computes, before the inference that uses them, its shares z1 = F·A + D of
// the linear calls whose correction D was dealt ahead for the inference now served
// (Link.BeginInference), or being dealt (called from Link.BeginInferencePrepared: each share as
// its correction arrives, overlapping the helper's dealing of the rest), and whose F it holds (ShareWeights, or an earlier call), in call
// order, while they fit in PrecomputeCap; their calls then send u and use z1, with no product
// and no request to the helper on the critical path. The corrections are taken from the
// replies dealt ahead, as the calls would. It returns the number of shares computed. Party 0
// and a Linear without a cap do nothing.
func (s *Linear) Prepare(ctx context.Context) (int, error) {
	if s.party != 1 || s.PrecomputeCap <= 0 || s.err != nil {
		return 0, nil
	}
	for call, p := range s.pre {
		if call < s.calls { // computed for a call that has passed (it was not made)
			s.preBytes -= 8 * int64(len(p.z))
			delete(s.pre, call)
		}
	}
	n := 0
	for _, req := range s.link.dealtLinear() {
		id, call, l, sh := req[1], req[2], int(req[3]), shapeOf(req[4:])
		f := s.fs[id]
		nw, nx, nz := sh.Sizes()
		if call < s.calls || l != s.r.Bits || len(f) != nw || sh.Validate() != nil {
			continue
		}
		if _, ok := s.pre[call]; ok {
			continue
		}
		if s.preBytes+8*int64(nz) > s.PrecomputeCap {
			break
		}
		a := make([]uint64, nx)
		s.link.prg(purMaskA, call).Uint64s(a)
		s.r.ReduceVec(a)
		z := make([]uint64, nz)
		d := make([]uint64, nz)
		if err := s.link.request(ctx, req[:], func(src frameReader) error { return recvPacked(ctx, src, d, l) }, reqPrepare); err != nil {
			s.err = err
			return n, err
		}
		sh.applyPar(s.r, z, f, a, s.Workers)
		s.r.AddVec(z, z, d)
		s.pre[call] = preShare{id: id, sh: sh, z: z}
		s.preBytes += 8 * int64(nz)
		s.stats.Ahead++
		n++
	}
	return n, nil
}

// LinearBytes is the traffic of one call, in wire bytes: party 0 → party 1 (the 24-byte header
// and, the first time a weight tensor is used in the session, F), party 1 → party 0 (x1 − A),
// helper → party 1 (D) and party 1 → helper (the request).
func LinearBytes(s Shape, l int, first bool) (p01, p10, p21, p12 int64) {
	w, x, z := s.Sizes()
	p01 = 24 + transport.HeaderSize
	if first {
		p01 += PackedFrames(w, l)
	}
	return p01, PackedFrames(x, l), PackedFrames(z, l), 8*reqWords + transport.HeaderSize
}

// Apply sets dst to this party's share of W ∘ x: w is party 0's weights (nil at party 1), x this
// party's share of the input. Argument errors leave the Linear usable; any other failure aborts
// the connection to the other data party (which then fails at once) and the Linear refuses
// further calls.
func (s *Linear) Apply(ctx context.Context, sh Shape, dst, w, x []uint64) error {
	if s.err != nil {
		return fmt.Errorf("dealer: linear layer: unusable after an earlier failure: %w", s.err)
	}
	if err := s.args(sh, dst, w, x); err != nil {
		return err
	}
	if err := s.apply(ctx, sh, dst, w, x); err != nil {
		s.err = err
		actx, cancel := context.WithTimeout(context.Background(), timeoutAbort)
		_ = s.conn.Abort(actx, "dealer: linear layer failed at the peer: "+err.Error())
		cancel()
		return err
	}
	return nil
}

func (s *Linear) args(sh Shape, dst, w, x []uint64) error {
	if err := sh.Validate(); err != nil {
		return err
	}
	nw, nx, nz := sh.Sizes()
	if len(x) != nx || len(dst) != nz {
		return fmt.Errorf("dealer: linear layer: input %d, output %d elements, want %d, %d", len(x), len(dst), nx, nz)
	}
	if s.party == 0 && len(w) != nw || s.party == 1 && w != nil {
		return fmt.Errorf("dealer: linear layer: party %d has %d weights (want %d at party 0, none at party 1)", s.party, len(w), nw)
	}
	return nil
}

func (s *Linear) apply(ctx context.Context, sh Shape, dst, w, x []uint64) error {
	nw, nx, nz := sh.Sizes()
	call := s.calls
	s.calls++
	l := s.r.Bits
	if s.party == 0 {
		id := call
		if s.Period > 0 {
			id = call % uint64(s.Period)
		}
		sum := s.checksum(w, sh.Kind)
		old, seen := s.sums[id]
		if seen && old != sum {
			return fmt.Errorf("dealer: linear call %d: the weights differ from those of call %d (Period %d is wrong)", call, call-uint64(s.Period), s.Period)
		}
		s.sums[id] = sum
		var hdr [3]uint64 // id, call, and whether F follows: 0 no, 1 yes (keep it), 2 yes (once)
		hdr[0], hdr[1], hdr[2] = id, call, 1
		if seen {
			hdr[2] = 0
		} else if s.Period == 0 {
			hdr[2] = 2
			delete(s.sums, id)
		}
		if err := s.conn.SendUint64s(ctx, hdr[:]); err != nil {
			return err
		}
		if !seen {
			f := make([]uint64, nw)
			s.link.prg(purWeight, id).Uint64s(f)
			s.r.SubVec(f, w, f)
			if err := sendPacked(ctx, s.conn, f, l); err != nil {
				return err
			}
		}
		if err := s.conn.Flush(ctx); err != nil {
			return err
		}
		u := make([]uint64, nx)
		if err := recvPacked(ctx, s.conn, u, l); err != nil {
			return err
		}
		s.r.AddVec(u, u, x)
		sh.applyPar(s.r, dst, w, u, s.Workers)
		rm := make([]uint64, nz)
		s.link.prg(purMaskR, call).Uint64s(rm)
		s.r.AddVec(dst, dst, rm)
		return nil
	}
	p, pre := s.pre[call]
	if pre {
		delete(s.pre, call)
		s.preBytes -= 8 * int64(len(p.z))
		if p.sh != sh {
			return fmt.Errorf("dealer: linear call %d: its share was computed ahead for another shape", call)
		}
	}
	a := make([]uint64, nx)
	s.link.prg(purMaskA, call).Uint64s(a)
	s.r.ReduceVec(a)
	u := make([]uint64, nx)
	s.r.SubVec(u, x, a)
	if err := sendPacked(ctx, s.conn, u, l); err != nil {
		return err
	}
	if err := s.conn.Flush(ctx); err != nil {
		return err
	}
	var hdr [3]uint64
	if err := s.conn.RecvUint64s(ctx, hdr[:]); err != nil {
		return err
	}
	id := hdr[0]
	if hdr[1] != call || hdr[2] > 2 {
		return fmt.Errorf("dealer: linear layer: party 0 is at call %d, party 1 at %d", hdr[1], call)
	}
	f := s.fs[id]
	if hdr[2] >= 1 {
		if f != nil || id > call {
			return fmt.Errorf("dealer: linear layer: party 0 sent weight tensor %d again", id)
		}
		f = make([]uint64, nw)
		if err := recvPacked(ctx, s.conn, f, l); err != nil {
			return err
		}
		if hdr[2] == 1 {
			s.fs[id] = f
		} else {
			s.link.linearOnce()
		}
	} else if len(f) != nw {
		return fmt.Errorf("dealer: linear layer: weight tensor %d has %d elements here, %d at party 0", id, len(f), nw)
	}
	if pre {
		if p.id != id {
			return fmt.Errorf("dealer: linear call %d: its share was computed ahead with weight tensor %d, party 0 uses %d", call, p.id, id)
		}
		copy(dst, p.z)
		return nil
	}
	d := make([]uint64, nz)
	req := append([]uint64{opLinear, id, call, uint64(l)}, sh.words()...)
	if err := s.link.call(ctx, req, func(src frameReader) error { return recvPacked(ctx, src, d, l) }); err != nil {
		return err
	}
	sh.applyPar(s.r, dst, f, a, s.Workers)
	s.r.AddVec(dst, dst, d)
	s.stats.Online++
	return nil
}

// dealLinear is the helper's side: D = B∘A − R for a request.
func dealLinear(seed0, seed1 prg.Seed, r ring.Ring, sh Shape, id, call uint64) []uint64 {
	nw, nx, nz := sh.Sizes()
	b := make([]uint64, nw)
	prg.NewStream(seed0, streamID(purWeight, id)).Uint64s(b)
	r.ReduceVec(b)
	a := make([]uint64, nx)
	prg.NewStream(seed1, streamID(purMaskA, call)).Uint64s(a)
	r.ReduceVec(a)
	rm := make([]uint64, nz)
	prg.NewStream(seed0, streamID(purMaskR, call)).Uint64s(rm)
	d := make([]uint64, nz)
	sh.Apply(r, d, b, a)
	r.SubVec(d, d, rm)
	return d
}
