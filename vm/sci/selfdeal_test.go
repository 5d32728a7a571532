package sci_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/selfdeal"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// dealtProgram is a small CNN: conv (by OT), truncation, ReLU, max pooling, a dense layer,
// truncation, division and argmax, party 1's input.
func dealtProgram(t *testing.T, rng *rand.Rand) *fixed.Program {
	t.Helper()
	b := newTestProg(t, rng, 32, 4, ir.Shape{1, 3, 6, 6})
	p, x, ints, add := b.p, b.x, b.ints, b.add
	wc := p.AddWeight("wc", ir.Shape{4, 3, 3, 3}, 4, ints(4*3*3*3))
	y := add(&fixed.Instr{Op: fixed.OpConv, In: []int{x}, Weight: wc, Group: 1, Engine: fixed.EngineOT,
		Win: ir.Window{Kernel: []int{3, 3}, Strides: []int{1, 1}, Pads: []int{1, 1, 1, 1}, Dilations: []int{1, 1}}})
	y = add(&fixed.Instr{Op: fixed.OpTrunc, In: []int{y}, Shift: 4, Weight: -1})
	y = add(&fixed.Instr{Op: fixed.OpReLU, In: []int{y}, Weight: -1})
	y = add(&fixed.Instr{Op: fixed.OpMaxPool, In: []int{y}, Weight: -1,
		Win: ir.Window{Kernel: []int{2, 2}, Strides: []int{2, 2}, Pads: []int{0, 0, 0, 0}, Dilations: []int{1, 1}}})
	flat := p.AddTensor("flat", ir.Shape{36, 1}, p.Tensors[y].Scale)
	p.Instrs = append(p.Instrs, &fixed.Instr{Op: fixed.OpReshape, In: []int{y}, Out: flat, Weight: -1})
	wm := p.AddWeight("wm", ir.Shape{5, 36}, 4, ints(5*36))
	y = add(&fixed.Instr{Op: fixed.OpMatMul, In: []int{flat}, Weight: wm, Engine: fixed.EngineOT})
	y = add(&fixed.Instr{Op: fixed.OpTrunc, In: []int{y}, Shift: 4, Weight: -1})
	y = add(&fixed.Instr{Op: fixed.OpDiv, In: []int{y}, Divisors: []int{3}, Weight: -1})
	am := add(&fixed.Instr{Op: fixed.OpArgMax, In: []int{y}, Axis: 0, Weight: -1})
	p.Outputs = append(p.Outputs, fixed.IO{Name: "y", Tensor: y, Party: 1}, fixed.IO{Name: "class", Tensor: am, Party: 1})
	p.Instrs = append(p.Instrs, &fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{y}, Weight: -1, Index: 0},
		&fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{am}, Weight: -1, Index: 1})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	return p
}

// dealtSession is a two-party session with the given options per party.
type dealtSession struct {
	p     *fixed.Program
	r     ring.Ring
	b     [2]*sci.Backend
	conns [2][]*transport.Conn
}

func newDealtSession(t *testing.T, p *fixed.Program, streams int, opts [2]sci.Options) (*dealtSession, [2]error) {
	t.Helper()
	s := &dealtSession{p: p, r: ring.Must(p.Bits)}
	for range streams {
		a, b := transport.Pipe(testOpt)
		t.Cleanup(func() { a.Close(); b.Close() })
		s.conns[0], s.conns[1] = append(s.conns[0], a), append(s.conns[1], b)
	}
	ctx := context.Background()
	var errs [2]error
	errs[0], errs[1] = testenv.Both(func() (err error) {
		o := opts[0]
		o.Streams = s.conns[0][1:]
		s.b[0], err = sci.New(ctx, s.conns[0][0], 0, s.r, o)
		if err != nil {
			s.b[0] = nil
		}
		return
	}, func() (err error) {
		o := opts[1]
		o.Streams = s.conns[1][1:]
		s.b[1], err = sci.New(ctx, s.conns[1][0], 1, s.r, o)
		if err != nil {
			s.b[1] = nil
		}
		return
	})
	return s, errs
}

// run runs inference k (BeginInference, the program, EndInference) on input in and returns
// party 1's outputs.
func (s *dealtSession) run(t *testing.T, k, count int, in ring.Tensor) []vm.Output {
	t.Helper()
	ctx := context.Background()
	var got []vm.Output
	party := func(i int) func() error {
		return func() error {
			b := s.b[i]
			if err := b.BeginInference(ctx, k, count); err != nil {
				return err
			}
			m, err := vm.New(s.p, b)
			if err != nil {
				return err
			}
			x := ring.NewTensor(in.Shape)
			if i == 1 {
				copy(x.Data, in.Data)
			}
			outs, err := m.Run(ctx, []ring.Tensor{x})
			if err != nil {
				return err
			}
			if i == 1 {
				got = outs
			}
			return b.EndInference(k)
		}
	}
	testenv.MustBoth(t, party(0), party(1))
	return got
}

func clearRun(t *testing.T, p *fixed.Program, in ring.Tensor) []vm.Output {
	t.Helper()
	clr, _ := cleartext.New(ring.Must(p.Bits))
	cm, err := vm.New(p, clr)
	if err != nil {
		t.Fatal(err)
	}
	want, err := cm.Run(context.Background(), []ring.Tensor{in})
	if err != nil {
		t.Fatal(err)
	}
	return want
}

func sameOutputs(t *testing.T, what string, got, want []vm.Output) {
	t.Helper()
	for i := range want {
		if !slices.Equal(got[i].Value.Data, want[i].Value.Data) {
			t.Fatalf("%s: output %d: secure %v, clear %v", what, i, got[i].Value.Data, want[i].Value.Data)
		}
	}
}

// TestDealtAhead: with the nonlinear correlations made offline (Offline.Dealt), a program's
// output equals the clear run's, on IKNP and Ferret, one and two streams: the first inference
// makes them on demand and records its counts; the second makes them all ahead from those
// counts and makes nothing on demand, and moves fewer bytes online; the session's plan, given
// to a new session (at one party only), makes its first inference's correlations ahead too.
func TestDealtAhead(t *testing.T) {
	for _, src := range []sci.OTSource{sci.OTIKNP, sci.OTFerret} {
		for _, streams := range []int{1, 2} {
			if testing.Short() && src == sci.OTFerret && streams == 2 {
				continue
			}
			rng := rand.New(rand.NewPCG(uint64(streams), uint64(src)))
			p := dealtProgram(t, rng)
			r := ring.Must(p.Bits)
			opt := sci.Options{OT: src, Ferret: offlineCfg, Offline: sci.Offline{Dealt: true}}
			s, errs := newDealtSession(t, p, streams, [2]sci.Options{opt, opt})
			if errs[0] != nil || errs[1] != nil {
				t.Fatal(errs)
			}
			var online [2]int64
			for k := range 2 {
				in := randTensor(r, rng, []int{1, 3, 6, 6}, 10)
				before := s.bytes()
				var offSent int64
				if a := s.b[1].Offline(); a != nil {
					offSent = a.Offline.Stats.BytesSent
				}
				got := s.run(t, k, 2, in)
				sameOutputs(t, src.String(), got, clearRun(t, p, in))
				a := s.b[1].Offline()
				if a == nil || a.Dealt == nil {
					t.Fatalf("%v/%d: no account of the self-dealt correlations: %+v", src, streams, a)
				}
				online[k] = s.bytes() - before - (a.Offline.Stats.BytesSent - offSent)
				d := a.Dealt
				switch k {
				case 0:
					if d.AheadOTs != 0 || d.OnDemandOTs == 0 || d.OnDemandTriples == 0 || d.FirstOnDemand != d.OnDemandOTs+d.OnDemandTriples || d.FirstPlanned {
						t.Fatalf("%v/%d: first inference's account %+v: want everything on demand", src, streams, d)
					}
				case 1:
					if d.AheadOTs == 0 || d.AheadTriples == 0 || d.OnDemandOTs+d.OnDemandTriples != d.FirstOnDemand || d.CappedBytes != 0 {
						t.Fatalf("%v/%d: second inference's account %+v: want everything ahead", src, streams, d)
					}
				}
			}
			if online[1] >= online[0] {
				t.Fatalf("%v/%d: the second inference moved %d bytes online, the first (made on demand) %d", src, streams, online[1], online[0])
			}
			t.Logf("%v, %d streams: account %+v", src, streams, *s.b[1].Offline().Dealt)
			plan := s.b[0].Plan()
			if src == sci.OTFerret && (plan == nil || len(plan.Dealt) != streams) {
				t.Fatalf("%v/%d: the session's plan %+v has no self-dealt part", src, streams, plan)
			}
			if plan == nil {
				continue
			}
			o1 := opt
			o1.Offline.First = plan
			s2, errs := newDealtSession(t, p, streams, [2]sci.Options{opt, o1})
			if errs[0] != nil || errs[1] != nil {
				t.Fatal(errs)
			}
			in := randTensor(r, rng, []int{1, 3, 6, 6}, 10)
			sameOutputs(t, "planned first inference", s2.run(t, 0, 1, in), clearRun(t, p, in))
			for i := range 2 {
				d := s2.b[i].Offline().Dealt
				if !d.FirstPlanned || d.FirstOnDemand != 0 || d.AheadOTs == 0 {
					t.Fatalf("%v/%d: party %d's planned first inference: %+v", src, streams, i, d)
				}
			}
		}
	}
}

func (s *dealtSession) bytes() int64 {
	var n int64
	for _, cs := range s.conns {
		for _, c := range cs {
			n += c.Stats().BytesSent
		}
	}
	return n
}

// TestDealtMismatch: a party with the self-dealt correlations and one without fail at set-up
// with an error that names the difference (no hang); a plan of another program makes the
// wrong correlations ahead, and the inference still equals the clear run (the rest on demand,
// at both parties alike). (A plan cut by the memory bound: protocols/selfdeal's TestCapAndMismatch.)
func TestDealtMismatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	p := dealtProgram(t, rng)
	r := ring.Must(p.Bits)
	on := sci.Options{Offline: sci.Offline{Dealt: true}}
	_, errs := newDealtSession(t, p, 1, [2]sci.Options{on, {}})
	if errs[0] == nil || errs[1] == nil {
		t.Fatalf("one party with self-dealt correlations, one without: errors %v", errs)
	}
	if !strings.Contains(errs[0].Error()+errs[1].Error(), "Offline.Dealt") {
		t.Fatalf("the mismatch's errors do not name it: %v", errs)
	}
	// A plan of another program: this program's plan with entries dropped, others doubled and
	// a shape it never draws, given to party 1 only.
	s, errs := newDealtSession(t, p, 1, [2]sci.Options{on, on})
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	in := randTensor(r, rng, []int{1, 3, 6, 6}, 10)
	s.run(t, 0, 1, in)
	plan := s.b[0].Plan()
	if plan == nil || len(plan.Dealt) != 1 || len(plan.Dealt[0].OTs) < 4 {
		t.Fatalf("the session's plan %+v", plan)
	}
	wrong := *plan
	d := plan.Dealt[0]
	d.OTs = slices.Clone(d.OTs[len(d.OTs)/2:])
	for i := range d.OTs {
		d.OTs[i].Count *= 2
	}
	d.OTs = append(d.OTs, selfdeal.Entry{Sender: 1, N: 32, W: 1, L: 5, Count: 1000})
	d.Triples /= 3
	wrong.Dealt = []selfdeal.Plan{d}
	o1 := on
	o1.Offline.First = &wrong
	s2, errs := newDealtSession(t, p, 1, [2]sci.Options{on, o1})
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	in = randTensor(r, rng, []int{1, 3, 6, 6}, 10)
	sameOutputs(t, "a mismatched plan", s2.run(t, 0, 1, in), clearRun(t, p, in))
	a0, a1 := s2.b[0].Offline().Dealt, s2.b[1].Offline().Dealt
	if a0.FirstOnDemand == 0 || a0.FirstOnDemand != a1.FirstOnDemand || a0.AheadOTs != a1.AheadOTs || !a0.FirstPlanned {
		t.Fatalf("a mismatched plan: accounts %+v and %+v: want the same on-demand rest at both", a0, a1)
	}
}
