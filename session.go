package cryptflow

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"runtime"
	"slices"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/netmodel"
	"github.com/cryptflow-go/cryptflow/protocols/he"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/cleartext"
	"github.com/cryptflow-go/cryptflow/vm/sci"
)

// software is announced in the handshake.
const software = "cryptflow-go API"

// SessionOptions configure the secure sessions of Serve, Infer and InferLocal. Both parties must
// use the same Backend, OT and Streams (the handshake checks them and names any difference).
type SessionOptions struct {
	// Backend overrides the program's backend ("auto", "sciot", "scihe"); empty: the program's.
	Backend string
	// OT is the OT source: "auto" (the default: Ferret silent OT for a program planned for a link
	// of at most 80 MB/s, IKNP otherwise), "iknp" or "ferret".
	OT string
	// Streams is the number of connections per session (1 to 16), one OT stream and one core
	// each; 0 means scirun's default, min(2, CPUs), so that a client of a scirun server agrees.
	Streams int
	// TLS, when set, is the server's TLS configuration (Serve) or the client's (Infer).
	TLS *tls.Config
	// Timeout bounds every wait for the peer (0: two minutes).
	Timeout time.Duration
	// MaxSessions bounds the sessions a server runs at once (0: one per core).
	MaxSessions int
}

// Result is the outcome of one inference at the client.
type Result struct {
	// Output is the revealed output decoded to floats, in Shape (for a quantized model's
	// dequantized output, the floats its DequantizeLinear gives: ONNX Runtime's).
	Output []float32
	Shape  []int
	// Class is the index of the highest score (the first row's, for an output of several
	// rows), and ClassName its name when the program records class names.
	Class     int
	ClassName string
	// Raw is the output as signed ring values: what the secure run and the cleartext reference
	// agree on bitwise.
	Raw []int64
	// Elapsed is the session's wall-clock time at this party; BytesSent, BytesRecv and Rounds
	// its traffic (0 for Program.Clear).
	Elapsed              time.Duration
	BytesSent, BytesRecv int64
	Rounds               int64
}

// sessionOptions builds the options of one party's sessions of p.
func sessionOptions(p *Program, o *SessionOptions, party int) (*serve.Options, error) {
	if o == nil {
		o = &SessionOptions{}
	}
	be := o.Backend
	if be == "" {
		be = p.Backend()
	}
	mode, err := sci.ParseMode(be)
	if err != nil {
		return nil, fmt.Errorf("backend: %w", err)
	}
	var src sci.OTSource
	switch o.OT {
	case "", "auto":
		var net *netmodel.Model
		if p.f.Meta.Net != "" {
			if net, err = netmodel.Parse(p.f.Meta.Net); err != nil {
				return nil, fmt.Errorf("program %s: recorded net: %w", p.Name(), err)
			}
		}
		src = sci.AutoOT(net)
	default:
		if src, err = sci.ParseOT(o.OT); err != nil {
			return nil, fmt.Errorf("ot: %w", err)
		}
	}
	so := sci.Options{Mode: mode, OT: src, HE: he.Options{}}
	if src == sci.OTFerret {
		so.Ferret = sci.FerretFor(p.f.Program)
	}
	opt := &serve.Options{File: p.f, Timeout: o.Timeout, Software: software, Streams: o.Streams,
		Backend: so.Describe(ring.Must(p.Bits())), SessionTimeout: -1}
	if opt.Streams == 0 {
		opt.Streams = min(2, runtime.NumCPU())
	}
	opt.NewBackend = func(ctx context.Context, conn *transport.Conn, streams []*transport.Conn, party int, r ring.Ring) (vm.Backend, error) {
		so := so
		so.Streams = streams
		return sci.New(ctx, conn, party, r, so)
	}
	if err := opt.Check(party); err != nil {
		if errors.Is(err, vm.ErrNoWeights) {
			return nil, fmt.Errorf("program %s is a client copy: the server needs the copy with the weights", p.Name())
		}
		return nil, fmt.Errorf("program %s: %w", p.Name(), err)
	}
	return opt, nil
}

// Serve runs the server (party 0) of program p, which must hold the weights, on ln: one session
// per client, concurrently up to o.MaxSessions, until ctx is done. Cancelling ctx stops accepting
// clients, cancels the running sessions and returns ctx's error once they have ended; Serve closes
// ln. onSession, when not nil, is called after every session with its error (nil on success).
func Serve(ctx context.Context, ln net.Listener, p *Program, o *SessionOptions, onSession func(error)) error {
	opt, err := sessionOptions(p, o, 0)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	s := &serve.Server{Options: opt}
	if o != nil {
		s.TLS, s.MaxSessions = o.TLS, o.MaxSessions
	}
	if onSession != nil {
		s.OnReport = func(r *serve.Report) {
			var err error
			if r.Error != "" {
				err = errors.New(r.Error)
			}
			onSession(err)
		}
	}
	if err := s.Serve(ctx, ln); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// Infer runs one secure inference as the client (party 1) against the server at addr
// (host:port): p may be the client copy; x is the input in the program's input shape, row-major
// (Program.ReadInput reads one from a file). The server learns nothing about x; the client
// learns the output.
func Infer(ctx context.Context, addr string, p *Program, x []float32, o *SessionOptions) (*Result, error) {
	opt, err := sessionOptions(p, o, 1)
	if err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	in, err := encodeInput(p, x)
	if err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	var conf *tls.Config
	if o != nil {
		conf = o.TLS
	}
	nc, err := serve.Dial(ctx, addr, conf, o.timeout())
	if err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	opt.DialStream = func(ctx context.Context) (net.Conn, error) { return serve.Dial(ctx, addr, conf, o.timeout()) }
	res, err := serve.Run(ctx, nc, 1, opt, in)
	if err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	return resultOf(p, res.Outputs, res.Report)
}

// InferBatch runs one secure inference per input of xs as the client against the server at addr,
// all in ONE session: the handshake and the backend set-up (base OTs, HE keys) are paid once. It
// returns one Result per input, in order; their Elapsed, BytesSent, BytesRecv and Rounds are the
// whole session's (they are not split per inference).
func InferBatch(ctx context.Context, addr string, p *Program, xs [][]float32, o *SessionOptions) ([]*Result, error) {
	if len(xs) == 0 {
		return nil, fmt.Errorf("infer batch: no inputs")
	}
	opt, err := sessionOptions(p, o, 1)
	if err != nil {
		return nil, fmt.Errorf("infer batch: %w", err)
	}
	batch := make([][]ring.Tensor, len(xs))
	for i, x := range xs {
		if batch[i], err = encodeInput(p, x); err != nil {
			return nil, fmt.Errorf("infer batch: input %d: %w", i, err)
		}
	}
	var conf *tls.Config
	if o != nil {
		conf = o.TLS
	}
	nc, err := serve.Dial(ctx, addr, conf, o.timeout())
	if err != nil {
		return nil, fmt.Errorf("infer batch: %w", err)
	}
	opt.DialStream = func(ctx context.Context) (net.Conn, error) { return serve.Dial(ctx, addr, conf, o.timeout()) }
	res, err := serve.RunBatch(ctx, nc, 1, opt, batch)
	if err != nil {
		return nil, fmt.Errorf("infer batch: %w", err)
	}
	if len(res.Batch) != len(xs) {
		return nil, fmt.Errorf("infer batch: %d results for %d inputs", len(res.Batch), len(xs))
	}
	out := make([]*Result, len(xs))
	for i, outs := range res.Batch {
		if out[i], err = resultOf(p, outs, res.Report); err != nil {
			return nil, fmt.Errorf("infer batch: input %d: %w", i, err)
		}
	}
	return out, nil
}

// InferLocal runs both parties in this process over loopback TCP: p must hold the weights. It is
// for demonstrations and tests; its result equals Infer's against a server of p.
func InferLocal(ctx context.Context, p *Program, x []float32, o *SessionOptions) (*Result, error) {
	sopt, err := sessionOptions(p, o, 0)
	if err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	copt := *sopt
	in, err := encodeInput(p, x)
	if err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	res, _, err := serve.RunLocal(ctx, sopt, &copt, in)
	if err != nil {
		return nil, fmt.Errorf("infer: %w", err)
	}
	return resultOf(p, res.Outputs, res.Report)
}

// Clear runs p in the clear (cleartext fixed-point VM, one process): the reference every secure
// run equals bitwise. p must hold the weights.
func (p *Program) Clear(ctx context.Context, x []float32) (*Result, error) {
	r, err := ring.New(p.Bits())
	if err != nil {
		return nil, fmt.Errorf("clear run: %w", err)
	}
	be, err := cleartext.New(r)
	if err != nil {
		return nil, fmt.Errorf("clear run: %w", err)
	}
	m, err := vm.New(p.f.Program, be)
	if err != nil {
		return nil, fmt.Errorf("clear run of %s: %w", p.Name(), err)
	}
	in, err := encodeInput(p, x)
	if err != nil {
		return nil, fmt.Errorf("clear run: %w", err)
	}
	start := time.Now()
	outs, err := m.Run(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("clear run of %s: %w", p.Name(), err)
	}
	res, err := resultOf(p, outs, nil)
	if err != nil {
		return nil, err
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func (o *SessionOptions) timeout() time.Duration {
	if o == nil {
		return 0
	}
	return o.Timeout
}

// encodeInput checks x against the program's single input and encodes it at the input's scale.
func encodeInput(p *Program, x []float32) ([]ring.Tensor, error) {
	prog := p.f.Program
	if len(prog.Inputs) != 1 {
		return nil, fmt.Errorf("program %s has %d inputs; this API runs programs with one", p.Name(), len(prog.Inputs))
	}
	in := prog.Tensors[prog.Inputs[0].Tensor]
	if len(x) != in.Shape.Size() {
		return nil, fmt.Errorf("input of %d values; program %s wants %v (%d values)", len(x), p.Name(), in.Shape, in.Shape.Size())
	}
	// Rounded to a declared float16 input, or quantized for a quantized model (a copy: x is
	// the caller's).
	x = append([]float32(nil), x...)
	p.f.Meta.PrepareInput(prog.Inputs[0].Name, x)
	t, err := ring.Must(prog.Bits).EncodeTensor(in.Shape, x, in.Scale)
	if err != nil {
		return nil, fmt.Errorf("encode input: %w", err)
	}
	return []ring.Tensor{t}, nil
}

// resultOf decodes the one output revealed to this party.
func resultOf(p *Program, outs []vm.Output, rep *serve.Report) (*Result, error) {
	var o *vm.Output
	for i := range outs {
		if outs[i].Revealed {
			if o != nil {
				return nil, fmt.Errorf("program %s reveals several outputs; this API returns one", p.Name())
			}
			o = &outs[i]
		}
	}
	if o == nil {
		return nil, fmt.Errorf("program %s revealed no output to this party", p.Name())
	}
	r := ring.Must(p.Bits())
	res := &Result{Output: r.DecodeTensor(o.Value, o.Scale), Shape: slices.Clone(o.Value.Shape), Raw: make([]int64, len(o.Value.Data))}
	for i, v := range o.Value.Data {
		res.Raw[i] = r.Signed(v)
	}
	if dq := p.f.Meta.Dequantization(o.Name); dq != nil { // a quantized model's DequantizeLinear
		for i, v := range res.Raw {
			res.Output[i] = dq.Dequantize(v)
		}
	}
	// The first row of class scores: the last dimension after dropping trailing 1-dimensions.
	d := len(res.Raw)
	for i := len(res.Shape) - 1; i >= 0; i-- {
		if res.Shape[i] != 1 {
			d = res.Shape[i]
			break
		}
	}
	switch {
	case revealsClass(p):
		res.Class = int(res.Raw[0])
		if cl := p.Classes(); res.Class >= 0 && res.Class < len(cl) {
			res.ClassName = cl[res.Class]
		}
	case d > 0 && len(res.Raw)%d == 0:
		res.Class = r.ArgMax(o.Value.Data[:d])
		if cl := p.Classes(); len(cl) == d {
			res.ClassName = cl[res.Class]
		}
	}
	if rep != nil {
		res.Elapsed = time.Duration(rep.TotalMS * float64(time.Millisecond))
		res.BytesSent, res.BytesRecv, res.Rounds = rep.Total.BytesSent, rep.Total.BytesRecv, rep.Total.Rounds
	}
	return res, nil
}

// revealsClass reports whether the program's output is an ArgMax: the class index itself.
func revealsClass(p *Program) bool {
	prog := p.f.Program
	if len(prog.Outputs) != 1 {
		return false
	}
	for _, in := range prog.Instrs {
		if in.Op == fixed.OpArgMax && in.Out == prog.Outputs[0].Tensor {
			return true
		}
	}
	return false
}
