package sci3_test

import (
	"context"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/protocols/dealer"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/sci3"
)

// mnistSmall compiles the project's MNIST model (l = 32, s = 12) and returns the server and
// client copies, decoded from their .sciir encodings.
func mnistSmall(t *testing.T) (server, client *fixed.Program) {
	t.Helper()
	model := filepath.Join(testenv.RepoRoot(t), "testdata", "mnist-small", "model.onnx")
	if _, err := os.Stat(model); err != nil {
		t.Skipf("testdata/mnist-small not present: %v", err)
	}
	g, err := onnx.Load(model, onnx.Options{Batch: 1})
	if err != nil {
		t.Fatal(err)
	}
	opts := passes.DefaultOptions()
	opts.Bits, opts.Scale, opts.Check = 32, 12, true
	p, _, err := passes.Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	var copies [2]*fixed.Program
	for i, weights := range []bool{true, false} {
		b, err := sciir.Marshal(&sciir.File{Program: p}, weights)
		if err != nil {
			t.Fatal(err)
		}
		f, err := sciir.Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		copies[i] = f.Program
	}
	return copies[0], copies[1]
}

// batchRun is one three-party session over a batch: per inference, the client's outputs and
// each link's requests on the critical path; the helper links' traffic and dealing ahead.
type batchRun struct {
	outs   [][]vm.Output
	demand [][2]int64
	helper [2]transport.Stats
	ahead  [2]dealer.AheadStats
	traces [2]*dealer.Trace // the first inference's requests (nil when dealing ahead is off)
	// lin is party 1's linear shares per inference: computed during their calls, ahead.
	lin [][2]int64
	// sent is each data party's bytes sent to the other (all connections, set-up included).
	sent [2]int64
	// flights and bytes are, per inference, the data parties' flights and bytes (party 0's
	// connections, both directions).
	flights, bytes []int64
}

// linearOpts are the linear layers' options of a batch run: the weights' F sent at set-up
// (ShareWeights), party 1's shares computed ahead within precompute bytes, the product's
// goroutines.
type linearOpts struct {
	share      bool
	precompute int64
	workers    int
}

// runBatch runs the inputs in one sci3 session (helper in this process, two streams), telling
// the backends where each inference starts and ends as internal/serve does, with dealing ahead
// capped at aheadCap bytes (0: off).
func runBatch(t *testing.T, server, client *fixed.Program, inputs []ring.Tensor, aheadCap int64) batchRun {
	t.Helper()
	return runBatchTraces(t, server, client, inputs, aheadCap, [2]*dealer.Trace{})
}

// runBatchTraces is runBatch with the first inference dealt at its start from the traces of an
// earlier session (none when nil).
func runBatchTraces(t *testing.T, server, client *fixed.Program, inputs []ring.Tensor, aheadCap int64, traces [2]*dealer.Trace) batchRun {
	t.Helper()
	return runBatchOpts(t, server, client, inputs, aheadCap, traces, linearOpts{})
}

// runBatchOpts is runBatchTraces with the linear layers' options lo.
func runBatchOpts(t *testing.T, server, client *fixed.Program, inputs []ring.Tensor, aheadCap int64, traces [2]*dealer.Trace, lo linearOpts) batchRun {
	t.Helper()
	ctx := context.Background()
	topt := transport.Options{Timeout: 60 * time.Second}
	trio, err := dealer.Local(ctx, topt)
	if err != nil {
		t.Fatal(err)
	}
	var conns [2][]*transport.Conn
	for range 2 {
		na, nb := net.Pipe()
		a, b := transport.NewConn(na, topt), transport.NewConn(nb, topt)
		t.Cleanup(func() { a.Close(); b.Close() })
		conns[0], conns[1] = append(conns[0], a), append(conns[1], b)
	}
	progs := [2]*fixed.Program{server, client}
	r := ring.Must(server.Bits)
	var backends [2]*sci3.Backend
	var machines [2]*vm.Machine
	setup := func(p int) error {
		trio.Links[p].SetAhead(aheadCap)
		if traces[p] != nil {
			if err := trio.Links[p].SetFirstTrace(traces[p]); err != nil {
				return err
			}
		}
		b, err := sci3.New(ctx, conns[p][0], trio.Links[p], r, sci3.Options{Streams: conns[p][1:], LinearPerRun: sci3.LinearCalls(progs[p]),
			Precompute: lo.precompute, Workers: lo.workers})
		if err != nil {
			return err
		}
		if lo.share {
			if err := b.ShareWeights(ctx, progs[p]); err != nil {
				return err
			}
		}
		backends[p] = b
		machines[p], err = vm.New(progs[p], b)
		return err
	}
	if e0, e1 := testenv.Both(func() error { return setup(0) }, func() error { return setup(1) }); e0 != nil || e1 != nil {
		t.Fatalf("setup: party 0: %v; party 1: %v", e0, e1)
	}
	var res batchRun
	in0 := []ring.Tensor{{Shape: inputs[0].Shape}}
	for k, x := range inputs {
		var before [2]int64
		var o1 []vm.Output
		lin0 := backends[1].LinearStats()
		var st0 transport.Stats
		for _, c := range conns[0] {
			st0 = st0.Add(c.Stats())
		}
		run := func(p int) error {
			if err := backends[p].BeginInference(ctx, k, len(inputs)); err != nil {
				return err
			}
			before[p] = trio.Links[p].Demand()
			in := in0
			if p == 1 {
				in = []ring.Tensor{x}
			}
			o, err := machines[p].Run(ctx, in)
			if p == 1 {
				o1 = o
			}
			if err != nil {
				return err
			}
			return backends[p].EndInference(k)
		}
		if e0, e1 := testenv.Both(func() error { return run(0) }, func() error { return run(1) }); e0 != nil || e1 != nil {
			t.Fatalf("inference %d: party 0: %v; party 1: %v", k, e0, e1)
		}
		res.outs = append(res.outs, o1)
		res.demand = append(res.demand, [2]int64{trio.Links[0].Demand() - before[0], trio.Links[1].Demand() - before[1]})
		lin1 := backends[1].LinearStats()
		var st1 transport.Stats
		for _, c := range conns[0] {
			st1 = st1.Add(c.Stats())
		}
		d := st1.Sub(st0)
		res.flights, res.bytes = append(res.flights, d.Rounds), append(res.bytes, d.BytesSent+d.BytesRecv)
		res.lin = append(res.lin, [2]int64{lin1.Online - lin0.Online, lin1.Ahead - lin0.Ahead})
	}
	for p := range 2 {
		for _, c := range conns[p] {
			res.sent[p] += c.Stats().BytesSent
		}
	}
	for p, b := range backends {
		res.ahead[p] = trio.Links[p].AheadStats()
		if aheadCap > 0 {
			tr, err := trio.Links[p].FirstTrace(traceKey)
			if err != nil {
				t.Fatal(err)
			}
			res.traces[p] = tr
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		res.helper[p] = trio.Links[p].Conn().Stats()
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := trio.Close(cctx); err != nil {
		t.Fatalf("helper: %v", err)
	}
	return res
}

// TestDealAhead: a batch of inferences with dealing ahead gives bitwise the cleartext outputs;
// from the second inference on neither data party sends the helper a request on the critical
// path and no reply is waited for (the OT roles are reset at every inference's start, so the
// requests repeat with period 1 and nothing dealt ahead goes unused); every inference makes the
// same flights and bytes between the data parties; the helper links carry exactly the bytes of
// the same batch dealt on demand.
func TestDealAhead(t *testing.T) {
	server, client := mnistSmall(t)
	n := 5
	if testing.Short() {
		n = 4
	}
	rng := rand.New(rand.NewPCG(26, 3))
	in := server.Tensors[server.Inputs[0].Tensor]
	r := ring.Must(server.Bits)
	var inputs []ring.Tensor
	size := 1
	for _, d := range in.Shape {
		size *= d
	}
	for k := range n {
		x := make([]float32, size)
		for i := range x {
			switch k {
			case 0: // edge: all zero
			case 1: // edge: the largest value of the validated range
				x[i] = 1
			default:
				x[i] = rng.Float32()
			}
		}
		enc, err := r.EncodeTensor(in.Shape, x, in.Scale)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, enc)
	}
	c, err := cleartext.New(r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := vm.New(server, c)
	if err != nil {
		t.Fatal(err)
	}
	ahead := runBatch(t, server, client, inputs, 64<<20)
	for k, x := range inputs {
		want, err := m.Run(context.Background(), []ring.Tensor{x})
		if err != nil {
			t.Fatal(err)
		}
		for j, w := range want {
			got := ahead.outs[k][j]
			if !got.Revealed || !slices.Equal(got.Value.Data, w.Value.Data) {
				t.Fatalf("inference %d output %q: secure %v differs from clear %v", k, w.Name, got.Value.Data[:min(8, len(got.Value.Data))], w.Value.Data[:min(8, len(w.Value.Data))])
			}
		}
	}
	onDemand := runBatch(t, server, client, inputs, 0)
	t.Logf("data parties per inference: flights %v, bytes %v", ahead.flights, ahead.bytes)
	// Every inference starts from the session's OT roles: the same flights and bytes each time
	// (the first's bytes include the weights' F).
	for k := 2; k < n; k++ {
		if ahead.flights[k] != ahead.flights[1] || ahead.bytes[k] != ahead.bytes[1] || ahead.flights[0] != ahead.flights[1] {
			t.Errorf("inference %d: %d flights, %d bytes; inference 2: %d, %d; inference 1: %d flights", k+1, ahead.flights[k], ahead.bytes[k], ahead.flights[1], ahead.bytes[1], ahead.flights[0])
		}
	}
	for p := range 2 {
		a := ahead.ahead[p]
		t.Logf("party %d: requests per inference on the critical path %v (on demand: %v); %+v", p, column(ahead.demand, p), column(onDemand.demand, p), a)
		if d := ahead.demand[0][p]; d == 0 || d != onDemand.demand[0][p] {
			t.Errorf("party %d: the first inference sent %d requests, %d on demand", p, d, onDemand.demand[0][p])
		}
		for k := 1; k < n; k++ {
			if d := ahead.demand[k][p]; d != 0 {
				t.Errorf("party %d: inference %d sent %d requests to the helper on the critical path, want 0", p, k+1, d)
			}
		}
		if a.Inferences != n-1 || a.LateWaits != 0 || a.Off != "" || a.Misses != 0 || a.Period != 1 || a.Wasted != 0 {
			t.Errorf("party %d: dealing ahead %+v, the second inference's requests on demand %d", p, a, ahead.demand[1][p])
		}
		// Bytes: the same dealing, plus what was dealt for the second inference and not used.
		got := ahead.helper[p].BytesSent + ahead.helper[p].BytesRecv - a.Wasted
		if want := onDemand.helper[p].BytesSent + onDemand.helper[p].BytesRecv; got != want {
			t.Errorf("party %d: helper link %d bytes less %d unused = %d, dealt on demand %d", p, got+a.Wasted, a.Wasted, got, want)
		}
		if a.Period == 1 && a.Wasted != 0 {
			t.Errorf("party %d: period 1 with %d bytes unused", p, a.Wasted)
		}
	}
}

// TestDealAheadCap: a cap below one inference's replies deals everything on demand and says
// why; the outputs and the helper's bytes are those of dealing on demand.
func TestDealAheadCap(t *testing.T) {
	server, client := mnistSmall(t)
	r := ring.Must(server.Bits)
	in := server.Tensors[server.Inputs[0].Tensor]
	var inputs []ring.Tensor
	for range 3 {
		x, err := r.EncodeTensor(in.Shape, make([]float32, ring.Size(in.Shape)), in.Scale)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, x)
	}
	capped := runBatch(t, server, client, inputs, 1024)
	onDemand := runBatch(t, server, client, inputs, 0)
	for p := range 2 {
		a := capped.ahead[p]
		if !strings.Contains(a.Off, "exceed the cap of 1024 bytes") || a.Inferences != 0 || a.Requests != 0 {
			t.Errorf("party %d: %+v", p, a)
		}
		if !slices.Equal(column(capped.demand, p), column(onDemand.demand, p)) || capped.helper[p] != onDemand.helper[p] {
			t.Errorf("party %d: requests %v, helper %+v; on demand %v, %+v", p, column(capped.demand, p), capped.helper[p], column(onDemand.demand, p), onDemand.helper[p])
		}
	}
	for k := range inputs {
		for j := range capped.outs[k] {
			if !slices.Equal(capped.outs[k][j].Value.Data, onDemand.outs[k][j].Value.Data) {
				t.Fatalf("inference %d output %d differs", k, j)
			}
		}
	}
}

func column(v [][2]int64, p int) []int64 {
	var out []int64
	for _, x := range v {
		out = append(out, x[p])
	}
	return out
}

// traceKey is the key the tests record traces with.
var traceKey = [32]byte{26}

// TestFirstInferenceAhead: a session given the first inference's requests of an earlier
// session (a Trace, through its encoding) has them dealt at the first inference's start, before
// the input is used: no inference sends the helper a request on its critical path, no reply is waited for within an inference, the
// outputs are bitwise those of the cleartext backend, and each helper link carries exactly the
// bytes of the session without the trace (the same requests, moved before the input). With a
// cap below the trace's replies, the longest prefix that fits is dealt and the rest of the first
// inference goes on demand.
func TestFirstInferenceAhead(t *testing.T) {
	server, client := mnistSmall(t)
	r := ring.Must(server.Bits)
	in := server.Tensors[server.Inputs[0].Tensor]
	rng := rand.New(rand.NewPCG(26, 4))
	var inputs []ring.Tensor
	for k := range 3 {
		x := make([]float32, ring.Size(in.Shape))
		for i := range x {
			if k == 1 {
				x[i] = 1 // the largest value of the validated range
			} else if k == 2 {
				x[i] = rng.Float32()
			}
		}
		enc, err := r.EncodeTensor(in.Shape, x, in.Scale)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, enc)
	}
	const cap = 64 << 20
	first := runBatch(t, server, client, inputs, cap)
	var traces [2]*dealer.Trace
	for p, tr := range first.traces {
		b, err := tr.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var back dealer.Trace
		if err := back.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if back.Party != p || back.Key != traceKey || back.Len() != tr.Len() || int64(back.Len()) != first.demand[0][p] {
			t.Fatalf("party %d: trace decoded as party %d, %d requests; recorded %d, the first inference sent %d", p, back.Party, back.Len(), tr.Len(), first.demand[0][p])
		}
		traces[p] = &back
	}
	check := clearCheck(t, r, server, inputs)
	ahead := runBatchTraces(t, server, client, inputs, cap, traces)
	check("with the trace", ahead)
	for p := range 2 {
		a := ahead.ahead[p]
		t.Logf("party %d: requests on the critical path %v (without the trace %v); %+v", p, column(ahead.demand, p), column(first.demand, p), a)
		if d := column(ahead.demand, p); !slices.Equal(d, []int64{0, 0, 0}) {
			t.Errorf("party %d: requests on the critical path per inference %v, want [0 0 0]", p, d)
		}
		if a.FirstRequests != traces[p].Len() || a.FirstDealt != a.FirstRequests || a.FirstMisses != 0 || a.Inferences != 3 || a.LateWaits != 0 || a.Off != "" {
			t.Errorf("party %d: dealing ahead %+v", p, a)
		}
		if want, err := traces[p].ReplyBytes(); err != nil || a.FirstBytes != want || a.FirstDealtBytes != want {
			t.Errorf("party %d: first inference's replies %d B, dealt %d B; the trace's %d B (%v)", p, a.FirstBytes, a.FirstDealtBytes, want, err)
		}
		if got, want := ahead.helper[p].BytesSent+ahead.helper[p].BytesRecv, first.helper[p].BytesSent+first.helper[p].BytesRecv; got != want {
			t.Errorf("party %d: helper link %d B with the trace, %d B without", p, got, want)
		}
	}

	// A cap below the first inference's replies (party 0's are 39 KB with the ReLUs fused with their
	// truncations): a prefix is dealt, the rest on demand.
	capped := runBatchTraces(t, server, client, inputs[:1], 32<<10, traces)
	check("capped", capped)
	for p := range 2 {
		a := capped.ahead[p]
		if a.FirstDealt == 0 || a.FirstDealt >= a.FirstRequests || a.FirstDealtBytes > 32<<10 || a.FirstMisses != int64(a.FirstRequests-a.FirstDealt) || capped.demand[0][p] != a.FirstMisses {
			t.Errorf("party %d: capped at 32 KiB: %+v, requests on the critical path %d", p, a, capped.demand[0][p])
		}
	}

	// A trace on a link without dealing ahead, or of the other party, is refused.
	l := dealer.NewLinkWithSeed(nil, 0, [16]byte{})
	if err := l.SetFirstTrace(traces[0]); err == nil {
		t.Error("a trace set on a link with dealing ahead off was accepted")
	}
	l.SetAhead(cap)
	if err := l.SetFirstTrace(traces[1]); err == nil {
		t.Error("party 1's trace was accepted on party 0's link")
	}
}

// TestLinearAhead: with every F sent at set-up (ShareWeights) and a trace of the first
// inference, party 1 computes its shares F·A + D of every linear layer at the start of each
// inference, before the input is used: none is computed on an inference's critical path
// (counted per inference), the outputs are bitwise those of the cleartext backend, the helper
// links carry exactly the same bytes, and party 0 sends party 1 exactly three words per
// weight tensor and one frame header more (the set-up message's), F having moved there from the
// first calls. Without a trace the first inference computes them during its calls, the second
// and third ahead. The products run on two goroutines here (the same results).
func TestLinearAhead(t *testing.T) {
	server, client := mnistSmall(t)
	r := ring.Must(server.Bits)
	in := server.Tensors[server.Inputs[0].Tensor]
	rng := rand.New(rand.NewPCG(26, 7))
	var inputs []ring.Tensor
	for k := range 3 {
		x := make([]float32, ring.Size(in.Shape))
		for i := range x {
			switch k {
			case 0:
				x[i] = 1 // the largest value of the validated range
			case 1:
				x[i] = -1
			default:
				x[i] = rng.Float32()*2 - 1
			}
		}
		enc, err := r.EncodeTensor(in.Shape, x, in.Scale)
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, enc)
	}
	check := clearCheck(t, r, server, inputs)
	const cap = 64 << 20
	calls := int64(sci3.LinearCalls(server))
	ws := sci3.LinearWeights(server)
	if calls == 0 || int64(len(ws)) != calls {
		t.Fatalf("mnist-small: %d linear calls, %d weight tensors shared at set-up", calls, len(ws))
	}
	plain := runBatch(t, server, client, inputs, cap)
	check("plain", plain)
	for k, v := range plain.lin {
		if v != [2]int64{calls, 0} {
			t.Errorf("plain: inference %d: party 1's linear shares (during, ahead) %v, want [%d 0]", k, v, calls)
		}
	}
	lo := linearOpts{share: true, precompute: cap, workers: 2}
	noTrace := runBatchOpts(t, server, client, inputs, cap, [2]*dealer.Trace{}, lo)
	check("no trace", noTrace)
	if want := [][2]int64{{calls, 0}, {0, calls}, {0, calls}}; !slices.Equal(noTrace.lin, want) {
		t.Errorf("without a trace: party 1's linear shares per inference (during, ahead) %v, want %v", noTrace.lin, want)
	}
	ahead := runBatchOpts(t, server, client, inputs, cap, plain.traces, lo)
	check("with the trace", ahead)
	if want := [][2]int64{{0, calls}, {0, calls}, {0, calls}}; !slices.Equal(ahead.lin, want) {
		t.Errorf("with the trace: party 1's linear shares per inference (during, ahead) %v, want %v", ahead.lin, want)
	}
	extra := int64(8*3*len(ws) + transport.HeaderSize)
	for _, run := range []struct {
		name string
		b    batchRun
	}{{"no trace", noTrace}, {"with the trace", ahead}} {
		for p := range 2 {
			if got, want := run.b.helper[p].BytesSent+run.b.helper[p].BytesRecv, plain.helper[p].BytesSent+plain.helper[p].BytesRecv; got != want {
				t.Errorf("%s: party %d's helper link %d B, %d B without the linear options", run.name, p, got, want)
			}
		}
		if d := run.b.sent[0] - plain.sent[0]; d != extra || run.b.sent[1] != plain.sent[1] {
			t.Errorf("%s: party 0 sent %d B more (want %d), party 1 %d B against %d", run.name, d, extra, run.b.sent[1], plain.sent[1])
		}
	}
	// Requests on the critical path: as with the trace alone (the linear corrections are
	// dealt ahead either way; they are now used before the input).
	for p := range 2 {
		if d := column(ahead.demand, p); !slices.Equal(d, []int64{0, 0, 0}) {
			t.Errorf("party %d: requests on the critical path per inference %v, want [0 0 0]", p, d)
		}
	}
	// Party 1's shares are computed while the inference is dealt (each as its correction
	// arrives): a wait for a reply still in flight there is offline, never a late wait of the
	// inference, and every reply dealt ahead is used.
	for p := range 2 {
		if st := ahead.ahead[p]; st.LateWaits != 0 || st.Misses != 0 || st.Wasted != 0 {
			t.Errorf("party %d: %d late waits, %d misses, %d B dealt for nothing, want none", p, st.LateWaits, st.Misses, st.Wasted)
		}
	}
	t.Logf("party 1: %d of %d shares ahead took their correction while it was still in flight", ahead.ahead[1].Overlapped, 3*calls)
	// A cap below one share: nothing is computed ahead, every share during its call.
	tiny := runBatchOpts(t, server, client, inputs[:2], cap, plain.traces, linearOpts{share: true, precompute: 8})
	check("cap 8 B", tiny)
	if want := [][2]int64{{calls, 0}, {calls, 0}}; !slices.Equal(tiny.lin, want) {
		t.Errorf("precompute cap 8 B: party 1's linear shares %v, want %v", tiny.lin, want)
	}
}

// clearCheck returns a check that a batch's outputs equal the clear run of the program on the
// same inputs, inference by inference.
func clearCheck(t *testing.T, r ring.Ring, server *fixed.Program, inputs []ring.Tensor) func(name string, got batchRun) {
	t.Helper()
	c, err := cleartext.New(r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := vm.New(server, c)
	if err != nil {
		t.Fatal(err)
	}
	return func(name string, got batchRun) {
		t.Helper()
		for k, x := range inputs[:len(got.outs)] {
			want, err := m.Run(context.Background(), []ring.Tensor{x})
			if err != nil {
				t.Fatal(err)
			}
			for j, w := range want {
				o := got.outs[k][j]
				if !o.Revealed || !slices.Equal(o.Value.Data, w.Value.Data) {
					t.Fatalf("%s: inference %d output %q differs from the clear run", name, k, w.Name)
				}
			}
		}
	}
}
