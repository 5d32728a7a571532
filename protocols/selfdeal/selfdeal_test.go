package selfdeal

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/ferret"
	"github.com/cryptflow-go/cryptflow/protocols/linear"
	"github.com/cryptflow-go/cryptflow/protocols/nonlinear"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/ot/ottest"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

var testOpt = transport.Options{Timeout: 20 * time.Second}

// testFerret is a small Ferret parameter set for tests only (far from 128-bit LPN security), so
// that making the correlations runs through refills.
var testFerret = ferret.Config{Name: "test", Main: ferret.Params{N: 1 << 14, T: 64, K: 2048, LogBin: 8}}

// party is one party's end: the OT sessions (src), the self-dealt cores and the sessions over
// them, the triples, and the nonlinear session on those (Sequential, as on-demand draws need).
type party struct {
	conns []*transport.Conn
	src   []*ot.Session
	cores []*Core
	tr    *Triples
	nl    *nonlinear.Session
	lin   *linear.Session
}

// setup connects two parties with k streams of IKNP (or Ferret) over the ring r.
func setup(t testing.TB, useFerret bool, k int, r ring.Ring) [2]*party {
	t.Helper()
	ctx := context.Background()
	c0, c1 := ottest.Pipes(t, k, testOpt)
	o0, o1 := ottest.Sessions(t, c0, c1)
	var ps [2]*party
	build := func(p int, conns []*transport.Conn, srcs []*ot.Session) error {
		if useFerret {
			for i, o := range srcs {
				f, err := ferret.NewSession(ctx, o, testFerret, ferret.Options{})
				if err != nil {
					return err
				}
				srcs[i] = f
			}
		}
		pt := &party{conns: conns, src: srcs}
		var dealt []*ot.Session
		var gens []*nonlinear.Session
		for _, o := range srcs {
			c, err := New(o)
			if err != nil {
				return err
			}
			d, err := ot.New(c)
			if err != nil {
				return err
			}
			g, err := nonlinear.New(ctx, r, nonlinear.Options{Sequential: true}, o)
			if err != nil {
				return err
			}
			pt.cores, dealt, gens = append(pt.cores, c), append(dealt, d), append(gens, g)
		}
		var err error
		if pt.tr, err = NewTriples(gens...); err != nil {
			return err
		}
		if pt.nl, err = nonlinear.New(ctx, r, nonlinear.Options{Dealer: pt.tr, Sequential: true}, dealt...); err != nil {
			return err
		}
		if pt.lin, err = linear.New(ctx, r, linear.Options{}, srcs...); err != nil {
			return err
		}
		ps[p] = pt
		return nil
	}
	ottest.MustBoth(t, func() error { return build(0, c0, o0) }, func() error { return build(1, c1, o1) })
	return ps
}

// drawn is the plans of what p drew since the last call, per stream.
func (p *party) drawn() []Plan {
	out := make([]Plan, len(p.cores))
	for i, c := range p.cores {
		out[i] = Merge(c.TakeDrawn(), p.tr.TakeDrawn(i))
	}
	return out
}

// held is the plans of what p holds, per stream.
func (p *party) held() []Plan {
	out := make([]Plan, len(p.cores))
	for i, c := range p.cores {
		out[i] = Merge(c.Held(), p.tr.Held(i))
	}
	return out
}

// makeAhead makes need at p, the streams concurrently.
func (p *party) makeAhead(ctx context.Context, need []Plan) error {
	errs := make([]error, len(need))
	var wg sync.WaitGroup
	for i := range need {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = p.cores[i].MakeAhead(ctx, need[i]); errs[i] == nil {
				errs[i] = p.tr.MakeAhead(ctx, i, need[i])
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// onDemand is the OTs and triples p made on demand so far.
func (p *party) onDemand() (ots, triples uint64) {
	for i, c := range p.cores {
		ots += c.Stats().OnDemand
		triples += p.tr.Stats(i).OnDemand
	}
	return
}

// op is a nonlinear protocol with its cleartext spec.
type op struct {
	name  string
	run   func(ctx context.Context, p *party, dst, x []uint64) error
	clear func(r ring.Ring, dst, x []uint64)
	small int // inputs of at most this many bits (0: any; the max protocols compare differences)
}

const rows, width = 50, 9

func ops(r ring.Ring) []op {
	fx, err := fxmath.NewParams(r.Bits, 8)
	if err != nil {
		panic(err)
	}
	return []op{
		{name: "ReLU", run: func(ctx context.Context, p *party, dst, x []uint64) error { return p.nl.ReLU(ctx, dst, x) },
			clear: func(r ring.Ring, dst, x []uint64) {
				for i, v := range x {
					if dst[i] = v; r.IsNeg(v) {
						dst[i] = 0
					}
				}
			}},
		{name: "Trunc", run: func(ctx context.Context, p *party, dst, x []uint64) error { return p.nl.Trunc(ctx, dst, x, 7, false) },
			clear: func(r ring.Ring, dst, x []uint64) {
				for i, v := range x {
					dst[i] = r.Trunc(v, 7)
				}
			}},
		{name: "Div", run: func(ctx context.Context, p *party, dst, x []uint64) error { return p.nl.Div(ctx, dst, x, 9) },
			clear: func(r ring.Ring, dst, x []uint64) {
				for i, v := range x {
					s := r.Signed(v)
					q := s / 9
					if s%9 != 0 && s < 0 {
						q--
					}
					dst[i] = r.FromSigned(q)
				}
			}},
		{name: "MaxPool", small: 29, run: func(ctx context.Context, p *party, dst, x []uint64) error {
			return p.nl.MaxRows(ctx, dst[:rows], x[:rows*width], rows, width)
		}, clear: func(r ring.Ring, dst, x []uint64) {
			for i := range rows {
				m := x[i*width]
				for _, v := range x[i*width : (i+1)*width] {
					if r.Signed(v) > r.Signed(m) {
						m = v
					}
				}
				dst[i] = m
			}
		}},
		{name: "ArgMax", small: 29, run: func(ctx context.Context, p *party, dst, x []uint64) error {
			return p.nl.ArgMaxRows(ctx, dst[:rows], x[:rows*width], rows, width)
		}, clear: func(r ring.Ring, dst, x []uint64) {
			for i := range rows {
				best := 0
				for j := 1; j < width; j++ {
					if r.Signed(x[i*width+j]) > r.Signed(x[i*width+best]) {
						best = j
					}
				}
				dst[i] = uint64(best)
			}
		}},
		{name: "Sigmoid", small: 12, run: func(ctx context.Context, p *party, dst, x []uint64) error {
			return p.nl.Math(ctx, p.lin, fxmath.Sigmoid, dst, x, 8)
		}, clear: func(r ring.Ring, dst, x []uint64) {
			if err := fx.EvalClear(fxmath.Sigmoid, dst, x); err != nil {
				panic(err)
			}
		}},
	}
}

// runOps runs every op on n fresh random and edge values at both parties, checks the results
// against the clear spec and returns the bytes each op moved.
func runOps(t *testing.T, ps [2]*party, r ring.Ring, rng *rand.Rand, n int) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	bytes := map[string]int64{}
	// Each round starts from the session's OT roles, as every inference does, so that its draws
	// (and their directions) repeat.
	for _, p := range ps {
		p.nl.ResetRoles()
	}
	for _, o := range ops(r) {
		v := ringtest.Values(r, rng, n)
		if o.small > 0 {
			for i := range v {
				v[i] = r.FromSigned(rng.Int64N(1<<o.small) - 1<<(o.small-1))
			}
			v[0], v[1] = r.FromSigned(1<<(o.small-1)-1), r.FromSigned(-1<<(o.small-1))
		}
		x0, x1 := ringtest.Share(r, rng, v)
		y0, y1 := make([]uint64, n), make([]uint64, n)
		before := stats(ps[0].conns)
		ottest.MustBoth(t, func() error { return o.run(ctx, ps[0], y0, x0) }, func() error { return o.run(ctx, ps[1], y1, x1) })
		bytes[o.name] = stats(ps[0].conns).Sub(before).BytesSent + stats(ps[0].conns).Sub(before).BytesRecv
		got := ringtest.Reconstruct(r, y0, y1)
		want := make([]uint64, n)
		o.clear(r, want, v)
		m := n
		if o.name == "MaxPool" || o.name == "ArgMax" {
			m = rows
		}
		for i := range m {
			if got[i] != want[i] {
				t.Fatalf("%s(%d) = %d, want %d", o.name, r.Signed(v[i]), r.Signed(got[i]), r.Signed(want[i]))
			}
		}
	}
	return bytes
}

func stats(cs []*transport.Conn) transport.Stats {
	var s transport.Stats
	for _, c := range cs {
		s = s.Add(c.Stats())
	}
	return s
}

// TestAheadMatchesSpec: the nonlinear protocols on the self-dealt correlations agree with the
// clear spec on random and edge values, on IKNP and Ferret, one and two streams: a first round
// with nothing made ahead (every draw made on demand), then a second round of fresh values on
// the correlations made ahead from the first round's counts, which draws nothing on demand and
// uses up exactly what was made; both parties record the same (mirrored) plans.
func TestAheadMatchesSpec(t *testing.T) {
	r := ring.Must(32)
	for _, src := range []string{"iknp", "ferret"} {
		for _, k := range []int{1, 2} {
			if src == "ferret" && k == 2 && testing.Short() {
				continue
			}
			t.Run(fmt.Sprintf("%s/%d", src, k), func(t *testing.T) {
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(uint64(k), 7))
				ps := setup(t, src == "ferret", k, r)
				n := 5000
				runOps(t, ps, r, rng, n)
				plans := [2][]Plan{ps[0].drawn(), ps[1].drawn()}
				if !reflect.DeepEqual(plans[0], plans[1]) {
					t.Fatalf("the parties recorded different plans:\n%+v\n%+v", plans[0], plans[1])
				}
				if o0, _ := ps[0].onDemand(); o0 == 0 {
					t.Fatal("the first round made nothing on demand")
				}
				need, capped := Need(plans[0], ps[0].held(), 1<<40)
				if capped != 0 || !reflect.DeepEqual(need, plans[0]) {
					t.Fatalf("Need with nothing held: %+v (capped %d), want the plan %+v", need, capped, plans[0])
				}
				ottest.MustBoth(t, func() error { return ps[0].makeAhead(ctx, need) }, func() error { return ps[1].makeAhead(ctx, need) })
				var od0, ot0 [2]uint64
				for p := range 2 {
					od0[p], ot0[p] = ps[p].onDemand()
				}
				runOps(t, ps, r, rng, n)
				for p := range 2 {
					if od, ot := ps[p].onDemand(); od != od0[p] || ot != ot0[p] {
						t.Fatalf("party %d made %d OTs and %d triples on demand in the second round", p, od-od0[p], ot-ot0[p])
					}
					for i, h := range ps[p].held() {
						if !h.Empty() {
							t.Fatalf("party %d holds %+v in stream %d after the second round", p, h, i)
						}
					}
				}
				if again := ps[0].drawn(); !reflect.DeepEqual(again, plans[0]) {
					t.Fatalf("the second round drew %+v, the first %+v", again, plans[0])
				}
			})
		}
	}
}

// TestOnlineBytesAsThreeParty: with everything made ahead, the online phase of ReLU and Trunc
// moves exactly the bytes between the two parties that the three-party mode (the helper's dealt
// OTs and triples, package dealer) moves between its data parties: the same derivation on dealt
// correlations, whoever made them.
func TestOnlineBytesAsThreeParty(t *testing.T) {
	r := ring.Must(32)
	ctx := context.Background()
	n := 3000
	rng := rand.New(rand.NewPCG(3, 4))
	ps := setup(t, false, 1, r)
	runOps(t, ps, r, rng, n)
	need, _ := Need(ps[0].drawn(), ps[0].held(), 1<<40)
	ottest.MustBoth(t, func() error { return ps[0].makeAhead(ctx, need) }, func() error { return ps[1].makeAhead(ctx, need) })
	mine := runOps(t, ps, r, rng, n)

	tr, err := dealer.Local(ctx, testOpt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tr.Close(ctx)
	})
	c0, c1 := transport.Pipe(testOpt)
	t.Cleanup(func() { c0.Close(); c1.Close() })
	var three [2]*party
	for p, c := range []*transport.Conn{c0, c1} {
		s, err := dealer.NewSession(tr.Links[p], c)
		if err != nil {
			t.Fatal(err)
		}
		three[p] = &party{conns: []*transport.Conn{c}, src: []*ot.Session{s}}
	}
	ottest.MustBoth(t, func() (err error) {
		three[0].nl, err = nonlinear.New(ctx, r, nonlinear.Options{Dealer: dealer.NewTriples(tr.Links[0]), Sequential: true}, three[0].src...)
		return
	}, func() (err error) {
		three[1].nl, err = nonlinear.New(ctx, r, nonlinear.Options{Dealer: dealer.NewTriples(tr.Links[1]), Sequential: true}, three[1].src...)
		return
	})
	for _, o := range ops(r)[:2] {
		v := ringtest.Values(r, rng, n)
		x0, x1 := ringtest.Share(r, rng, v)
		y0, y1 := make([]uint64, n), make([]uint64, n)
		before := c0.Stats()
		ottest.MustBoth(t, func() error { return o.run(ctx, three[0], y0, x0) }, func() error { return o.run(ctx, three[1], y1, x1) })
		d := c0.Stats().Sub(before)
		if got := d.BytesSent + d.BytesRecv; got != mine[o.name] {
			t.Errorf("%s: %d bytes online on the self-dealt correlations, %d between sci3's data parties", o.name, mine[o.name], got)
		} else {
			t.Logf("%s on %d elements: %d bytes online, as sci3", o.name, n, got)
		}
	}
}

// TestCapAndMismatch: a plan cut by the memory bound, and a plan of another program, leave the
// rest to be made on demand, identically at both parties, with results still equal to the spec.
func TestCapAndMismatch(t *testing.T) {
	r := ring.Must(32)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(9, 9))
	ps := setup(t, false, 1, r)
	runOps(t, ps, r, rng, 2000)
	plan := ps[0].drawn()
	_ = ps[1].drawn()
	full := plan[0].Bytes()
	need, capped := Need(plan, ps[0].held(), full/3)
	if capped <= 0 || need[0].Bytes() > full/3 || need[0].Bytes()+capped != full {
		t.Fatalf("Need under a third of %d bytes: %d made, %d capped", full, need[0].Bytes(), capped)
	}
	ottest.MustBoth(t, func() error { return ps[0].makeAhead(ctx, need) }, func() error { return ps[1].makeAhead(ctx, need) })
	a0, _ := ps[0].onDemand()
	runOps(t, ps, r, rng, 2000)
	a1, _ := ps[0].onDemand()
	b1, _ := ps[1].onDemand()
	if a1 == a0 || a1 != b1 {
		t.Fatalf("on demand after a capped plan: party 0 %d (before %d), party 1 %d", a1, a0, b1)
	}
	// Another program's plan: other shapes and counts; what it made stays held and the draws
	// make theirs on demand (or take what matches).
	other := []Plan{{OTs: []Entry{{Sender: 0, N: 4, W: 1, L: 3, Count: 100}, {Sender: 1, N: 2, W: 2, L: 5, Count: 70}}, Triples: 10}}
	ottest.MustBoth(t, func() error { return ps[0].makeAhead(ctx, other) }, func() error { return ps[1].makeAhead(ctx, other) })
	runOps(t, ps, r, rng, 1000)
	if h0, h1 := ps[0].held(), ps[1].held(); !reflect.DeepEqual(h0, h1) || len(h0[0].OTs) != 2 || h0[0].Triples != 0 {
		t.Fatalf("held after a mismatched plan: %+v and %+v", h0, h1)
	}
}

// TestPlanEncoding: plans round-trip, and bad ones are refused.
func TestPlanEncoding(t *testing.T) {
	p := []Plan{{OTs: []Entry{{Sender: 1, N: 16, W: 1, L: 2, Count: 5}, {Sender: 0, N: 2, W: 3, L: 32, Count: 9}}, Triples: 4, Pairs: 2}, {}}
	b, err := EncodePlans(p)
	if err != nil {
		t.Fatal(err)
	}
	q, err := DecodePlans(b)
	if err != nil {
		t.Fatal(err)
	}
	p[0].sort()
	if !reflect.DeepEqual(p[0], q[0]) || !q[1].Empty() {
		t.Fatalf("round trip: %+v, want %+v", q, p)
	}
	for _, bad := range []string{`[{"ots":[{"sender":2,"n":2,"w":1,"l":1,"count":1}]}]`, `[{"ots":[{"sender":0,"n":3,"w":1,"l":1,"count":1}]}]`,
		`[{"ots":[{"sender":0,"n":2,"w":1,"l":1,"count":1},{"sender":0,"n":2,"w":1,"l":1,"count":1}]}]`, `{`} {
		if _, err := DecodePlans([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	m := Merge(Plan{OTs: []Entry{{Sender: 0, N: 2, W: 1, L: 1, Count: 5}}, Triples: 3}, Plan{OTs: []Entry{{Sender: 0, N: 2, W: 1, L: 1, Count: 7}, {Sender: 1, N: 4, W: 1, L: 1, Count: 1}}, Pairs: 2})
	if want := (Plan{OTs: []Entry{{Sender: 0, N: 2, W: 1, L: 1, Count: 7}, {Sender: 1, N: 4, W: 1, L: 1, Count: 1}}, Triples: 3, Pairs: 2}); !reflect.DeepEqual(m, want) {
		t.Fatalf("Merge = %+v, want %+v", m, want)
	}
}

// TestMadeOTs: the OTs made ahead are random OTs (the receiver's words are the sender's message
// of its choice, the choices cover every value), in every shape the protocols draw, on IKNP and
// Ferret; making them moves exactly the bytes of the session's own random OT batch (ROTWide for
// N = 2, ROTN for N > 2) — on IKNP the sender of a 1-of-N batch sends only the 8-byte
// acknowledgement, no N·l-bit messages — and drawing them moves nothing.
func TestMadeOTs(t *testing.T) {
	ctx := context.Background()
	shapes := []Shape{{2, 1, 32}, {2, 3, 7}, {2, 1, 1}, {4, 1, 2}, {16, 1, 2}, {256, 1, 32}}
	for _, useFerret := range []bool{false, true} {
		ps := setup(t, useFerret, 1, ring.Must(32))
		ref := setup(t, useFerret, 1, ring.Must(32))
		for _, k := range shapes {
			n := 3000
			plan := []Plan{{OTs: []Entry{{Sender: 1, N: k.N, W: k.W, L: k.L, Count: uint64(n)}}}}
			b0, s1 := stats(ps[0].conns), stats(ps[1].conns)
			ottest.MustBoth(t, func() error { return ps[0].makeAhead(ctx, plan) }, func() error { return ps[1].makeAhead(ctx, plan) })
			made := stats(ps[0].conns).Sub(b0)
			if sent := stats(ps[1].conns).Sub(s1).BytesSent; !useFerret && k.N > 2 && sent != 8+transport.HeaderSize {
				t.Errorf("IKNP %v: the sender of %d random 1-of-%d OTs sent %d bytes, want one acknowledgement (%d)", k, n, k.N, sent, 8+transport.HeaderSize)
			}
			// The same batch on the reference pair's session, party 1 sending.
			r0 := stats(ref[0].conns)
			ottest.MustBoth(t, func() error {
				if k.N == 2 {
					return ref[0].src[0].RecvROTWide(ctx, k.W, k.L, make([]uint64, n/64+1), make([]uint64, n*k.W))
				}
				return ref[0].src[0].RecvROTN(ctx, k.N, k.L, make([]uint8, n), make([]uint64, n))
			}, func() error {
				if k.N == 2 {
					return ref[1].src[0].SendROTWide(ctx, k.W, k.L, make([]uint64, n*k.W), make([]uint64, n*k.W))
				}
				return ref[1].src[0].SendROTN(ctx, k.N, k.L, make([]uint64, n*k.N))
			})
			if want := stats(ref[0].conns).Sub(r0); made.BytesSent != want.BytesSent || made.BytesRecv != want.BytesRecv {
				t.Errorf("ferret=%v %v: making %d moved %d/%d bytes, the session's batch %d/%d", useFerret, k, n, made.BytesSent, made.BytesRecv, want.BytesSent, want.BytesRecv)
			}
			msgs := make([]uint64, n*k.N*k.W)
			ch, out := make([]uint64, n*k.m()/64+2), make([]uint64, n*k.W)
			d0 := stats(ps[0].conns)
			if err := ps[1].cores[0].SendDealt(ctx, k.N, k.W, k.L, msgs); err != nil {
				t.Fatal(err)
			}
			wait, err := ps[0].cores[0].RecvDealt(ctx, k.N, k.W, k.L, ch, out)
			if err == nil {
				err = wait()
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := stats(ps[0].conns).Sub(d0); d.BytesSent+d.BytesRecv != 0 {
				t.Fatalf("drawing made OTs moved %d bytes", d.BytesSent+d.BytesRecv)
			}
			seen := map[uint64]bool{}
			for i := range n {
				c := bitvec.Get(ch, i*k.m(), k.m())
				seen[c] = true
				for w := range k.W {
					if got, want := out[i*k.W+w], msgs[(i*k.N+int(c))*k.W+w]; got != want {
						t.Fatalf("ferret=%v %v: instance %d word %d: receiver %d, sender's message %d is %d", useFerret, k, i, w, got, c, want)
					}
				}
			}
			if len(seen) != k.N {
				t.Fatalf("%v: %d of %d choice values in %d instances", k, len(seen), k.N, n)
			}
		}
	}
}
