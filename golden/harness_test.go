package golden

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/internal/testsets"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
	"github.com/cryptflow-go/cryptflow/protocols/linear"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// program is a compiled model as the two parties hold it: the server's copy with weights and
// the client's copy without, both decoded from their .sciir encodings.
type program struct {
	server, client *fixed.Program
	clientFile     []byte
}

// compileGraph compiles a graph for (bits, scale) with passes.Compile, the driver athosc runs,
// and round trips the program through both .sciir copies.
func compileGraph(t testing.TB, g *ir.Graph, bits, scale int) *program {
	t.Helper()
	opts := passes.DefaultOptions()
	opts.Bits, opts.Scale = bits, scale
	prog, _ := compileOpts(t, g, opts)
	return prog
}

// compileOpts compiles g with passes.Compile (checked after every pass) and round trips the
// program through both .sciir copies.
func compileOpts(t testing.TB, g *ir.Graph, opts passes.Options) (*program, *passes.Report) {
	t.Helper()
	opts.Check = true
	p, rep, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatalf("compile l=%d s=%d: %v", opts.Bits, opts.Scale, err)
	}
	f := &sciir.File{Program: p}
	full, err := sciir.Marshal(f, true)
	if err != nil {
		t.Fatal(err)
	}
	cli, err := sciir.Marshal(f, false)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := sciir.Unmarshal(full)
	if err != nil {
		t.Fatal(err)
	}
	fc, err := sciir.Unmarshal(cli)
	if err != nil {
		t.Fatal(err)
	}
	if fs.ID != fc.ID {
		t.Fatal("server and client copies have different program IDs")
	}
	if fc.Program.HasWeights() {
		t.Fatal("the client copy carries weights")
	}
	return &program{server: fs.Program, client: fc.Program, clientFile: cli}, rep
}

// loadModel loads an ONNX model with batch 1.
func loadModel(t testing.TB, path string) *ir.Graph {
	t.Helper()
	g, err := onnx.Load(path, onnx.Options{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// compileTuned compiles g with autotune on the samples (scale pinned unless -1).
func compileTuned(t testing.TB, g *ir.Graph, samples []dataset.Sample, scale int) (*program, *passes.TuneResult) {
	t.Helper()
	opts := passes.DefaultOptions()
	opts.Samples, opts.Scale = samples, scale
	prog, rep := compileOpts(t, g, opts)
	return prog, rep.Tune
}

// encodeInputs encodes float inputs at the program input's scale.
func encodeInputs(t testing.TB, p *fixed.Program, xs [][]float32) []ring.Tensor {
	t.Helper()
	r := ring.Must(p.Bits)
	in := p.Tensors[p.Inputs[0].Tensor]
	out := make([]ring.Tensor, len(xs))
	for i, x := range xs {
		enc, err := r.EncodeTensor(in.Shape, x, in.Scale)
		if err != nil {
			t.Fatalf("input %d: %v", i, err)
		}
		out[i] = enc
	}
	return out
}

// runClear runs the cleartext backend on every input.
func runClear(t testing.TB, p *fixed.Program, inputs []ring.Tensor) [][]vm.Output {
	t.Helper()
	c, err := cleartext.New(ring.Must(p.Bits))
	if err != nil {
		t.Fatal(err)
	}
	m, err := vm.New(p, c)
	if err != nil {
		t.Fatal(err)
	}
	var all [][]vm.Output
	for i, x := range inputs {
		outs, err := m.Run(context.Background(), []ring.Tensor{x})
		if err != nil {
			t.Fatalf("clear run %d: %v", i, err)
		}
		all = append(all, outs)
	}
	return all
}

// secureRun is the result of running a program securely on a sequence of inputs.
type secureRun struct {
	client, server [][]vm.Output
	prof           [2]sci.Profile  // per party, whole session
	runTime        []time.Duration // wall-clock time of each inference (both parties done)
	calls          [2]linearCalls  // per party, whole session
}

// linearCalls counts a backend's linear-layer calls by kind and, for the calls run by HE, their
// measured traffic (bytes this party sent) and the traffic package he's formulas give for both
// directions.
type linearCalls struct {
	conv2D, matMul int
	he             int   // calls run by HE
	heSent         int64 // bytes this party sent in them
	heFormula      int64 // heplan.ConvBytes / heplan.MatMulBytes of them (both parties)
}

// countingBackend is an SCI backend that counts its Conv2D and MatMul calls (it still implements
// vm.ConvBackend: UseConv2D is promoted).
type countingBackend struct {
	*sci.Backend
	calls linearCalls
	err   error // a formula that failed
}

// heCall runs a linear-layer call for which the program records engine e and, when it runs by HE,
// accounts its traffic against formula.
func (c *countingBackend) heCall(e fixed.Engine, formula func() (int64, error), call func() error) error {
	if c.EngineFor(e) != fixed.EngineHE {
		return call()
	}
	before := c.Profile().Linear.BytesSent
	err := call()
	f, ferr := formula()
	if ferr != nil && c.err == nil {
		c.err = ferr
	}
	c.calls.he++
	c.calls.heSent += c.Profile().Linear.BytesSent - before
	c.calls.heFormula += f
	return err
}

func (c *countingBackend) Conv2D(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, x ring.Tensor, g ring.ConvGeom) error {
	c.calls.conv2D++
	return c.heCall(e, func() (int64, error) { return heplan.ConvBytes(g, c.Ring().Bits) },
		func() error { return c.Backend.Conv2D(ctx, e, dst, w, x, g) })
}

func (c *countingBackend) MatMul(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, m, k, n int, x ring.Tensor) error {
	c.calls.matMul++
	return c.heCall(e, func() (int64, error) { return heplan.MatMulBytes(m, k, n, c.Ring().Bits) },
		func() error { return c.Backend.MatMul(ctx, e, dst, w, m, k, n, x) })
}

// secureOptions tune runSecure.
type secureOptions struct {
	streams  int
	net      *netmodel.Model
	observe  func(party, tensor int, v ring.Tensor) // Machine.Observe hook
	oneBatch bool                                   // linear layers in one OT batch per chunk (linear.Options.OneBatch)
	im2col   bool                                   // hide vm.ConvBackend: every convolution becomes im2col + MatMul
	mode     sci.Mode                               // linear layers by OT (default), HE, or per recorded engine
	ot       sci.OTSource                           // OT source of the OT-based protocols (default IKNP)
	// wrap, when set, wraps each party's end of every connection (e.g. to record traffic).
	wrap func(party int, c net.Conn) net.Conn
}

// runSecure runs the program on every input, one after the other on one SCI session (mode and
// OT source from opt; SCI_OT on IKNP by default): party 0
// from the server copy, party 1 (the client, owner of the input) from the client copy, over
// in-memory pipes.
func runSecure(t testing.TB, p *program, inputs []ring.Tensor, opt secureOptions) *secureRun {
	t.Helper()
	if opt.streams == 0 {
		opt.streams = 1
	}
	r := ring.Must(p.server.Bits)
	topt := [2]transport.Options{{Timeout: 60 * time.Second}, {Timeout: 60 * time.Second}}
	if opt.net != nil { // each party's streams share its link
		topt[0].Link, topt[1].Link = transport.NewLink(*opt.net), transport.NewLink(*opt.net)
	}
	var c0, c1 []*transport.Conn
	for i := 0; i < opt.streams; i++ {
		na, nb := net.Pipe()
		if opt.wrap != nil {
			na, nb = opt.wrap(0, na), opt.wrap(1, nb)
		}
		a, b := transport.NewConn(na, topt[0]), transport.NewConn(nb, topt[1])
		t.Cleanup(func() { a.Close(); b.Close() })
		c0, c1 = append(c0, a), append(c1, b)
	}
	ctx := context.Background()
	conns := [2][]*transport.Conn{c0, c1}
	progs := [2]*fixed.Program{p.server, p.client}
	var machines [2]*vm.Machine
	var backends [2]*countingBackend
	res := &secureRun{}
	setup := func(party int) error {
		b, err := sci.New(ctx, conns[party][0], party, r, sci.Options{Streams: conns[party][1:],
			Mode: opt.mode, OT: opt.ot, Linear: linear.Options{OneBatch: opt.oneBatch}})
		if err != nil {
			return err
		}
		cb := &countingBackend{Backend: b}
		var be vm.Backend = cb
		if opt.im2col {
			be = struct{ vm.Backend }{cb} // only vm.Backend's methods: no Conv2D
		}
		m, err := vm.New(progs[party], be)
		if err != nil {
			return err
		}
		if opt.observe != nil {
			m.Observe = func(tensor int, v ring.Tensor) { opt.observe(party, tensor, v) }
		}
		backends[party], machines[party] = cb, m
		return nil
	}
	if e0, e1 := testenv.Both(func() error { return setup(0) }, func() error { return setup(1) }); e0 != nil || e1 != nil {
		t.Fatalf("setup: party 0: %v; party 1: %v", e0, e1)
	}
	in0 := []ring.Tensor{{Shape: inputs[0].Shape}} // the server does not own the input
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
	res.calls = [2]linearCalls{backends[0].calls, backends[1].calls}
	for party, b := range backends {
		if b.err != nil {
			t.Fatalf("party %d: HE traffic formula: %v", party, b.err)
		}
	}
	return res
}

// compareRuns requires the client's revealed outputs to equal the cleartext outputs bit for bit,
// and the server to have learned no output.
func compareRuns(t testing.TB, clear [][]vm.Output, sec *secureRun) {
	t.Helper()
	for i := range clear {
		for j, want := range clear[i] {
			got := sec.client[i][j]
			if !got.Revealed {
				t.Fatalf("input %d output %q: not revealed to the client", i, want.Name)
			}
			if got.Scale != want.Scale || !slices.Equal(got.Value.Shape, want.Value.Shape) {
				t.Fatalf("input %d output %q: shape/scale %v/%d, clear %v/%d", i, want.Name,
					got.Value.Shape, got.Scale, want.Value.Shape, want.Scale)
			}
			if !slices.Equal(got.Value.Data, want.Value.Data) {
				t.Fatalf("input %d output %q: secure %v differs from clear %v", i, want.Name,
					head(got.Value.Data), head(want.Value.Data))
			}
			if sec.server[i][j].Revealed {
				t.Fatalf("input %d output %q revealed to the server", i, want.Name)
			}
		}
	}
}

func head(v []uint64) []uint64 { return v[:min(len(v), 12)] }

// argmaxSigned returns the index of the first largest signed value.
func argmaxSigned(r ring.Ring, v []uint64) int {
	best := 0
	for i := range v {
		if r.Signed(v[i]) > r.Signed(v[best]) {
			best = i
		}
	}
	return best
}

func inputsOf(s []dataset.Sample) [][]float32 {
	out := make([][]float32, len(s))
	for i := range s {
		out[i] = s[i].Input
	}
	return out
}

// logProfile reports the secure run's cost split by kind, summed over both parties.
func logProfile(t testing.TB, name string, sec *secureRun, n int) {
	t.Helper()
	var tot time.Duration
	for _, d := range sec.runTime {
		tot += d
	}
	on := [2]sci.Cost{sec.prof[0].Online(), sec.prof[1].Online()}
	lin := sec.prof[0].Linear.Add(sec.prof[1].Linear)
	nl := sec.prof[0].Nonlinear.Add(sec.prof[1].Nonlinear)
	t.Logf("%s: %d secure inferences in %v (%v each); per inference: linear %.2f MB, nonlinear %.2f MB, total %.2f MB, flights %d",
		name, n, tot.Round(time.Millisecond), (tot / time.Duration(n)).Round(time.Millisecond),
		mb(lin.BytesSent)/float64(n), mb(nl.BytesSent)/float64(n), mb(on[0].BytesSent+on[1].BytesSent)/float64(n),
		(on[0].Rounds+on[1].Rounds)/int64(n))
}

func mb(b int64) float64 { return float64(b) / 1e6 }

// linearFormulaBits is the communication of one inference's linear layers by the exact formulas
// of package linear (without the OT layer's per-batch constants): MatMulBits per matrix product,
// MulElemBits per product with a private constant, and per convolution ConvBits when the backend
// runs it itself (linear.ConvDirectFor) or ConvIm2colBits when it is lowered; plus the one-batch
// mode's flip bits.
func linearFormulaBits(p *fixed.Program, oneBatch, im2col bool) int64 {
	l := p.Bits
	var bits int64
	for _, in := range p.Instrs {
		switch in.Op {
		case fixed.OpMatMul:
			w := p.Weights[in.Weight].Shape
			n := p.Tensors[in.In[0]].Shape[1]
			bits += linear.MatMulBits(w[0], w[1], n, l)
			if oneBatch {
				bits += int64(w[1]) * int64(n) * int64(l)
			}
		case fixed.OpMulConst:
			n := p.Tensors[in.In[0]].Shape.Size()
			bits += linear.MulElemBits(n, l)
			if oneBatch {
				bits += int64(n) * int64(l)
			}
		case fixed.OpConv:
			c := convShapeOf(p, in)
			if !im2col && linear.ConvDirectFor(c, l, oneBatch) {
				bits += linear.ConvBits(c, l)
			} else {
				bits += linear.ConvIm2colBits(c, l, oneBatch)
			}
		}
	}
	return bits
}

// checkLinearTraffic requires the linear layers' measured payload (both parties, n inferences) to
// be the formula plus at most the OT layer's per-batch constants and padding (0.2 % and 4 KiB per
// call here; package linear's tests pin them exactly).
func checkLinearTraffic(t testing.TB, p *fixed.Program, sec *secureRun, n int, opt secureOptions) {
	t.Helper()
	lin := sec.prof[0].Linear.Add(sec.prof[1].Linear)
	got := 8 * lin.PayloadSent()
	want := int64(n) * linearFormulaBits(p, opt.oneBatch, opt.im2col)
	t.Logf("linear payload %.3f MB per inference, formula %.3f MB", float64(got)/8e6/float64(n), float64(want)/8e6/float64(n))
	if got < want || got > want+want/500+int64(lin.Calls)*8*4096 {
		t.Errorf("linear payload %d bits, formula %d", got, want)
	}
}

// convShapeOf is the ring.ConvGeom of a convolution instruction (1-D or 2-D).
func convShapeOf(p *fixed.Program, in *fixed.Instr) ring.ConvGeom {
	x, y := p.Tensors[in.In[0]].Shape, p.Tensors[in.Out].Shape
	w := in.Win
	k := len(w.Kernel)
	c := ring.ConvGeom{N: x[0], C: x[1], H: 1, W: x[len(x)-1], M: y[1], OH: 1, OW: y[len(y)-1],
		KH: 1, KW: w.Kernel[k-1], SH: 1, SW: w.Strides[k-1], PW: w.Pads[k-1], DH: 1, DW: w.Dilations[k-1],
		Groups: in.Group}
	if k == 2 {
		c.H, c.OH, c.KH, c.SH, c.PH, c.DH = x[2], y[2], w.Kernel[0], w.Strides[0], w.Pads[0], w.Dilations[0]
	}
	return c
}

// mnistSamples returns t10k images from..to-1 (see testsets.MNIST).
func mnistSamples(t testing.TB, shared string, from, to int, unit bool) []dataset.Sample {
	return toSamples(testsets.MNIST(t, shared, from, to, unit))
}

// cifarSamples returns the first n CIFAR-10 test images as the OVAL models expect them.
func cifarSamples(t testing.TB, shared string, n int) []dataset.Sample {
	return toSamples(testsets.CIFAROval(t, shared, n))
}

func toSamples(in []testsets.Sample) []dataset.Sample {
	out := make([]dataset.Sample, len(in))
	for i, s := range in {
		out[i] = dataset.Sample(s)
	}
	return out
}
