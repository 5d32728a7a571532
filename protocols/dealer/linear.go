package dealer

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"

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
	switch s.Kind {
	case KindMatMul:
		matMul(r, dst, w, s.M, s.K, s.N, x)
	case KindConv:
		conv(r, dst, w, s.Conv, x)
	case KindElem:
		r.MulVec(dst, w, x)
	}
}

// conv is the convolution of ring.ConvGeom by im2col and one ring.MatMul per image and group.
func conv(r ring.Ring, dst, w []uint64, g ring.ConvGeom, x []uint64) {
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
			matMul(r, dst[(n*g.M+grp*mg)*p:][:mg*p], w[grp*mg*kk:][:mg*kk], mg, kk, p, col)
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
}

// NewLinear returns the linear layers of a data party over the ring r.
func NewLinear(link *Link, conn *transport.Conn, r ring.Ring) (*Linear, error) {
	if link == nil || conn == nil {
		return nil, errors.New("dealer: NewLinear: nil link or connection")
	}
	if !r.Valid() {
		return nil, fmt.Errorf("dealer: NewLinear: ring %v", r)
	}
	return &Linear{link: link, conn: conn, r: r, party: link.party, sums: map[uint64]uint64{}, seed: maphash.MakeSeed(),
		fs: map[uint64][]uint64{}}, nil
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
		sum := maphash.Bytes(s.seed, bitvec.Bytes(w)) ^ uint64(nw)<<8 ^ uint64(sh.Kind)
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
		sh.Apply(s.r, dst, w, u)
		rm := make([]uint64, nz)
		s.link.prg(purMaskR, call).Uint64s(rm)
		s.r.AddVec(dst, dst, rm)
		return nil
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
	d := make([]uint64, nz)
	req := append([]uint64{opLinear, id, call, uint64(l)}, sh.words()...)
	if err := s.link.call(ctx, req, func(src frameReader) error { return recvPacked(ctx, src, d, l) }); err != nil {
		return err
	}
	sh.Apply(s.r, dst, f, a)
	s.r.AddVec(dst, dst, d)
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
