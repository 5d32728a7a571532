package nonlinear

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/ferret"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/ringtest"
)

// pipeOp is one protocol as the interleaving tests run it: n elements in,
// this party's output shares out, and the cleartext spec of the output.
type pipeOp struct {
	name string
	run  func(ctx context.Context, s *Session, x []uint64, n int) ([]uint64, error)
	// spec returns the expected output (after reconstruction) for the
	// values v; bits says the output is packed boolean shares.
	spec func(r ring.Ring, v []uint64) []uint64
	bits bool
	// rows says a chunk is not 64 elements (see the flight test).
	rows bool
	// nonNeg: the inputs must be non-negative.
	nonNeg bool
	// shares: the spec is of the two parties' inputs (specShares), not of
	// the shared values.
	shares     bool
	specShares func(r ring.Ring, x0, x1 []uint64) []uint64
}

const pipeD = 4 // MaxRows/ArgMaxRows row width in these tests

func pipeOps() []pipeOp {
	return []pipeOp{
		{name: "ReLU", run: func(ctx context.Context, s *Session, x []uint64, n int) ([]uint64, error) {
			z := make([]uint64, n)
			return z, s.ReLU(ctx, z, x)
		}, spec: func(r ring.Ring, v []uint64) []uint64 {
			out := make([]uint64, len(v))
			for i, a := range v {
				if r.Signed(a) > 0 {
					out[i] = a
				}
			}
			return out
		}},
		{name: "DReLU", bits: true, run: func(ctx context.Context, s *Session, x []uint64, n int) ([]uint64, error) {
			z := make([]uint64, bitvec.Words(n))
			return z, s.DReLU(ctx, z, x)
		}, spec: func(r ring.Ring, v []uint64) []uint64 {
			out := make([]uint64, len(v))
			for i, a := range v {
				if r.Signed(a) >= 0 {
					out[i] = 1
				}
			}
			return out
		}},
		{name: "ReLUTrunc", run: func(ctx context.Context, s *Session, x []uint64, n int) ([]uint64, error) {
			z := make([]uint64, n)
			return z, s.ReLUTrunc(ctx, z, x, s.Ring().Bits, 9)
		}, spec: func(r ring.Ring, v []uint64) []uint64 {
			out := make([]uint64, len(v))
			for i, a := range v {
				out[i] = reluTruncSpec(r, a, 9)
			}
			return out
		}},
		truncOp("Trunc", 9, false),
		truncOp("TruncNonNeg", 9, true),
		truncOp("TruncWide", 40, false), // s ≥ l: the sign
		{name: "Millionaires", bits: true, run: func(ctx context.Context, s *Session, x []uint64, n int) ([]uint64, error) {
			// party 0 compares its share with party 1's: 1{x0 < x1} on 20 bits
			z := make([]uint64, bitvec.Words(n))
			return z, s.Millionaires(ctx, z, x, 20)
		}, shares: true, specShares: func(r ring.Ring, x0, x1 []uint64) []uint64 {
			out := make([]uint64, len(x0))
			for i := range out {
				if x0[i]&(1<<20-1) < x1[i]&(1<<20-1) {
					out[i] = 1
				}
			}
			return out
		}},
		{name: "ArgMaxRows", rows: true, run: func(ctx context.Context, s *Session, x []uint64, n int) ([]uint64, error) {
			z := make([]uint64, n/pipeD)
			return z, s.ArgMaxRows(ctx, z, x, n/pipeD, pipeD)
		}, spec: func(r ring.Ring, v []uint64) []uint64 {
			out := make([]uint64, len(v)/pipeD)
			for i := range out {
				row := v[i*pipeD : (i+1)*pipeD]
				for j := range row {
					if r.Signed(row[j]) > r.Signed(row[out[i]]) {
						out[i] = uint64(j)
					}
				}
			}
			return out
		}},
		{name: "Div", run: func(ctx context.Context, s *Session, x []uint64, n int) ([]uint64, error) {
			z := make([]uint64, n)
			return z, s.Div(ctx, z, x, 9)
		}, spec: func(r ring.Ring, v []uint64) []uint64 {
			out := make([]uint64, len(v))
			for i, a := range v {
				out[i] = floorDivRef(r, a, 9)
			}
			return out
		}},
		{name: "MaxRows", rows: true, run: func(ctx context.Context, s *Session, x []uint64, n int) ([]uint64, error) {
			z := make([]uint64, n/pipeD)
			return z, s.MaxRows(ctx, z, x, n/pipeD, pipeD)
		}, spec: func(r ring.Ring, v []uint64) []uint64 {
			out := make([]uint64, len(v)/pipeD)
			for i := range out {
				out[i] = v[i*pipeD]
				for _, a := range v[i*pipeD : (i+1)*pipeD] {
					if r.Signed(a) > r.Signed(out[i]) {
						out[i] = a
					}
				}
			}
			return out
		}},
	}
}

// truncOp is Trunc by sh (with the promise x ≥ 0 when nonNeg).
func truncOp(name string, sh int, nonNeg bool) pipeOp {
	return pipeOp{name: name, nonNeg: nonNeg, run: func(ctx context.Context, s *Session, x []uint64, n int) ([]uint64, error) {
		z := make([]uint64, n)
		return z, s.Trunc(ctx, z, x, sh, nonNeg)
	}, spec: func(r ring.Ring, v []uint64) []uint64 {
		out := make([]uint64, len(v))
		for i, a := range v {
			out[i] = r.Trunc(a, sh)
		}
		return out
	}}
}

// pipeValues returns n values in [-2^(l-3), 2^(l-3)) (the range the
// pooling protocols allow) with edge values mixed in.
func pipeValues(r ring.Ring, rng *rand.Rand, n int) []uint64 {
	q := int64(1) << (r.Bits - 3)
	v := make([]uint64, n)
	for i := range v {
		switch i % 5 {
		case 0:
			v[i] = r.FromSigned([]int64{0, -1, 1, q - 1, -q}[rng.IntN(5)])
		default:
			v[i] = r.FromSigned(rng.Int64N(2*q) - q)
		}
	}
	return v
}

// runPipeOp runs op on n elements of a fresh pair and checks the result
// against the spec; it returns the traffic (bytes, flights) of the run, on
// Ferret without the refills' bytes.
func runPipeOp(t *testing.T, src otSource, op pipeOp, opt Options, n int) (bytes, flights int64) {
	t.Helper()
	p := newPairOn(t, src, 32, opt, 1)
	r := p.r
	rng := rand.New(rand.NewPCG(uint64(n), 77))
	v := pipeValues(r, rng, n)
	if op.nonNeg {
		for i, a := range v {
			if r.Signed(a) < 0 {
				v[i] = r.Neg(a)
			}
		}
	}
	x0, x1 := share(r, rng, v)
	var out [2][]uint64
	before := p.stats()
	p.run(t, func(s *Session, party int) error {
		x := x0
		if party == 1 {
			x = x1
		}
		var err error
		out[party], err = op.run(context.Background(), s, x, n)
		return err
	})
	d := p.stats().Sub(before)
	if src.ferret != nil {
		// The protocol's own bytes: the refills depend on how the batch's
		// draws fall into iterations.
		d.BytesSent -= int64(p.ots.iterations()) * ferret.IterationBytes(src.ferret.Main)
	}
	var want []uint64
	if op.shares {
		want = op.specShares(r, x0, x1)
	} else {
		want = op.spec(r, v)
	}
	var got []uint64
	if op.bits {
		got = reconstructBits(out[0], out[1], n)
	} else {
		got = ringtest.Reconstruct(r, out[0], out[1])
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("%s on %s, n=%d, %+v: output %d = %d, want %d", op.name, src.name, n, opt, i, got[i], want[i])
		}
	}
	return d.BytesSent, d.Rounds
}

// Interleaved chunks (the default) against one chunk and against the
// sequential schedule: the same outputs (the cleartext spec) and bytes, and
// on IKNP the flights of two chunks (the first runs alone and measures),
// however many chunks.
func TestInterleavedChunks(t *testing.T) {
	const budget = 1 << 12 // the minimum: 64-element chunks for every protocol here
	for _, op := range pipeOps() {
		for _, tm := range []TripleMode{TriplesOTN, TriplesROT} {
			t.Run(fmt.Sprintf("%s/triples%d", op.name, tm), func(t *testing.T) { testInterleaved(t, op, Options{Budget: budget, Triples: tm}) })
		}
	}
}

func testInterleaved(t *testing.T, op pipeOp, opt Options) {
	seqOpt := opt
	seqOpt.Sequential = true
	_, one := runPipeOp(t, iknpSrc, op, opt, 64)
	want := 2*one - 1 // the group's first flight leaves with chunk 0's last
	for _, n := range []int{64 * 5, 64*16 - 8} {
		seqB, seqF := runPipeOp(t, iknpSrc, op, seqOpt, n)
		b, f := runPipeOp(t, iknpSrc, op, opt, n)
		if b != seqB {
			t.Errorf("n=%d: %d bytes interleaved, %d sequential", n, b, seqB)
		}
		// (A pooling chunk is a few rows, and 254 rows make more chunks
		// than one group's frames allow.)
		if !op.rows && f != want {
			t.Errorf("n=%d: %d flights interleaved, want %d", n, f, want)
		}
		if seqF <= f {
			t.Errorf("n=%d: %d flights sequential, not more than interleaved (%d)", n, seqF, f)
		}
		// One after another, each chunk's first flight leaves with the
		// previous chunk's last (sent by the same party).
		if chunks := int64((n + 63) / 64); !op.rows && seqF != chunks*(one-1)+1 {
			t.Errorf("n=%d: %d flights sequential, want %d chunks × %d − %d", n, seqF, chunks, one, chunks-1)
		}
	}
}

// A batch of 1000 chunks whose rounds would overflow the peer's frame
// queue (transport.QueueFrames) and its default read-ahead if all ran in one
// group: the groups are sized to fit (otherwise both parties' writes block
// until the timeout), and the flights stay far below the sequential
// schedule's (about 8 per chunk).
func TestInterleavedWideGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("64,000 elements in 1000 chunks")
	}
	const chunks = 1000
	_, f := runPipeOp(t, iknpSrc, pipeOps()[0], Options{Budget: 1 << 12}, 64*chunks)
	if f > chunks {
		t.Fatalf("%d flights for %d chunks", f, chunks)
	}
	t.Logf("%d flights for %d chunks", f, chunks)
}

// On Ferret the chunks interleave in groups that the reservoir serves
// without a refill (13,824 COTs per iteration with the test parameters, so
// a batch of 2^14 elements spans many refills and groups): the outputs are
// right, the protocol's bytes (refills aside) are the sequential schedule's,
// and the flights fall.
func TestInterleavedChunksFerret(t *testing.T) {
	if testing.Short() {
		t.Skip("the IKNP runs cover -short")
	}
	const budget = 1 << 12
	for _, op := range pipeOps() {
		for _, tm := range []TripleMode{TriplesOTN, TriplesROT} {
			t.Run(fmt.Sprintf("%s/triples%d", op.name, tm), func(t *testing.T) {
				testInterleavedFerret(t, op, Options{Budget: budget, Triples: tm})
			})
		}
	}
}

func testInterleavedFerret(t *testing.T, op pipeOp, opt Options) {
	seqOpt := opt
	seqOpt.Sequential = true
	for _, n := range []int{64 * 7, 1 << 13} {
		seqB, seqF := runPipeOp(t, ferretSrc, op, seqOpt, n)
		b, f := runPipeOp(t, ferretSrc, op, opt, n)
		if b != seqB {
			t.Errorf("n=%d: %d bytes interleaved, %d sequential", n, b, seqB)
		}
		if f >= seqF {
			t.Errorf("n=%d: %d flights interleaved, not fewer than sequential (%d)", n, f, seqF)
		}
		t.Logf("n=%d: flights %d interleaved, %d sequential", n, f, seqF)
	}
}

// A chunk that fails abandons the others at both parties: here the parties
// disagree on the last chunk's size (their batches differ by 8 elements),
// which its first frames reveal in the middle of the first round. Both
// fail, nothing hangs, and the sessions refuse further work.
func TestInterleavedChunkFailure(t *testing.T) {
	p := newPair(t, 32, Options{Budget: 1 << 12}, 1)
	n := 64 * 6
	errs := make(chan error, 2)
	go func() { errs <- p.s0.ReLU(context.Background(), make([]uint64, n), make([]uint64, n)) }()
	go func() { errs <- p.s1.ReLU(context.Background(), make([]uint64, n-8), make([]uint64, n-8)) }()
	for range 2 {
		err := <-errs
		if err == nil {
			t.Fatal("a party succeeded although the batches differ")
		}
		t.Log(err)
	}
	if p.s0.Err() == nil || p.s1.Err() == nil {
		t.Fatal("the sessions stay usable after a failed batch")
	}
}
