package sci_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// heLinearProgram is a program of HE linear layers only (l = 32), party 1's input x of shape
// [1, 3, 64, 64] revealed to party 1 after a convolution 3→20 (3×3, padding 1: 81,920 outputs,
// 640 KiB of shares), a grouped 1×1 convolution 20→16 (groups 4, 65,536 outputs: 512 KiB), a
// strided convolution 16→4 (3×3, stride 4: 1,024 outputs) and a 5×1024 matrix product. It returns the
// program, the layers' geometries in the HE session's terms and their input element counts.
func heLinearProgram(t *testing.T, rng *rand.Rand) (*fixed.Program, []ring.ConvGeom, []int) {
	t.Helper()
	b := newTestProg(t, rng, 32, 2, ir.Shape{1, 3, 64, 64})
	p, x, ints := b.p, b.x, b.ints
	var geoms []ring.ConvGeom
	var ins []int
	add := func(in *fixed.Instr) int {
		b.add(in)
		ins = append(ins, p.Tensors[in.In[0]].Shape.Size())
		if in.Op == fixed.OpConv {
			g, err := p.ConvGeom(in)
			if err != nil {
				t.Fatal(err)
			}
			geoms = append(geoms, g)
		} else {
			w := p.Weights[in.Weight].Shape
			geoms = append(geoms, heplan.MatMulGeom(w[0], w[1], p.Tensors[in.In[0]].Shape[1]))
		}
		return in.Out
	}
	win := func(k, s, pad int) ir.Window {
		return ir.Window{Kernel: []int{k, k}, Strides: []int{s, s}, Pads: []int{pad, pad, pad, pad}, Dilations: []int{1, 1}}
	}
	y := add(&fixed.Instr{Op: fixed.OpConv, In: []int{x}, Weight: p.AddWeight("w1", ir.Shape{20, 3, 3, 3}, 0, ints(20*27)),
		Group: 1, Engine: fixed.EngineHE, Win: win(3, 1, 1)})
	y = add(&fixed.Instr{Op: fixed.OpConv, In: []int{y}, Weight: p.AddWeight("w2", ir.Shape{16, 5, 1, 1}, 0, ints(16*5)),
		Group: 4, Engine: fixed.EngineHE, Win: win(1, 1, 0)})
	y = add(&fixed.Instr{Op: fixed.OpConv, In: []int{y}, Weight: p.AddWeight("w3", ir.Shape{4, 16, 3, 3}, 0, ints(4*16*9)),
		Group: 1, Engine: fixed.EngineHE, Win: win(3, 4, 1)})
	flat := p.AddTensor("flat", ir.Shape{1024, 1}, p.Tensors[y].Scale)
	p.Instrs = append(p.Instrs, &fixed.Instr{Op: fixed.OpReshape, In: []int{y}, Out: flat, Weight: -1})
	y = add(&fixed.Instr{Op: fixed.OpMatMul, In: []int{flat}, Weight: p.AddWeight("wm", ir.Shape{5, 1024}, 0, ints(5*1024)), Engine: fixed.EngineHE})
	p.Outputs = append(p.Outputs, fixed.IO{Name: "y", Tensor: y, Party: 1})
	p.Instrs = append(p.Instrs, &fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{y}, Weight: -1, Index: 0})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p, geoms, ins
}

// TestHELinearAhead: with the program at both parties, the offline phase runs every HE linear
// layer's protocol on party 1's random mask; each online call is then one flight of l bits per
// input element from party 1 (asserted to the byte, both directions), the offline phase's bytes
// are the HE protocol's (heplan.ConvBytes) plus the exchanges, and two inferences of the session,
// on full-range random inputs, equal the clear run bitwise. With a 1 MiB bound (at one party:
// the smaller applies) the 640 KiB of the first layer fit, the second layer's 512 KiB do not and
// it runs its HE protocol online, the rest fit; the account says so.
func TestHELinearAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 1))
	p, geoms, ins := heLinearProgram(t, rng)
	client := p.StripWeights()
	r := ring.Must(p.Bits)
	l := r.Bits
	ctx := context.Background()
	protoBytes := make([]int64, len(geoms))
	for i, g := range geoms {
		var err error
		if protoBytes[i], err = heplan.ConvBytes(g, l); err != nil {
			t.Fatal(err)
		}
	}
	outBytes := int64(transport.PackedBytes(5, l) + transport.HeaderSize)
	inputBytes := int64(16 + transport.HeaderSize)
	heExchange := 2 * int64(4+transport.HeaderSize)

	for _, tc := range []struct {
		name   string
		mode   sci.Mode
		ot     sci.OTSource
		mib    [2]int
		online []bool // the layers whose HE protocol runs online
	}{
		{"default", sci.ModeHE, sci.OTIKNP, [2]int{0, 0}, []bool{false, false, false, false}},
		{"1MiB", sci.ModeHE, sci.OTIKNP, [2]int{1, 4}, []bool{false, true, false, false}},
		{"auto-ferret", sci.ModeAuto, sci.OTFerret, [2]int{0, 0}, []bool{false, false, false, false}},
	} {
		opt := func(prog *fixed.Program, mib int) sci.Options {
			return sci.Options{Mode: tc.mode, OT: tc.ot, Ferret: offlineCfg, Offline: sci.Offline{Program: prog, HEMiB: mib}}
		}
		c0, c1 := transport.Pipe(testOpt)
		t.Cleanup(func() { c0.Close(); c1.Close() })
		var b0, b1 *sci.Backend
		testenv.MustBoth(t, func() (err error) {
			b0, err = sci.New(ctx, c0, 0, r, opt(p, tc.mib[0]))
			return
		}, func() (err error) {
			b1, err = sci.New(ctx, c1, 1, r, opt(client, tc.mib[1]))
			return
		})
		var wantOff, want1, want0 int64 // offline (both ways), online sent by party 1 and by party 0
		want1, want0 = inputBytes, outBytes
		capped := 0
		for i := range geoms {
			if tc.online[i] {
				capped++ // its HE protocol's uploads and replies: onlineHE below
				continue
			}
			wantOff += protoBytes[i]
			want1 += sci.HEMadeBytes(ins[i], l)
		}
		var onlineHE int64
		for i := range geoms {
			if tc.online[i] {
				onlineHE += protoBytes[i]
			}
		}
		for k := range 2 {
			in := ring.NewTensor(ir.Shape{1, 3, 64, 64})
			for i := range in.Data {
				in.Data[i] = rng.Uint64() & r.Mask() // full range: the sums wrap
			}
			clr, _ := cleartext.New(r)
			cm, err := vm.New(p, clr)
			if err != nil {
				t.Fatal(err)
			}
			want, err := cm.Run(ctx, []ring.Tensor{in})
			if err != nil {
				t.Fatal(err)
			}
			sent := func() (int64, int64) { return c0.Stats().BytesSent, c1.Stats().BytesSent }
			s0, s1 := sent()
			testenv.MustBoth(t, func() error { return b0.BeginInference(ctx, k, 2) }, func() error { return b1.BeginInference(ctx, k, 2) })
			m0, m1 := sent()
			off := wantOff
			if k == 0 {
				streams := 0 // the plan exchange's streams: Ferret's
				if tc.ot == sci.OTFerret {
					streams = 1
				}
				off += exchangeBytes(streams) + heExchange
			}
			if got := m0 - s0 + m1 - s1; got != off {
				t.Fatalf("%s, inference %d: offline phase %d bytes, want %d", tc.name, k, got, off)
			}
			var got []vm.Output
			run := func(b *sci.Backend, party int) func() error {
				return func() error {
					prog := p
					if party == 1 {
						prog = client
					}
					m, err := vm.New(prog, b)
					if err != nil {
						return err
					}
					x := ring.NewTensor(in.Shape)
					if party == 1 {
						copy(x.Data, in.Data)
					}
					outs, err := m.Run(ctx, []ring.Tensor{x})
					if party == 1 {
						got = outs
					}
					if err == nil {
						err = b.EndInference(k)
					}
					return err
				}
			}
			testenv.MustBoth(t, run(b0, 0), run(b1, 1))
			if !slices.Equal(got[0].Value.Data, want[0].Value.Data) {
				t.Fatalf("%s, inference %d: secure %v, clear %v", tc.name, k, got[0].Value.Data, want[0].Value.Data)
			}
			e0, e1 := sent()
			if d1, d0 := e1-m1, e0-m0; d1+d0 != want1+want0+onlineHE || (onlineHE == 0 && (d1 != want1 || d0 != want0)) {
				t.Fatalf("%s, inference %d: online party 1 sent %d, party 0 %d; want %d and %d (plus %d of HE protocol online)",
					tc.name, k, d1, d0, want1, want0, onlineHE)
			}
		}
		for party, b := range []*sci.Backend{b0, b1} {
			a := b.Offline()
			wantAhead := 2 * (len(geoms) - capped)
			if a == nil || a.HEAhead != wantAhead || a.HECapped != 2*capped || a.HEAheadBytes <= 0 || a.HEAheadBytes > a.HEAheadCap {
				t.Fatalf("%s, party %d: account %+v; want %d layers made ahead, %d capped", tc.name, party, a, wantAhead, 2*capped)
			}
		}
	}
}

// TestHELinearAheadWrongProgram: a call that is not the program's next HE layer fails with an
// error naming the mismatch (no silent fallback), at both parties.
func TestHELinearAheadWrongProgram(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 2))
	p, _, _ := heLinearProgram(t, rng)
	r := ring.Must(p.Bits)
	ctx := context.Background()
	c0, c1 := transport.Pipe(testOpt)
	t.Cleanup(func() { c0.Close(); c1.Close() })
	var b0, b1 *sci.Backend
	testenv.MustBoth(t, func() (err error) {
		b0, err = sci.New(ctx, c0, 0, r, sci.Options{Mode: sci.ModeHE, Offline: sci.Offline{Program: p}})
		return
	}, func() (err error) {
		b1, err = sci.New(ctx, c1, 1, r, sci.Options{Mode: sci.ModeHE, Offline: sci.Offline{Program: p.StripWeights()}})
		return
	})
	testenv.MustBoth(t, func() error { return b0.BeginInference(ctx, 0, 1) }, func() error { return b1.BeginInference(ctx, 0, 1) })
	// A 2×4 by 4×1 product first: not the program's first layer.
	w := r.SignedTensor(ir.Shape{2, 4}, 1, 2, 3, 4, 5, 6, 7, 8)
	for party, b := range []*sci.Backend{b0, b1} {
		var wp *ring.Tensor
		if party == 0 {
			wp = &w
		}
		err := b.MatMul(ctx, fixed.EngineHE, ring.NewTensor(ir.Shape{2, 1}), wp, 2, 4, 1, ring.NewTensor(ir.Shape{4, 1}))
		if err == nil {
			t.Fatalf("party %d: a call that is not the program's layer succeeded", party)
		}
		t.Logf("party %d: %v", party, err)
	}
}
