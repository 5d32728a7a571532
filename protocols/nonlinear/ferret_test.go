package nonlinear

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ferret"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/ring"
)

// The protocols on Ferret's silent OT: the correctness tables of the IKNP
// tests, on a representative subset of their rings and parameters (see
// otSource.ints), with results checked against the same cleartext specs.
func TestFerret(t *testing.T) {
	if testing.Short() {
		t.Skip("the IKNP runs cover -short")
	}
	for _, tc := range []struct {
		name string
		f    func(*testing.T, otSource)
	}{
		{"BitTriples", testBitTriples},
		{"AND", testAND},
		{"Millionaires", testMillionaires},
		{"DReLUAndReLU", testDReLUAndReLU},
		{"ReLULow", testReLULow},
		{"ReLUTrunc", testReLUTrunc},
		{"MUXAndB2A", testMUXAndB2A},
		{"Trunc", testTrunc},
		{"Div", testDiv},
		{"MaxAndArgMax", testMaxAndArgMax},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.f(t, ferretSrc) })
	}
}

// Both triple constructions on both sources give correct comparisons (the
// plan's choice is only about traffic).
func TestTripleModes(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	const n, b = 333, 31
	x, y := make([]uint64, n), make([]uint64, n)
	for i := range x {
		x[i], y[i] = rng.Uint64()&bitvec.Mask(b), rng.Uint64()&bitvec.Mask(b)
		if i%4 == 0 {
			y[i] = x[i]
		}
	}
	for _, src := range []otSource{iknpSrc, ferretSrc} {
		for _, mode := range []TripleMode{TriplesOTN, TriplesROT} {
			p := newPairOn(t, src, 32, Options{Triples: mode}, 1)
			if got := p.s0.Plan().ROTTriples; got != (mode == TriplesROT) {
				t.Fatalf("%s mode %d: plan has ROTTriples=%v", src.name, mode, got)
			}
			r0, r1 := make([]uint64, bitvec.Words(n)), make([]uint64, bitvec.Words(n))
			p.run(t, func(s *Session, party int) error {
				if party == 0 {
					return s.Millionaires(context.Background(), r0, x, b)
				}
				return s.Millionaires(context.Background(), r1, y, b)
			})
			got := reconstructBits(r0, r1, n)
			for i := range got {
				if want := uint64(0); (x[i] < y[i]) != (got[i] == 1) {
					if x[i] < y[i] {
						want = 1
					}
					t.Fatalf("%s mode %d: %d < %d gave %d, want %d", src.name, mode, x[i], y[i], got[i], want)
				}
			}
		}
	}
}

// checkFerretComm runs f at both parties on a Ferret pair and asserts the
// traffic exactly: the COTs drawn are want.COTs per element, every main
// iteration was needed (⌈COTs drawn / Output⌉ per direction), and what is
// left after IterationBytes per iteration is want.Bits per element plus
// framing (at most 0.5%).
func checkFerretComm(t *testing.T, what string, p *pair, n int, want Cost, f func(s *Session, party int) error) {
	t.Helper()
	cfg := *ferretSrc.ferret
	before, cots0, it0 := p.stats(), p.ots.cotsUsed(), p.ots.iterations()
	p.run(t, f)
	bytes := p.stats().Sub(before).BytesSent
	cots, iters := p.ots.cotsUsed()-cots0, p.ots.iterations()-it0
	if cots != uint64(want.COTs*n) {
		t.Errorf("%s: %d COTs drawn, formula %d·%d = %d", what, cots, want.COTs, n, want.COTs*n)
	}
	for _, f := range append(append(p.ots.f0[:0:0], p.ots.f0...), p.ots.f1...) {
		c := ferret.CoreOf(f).SenderCOT()
		if need := (int(c.Used()) + cfg.Main.Output() - 1) / cfg.Main.Output(); c.Iterations() != need {
			t.Errorf("%s: %d iterations for %d COTs, want %d", what, c.Iterations(), c.Used(), need)
		}
	}
	own := bytes - int64(iters)*ferret.IterationBytes(cfg.Main)
	bits := 8 * float64(own) / float64(n)
	t.Logf("%s (%v): %.2f bits/elt of its own (formula %d) and %.2f COTs/elt (formula %d); %d iterations; "+
		"amortised with B13 %.1f bits/elt", what, p.s0.Plan(), bits, want.Bits, float64(cots)/float64(n), want.COTs,
		iters, want.Total(FerretCost(ferret.B13())))
	if bits < float64(want.Bits) || bits > float64(want.Bits)*1.005 {
		t.Errorf("%s: %.2f bits per element besides the refills, formula %d (framing above 0.5%% or traffic below the formula)",
			what, bits, want.Bits)
	}
}

func TestFerretCommunication(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	const l, s = 32, 12
	x := make([]uint64, 9*commBatch)
	for i := range x {
		x[i] = rng.Uint64() & 0x7fffffff
	}
	ctx := context.Background()
	for _, mode := range []TripleMode{TriplesAuto, TriplesOTN} {
		p := newPairOn(t, ferretSrc, l, Options{Triples: mode}, 1)
		pl := p.s0.Plan()
		if mode == TriplesAuto && pl != ChoosePlan(FerretCost(testFerret), l) {
			t.Fatalf("plan %v, ChoosePlan gives %v", pl, ChoosePlan(FerretCost(testFerret), l))
		}
		n := commBatch
		checkFerretComm(t, "ReLU", p, n, pl.ReLU(l), func(ss *Session, party int) error {
			return ss.ReLU(ctx, make([]uint64, n), x[:n])
		})
		checkFerretComm(t, "millionaires'", p, n, pl.Millionaires(l), func(ss *Session, party int) error {
			return ss.Millionaires(ctx, make([]uint64, bitvec.Words(n)), x[:n], l)
		})
		checkFerretComm(t, "B2A", p, n, pl.B2A(l), func(ss *Session, party int) error {
			return ss.B2A(ctx, make([]uint64, n), x[:bitvec.Words(n)])
		})
		for _, nonNeg := range []bool{false, true} {
			checkFerretComm(t, name("Trunc s=%d nonNeg=%v", s, nonNeg), p, n, pl.Trunc(l, s, nonNeg), func(ss *Session, party int) error {
				return ss.Trunc(ctx, make([]uint64, n), x[:n], s, nonNeg)
			})
		}
		for _, b := range []int{l, 24} {
			checkFerretComm(t, name("ReLUTrunc b=%d s=%d", b, s), p, n, pl.ReLUTrunc(b, l, s), func(ss *Session, party int) error {
				return ss.ReLUTrunc(ctx, make([]uint64, n), x[:n], b, s)
			})
		}
		const rows = commBatch / 8
		checkFerretComm(t, "MaxPool 3x3", p, rows, pl.MaxRows(l, 9), func(ss *Session, party int) error {
			return ss.MaxRows(ctx, make([]uint64, rows), x[:rows*9], rows, 9)
		})
		checkFerretComm(t, "ArgMax 9", p, rows, pl.ArgMaxRows(l, 9), func(ss *Session, party int) error {
			return ss.ArgMaxRows(ctx, make([]uint64, rows), x[:rows*9], rows, 9)
		})
		checkFerretComm(t, "AvgPool 7x7", p, rows, pl.Div(l, 49), func(ss *Session, party int) error {
			return ss.AvgRows(ctx, make([]uint64, rows), x[:rows*49], rows, 49)
		})
	}
}

// The IKNP formulas of cost.go are the IKNP plan's.
func TestPlanFormulas(t *testing.T) {
	for m := 1; m <= MaxM; m++ {
		p := Plan{OT: IKNPCost(), M: m}
		for _, l := range []int{8, 16, 32, 37, 64} {
			if got, want := p.ReLU(l), (Cost{Bits: ReLUBits(l, m)}); got != want {
				t.Errorf("m=%d l=%d: Plan.ReLU %v, ReLUBits %v", m, l, got, want)
			}
			if got, want := p.Div(l, 49), (Cost{Bits: DivBits(l, 49, m)}); got != want {
				t.Errorf("m=%d l=%d: Plan.Div %v, DivBits %v", m, l, got, want)
			}
			for _, nn := range []bool{false, true} {
				if got, want := p.Trunc(l, l/3, nn), (Cost{Bits: TruncBits(l, l/3, m, nn)}); got != want {
					t.Errorf("m=%d l=%d nonNeg=%v: Plan.Trunc %v, TruncBits %v", m, l, nn, got, want)
				}
			}
		}
	}
	if p := ChoosePlan(IKNPCost(), 32); p.M != DefaultM || p.ROTTriples {
		t.Errorf("IKNP plan %v", p)
	}
	for _, cfg := range []ferret.Config{ferret.B13(), ferret.Small()} {
		o := FerretCost(cfg)
		p := ChoosePlan(o, 32)
		pc := p.ReLU(32)
		for m := 1; m <= MaxM; m++ {
			for _, rot := range []bool{false, true} {
				q := Plan{OT: o, M: m, ROTTriples: rot}
				qc := q.ReLU(32)
				if qc.Total(o)*(1+PlanSlack) < pc.Total(o) {
					t.Errorf("%s: plan %v sends more than %v by over %v", cfg.Name, p, q, PlanSlack)
				}
				if qc.Total(o) <= pc.Total(o) && qc.COTs < pc.COTs {
					t.Errorf("%s: plan %v sends no less than %v and draws more COTs", cfg.Name, p, q)
				}
			}
		}
		if want := map[string]int{"b13": 3, "small": 3}[cfg.Name]; p.M != want || !p.ROTTriples {
			t.Errorf("%s: plan %v, want m=%d with ROT triples", cfg.Name, p, want)
		}
		t.Logf("%s: %v: ReLU l=32 %v = %.1f bits, Trunc %.1f, MaxPool 3x3 %.1f", cfg.Name, p, p.ReLU(32), p.ReLU(32).Total(o),
			p.Trunc(32, 12, false).Total(o), p.MaxRows(32, 9).Total(o))
	}
}

// A session refuses streams of different OT sources, and an unknown
// triple construction.
func TestNewSourceErrors(t *testing.T) {
	ctx := context.Background()
	p := newOTPairOn(t, ferretSrc, 2)
	mixed := []*ot.Session{p.f0[0], p.o0[1]}
	if _, err := New(ctx, ring.Must(32), Options{}, mixed...); err == nil || !strings.Contains(err.Error(), "OT source") {
		t.Errorf("mixed sources: %v", err)
	}
	if _, err := New(ctx, ring.Must(32), Options{Triples: 7}, p.ots(0)...); err == nil || !strings.Contains(err.Error(), "Triples") {
		t.Errorf("Triples 7: %v", err)
	}
}
