// Package servetest provides an INSECURE two-party backend for testing the session machinery of
// package serve (handshake, transport, server loop, reports) independently of the secure
// protocols. It keeps real additive shares and exchanges them over the connection, but opens
// every operand to the party that computes on it: it protects nothing and must never be offered
// to users. Its outputs equal the cleartext backend's bit for bit.
package servetest

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
)

// Insecure is a two-party vm.Backend that computes every non-local operation in the clear after
// opening the shares, then re-shares the result with a mask both parties derive from a common
// seed. Party 0 sends the seed during New.
type Insecure struct {
	party int
	r     ring.Ring
	conn  *transport.Conn
	clear *cleartext.Backend
	mask  *prg.PRG
	buf   []uint64
	// Calls counts the backend calls made so far (for fault injection in tests).
	Calls int
	// Hook, when set, runs at the start of every backend call with the call count; an error it
	// returns fails the call.
	Hook func(call int) error
}

// New starts the insecure backend for party over conn.
func New(ctx context.Context, conn *transport.Conn, party int, r ring.Ring) (*Insecure, error) {
	c, err := cleartext.New(r)
	if err != nil {
		return nil, err
	}
	var seed prg.Seed
	if party == 0 {
		if seed, err = prg.RandomSeed(); err != nil {
			return nil, err
		}
		if err := conn.Send(ctx, seed[:]); err != nil {
			return nil, fmt.Errorf("insecure backend: %w", err)
		}
		if err := conn.Flush(ctx); err != nil {
			return nil, fmt.Errorf("insecure backend: %w", err)
		}
	} else if err := conn.Recv(ctx, seed[:]); err != nil {
		return nil, fmt.Errorf("insecure backend: %w", err)
	}
	return &Insecure{party: party, r: r, conn: conn, clear: c, mask: prg.New(seed)}, nil
}

// Func adapts New to the serve.BackendFunc shape (it runs on the first connection and leaves a
// session's further streams unused). hook, when set, is installed on the backend with the
// connection and party at hand (e.g. to close the connection at a given call).
func Func(hook func(conn *transport.Conn, party, call int) error) func(context.Context, *transport.Conn, []*transport.Conn, int, ring.Ring) (vm.Backend, error) {
	return func(ctx context.Context, conn *transport.Conn, _ []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		b, err := New(ctx, conn, party, r)
		if err != nil {
			return nil, err
		}
		if hook != nil {
			b.Hook = func(call int) error { return hook(conn, party, call) }
		}
		return b, nil
	}
}

// Party returns this party.
func (b *Insecure) Party() int { return b.party }

// Ring returns the ring.
func (b *Insecure) Ring() ring.Ring { return b.r }

func (b *Insecure) call() error {
	b.Calls++
	if b.Hook != nil {
		return b.Hook(b.Calls)
	}
	return nil
}

// open replaces x (this party's share) with the value, exchanging shares with the peer.
func (b *Insecure) open(ctx context.Context, x []uint64) error {
	if err := b.conn.SendUint64s(ctx, x); err != nil {
		return err
	}
	if cap(b.buf) < len(x) {
		b.buf = make([]uint64, len(x))
	}
	peer := b.buf[:len(x)]
	if err := b.conn.RecvUint64s(ctx, peer); err != nil {
		return err
	}
	b.r.AddVec(x, x, peer)
	return nil
}

// reshare turns the value v, known at party 0 (and possibly at both), into shares: party 0 keeps
// v - mask, party 1 gets mask.
func (b *Insecure) reshare(v []uint64) {
	m := make([]uint64, len(v))
	b.mask.Uint64s(m)
	b.r.ReduceVec(m)
	if b.party == 0 {
		b.r.SubVec(v, v, m)
	} else {
		copy(v, m)
	}
}

// Input keeps the owner's value and the other party's zeros: they already are additive shares.
func (b *Insecure) Input(_ context.Context, owner int, _ ring.Tensor) error {
	if err := b.call(); err != nil {
		return err
	}
	if owner != 0 && owner != 1 {
		return fmt.Errorf("input owned by party %d", owner)
	}
	return nil
}

// Reveal sends this party's share to party to, which adds it to its own.
func (b *Insecure) Reveal(ctx context.Context, to int, x ring.Tensor) (bool, error) {
	if err := b.call(); err != nil {
		return false, err
	}
	if b.party != to {
		if err := b.conn.SendUint64s(ctx, x.Data); err != nil {
			return false, err
		}
		return false, b.conn.Flush(ctx)
	}
	peer := make([]uint64, len(x.Data))
	if err := b.conn.RecvUint64s(ctx, peer); err != nil {
		return false, err
	}
	b.r.AddVec(x.Data, x.Data, peer)
	return true, nil
}

// toServer sends party 1's share of x to party 0, which then holds the value in x.
func (b *Insecure) toServer(ctx context.Context, x []uint64) ([]uint64, error) {
	if b.party == 1 {
		return nil, b.conn.SendUint64s(ctx, x)
	}
	v := make([]uint64, len(x))
	if err := b.conn.RecvUint64s(ctx, v); err != nil {
		return nil, err
	}
	b.r.AddVec(v, v, x)
	return v, nil
}

// MatMul opens x to party 0, which multiplies by its weights and re-shares.
func (b *Insecure) MatMul(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, m, k, n int, x ring.Tensor) error {
	if err := b.call(); err != nil {
		return err
	}
	v, err := b.toServer(ctx, x.Data)
	if err != nil {
		return err
	}
	if b.party == 0 {
		if err := b.clear.MatMul(ctx, e, dst, w, m, k, n, ring.Tensor{Shape: x.Shape, Data: v}); err != nil {
			return err
		}
	}
	b.reshare(dst.Data)
	return nil
}

// MulConst opens x to party 0, which multiplies by its constants and re-shares.
func (b *Insecure) MulConst(ctx context.Context, dst ring.Tensor, w *ring.Tensor, x ring.Tensor) error {
	if err := b.call(); err != nil {
		return err
	}
	v, err := b.toServer(ctx, x.Data)
	if err != nil {
		return err
	}
	if b.party == 0 {
		if err := b.clear.MulConst(ctx, dst, w, ring.Tensor{Shape: x.Shape, Data: v}); err != nil {
			return err
		}
	}
	b.reshare(dst.Data)
	return nil
}

// Mul opens x and y to party 0, which multiplies them and re-shares.
func (b *Insecure) Mul(ctx context.Context, dst, x, y ring.Tensor) error {
	if err := b.call(); err != nil {
		return err
	}
	u, err := b.toServer(ctx, x.Data)
	if err != nil {
		return err
	}
	v, err := b.toServer(ctx, y.Data)
	if err != nil {
		return err
	}
	if b.party == 0 {
		if err := b.clear.Mul(ctx, dst, ring.Tensor{Shape: x.Shape, Data: u}, ring.Tensor{Shape: y.Shape, Data: v}); err != nil {
			return err
		}
	}
	b.reshare(dst.Data)
	return nil
}

// unary opens x at both parties, applies f in the clear and re-shares.
func (b *Insecure) unary(ctx context.Context, dst, x ring.Tensor, f func(dst, v ring.Tensor) error) error {
	if err := b.call(); err != nil {
		return err
	}
	v := x.Clone()
	if err := b.open(ctx, v.Data); err != nil {
		return err
	}
	if err := f(dst, v); err != nil {
		return err
	}
	b.reshare(dst.Data)
	return nil
}

// ReLU in the clear on the opened value.
func (b *Insecure) ReLU(ctx context.Context, dst, x ring.Tensor) error {
	return b.unary(ctx, dst, x, func(d, v ring.Tensor) error { return b.clear.ReLU(ctx, d, v) })
}

// Trunc in the clear on the opened value.
func (b *Insecure) Trunc(ctx context.Context, dst, x ring.Tensor, k int, nonNeg bool) error {
	return b.unary(ctx, dst, x, func(d, v ring.Tensor) error { return b.clear.Trunc(ctx, d, v, k, nonNeg) })
}

// Div in the clear on the opened value.
func (b *Insecure) Div(ctx context.Context, dst, x ring.Tensor, dv int) error {
	return b.unary(ctx, dst, x, func(d, v ring.Tensor) error { return b.clear.Div(ctx, d, v, dv) })
}

// MaxRows in the clear on the opened value.
func (b *Insecure) MaxRows(ctx context.Context, dst, x ring.Tensor, rows, d int) error {
	return b.unary(ctx, dst, x, func(o, v ring.Tensor) error { return b.clear.MaxRows(ctx, o, v, rows, d) })
}

// ArgMaxRows in the clear on the opened value.
func (b *Insecure) ArgMaxRows(ctx context.Context, dst, x ring.Tensor, rows, d int) error {
	return b.unary(ctx, dst, x, func(o, v ring.Tensor) error { return b.clear.ArgMaxRows(ctx, o, v, rows, d) })
}

// InsecureConv is Insecure with a convolution of its own (vm.ConvBackend), to test that the
// session machinery passes the VM's optional backend interfaces through.
type InsecureConv struct {
	*Insecure
	// Convs counts the Conv2D calls.
	Convs int
}

// FuncConv is Func for InsecureConv.
func FuncConv(hook func(conn *transport.Conn, party, call int) error) func(context.Context, *transport.Conn, []*transport.Conn, int, ring.Ring) (vm.Backend, error) {
	f := Func(hook)
	return func(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		b, err := f(ctx, conn, streams, party, r)
		if err != nil {
			return nil, err
		}
		return &InsecureConv{Insecure: b.(*Insecure)}, nil
	}
}

// UseConv2D accepts every convolution, whatever the engine.
func (b *InsecureConv) UseConv2D(ring.ConvGeom, fixed.Engine) bool { return true }

// Conv2D opens x to party 0, which convolves it with its weights directly and re-shares.
func (b *InsecureConv) Conv2D(ctx context.Context, _ fixed.Engine, dst ring.Tensor, w *ring.Tensor, x ring.Tensor, g ring.ConvGeom) error {
	if err := b.call(); err != nil {
		return err
	}
	b.Convs++
	v, err := b.toServer(ctx, x.Data)
	if err != nil {
		return err
	}
	if b.party == 0 {
		if w == nil {
			return fmt.Errorf("conv2d: no weights at party 0")
		}
		conv(b.r, dst.Data, w.Data, v, g)
	}
	b.reshare(dst.Data)
	return nil
}

// conv is the direct convolution of ring.ConvGeom in the ring.
func conv(r ring.Ring, dst, w, x []uint64, g ring.ConvGeom) {
	cg, mg := g.C/g.Groups, g.M/g.Groups
	for n := range g.N {
		for m := range g.M {
			grp := m / mg
			for oy := range g.OH {
				for ox := range g.OW {
					var acc uint64
					for c := range cg {
						for ky := range g.KH {
							iy := oy*g.SH - g.PH + ky*g.DH
							if iy < 0 || iy >= g.H {
								continue
							}
							for kx := range g.KW {
								ix := ox*g.SW - g.PW + kx*g.DW
								if ix < 0 || ix >= g.W {
									continue
								}
								acc += w[((m*cg+c)*g.KH+ky)*g.KW+kx] * x[((n*g.C+grp*cg+c)*g.H+iy)*g.W+ix]
							}
						}
					}
					dst[((n*g.M+m)*g.OH+oy)*g.OW+ox] = r.Reduce(acc)
				}
			}
		}
	}
}
