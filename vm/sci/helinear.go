package sci

import (
	"context"
	"encoding/binary"
	"fmt"
	"runtime"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
)

// The HE linear layers made ahead (modes scihe and auto; Delphi-style masks).
//
// An HE linear layer's product W·x costs its whole HE protocol after the input arrives, because
// party 1's encrypted operand is its share x1. In the offline phase (BeginInference) the two
// parties instead run the same HE protocol (he.Session.Conv2D/MatMul, unchanged) on a random
// mask: party 1's operand is A, uniform in Z_2^l^n from a PRG whose seed it draws from
// crypto/rand, party 0's is 0. The protocol's result is exact for any operand (docs/he.md:
// worst-case noise bounds, no bound on x assumed), so party 0 holds R and party 1 W·A − R with
// R the protocol's uniform mask. Party 1 keeps the seed of A and its share, party 0 R.
//
// Online, the layer's call is then one flight: party 1 sends U = x1 − A (l bits per input
// element, in frames of at most 2^20 elements) and outputs W·A − R; party 0 computes
// W·(x0 + U) + R with the plaintext ring kernels of the three-party mode (dealer.Shape.ApplyPar,
// on GOMAXPROCS goroutines). The sum is W·(x0 + x1) in Z_2^l, exactly. This is the online step
// of protocols/dealer's Linear with the helper's correction made by HE instead.
//
// Which layers: the program's (Options.Offline.Program, at both parties; party 0's with its
// weights) linear layers that run by HE, in program order, each while the shares held fit the
// bound (8 bytes per output element at either party: R at party 0, W·A − R at party 1, A being a
// seed); a layer beyond it runs its HE protocol online as without the offline phase, and the
// account counts it. The bound is Options.Offline.HEMiB (exchanged at the first inference's
// start; the smaller applies; 0 at a party without the program). The calls are matched to the
// layers by their order in the inference and checked against the layer's geometry.

// DefaultOfflineHEMiB is the default bound on the HE linear layers' shares made ahead.
const DefaultOfflineHEMiB = 512

// heFrameElems is the most elements of U in one frame.
const heFrameElems = 1 << 20

// heLayer is an HE linear layer of the program.
type heLayer struct {
	shape  dealer.Shape // KindMatMul (M×K times K×N) or KindConv
	weight int          // the program's weight index
	in     int          // input elements
	out    int          // output elements
}

// heShare is one layer's shares made ahead: party 1's seed of A and W·A − R, party 0's R.
type heShare struct {
	seed prg.Seed
	z    []uint64
}

// heAhead is a backend's HE linear layers made ahead.
type heAhead struct {
	listed bool
	layers []heLayer
	cap    int64      // the agreed bound in bytes (0: none made ahead)
	ready  []*heShare // per layer, for the current inference (nil: none begun)
	next   int        // the next HE linear call of the current inference
	held   int64
	buf    []uint64 // scratch for A / U
}

// heBound is the bound this party announces: 0 without the program (with weights at party 0)
// or with the offline phase switched off.
func (o *offline) heBound(party int) uint32 {
	p := o.opt.Program
	if p == nil || o.opt.MiB < 0 || o.opt.HEMiB < 0 || (party == 0 && !p.HasWeights()) {
		return 0
	}
	if o.opt.HEMiB == 0 {
		return DefaultOfflineHEMiB
	}
	return uint32(min(o.opt.HEMiB, 1<<20))
}

// listHE lists the program's HE linear layers.
func (o *offline) listHE(b *Backend) error {
	p := o.opt.Program
	for i, in := range p.Instrs {
		if (in.Op != fixed.OpMatMul && in.Op != fixed.OpConv) || b.EngineFor(in.Engine) != fixed.EngineHE {
			continue
		}
		var l heLayer
		l.weight = in.Weight
		if in.Op == fixed.OpMatMul {
			w, x := p.Weights[in.Weight].Shape, p.Tensors[in.In[0]].Shape
			if len(w) != 2 || len(x) != 2 {
				return fmt.Errorf("instruction %d: matmul of %v by %v", i, w, x)
			}
			l.shape = dealer.Shape{Kind: dealer.KindMatMul, M: w[0], K: w[1], N: x[1]}
		} else {
			g, err := p.ConvGeom(in)
			if err != nil {
				return fmt.Errorf("instruction %d: %w", i, err)
			}
			l.shape = dealer.Shape{Kind: dealer.KindConv, Conv: g}
		}
		if err := l.shape.Validate(); err != nil {
			return fmt.Errorf("instruction %d: %w", i, err)
		}
		_, l.in, l.out = l.shape.Sizes()
		o.hel.layers = append(o.hel.layers, l)
	}
	o.hel.listed = true
	return nil
}

// heExchange sends this party's bound and sets the agreed one (the smaller).
func (o *offline) heExchange(ctx context.Context, b *Backend) error {
	var mine, theirs [4]byte
	bound := o.heBound(b.party)
	binary.LittleEndian.PutUint32(mine[:], bound)
	c := b.conns[0]
	if err := c.Send(ctx, mine[:]); err != nil {
		return err
	}
	if err := c.Flush(ctx); err != nil {
		return err
	}
	if err := c.Recv(ctx, theirs[:]); err != nil {
		return fmt.Errorf("the peer's bound on the HE layers made ahead: %w", err)
	}
	o.hel.cap = int64(min(bound, binary.LittleEndian.Uint32(theirs[:]))) << 20
	o.acct.HEAheadCap = o.hel.cap
	return nil
}

// heLinearAhead makes inference k's HE linear layers ahead (see above). At the first inference
// it first agrees on the bound with the peer (one 4-byte frame each way, in modes scihe and
// auto).
func (o *offline) heLinearAhead(ctx context.Context, b *Backend, k int) error {
	if b.he == nil {
		return nil
	}
	h := &o.hel
	if k == 0 {
		if err := o.heExchange(ctx, b); err != nil {
			return err
		}
		if h.cap > 0 && !h.listed {
			if err := o.listHE(b); err != nil {
				return fmt.Errorf("HE layers made ahead: %w", err)
			}
		}
	}
	h.ready, h.next, h.held = nil, 0, 0
	if h.cap == 0 || len(h.layers) == 0 {
		return nil
	}
	h.ready = make([]*heShare, len(h.layers))
	p := o.opt.Program
	var w, x []uint64
	for i, l := range h.layers {
		size := 8 * int64(l.out)
		if h.held+size > h.cap {
			o.acct.HECapped++
			continue
		}
		s := &heShare{z: make([]uint64, l.out)}
		x = grow(x, l.in)
		if b.party == 1 {
			var err error
			if s.seed, err = prg.RandomSeed(); err != nil {
				return err
			}
			b.heMask(x, s.seed)
		} else {
			clear(x)
			src := p.Weights[l.weight].Data
			w = grow(w, len(src))
			b.r.FromSignedVec(w, src)
		}
		var err error
		if l.shape.Kind == dealer.KindMatMul {
			err = b.he.MatMul(ctx, s.z, w, l.shape.M, l.shape.K, l.shape.N, x)
		} else {
			err = b.he.Conv2D(ctx, s.z, w, l.shape.Conv, x)
		}
		if err != nil {
			return fmt.Errorf("HE layer %d made ahead: %w", i, err)
		}
		h.ready[i] = s
		h.held += size
		o.acct.HEAhead++
	}
	o.acct.HEAheadBytes = max(o.acct.HEAheadBytes, h.held)
	return nil
}

func grow(v []uint64, n int) []uint64 {
	if cap(v) < n {
		return make([]uint64, n)
	}
	return v[:n]
}

// heMask sets a to the mask A expanded from seed, in the ring.
func (b *Backend) heMask(a []uint64, seed prg.Seed) {
	prg.New(seed).Uint64s(a)
	mask := b.r.Mask()
	for i := range a {
		a[i] &= mask
	}
}

// heMade runs an HE linear call (shape sh) from the shares made ahead for it, and reports
// whether it did: false when the call's layer was not made ahead (it then runs its HE protocol
// as usual). The calls of an inference must be the program's HE layers in order.
func (b *Backend) heMade(ctx context.Context, sh dealer.Shape, dst, w, x []uint64) (bool, error) {
	if b.off == nil || b.off.hel.ready == nil {
		return false, nil
	}
	h := &b.off.hel
	i := h.next
	h.next++
	if i >= len(h.layers) {
		h.ready = nil
		return true, fmt.Errorf("HE linear call %d of an inference whose program has %d HE layers (Options.Offline.Program is not the program run)", i+1, len(h.layers))
	}
	l := h.layers[i]
	s := h.ready[i]
	h.ready[i] = nil
	if h.next == len(h.layers) {
		h.ready = nil
	}
	if l.shape != sh {
		return true, fmt.Errorf("HE linear call %d is %s, the program's layer %s (Options.Offline.Program is not the program run)", i+1, describe(sh), describe(l.shape))
	}
	if s == nil {
		return false, nil
	}
	h.held -= 8 * int64(len(s.z))
	nw, nx, nz := sh.Sizes()
	if err := ring.CheckProduct(b.party, dst, w, x, nw, nx, nz); err != nil {
		return true, err
	}
	c := b.conns[0]
	u := grow(h.buf, nx)
	h.buf = u
	if b.party == 1 {
		// U = x1 − A, then the share made ahead.
		b.heMask(u, s.seed)
		b.r.SubVec(u, x, u)
		for off := 0; off < nx; off += heFrameElems {
			if err := c.SendPacked(ctx, u[off:min(nx, off+heFrameElems)], b.r.Bits); err != nil {
				return true, err
			}
		}
		if err := c.Flush(ctx); err != nil {
			return true, err
		}
		copy(dst, s.z)
		return true, nil
	}
	// W·(x0 + U) + R.
	for off := 0; off < nx; off += heFrameElems {
		if err := c.RecvPacked(ctx, u[off:min(nx, off+heFrameElems)], b.r.Bits); err != nil {
			return true, fmt.Errorf("party 1's masked input: %w", err)
		}
	}
	b.r.AddVec(u, u, x)
	sh.ApplyPar(b.r, dst, w, u, runtime.GOMAXPROCS(0))
	b.r.AddVec(dst, dst, s.z)
	return true, nil
}

// HEMadeBytes is the online traffic of an HE linear layer made ahead with n input elements in
// Z_2^l: party 1's U, l bits per element in frames of at most 2^20 elements (one flight).
func HEMadeBytes(n, l int) int64 {
	var b int64
	for off := 0; off < n; off += heFrameElems {
		b += int64(transport.PackedBytes(min(heFrameElems, n-off), l)) + transport.HeaderSize
	}
	return b
}

// describe names a layer's shape for an error.
func describe(s dealer.Shape) string {
	if s.Kind == dealer.KindMatMul {
		return fmt.Sprintf("a %d×%d by %d×%d product", s.M, s.K, s.K, s.N)
	}
	g := s.Conv
	return fmt.Sprintf("a %d×%d convolution of [%d, %d, %d, %d] into %d channels (stride %d×%d, groups %d)", g.KH, g.KW, g.N, g.C, g.H, g.W, g.M, g.SH, g.SW, g.Groups)
}
