package sci_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/ferret"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// offlineCfg is a Ferret set with small iterations (13,872 COTs), so that one test inference
// takes several of them in each direction.
var offlineCfg = ferret.Config{Name: "offline-test", Main: ferret.Params{N: 64 << 8, T: 64, K: 2000, LogBin: 8}}

// offlineSession is a two-party SCI session on offlineCfg with the offline options of each party.
type offlineSession struct {
	p    *pair
	conn [2][]*transport.Conn
}

func newOfflineSession(t *testing.T, l, streams int, off [2]sci.Offline) *offlineSession {
	t.Helper()
	s := &offlineSession{p: &pair{r: ring.Must(l)}}
	for range streams {
		a, b := transport.Pipe(testOpt)
		t.Cleanup(func() { a.Close(); b.Close() })
		s.conn[0], s.conn[1] = append(s.conn[0], a), append(s.conn[1], b)
	}
	ctx := context.Background()
	mk := func(party int) func() error {
		return func() (err error) {
			s.p.b[party], err = sci.New(ctx, s.conn[party][0], party, s.p.r, sci.Options{Streams: s.conn[party][1:],
				OT: sci.OTFerret, Ferret: offlineCfg, Offline: off[party]})
			return
		}
	}
	testenv.MustBoth(t, mk(0), mk(1))
	return s
}

// bytes is what both parties sent so far, every stream.
func (s *offlineSession) bytes() int64 {
	var n int64
	for _, cs := range s.conn {
		for _, c := range cs {
			n += c.Stats().BytesSent
		}
	}
	return n
}

// inference runs inference k as a session does (BeginInference, then the work, then
// EndInference): a ReLU and a truncation of x, revealed to party 1; it checks the result against
// the clear computation and returns the bytes sent at the inference's start (the offline phase)
// and in the rest.
func (s *offlineSession) inference(t *testing.T, k int, x ring.Tensor) (offline, online int64) {
	t.Helper()
	ctx := context.Background()
	b0 := s.bytes()
	testenv.MustBoth(t, func() error { return s.p.b[0].BeginInference(ctx, k, 2) }, func() error { return s.p.b[1].BeginInference(ctx, k, 2) })
	b1 := s.bytes()
	got := s.p.secure(t, 1, x, x.Shape, func(b *sci.Backend, party int, dst, x ring.Tensor) error {
		if err := b.ReLU(ctx, dst, x); err != nil {
			return err
		}
		return b.Trunc(ctx, dst, dst, 3, true)
	})
	for _, b := range s.p.b {
		if err := b.EndInference(k); err != nil {
			t.Fatal(err)
		}
	}
	r := s.p.r
	for i, v := range x.Data {
		want := uint64(0)
		if r.Signed(v) > 0 {
			want = v >> 3
		}
		if got.Data[i] != want {
			t.Fatalf("inference %d: element %d: ReLU then >>3 of %d gave %d, want %d", k, i, r.Signed(v), got.Data[i], want)
		}
	}
	return b1 - b0, s.bytes() - b1
}

// exchangeBytes is the plan exchange at the first inference's start (one frame each way of
// 4·(4 + 2·streams) bytes) and the end-of-phase byte each way.
func exchangeBytes(streams int) int64 {
	return 2*int64(4*(4+2*streams)+transport.HeaderSize) + 2*(1+transport.HeaderSize)
}

// TestOfflinePhase: a session without a plan runs its first inference's Ferret iterations
// online; given that session's plan (at one party only: the exchange shares it), a second
// session runs them all ahead, so neither its first nor its second inference runs an iteration
// online, with results equal to the clear computation and, inference for inference, exactly the
// same bytes in all (the offline phase being the plan exchange and the iterations' flights).
func TestOfflinePhase(t *testing.T) {
	for _, streams := range []int{1, 2} {
		r := ring.Must(32)
		rng := rand.New(rand.NewPCG(5, uint64(streams)))
		xs := []ring.Tensor{randTensor(r, rng, []int{3000}, 20), randTensor(r, rng, []int{3000}, 20)}

		a := newOfflineSession(t, 32, streams, [2]sci.Offline{})
		var aOff, aOn [2]int64
		for k, x := range xs {
			aOff[k], aOn[k] = a.inference(t, k, x)
		}
		plan, plan1 := a.p.b[0].Plan(), a.p.b[1].Plan()
		if plan == nil || plan.Total() < 4 || len(plan.Iterations) != streams {
			t.Fatalf("%d streams: the first inference's plan %+v: want at least 4 iterations in %d streams", streams, plan, streams)
		}
		for i := range plan.Iterations {
			if plan.Iterations[i] != plan1.Iterations[i] {
				t.Fatalf("%d streams: the parties' plans differ: %v and %v", streams, plan.Iterations, plan1.Iterations)
			}
		}
		acc := a.p.b[0].Offline()
		if acc.FirstPlanned || acc.FirstOnline != plan.Total() || aOff[0] != exchangeBytes(streams) {
			t.Fatalf("%d streams: without a plan: %+v, %d bytes offline; want %d iterations online and %d bytes",
				streams, acc, aOff[0], plan.Total(), exchangeBytes(streams))
		}

		b := newOfflineSession(t, 32, streams, [2]sci.Offline{{First: plan}, {}})
		var bOff, bOn [2]int64
		for k, x := range xs {
			bOff[k], bOn[k] = b.inference(t, k, x)
		}
		for party, be := range b.p.b {
			acc := be.Offline()
			if !acc.FirstPlanned || acc.FirstOnline != 0 || acc.Online != 0 || acc.Capped != 0 {
				t.Fatalf("%d streams, party %d: with the plan: %+v; want no iteration online", streams, party, acc)
			}
			if acc.Taken+acc.Queued != acc.Ahead || acc.Taken < plan.Total() {
				t.Fatalf("%d streams, party %d: %d run ahead, %d taken, %d queued", streams, party, acc.Ahead, acc.Taken, acc.Queued)
			}
		}
		ahead := int64(b.p.b[0].Offline().Ahead)
		first := int64(plan.Total())
		if want := exchangeBytes(streams) + first*ferret.IterationBytes(offlineCfg.Main); bOff[0] != want {
			t.Fatalf("%d streams: first inference offline %d bytes, want the exchange and %d iterations: %d", streams, bOff[0], first, want)
		}
		if want := (ahead - first) * ferret.IterationBytes(offlineCfg.Main); bOff[1] != want {
			t.Fatalf("%d streams: second inference offline %d bytes, want %d iterations: %d", streams, bOff[1], ahead-first, want)
		}
		if aOff[0]+aOn[0] != bOff[0]+bOn[0] {
			t.Fatalf("%d streams: the first inference sent %d bytes on demand, %d + %d with the offline phase", streams, aOff[0]+aOn[0], bOff[0], bOn[0])
		}
		if a.bytes() != b.bytes() {
			t.Logf("%d streams: %d bytes on demand, %d with the offline phase", streams, a.bytes(), b.bytes())
		}
	}
}

// TestOfflineCap: a plan larger than the memory bound runs what fits ahead and the rest
// online, and says how many; the smaller of the parties' bounds applies, and 0 MiB at one party
// (negative Offline.MiB) switches the phase off for both.
func TestOfflineCap(t *testing.T) {
	r := ring.Must(32)
	rng := rand.New(rand.NewPCG(6, 6))
	x := randTensor(r, rng, []int{8000}, 20)
	a := newOfflineSession(t, 32, 1, [2]sci.Offline{})
	a.inference(t, 0, x)
	plan := a.p.b[0].Plan()
	per := ferret.AheadBytes(offlineCfg, ferret.Receiver)
	fit := int((1 << 20) / per)
	if plan.Total() <= fit {
		t.Fatalf("the plan (%d iterations) fits in 1 MiB (%d): the test needs a larger inference", plan.Total(), fit)
	}
	b := newOfflineSession(t, 32, 1, [2]sci.Offline{{First: plan, MiB: 1}, {First: plan, MiB: 4}})
	b.inference(t, 0, x)
	for party, be := range b.p.b {
		acc := be.Offline()
		if acc.CapBytes != 1<<20 || acc.Ahead != fit || acc.Capped != plan.Total()-fit || acc.FirstOnline != plan.Total()-fit ||
			acc.PeakBytes > acc.CapBytes {
			t.Fatalf("party %d: %+v; want a 1 MiB bound, %d ahead, %d capped and online", party, acc, fit, plan.Total()-fit)
		}
	}
	c := newOfflineSession(t, 32, 1, [2]sci.Offline{{First: plan, MiB: -1}, {First: plan}})
	c.inference(t, 0, x)
	if acc := c.p.b[1].Offline(); acc.CapBytes != 0 || acc.Ahead != 0 || acc.FirstOnline != plan.Total() {
		t.Fatalf("one party off: %+v; want nothing ahead", acc)
	}
}

// TestOfflineHEWeights: with the program, party 0 builds the weight plaintexts of the layers
// that run by HE (a matrix product and a convolution) at the first inference's start; the
// inference equals the clear run; the offline phase sends only the exchange and the end byte.
func TestOfflineHEWeights(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	b := newTestProg(t, rng, 32, 4, ir.Shape{1, 3, 6, 6})
	p, x, ints, add := b.p, b.x, b.ints, b.add
	wc := p.AddWeight("wc", ir.Shape{4, 3, 3, 3}, 4, ints(4*3*3*3))
	y := add(&fixed.Instr{Op: fixed.OpConv, In: []int{x}, Weight: wc, Group: 1, Engine: fixed.EngineHE,
		Win: ir.Window{Kernel: []int{3, 3}, Strides: []int{1, 1}, Pads: []int{1, 1, 1, 1}, Dilations: []int{1, 1}}})
	flat := p.AddTensor("flat", ir.Shape{144, 1}, p.Tensors[y].Scale)
	p.Instrs = append(p.Instrs, &fixed.Instr{Op: fixed.OpReshape, In: []int{y}, Out: flat, Weight: -1})
	y = flat
	wm := p.AddWeight("wm", ir.Shape{5, 144}, 4, ints(5*144))
	y = add(&fixed.Instr{Op: fixed.OpMatMul, In: []int{y}, Weight: wm, Engine: fixed.EngineHE})
	p.Outputs = append(p.Outputs, fixed.IO{Name: "y", Tensor: y, Party: 1})
	p.Instrs = append(p.Instrs, &fixed.Instr{Op: fixed.OpOutput, Out: -1, In: []int{y}, Weight: -1, Index: 0})
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	r := ring.Must(p.Bits)
	in := r.SignedTensor(ir.Shape{1, 3, 6, 6}, ints(108)...)
	clr, _ := cleartext.New(r)
	cm, err := vm.New(p, clr)
	if err != nil {
		t.Fatal(err)
	}
	want, err := cm.Run(context.Background(), []ring.Tensor{in})
	if err != nil {
		t.Fatal(err)
	}

	c0, c1 := transport.Pipe(testOpt)
	t.Cleanup(func() { c0.Close(); c1.Close() })
	ctx := context.Background()
	var b0, b1 *sci.Backend
	testenv.MustBoth(t, func() (err error) {
		b0, err = sci.New(ctx, c0, 0, r, sci.Options{Mode: sci.ModeHE, Offline: sci.Offline{Program: p}})
		return
	}, func() (err error) {
		b1, err = sci.New(ctx, c1, 1, r, sci.Options{Mode: sci.ModeHE})
		return
	})
	s0 := c0.Stats().BytesSent + c1.Stats().BytesSent
	testenv.MustBoth(t, func() error { return b0.BeginInference(ctx, 0, 1) }, func() error { return b1.BeginInference(ctx, 0, 1) })
	// The plan exchange, the bound on the HE layers made ahead (4 bytes each way: none, party 1
	// has no program) and the end byte.
	if got, want := c0.Stats().BytesSent+c1.Stats().BytesSent-s0, exchangeBytes(0)+2*(4+transport.HeaderSize); got != want {
		t.Fatalf("offline phase: %d bytes, want %d", got, want)
	}
	acc := b0.Offline()
	if acc == nil || acc.HELayers != 2 || acc.HEUncached != 0 || acc.HEBytes <= 0 || acc.HEBytes > acc.HEBound {
		t.Fatalf("party 0's account %+v: want the weights of 2 layers built", acc)
	}
	if a1 := b1.Offline(); a1 == nil || a1.HELayers != 0 {
		t.Fatalf("party 1's account %+v", a1)
	}
	var got []vm.Output
	k := 0 // the inference run calls
	run := func(b *sci.Backend, party int) func() error {
		return func() error {
			m, err := vm.New(p, b)
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
		t.Fatalf("secure %v, clear %v", got[0].Value.Data, want[0].Value.Data)
	}
	// A second inference on the same session (IKNP: no Ferret iterations to run ahead, only
	// the HE weights, already built) sends nothing offline and gives the same output.
	s1 := c0.Stats().BytesSent + c1.Stats().BytesSent
	testenv.MustBoth(t, func() error { return b0.BeginInference(ctx, 1, 2) }, func() error { return b1.BeginInference(ctx, 1, 2) })
	if d := c0.Stats().BytesSent + c1.Stats().BytesSent - s1; d != 0 {
		t.Fatalf("the second inference's offline phase sent %d bytes on IKNP, want 0", d)
	}
	got, k = nil, 1
	testenv.MustBoth(t, run(b0, 0), run(b1, 1))
	if !slices.Equal(got[0].Value.Data, want[0].Value.Data) {
		t.Fatalf("second inference: secure %v, clear %v", got[0].Value.Data, want[0].Value.Data)
	}
}

// BenchmarkOfflineReLU measures one "inference" of n ReLUs (l = 32, B13, one stream) with the
// offline phase (a plan from an earlier session, default bound) against without it, A B A B in
// fresh sessions, and reports the medians of the online time (input to output, the part after
// BeginInference) and of its ratio on/off, and the on run's offline time:
//
//	go test ./vm/sci -run '^$' -bench OfflineReLU -benchtime 3x
func BenchmarkOfflineReLU(b *testing.B) {
	const n = 1 << 19
	r := ring.Must(32)
	rng := rand.New(rand.NewPCG(1, 2))
	x := randTensor(r, rng, []int{n}, 28)
	ctx := context.Background()
	session := func(off sci.Offline) (be [2]*sci.Backend) {
		c0, c1 := transport.Pipe(testOpt)
		b.Cleanup(func() { c0.Close(); c1.Close() })
		testenv.MustBoth(b, func() (err error) {
			be[0], err = sci.New(ctx, c0, 0, r, sci.Options{OT: sci.OTFerret, Offline: off})
			return
		}, func() (err error) {
			be[1], err = sci.New(ctx, c1, 1, r, sci.Options{OT: sci.OTFerret, Offline: off})
			return
		})
		return be
	}
	// run returns the offline and online wall time of one inference.
	run := func(be [2]*sci.Backend) (time.Duration, time.Duration) {
		t0 := time.Now()
		testenv.MustBoth(b, func() error { return be[0].BeginInference(ctx, 0, 1) }, func() error { return be[1].BeginInference(ctx, 0, 1) })
		t1 := time.Now()
		relu := func(party int) func() error {
			return func() error {
				in := ring.NewTensor(x.Shape)
				if party == 1 {
					copy(in.Data, x.Data)
				}
				if err := be[party].Input(ctx, 1, in); err != nil {
					return err
				}
				dst := ring.NewTensor(x.Shape)
				if err := be[party].ReLU(ctx, dst, in); err != nil {
					return err
				}
				return be[party].EndInference(0)
			}
		}
		testenv.MustBoth(b, relu(0), relu(1))
		return t1.Sub(t0), time.Since(t1)
	}
	first := session(sci.Offline{})
	run(first)
	plan := first[0].Plan()
	var ratios, offs, ons []float64
	for range b.N {
		_, offOnline := run(session(sci.Offline{MiB: -1}))
		offTime, onOnline := run(session(sci.Offline{First: plan}))
		ratios = append(ratios, onOnline.Seconds()/offOnline.Seconds())
		offs = append(offs, offTime.Seconds())
		ons = append(ons, onOnline.Seconds())
	}
	med := func(v []float64) float64 { slices.Sort(v); return v[len(v)/2] }
	b.ReportMetric(med(ratios), "online_on/off")
	b.ReportMetric(med(ons)*1000, "online_ms")
	b.ReportMetric(med(offs)*1000, "offline_ms")
	b.ReportMetric(float64(plan.Total()), "iterations")
}
