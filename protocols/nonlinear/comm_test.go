package nonlinear

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// commBatch is the batch for communication assertions: large enough that
// the OT layer's per-batch constants are below 0.1% (and a multiple of 64,
// so no bit vector is padded).
const commBatch = 1 << 13

// checkComm asserts measured bits per element against this package's
// formula (within 0.5%: framing only) and, when paper > 0, against the
// paper's published number (at most 2% above it).
func checkComm(t *testing.T, what string, measured float64, formula, paper int) {
	t.Helper()
	t.Logf("%s: measured %.1f bits/elt, formula %d, paper %d", what, measured, formula, paper)
	if measured < float64(formula) || measured > float64(formula)*1.005 {
		t.Errorf("%s: measured %.1f bits per element, formula %d (framing overhead above 0.5%% or traffic below the formula)", what, measured, formula)
	}
	if paper > 0 && measured > float64(paper)*1.02 {
		t.Errorf("%s: measured %.1f bits per element, more than 2%% above the paper's %d", what, measured, paper)
	}
}

func TestCommunicationMillionaires(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, tc := range []struct{ m, paper int }{{4, PaperMillionaires32M4}, {7, PaperMillionaires32M7}} {
		p := newPair(t, 32, Options{M: tc.m}, 1)
		x := make([]uint64, commBatch)
		for i := range x {
			x[i] = rng.Uint64() & 0xffffffff
		}
		bits, flights := p.measure(t, commBatch, func(s *Session, party int) error {
			return s.Millionaires(context.Background(), make([]uint64, bitvec.Words(commBatch)), x, 32)
		})
		checkComm(t, name("millionaires l=32 m=%d", tc.m), bits, MillionairesBits(32, tc.m), tc.paper)
		t.Logf("flights %d", flights)
	}
}

func TestCommunicationReLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, tc := range []struct{ m, paper int }{{4, 0}, {7, PaperReLU32M7}} {
		p := newPair(t, 32, Options{M: tc.m}, 1)
		x := make([]uint64, commBatch)
		for i := range x {
			x[i] = rng.Uint64() & 0xffffffff
		}
		bits, flights := p.measure(t, commBatch, func(s *Session, party int) error {
			return s.ReLU(context.Background(), make([]uint64, commBatch), x)
		})
		checkComm(t, name("ReLU l=32 m=%d", tc.m), bits, ReLUBits(32, tc.m), tc.paper)
		t.Logf("flights %d", flights)
	}
}

func TestCommunicationTrunc(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, tc := range []struct {
		m, s   int
		nonNeg bool
		alg5   bool
		paper  int
	}{
		{7, 12, false, false, PaperTrunc32S12M7},
		{7, 12, false, true, PaperTrunc32S12M7},
		{4, 12, false, false, 0},
		{4, 12, true, false, 0},
		{7, 12, true, false, 0},
	} {
		p := newPair(t, 32, Options{M: tc.m, PaperTrunc: tc.alg5}, 1)
		x := make([]uint64, commBatch)
		for i := range x {
			x[i] = rng.Uint64() & 0x7fffffff
		}
		bits, flights := p.measure(t, commBatch, func(s *Session, party int) error {
			return s.Trunc(context.Background(), make([]uint64, commBatch), x, tc.s, tc.nonNeg)
		})
		formula := TruncBits(32, tc.s, tc.m, tc.nonNeg)
		if tc.alg5 {
			formula = PaperTruncBits(32, tc.s, tc.m)
		}
		checkComm(t, name("Trunc l=32 s=%d m=%d nonNeg=%v alg5=%v", tc.s, tc.m, tc.nonNeg, tc.alg5), bits, formula, tc.paper)
		t.Logf("flights %d", flights)
	}
}

func TestCommunicationAvgPool(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for _, tc := range []struct{ m, paper int }{{8, PaperAvgPool49L32M8}, {4, 0}} {
		p := newPair(t, 32, Options{M: tc.m}, 1)
		const rows, d = commBatch / 4, 49
		x := make([]uint64, rows*d)
		for i := range x {
			x[i] = rng.Uint64() & 0xffffffff
		}
		bits, flights := p.measure(t, rows, func(s *Session, party int) error {
			return s.AvgRows(context.Background(), make([]uint64, rows), x, rows, d)
		})
		checkComm(t, name("AvgPool_49 l=32 m=%d", tc.m), bits, DivBits(32, 49, tc.m), tc.paper)
		t.Logf("flights %d", flights)
	}
}

// The plan-based count equals the paper's closed form wherever it applies.
func TestMillionairesFormula(t *testing.T) {
	for m := 1; m <= MaxM; m++ {
		for b := m + 1; b <= 64; b++ {
			if got, want := MillionairesBits(b, m), paperMillionairesBits(b, m); got != want {
				t.Errorf("b=%d m=%d: %d bits, §3.1.2 gives %d", b, m, got, want)
			}
		}
	}
	if MillionairesBits(32, 4) != PaperMillionaires32M4 || MillionairesBits(32, 7) != PaperMillionaires32M7 {
		t.Errorf("Table 1: %d, %d", MillionairesBits(32, 4), MillionairesBits(32, 7))
	}
}

// Flights (one-way latencies; the transport's rounds summed over both
// parties) of single-chunk runs right after New. ReLU over Z_2^32 with m=4:
// three OT batches (digit 0 as (16 choose 1)-OT_1; digits 1–6 with the
// regular triples as (16 choose 1)-OT_2; digit 7 with the correlated
// triples as (8 choose 1)-OT_2) take 4 flights, the last of which carries
// the first AND bits; the other ⌈log2 8⌉ = 3 flights of the AND tree; 2 for
// the MUX. CrypTFlow2 counts log2(l) + 2 = 7 rounds for ReLU with the
// triples produced beforehand; here they cost no flight of their own
// because they share the digits' OT batches, and 2 more flights come from
// the digit OTs of three kinds instead of one.
func TestFlights(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	const n = 1024
	x := make([]uint64, n*9)
	for i := range x {
		x[i] = rng.Uint64() & 0xffff
	}
	for _, tc := range []struct {
		what string
		want int64
		f    func(s *Session) error
	}{
		{"millionaires'", 7, func(s *Session) error { return s.Millionaires(context.Background(), make([]uint64, n/64), x[:n], 32) }},
		{"ReLU", 9, func(s *Session) error { return s.ReLU(context.Background(), make([]uint64, n), x[:n]) }},
		{"Trunc", 10, func(s *Session) error { return s.Trunc(context.Background(), make([]uint64, n), x[:n], 12, false) }},
		{"Trunc x≥0", 7, func(s *Session) error { return s.Trunc(context.Background(), make([]uint64, n), x[:n], 12, true) }},
		{"MaxPool 3x3", 33, func(s *Session) error { return s.MaxRows(context.Background(), make([]uint64, n), x, n, 9) }},
		{"AvgPool 7x7", 12, func(s *Session) error {
			return s.AvgRows(context.Background(), make([]uint64, n/49), x[:n/49*49], n/49, 49)
		}},
	} {
		p := newPair(t, 32, Options{}, 1)
		_, flights := p.measure(t, n, func(s *Session, party int) error { return tc.f(s) })
		t.Logf("%s: %d flights", tc.what, flights)
		if flights != tc.want {
			t.Errorf("%s: %d flights, want %d", tc.what, flights, tc.want)
		}
	}
}
