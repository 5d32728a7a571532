package golden

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/sci"
	"github.com/cryptflow-go/cryptflow/vm/sci3"
)

// runSci3 runs the program on every input on one three-party session (sci3): party 0 from the
// server copy, party 1 from the client copy, the helper in this process, all over in-memory
// pipes. It returns the run and the helper links' traffic (party 0 ↔ helper, party 1 ↔ helper).
func runSci3(t testing.TB, p *program, inputs []ring.Tensor, streams int, otTriples bool) (*secureRun, [2]transport.Stats) {
	t.Helper()
	r := ring.Must(p.server.Bits)
	topt := transport.Options{Timeout: 60 * time.Second}
	ctx := context.Background()
	trio, err := dealer.Local(ctx, topt)
	if err != nil {
		t.Fatal(err)
	}
	var c0, c1 []*transport.Conn
	for range streams {
		na, nb := net.Pipe()
		a, b := transport.NewConn(na, topt), transport.NewConn(nb, topt)
		t.Cleanup(func() { a.Close(); b.Close() })
		c0, c1 = append(c0, a), append(c1, b)
	}
	conns := [2][]*transport.Conn{c0, c1}
	progs := [2]*fixed.Program{p.server, p.client}
	var machines [2]*vm.Machine
	var backends [2]*sci3.Backend
	setup := func(party int) error {
		b, err := sci3.New(ctx, conns[party][0], trio.Links[party], r, sci3.Options{Streams: conns[party][1:], OTTriples: otTriples, LinearPerRun: sci3.LinearCalls(progs[party]), Workers: 2})
		if err != nil {
			return err
		}
		// Every weight tensor's F at set-up, as scirun does (sci3.LinearWeights must follow the
		// VM's calls: party 0 refuses a call whose weights are not those it shared).
		if err := b.ShareWeights(ctx, progs[party]); err != nil {
			return err
		}
		m, err := vm.New(progs[party], b)
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
		start := time.Now()
		e0, e1 := testenv.Both(func() (err error) { o0, err = machines[0].Run(ctx, in0); return },
			func() (err error) { o1, err = machines[1].Run(ctx, []ring.Tensor{x}); return })
		if e0 != nil || e1 != nil {
			t.Fatalf("secure run %d: party 0: %v; party 1: %v", i, e0, e1)
		}
		res.runTime = append(res.runTime, time.Since(start))
		res.server = append(res.server, o0)
		res.client = append(res.client, o1)
	}
	res.prof = [2]sci.Profile{backends[0].Profile(), backends[1].Profile()}
	helper := [2]transport.Stats{trio.Links[0].Conn().Stats(), trio.Links[1].Conn().Stats()}
	for _, b := range backends {
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := trio.Close(cctx); err != nil {
		t.Fatalf("helper: %v", err)
	}
	return res, helper
}

func logSci3(t testing.TB, name string, sec *secureRun, helper [2]transport.Stats, n int) {
	t.Helper()
	logProfile(t, name+" (sci3, data parties)", sec, n)
	t.Logf("%s (sci3): helper → party 0 %.0f B, helper → party 1 %.0f B per inference (requests %.0f B)", name,
		float64(helper[0].BytesRecv)/float64(n), float64(helper[1].BytesRecv)/float64(n), float64(helper[0].BytesSent+helper[1].BytesSent)/float64(n))
}

// TestSci3Golden: the three-party backend's outputs equal the cleartext ones bitwise on the
// project's MNIST model and, when present, the shared mnist-8 and the OVAL CIFAR-10 network.
func TestSci3Golden(t *testing.T) {
	t.Run("mnist-small", func(t *testing.T) {
		dir := filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small")
		g := loadModel(t, filepath.Join(dir, "model.onnx"))
		ds, err := dataset.Load(filepath.Join(dir, "inputs"), g.Inputs[0], nil)
		if err != nil {
			t.Fatal(err)
		}
		prog, _ := compileTuned(t, g, ds.Samples, -1)
		inputs := encodeInputs(t, prog.server, inputsOf(ds.Samples))
		clear := runClear(t, prog.server, inputs)
		for _, otTriples := range []bool{false, true} {
			sec, helper := runSci3(t, prog, inputs, 2, otTriples)
			compareRuns(t, clear, sec)
			logSci3(t, fmt.Sprintf("mnist-small triples-from-OT=%v", otTriples), sec, helper, len(inputs))
		}
	})
	t.Run("mnist-8", func(t *testing.T) {
		shared := testenv.SharedTestdata(t)
		g := loadModel(t, filepath.Join(shared, "models", "mnist-8", "model.onnx"))
		samples := mnistSamples(t, shared, 0, 5, false)
		prog, _ := compileTuned(t, g, samples, -1)
		inputs := encodeInputs(t, prog.server, inputsOf(samples))
		clear := runClear(t, prog.server, inputs)
		sec, helper := runSci3(t, prog, inputs, 1, false)
		compareRuns(t, clear, sec)
		logSci3(t, "mnist-8", sec, helper, len(inputs))
	})
}

// TestSci3RandomCNNs: random small CNNs (as TestRandomCNNs) give bitwise the cleartext outputs
// on the three-party backend.
func TestSci3RandomCNNs(t *testing.T) {
	nets := 12
	if testing.Short() {
		nets = 4
	}
	for seed := uint64(1); seed <= uint64(nets); seed++ {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			g, err := RandomCNN(seed)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(seed, 99))
			in := g.Inputs[0].Shape
			var samples []dataset.Sample
			for i := 0; i < 2; i++ {
				x := make([]float32, in.Size())
				for j := range x {
					x[j] = float32(2*rng.Float64() - 1)
				}
				samples = append(samples, dataset.Sample{Name: fmt.Sprint(i), Input: x, Label: -1})
			}
			opts := passes.DefaultOptions()
			opts.Samples = samples
			opts.Scale = 3 + rng.IntN(9)
			opts.Headroom = 1 + rng.IntN(3)
			prog, rep := compileOpts(t, g, opts)
			if bits := min(64, rep.Bits+rng.IntN(6)); bits != rep.Bits {
				prog = compileGraph(t, g, bits, rep.Scale)
			}
			inputs := encodeInputs(t, prog.server, inputsOf(samples))
			clear := runClear(t, prog.server, inputs)
			sec, _ := runSci3(t, prog, inputs, 1+int(seed%2), false)
			compareRuns(t, clear, sec)
		})
	}
}
