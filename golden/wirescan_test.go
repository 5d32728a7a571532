package golden

// Wire scans (issue 26): every byte each party receives on each link is recorded and searched for
// the encodings of planted weights and a planted input.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/sci"
	"github.com/cryptflow-go/cryptflow/vm/sci3"
)

// plantedInput is the period of the planted input: 16 distinct fixed-point integers that the
// input tensor repeats (its values are k/2^s, so the encoded input holds exactly these k).
var plantedInput = []int64{1234, -2345, 3456, 77, -890, 4321, -13, 2718, -3141, 1618, 999, -4444, 555, 2024, -707, 88}

// plantedInputs returns n copies of the planted input for program p (shifted by i periods'
// offset for the i-th, so that each inference's input differs) and the patterns of the input's
// encodings: for every rotation of the period, its first six values as the detector's encodings
// (ring elements as 8- and 4-byte words and as the packed l-bit stream, and the narrowest
// two's-complement width), so that any run of six consecutive input elements is caught.
func plantedInputs(t testing.TB, p *fixed.Program, n int) ([]ring.Tensor, [][]byte) {
	t.Helper()
	r := ring.Must(p.Bits)
	in := p.Tensors[p.Inputs[0].Tensor]
	unit := 1 / float64(int64(1)<<in.Scale)
	var xs [][]float32
	for i := range n {
		x := make([]float32, in.Shape.Size())
		for j := range x {
			x[j] = float32(float64(plantedInput[(i+j)%len(plantedInput)]) * unit)
		}
		xs = append(xs, x)
	}
	inputs := encodeInputs(t, p, xs)
	for j, k := range plantedInput[:4] {
		if got := r.Signed(inputs[0].Data[j]); got != k {
			t.Fatalf("planted input element %d encoded as %d, want %d", j, got, k)
		}
	}
	var rots [][]int64
	for s := range plantedInput {
		rots = append(rots, append(append([]int64(nil), plantedInput[s:]...), plantedInput[:s]...))
	}
	return inputs, append(weightPatterns(&r, rots, 6), narrowPatterns(rots)...)
}

// plantedWeightPatterns returns the detector's patterns of the program's weights.
func plantedWeightPatterns(p *fixed.Program) [][]byte {
	r := ring.Must(p.Bits)
	var w [][]int64
	for _, t := range p.Weights {
		w = append(w, t.Data)
	}
	return append(weightPatterns(&r, w, 6), narrowPatterns(w)...)
}

// leakyBackend is the positive control: a backend that also sends party 1's input and party 0's
// weights in the clear to the other data party (over the recorded connection), before doing the
// real work. The scans must find them.
type leakyBackend struct {
	vm.Backend
	conn *transport.Conn
}

func (l leakyBackend) Input(ctx context.Context, owner int, x ring.Tensor) error {
	if err := l.leak(ctx, owner, x.Data); err != nil {
		return err
	}
	return l.Backend.Input(ctx, owner, x)
}

func (l leakyBackend) MatMul(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, m, k, n int, x ring.Tensor) error {
	var data []uint64
	if w != nil {
		data = w.Data
	}
	if err := l.leak(ctx, 0, data); err != nil {
		return err
	}
	return l.Backend.MatMul(ctx, e, dst, w, m, k, n, x)
}

// leak sends v from party owner to the other data party.
func (l leakyBackend) leak(ctx context.Context, owner int, v []uint64) error {
	bits := l.Ring().Bits
	if l.Party() == owner {
		if err := l.conn.SendPacked(ctx, v, bits); err != nil {
			return err
		}
		return l.conn.Flush(ctx)
	}
	_, err := l.conn.RecvFrame(ctx)
	return err
}

// links records what each party receives on each of its links.
type links struct {
	mu   sync.Mutex
	recv map[string][]*recorder // receiver → link ("party 0 from party 1", ...)
}

func (ls *links) wrap(name string, c net.Conn) net.Conn {
	rc := &recorder{Conn: c}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.recv == nil {
		ls.recv = map[string][]*recorder{}
	}
	ls.recv[name] = append(ls.recv[name], rc)
	return rc
}

// scan reports the first pattern found in what name received (or -1) and the bytes scanned.
func (ls *links) scan(name string, pats [][]byte) (found int, scanned int) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	found = -1
	for _, rc := range ls.recv[name] {
		rc.mu.Lock()
		scanned += rc.buf.Len()
		if k := containsAny(rc.buf.Bytes(), pats); k >= 0 && found < 0 {
			found = k
		}
		rc.mu.Unlock()
	}
	return found, scanned
}

// runSci3Recorded runs the program on every input on one three-party session, as runSci3 does
// (helper in this process, in-memory pipes) but with every connection recorded at its receiving
// end: "party 0 from party 1", "party 1 from party 0", "party P from the helper", "the helper
// from party P". With leak, the data parties' backends are leakyBackends.
func runSci3Recorded(t testing.TB, p *program, inputs []ring.Tensor, streams int, leak bool, ls *links) *secureRun {
	t.Helper()
	r := ring.Must(p.server.Bits)
	topt := transport.Options{Timeout: 60 * time.Second}
	ctx := context.Background()

	// The helper's links, set up as dealer.Local does but on recorded pipes.
	var ends, hconns [2]*transport.Conn
	for q := range 2 {
		np, nh := net.Pipe()
		ends[q] = transport.NewConn(ls.wrap(fmt.Sprintf("party %d from the helper", q), np), topt)
		hconns[q] = transport.NewConn(ls.wrap(fmt.Sprintf("the helper from party %d", q), nh), topt)
		t.Cleanup(func() { ends[q].Close(); hconns[q].Close() })
	}
	var dlinks [2]*dealer.Link
	var seeds [2]prg.Seed
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for q := range 2 {
		wg.Add(2)
		go func() { defer wg.Done(); dlinks[q], errs[q] = dealer.NewLink(ctx, ends[q], q) }()
		go func() {
			defer wg.Done()
			var got int
			got, seeds[q], errs[2+q] = dealer.AcceptLink(ctx, hconns[q])
			if errs[2+q] == nil && got != q {
				errs[2+q] = fmt.Errorf("link %d announced party %d", q, got)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("helper links: %v", err)
	}
	helperDone := make(chan error, 1)
	go func() { helperDone <- dealer.NewHelper(seeds[0], seeds[1]).ServeBoth(ctx, hconns[0], hconns[1]) }()

	var c0, c1 []*transport.Conn
	for range streams {
		na, nb := net.Pipe()
		a := transport.NewConn(ls.wrap("party 0 from party 1", na), topt)
		b := transport.NewConn(ls.wrap("party 1 from party 0", nb), topt)
		t.Cleanup(func() { a.Close(); b.Close() })
		c0, c1 = append(c0, a), append(c1, b)
	}
	conns := [2][]*transport.Conn{c0, c1}
	progs := [2]*fixed.Program{p.server, p.client}
	var machines [2]*vm.Machine
	var backends [2]*sci3.Backend
	setup := func(party int) error {
		b, err := sci3.New(ctx, conns[party][0], dlinks[party], r, sci3.Options{Streams: conns[party][1:], LinearPerRun: sci3.LinearCalls(progs[party])})
		if err != nil {
			return err
		}
		var be vm.Backend = b
		if !leak {
			// F of every weight tensor at set-up, as scirun does (scanned too).
			if err := b.ShareWeights(ctx, progs[party]); err != nil {
				return err
			}
		}
		if leak {
			be = leakyBackend{Backend: b, conn: conns[party][0]} // no Conv2D: convolutions come as MatMul
		}
		m, err := vm.New(progs[party], be)
		if err != nil {
			return err
		}
		backends[party], machines[party] = b, m
		return nil
	}
	if e0, e1 := testenv.Both(func() error { return setup(0) }, func() error { return setup(1) }); e0 != nil || e1 != nil {
		t.Fatalf("setup: party 0: %v; party 1: %v", e0, e1)
	}
	res := &secureRun{}
	in0 := []ring.Tensor{{Shape: inputs[0].Shape}}
	for i, x := range inputs {
		var o0, o1 []vm.Output
		e0, e1 := testenv.Both(func() (err error) { o0, err = machines[0].Run(ctx, in0); return },
			func() (err error) { o1, err = machines[1].Run(ctx, []ring.Tensor{x}); return })
		if e0 != nil || e1 != nil {
			t.Fatalf("secure run %d: party 0: %v; party 1: %v", i, e0, e1)
		}
		res.server = append(res.server, o0)
		res.client = append(res.client, o1)
	}
	for _, b := range backends {
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for _, l := range dlinks {
		if err := l.Done(cctx); err != nil {
			t.Fatalf("telling the helper the session is done: %v", err)
		}
	}
	select {
	case err := <-helperDone:
		if err != nil {
			t.Fatalf("helper: %v", err)
		}
	case <-cctx.Done():
		t.Fatal("the helper did not finish")
	}
	return res
}

// TestSci3WireScan runs a network with planted weights on a planted input on the three-party
// backend (sci3: two data parties and the helper, in one process) with every link recorded at
// its receiving end, and requires: no weight encoding in anything the client or the helper
// received, no input encoding in anything the server or the helper received, and the outputs
// bitwise equal to the clear run. The positive control runs the same with a leaky backend that
// also sends the input and the weights in the clear: the scans must find both, so the recording,
// the encodings and the search are shown to catch a plain leak.
func TestSci3WireScan(t *testing.T) {
	const l, scale = 32, 10
	g, err := plantedNet(scale)
	if err != nil {
		t.Fatal(err)
	}
	prog := compileGraph(t, g, l, scale)
	weights := plantedWeightPatterns(prog.server)
	inputs, inPats := plantedInputs(t, prog.server, 2)
	clear := runClear(t, prog.server, inputs)

	var honest links
	sec := runSci3Recorded(t, prog, inputs, 2, false, &honest)
	compareRuns(t, clear, sec)
	for _, c := range []struct {
		receiver, what string
		pats           [][]byte
	}{
		{"party 1 from party 0", "weight", weights},
		{"party 1 from the helper", "weight", weights},
		{"the helper from party 0", "weight", weights},
		{"the helper from party 1", "weight", weights},
		{"party 0 from party 1", "input", inPats},
		{"party 0 from the helper", "input", inPats},
		{"the helper from party 0", "input", inPats},
		{"the helper from party 1", "input", inPats},
	} {
		k, n := honest.scan(c.receiver, c.pats)
		if n == 0 {
			t.Errorf("%s: nothing recorded", c.receiver)
		}
		if k >= 0 {
			t.Errorf("%s received a planted %s encoding (pattern %d)", c.receiver, c.what, k)
		}
		t.Logf("%s: %d bytes, no planted %s encoding among %d patterns", c.receiver, n, c.what, len(c.pats))
	}

	// Positive control.
	var leaky links
	sec = runSci3Recorded(t, prog, inputs, 2, true, &leaky)
	compareRuns(t, clear, sec)
	if k, _ := leaky.scan("party 1 from party 0", weights); k < 0 {
		t.Error("positive control: the weights sent in the clear were not found in what party 1 received")
	}
	if k, _ := leaky.scan("party 0 from party 1", inPats); k < 0 {
		t.Error("positive control: the input sent in the clear was not found in what party 0 received")
	}
}

// TestTwoPartyInputScan is TestSci3WireScan's input half on the two-party backends (sciot on
// IKNP, scihe): nothing the server receives contains the planted input's encodings, and nothing
// the client receives the planted weights' (the weight half of TestHEPlantedWeightsNotOnWire and
// TestWeightsNeverReachClient, here on the same planted run).
func TestTwoPartyInputScan(t *testing.T) {
	const l, scale = 32, 10
	g, err := plantedNet(scale)
	if err != nil {
		t.Fatal(err)
	}
	prog := compileGraph(t, g, l, scale)
	weights := plantedWeightPatterns(prog.server)
	inputs, inPats := plantedInputs(t, prog.server, 2)
	clear := runClear(t, prog.server, inputs)
	for _, m := range []struct {
		name string
		mode sci.Mode
	}{{"sciot", sci.ModeOT}, {"scihe", sci.ModeHE}} {
		t.Run(m.name, func(t *testing.T) {
			var ls links
			sec := runSecure(t, prog, inputs, secureOptions{streams: 2, mode: m.mode,
				wrap: func(party int, c net.Conn) net.Conn {
					return ls.wrap(fmt.Sprintf("party %d from party %d", party, 1-party), c)
				}})
			compareRuns(t, clear, sec)
			k, n := ls.scan("party 0 from party 1", inPats)
			if n == 0 || k >= 0 {
				t.Errorf("party 0 received %d bytes; planted input pattern found: %d", n, k)
			}
			t.Logf("party 0 from party 1: %d bytes, no planted input encoding among %d patterns", n, len(inPats))
			k, n = ls.scan("party 1 from party 0", weights)
			if n == 0 || k >= 0 {
				t.Errorf("party 1 received %d bytes; planted weight pattern found: %d", n, k)
			}
			t.Logf("party 1 from party 0: %d bytes, no planted weight encoding among %d patterns", n, len(weights))
		})
	}
}
