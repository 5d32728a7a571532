package sci_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

var (
	_ vm.Backend          = (*sci.Backend)(nil)
	_ vm.ReLUTruncBackend = (*sci.Backend)(nil)
)

var testOpt = transport.Options{Timeout: 20 * time.Second}

type pair struct {
	r      ring.Ring
	b      [2]*sci.Backend
	c0, c1 []*transport.Conn
}

func newPair(t testing.TB, l, streams int) *pair {
	t.Helper()
	p := &pair{r: ring.Must(l)}
	for i := 0; i < streams; i++ {
		a, b := transport.Pipe(testOpt)
		t.Cleanup(func() { a.Close(); b.Close() })
		p.c0, p.c1 = append(p.c0, a), append(p.c1, b)
	}
	ctx := context.Background()
	testenv.MustBoth(t, func() (err error) {
		p.b[0], err = sci.New(ctx, p.c0[0], 0, p.r, sci.Options{Streams: p.c0[1:]})
		return
	}, func() (err error) {
		p.b[1], err = sci.New(ctx, p.c1[0], 1, p.r, sci.Options{Streams: p.c1[1:]})
		return
	})
	return p
}

// secure shares x (owned by party owner), applies op at both parties and reveals the result to
// party 1.
func (p *pair) secure(t *testing.T, owner int, x ring.Tensor, outShape []int,
	op func(b *sci.Backend, party int, dst, x ring.Tensor) error) ring.Tensor {
	t.Helper()
	ctx := context.Background()
	var res ring.Tensor
	run := func(party int) error {
		b := p.b[party]
		in := ring.NewTensor(x.Shape)
		if party == owner {
			copy(in.Data, x.Data)
		}
		if err := b.Input(ctx, owner, in); err != nil {
			return err
		}
		dst := ring.NewTensor(outShape)
		if err := op(b, party, dst, in); err != nil {
			return err
		}
		ok, err := b.Reveal(ctx, 1, dst)
		if err != nil {
			return err
		}
		if ok != (party == 1) {
			return fmt.Errorf("party %d: Reveal reported %v", party, ok)
		}
		if party == 1 {
			res = dst
		}
		return nil
	}
	testenv.MustBoth(t, func() error { return run(0) }, func() error { return run(1) })
	return res
}

func randTensor(r ring.Ring, rng *rand.Rand, shape []int, bits int) ring.Tensor {
	t := ring.NewTensor(shape)
	for i := range t.Data {
		v := int64(rng.Uint64() >> (64 - bits))
		if rng.IntN(2) == 0 {
			v = -v
		}
		t.Data[i] = r.FromSigned(v)
	}
	// Edge values at the front.
	edges := []int64{0, 1, -1, r.MaxSigned() >> (r.Bits - bits), -(r.MaxSigned() >> (r.Bits - bits))}
	for i := 0; i < len(edges) && i < len(t.Data); i++ {
		t.Data[i] = r.FromSigned(edges[i])
	}
	return t
}

func TestOpsMatchClear(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ctx := context.Background()
	for _, l := range []int{16, 32, 41, 64} {
		for _, streams := range []int{1, 2} {
			t.Run(fmt.Sprintf("l%d_streams%d", l, streams), func(t *testing.T) {
				p := newPair(t, l, streams)
				c, err := cleartext.New(p.r)
				if err != nil {
					t.Fatal(err)
				}
				small := min(l-3, 20) // magnitudes that leave the protocols' preconditions intact
				x := randTensor(p.r, rng, []int{6, 50}, small)
				check := func(name string, outShape []int, op func(b vm.Backend, w *ring.Tensor, dst, x ring.Tensor) error, w *ring.Tensor) {
					t.Helper()
					want := ring.NewTensor(outShape)
					if err := op(c, w, want, x); err != nil {
						t.Fatalf("%s clear: %v", name, err)
					}
					for _, owner := range []int{0, 1} {
						got := p.secure(t, owner, x, outShape, func(b *sci.Backend, party int, dst, xs ring.Tensor) error {
							ww := w
							if party == 1 {
								ww = nil
							}
							return op(b, ww, dst, xs)
						})
						if !slices.Equal(got.Data, want.Data) {
							t.Fatalf("%s (input owner %d): secure result differs from clear", name, owner)
						}
					}
				}
				wm := randTensor(p.r, rng, []int{7, 6}, small)
				check("matmul", []int{7, 50}, func(b vm.Backend, w *ring.Tensor, dst, x ring.Tensor) error {
					return b.MatMul(ctx, fixed.EngineDefault, dst, w, 7, 6, 50, x)
				}, &wm)
				wc := randTensor(p.r, rng, []int{6, 50}, small)
				check("mulconst", []int{6, 50}, func(b vm.Backend, w *ring.Tensor, dst, x ring.Tensor) error {
					return b.MulConst(ctx, dst, w, x)
				}, &wc)
				check("relu", []int{6, 50}, func(b vm.Backend, _ *ring.Tensor, dst, x ring.Tensor) error {
					return b.ReLU(ctx, dst, x)
				}, nil)
				// Operands of |x| < 2^small are signed (small+1)-bit values: the DReLU on the low bits.
				for _, bits := range []int{small + 1, small + 3} {
					check(fmt.Sprintf("relu-low%d", bits), []int{6, 50}, func(b vm.Backend, _ *ring.Tensor, dst, x ring.Tensor) error {
						return b.(vm.LowReLUBackend).ReLULow(ctx, dst, x, bits)
					}, nil)
				}
				check("mul-square", []int{6, 50}, func(b vm.Backend, _ *ring.Tensor, dst, x ring.Tensor) error {
					return b.Mul(ctx, dst, x, x)
				}, nil)
				check("mul-relu", []int{6, 50}, func(b vm.Backend, _ *ring.Tensor, dst, x ring.Tensor) error {
					tmp := ring.NewTensor(x.Shape)
					if err := b.ReLU(ctx, tmp, x); err != nil {
						return err
					}
					return b.Mul(ctx, dst, tmp, x)
				}, nil)
				check("trunc", []int{6, 50}, func(b vm.Backend, _ *ring.Tensor, dst, x ring.Tensor) error {
					return b.Trunc(ctx, dst, x, 5, false)
				}, nil)
				check("trunc-nonneg", []int{6, 50}, func(b vm.Backend, _ *ring.Tensor, dst, x ring.Tensor) error {
					tmp := ring.NewTensor(x.Shape)
					if err := b.ReLU(ctx, tmp, x); err != nil {
						return err
					}
					return b.Trunc(ctx, dst, tmp, 7, true)
				}, nil)
				// ReLU then truncation, fused on the secure backend (vm.ReLUTruncBackend), in two
				// instructions on the clear one; full and low-bit operands.
				for _, bits := range []int{l, small + 1} {
					check(fmt.Sprintf("relu+trunc%d", bits), []int{6, 50}, func(b vm.Backend, _ *ring.Tensor, dst, x ring.Tensor) error {
						if fb, ok := b.(vm.ReLUTruncBackend); ok {
							if !fb.UseReLUTrunc(bits, 7) {
								return fmt.Errorf("bits=%d s=7 not fused", bits)
							}
							return fb.ReLUTrunc(ctx, dst, x, bits, 7)
						}
						tmp := ring.NewTensor(x.Shape)
						if err := b.ReLU(ctx, tmp, x); err != nil {
							return err
						}
						return b.Trunc(ctx, dst, tmp, 7, true)
					}, nil)
				}
				for _, d := range []int{1, 3, 4, 49} {
					check(fmt.Sprintf("div%d", d), []int{6, 50}, func(b vm.Backend, _ *ring.Tensor, dst, x ring.Tensor) error {
						return b.Div(ctx, dst, x, d)
					}, nil)
				}
				check("maxrows", []int{30}, func(b vm.Backend, _ *ring.Tensor, dst, x ring.Tensor) error {
					return b.MaxRows(ctx, dst, x, 30, 10)
				}, nil)
				check("argmaxrows", []int{6}, func(b vm.Backend, _ *ring.Tensor, dst, x ring.Tensor) error {
					return b.ArgMaxRows(ctx, dst, x, 6, 50)
				}, nil)
			})
		}
	}
}

func TestRevealToServer(t *testing.T) {
	p := newPair(t, 32, 1)
	ctx := context.Background()
	x := ring.Tensor{Shape: []int{3}, Data: []uint64{1, 2, p.r.FromSigned(-3)}}
	var got ring.Tensor
	// A fresh sharing revealed to the server.
	testenv.MustBoth(t, func() error {
		v := ring.NewTensor([]int{3})
		if err := p.b[0].Input(ctx, 1, v); err != nil {
			return err
		}
		ok, err := p.b[0].Reveal(ctx, 0, v)
		if err == nil && !ok {
			err = errors.New("server: not revealed")
		}
		got = v
		return err
	}, func() error {
		v := x.Clone()
		if err := p.b[1].Input(ctx, 1, v); err != nil {
			return err
		}
		ok, err := p.b[1].Reveal(ctx, 0, v)
		if err == nil && ok {
			err = errors.New("client: revealed to the wrong party")
		}
		return err
	})
	if !slices.Equal(got.Data, x.Data) {
		t.Fatalf("revealed %v, want %v", got.Data, x.Data)
	}
}

func TestSharesLookRandom(t *testing.T) {
	// The non-owner's share of an input is a fresh mask: two sharings of the same value differ,
	// and neither equals the value.
	p := newPair(t, 32, 1)
	ctx := context.Background()
	x := ring.Tensor{Shape: []int{64}, Data: make([]uint64, 64)}
	for i := range x.Data {
		x.Data[i] = uint64(i)
	}
	var s0 [2]ring.Tensor
	for k := 0; k < 2; k++ {
		testenv.MustBoth(t, func() error {
			s0[k] = ring.NewTensor([]int{64})
			return p.b[0].Input(ctx, 1, s0[k])
		}, func() error { return p.b[1].Input(ctx, 1, x.Clone()) })
	}
	if slices.Equal(s0[0].Data, s0[1].Data) || slices.Equal(s0[0].Data, x.Data) {
		t.Fatal("server shares repeat or equal the value")
	}
}

func TestPeerDisconnect(t *testing.T) {
	p := newPair(t, 32, 2)
	ctx := context.Background()
	x := ring.NewTensor([]int{4096})
	if err := p.c1[1].Close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		dst := ring.NewTensor([]int{4096})
		done <- p.b[0].ReLU(ctx, dst, x)
	}()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("ReLU succeeded with a stream closed at the peer")
		}
		t.Logf("error: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("ReLU did not return after the peer closed")
	}
	if p.b[0].Err() == nil {
		t.Fatal("backend usable after a failure")
	}
	err := p.b[0].MatMul(ctx, fixed.EngineDefault, ring.NewTensor([]int{1}), &ring.Tensor{Shape: []int{1}, Data: []uint64{1}}, 1, 1, 1, ring.NewTensor([]int{1}))
	if err == nil || !strings.Contains(err.Error(), "unusable") {
		t.Fatalf("failed backend accepted work: %v", err)
	}
}

func TestWeightsChecks(t *testing.T) {
	p := newPair(t, 32, 1)
	ctx := context.Background()
	x := ring.NewTensor([]int{2})
	e0, e1 := testenv.Both(func() error {
		return p.b[0].MatMul(ctx, fixed.EngineDefault, ring.NewTensor([]int{1}), nil, 1, 2, 1, x)
	},
		func() error {
			return p.b[1].MatMul(ctx, fixed.EngineDefault, ring.NewTensor([]int{1}), nil, 1, 2, 1, x)
		})
	if e0 == nil || !strings.Contains(e0.Error(), "no weights") {
		t.Fatalf("party 0 without weights: %v", e0)
	}
	// The failure aborts the session, so the peer fails too instead of waiting.
	if e1 == nil {
		t.Fatal("party 1 did not notice the failure")
	}
}

// convRef is the definition of ring.ConvGeom's convolution in the ring, a direct loop.
func convRef(r ring.Ring, w []uint64, g ring.ConvGeom, x []uint64) []uint64 {
	cg, mg := g.C/g.Groups, g.M/g.Groups
	out := make([]uint64, g.N*g.M*g.OH*g.OW)
	for n := 0; n < g.N; n++ {
		for m := 0; m < g.M; m++ {
			for oy := 0; oy < g.OH; oy++ {
				for ox := 0; ox < g.OW; ox++ {
					var s uint64
					for c := 0; c < cg; c++ {
						for ky := 0; ky < g.KH; ky++ {
							for kx := 0; kx < g.KW; kx++ {
								iy, ix := oy*g.SH-g.PH+ky*g.DH, ox*g.SW-g.PW+kx*g.DW
								if iy >= 0 && iy < g.H && ix >= 0 && ix < g.W {
									s += w[((m*cg+c)*g.KH+ky)*g.KW+kx] * x[((n*g.C+m/mg*cg+c)*g.H+iy)*g.W+ix]
								}
							}
						}
					}
					out[((n*g.M+m)*g.OH+oy)*g.OW+ox] = r.Reduce(s)
				}
			}
		}
	}
	return out
}

func TestConv2DMatchesClear(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	ctx := context.Background()
	for _, streams := range []int{1, 2} {
		p := newPair(t, 37, streams)
		for _, g := range []ring.ConvGeom{
			{N: 2, C: 4, H: 9, W: 7, M: 6, OH: 5, OW: 3, KH: 3, KW: 3, SH: 2, SW: 2, PH: 1, PW: 0, DH: 1, DW: 2, Groups: 2},
			{N: 1, C: 3, H: 6, W: 6, M: 6, OH: 6, OW: 6, KH: 3, KW: 3, SH: 1, SW: 1, PH: 1, PW: 1, DH: 1, DW: 1, Groups: 3},
			{N: 1, C: 2, H: 1, W: 40, M: 3, OH: 1, OW: 40, KH: 1, KW: 5, SH: 1, SW: 1, PH: 0, PW: 2, DH: 1, DW: 1, Groups: 1},
		} {
			if !p.b[0].UseConv2D(g, fixed.EngineDefault) || !p.b[1].UseConv2D(g, fixed.EngineDefault) {
				t.Fatalf("%+v: the backends would lower it to im2col", g)
			}
			x := randTensor(p.r, rng, []int{g.N, g.C, g.H, g.W}, 37)
			w := randTensor(p.r, rng, []int{g.M, g.C / g.Groups, g.KH, g.KW}, 37)
			want := convRef(p.r, w.Data, g, x.Data)
			for _, owner := range []int{0, 1} {
				got := p.secure(t, owner, x, []int{g.N, g.M, g.OH, g.OW}, func(b *sci.Backend, party int, dst, xs ring.Tensor) error {
					ww := &w
					if party == 1 {
						ww = nil
					}
					return b.Conv2D(ctx, fixed.EngineDefault, dst, ww, xs, g)
				})
				if !slices.Equal(got.Data, want) {
					t.Fatalf("streams %d, %+v, owner %d: secure convolution differs from the definition", streams, g, owner)
				}
			}
		}
		// A 1×1 convolution stays a matrix product.
		one := ring.ConvGeom{N: 1, C: 8, H: 4, W: 4, M: 8, OH: 4, OW: 4, KH: 1, KW: 1, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}
		if p.b[0].UseConv2D(one, fixed.EngineDefault) {
			t.Error("a 1×1 convolution runs as Conv2D")
		}
		if p.b[0].Profile().Linear.Calls == 0 {
			t.Error("the convolutions were not charged to the linear profile")
		}
	}
}

func TestConv2DWeightsChecks(t *testing.T) {
	p := newPair(t, 32, 1)
	ctx := context.Background()
	g := ring.ConvGeom{N: 1, C: 1, H: 3, W: 3, M: 1, OH: 1, OW: 1, KH: 3, KW: 3, SH: 1, SW: 1, DH: 1, DW: 1, Groups: 1}
	x := ring.NewTensor([]int{1, 1, 3, 3})
	e0, e1 := testenv.Both(func() error {
		return p.b[0].Conv2D(ctx, fixed.EngineDefault, ring.NewTensor([]int{1, 1, 1, 1}), nil, x, g)
	},
		func() error {
			return p.b[1].Conv2D(ctx, fixed.EngineDefault, ring.NewTensor([]int{1, 1, 1, 1}), nil, x, g)
		})
	if e0 == nil || !strings.Contains(e0.Error(), "no weights") {
		t.Fatalf("party 0 without weights: %v", e0)
	}
	if e1 == nil {
		t.Fatal("party 1 did not notice the failure")
	}
	q := newPair(t, 32, 1)
	w := ring.NewTensor([]int{1, 1, 3, 3})
	if err := q.b[1].Conv2D(ctx, fixed.EngineDefault, ring.NewTensor([]int{1, 1, 1, 1}), &w, x, g); err == nil || !strings.Contains(err.Error(), "party 1 was given weights") {
		t.Fatalf("party 1 with weights: %v", err)
	}
}
