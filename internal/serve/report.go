package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
	"github.com/cryptflow-go/cryptflow/vm"
)

// Traffic is what one party sent and received in some part of a session. Bytes are wire bytes
// (frame headers included). Rounds counts this party's flights: maximal runs of consecutive sends
// (the transport's definition), so the rounds of a protocol are the sum over both parties.
type Traffic struct {
	BytesSent int64 `json:"bytes_sent"`
	BytesRecv int64 `json:"bytes_recv"`
	Rounds    int64 `json:"rounds"`
}

func trafficOf(s transport.Stats) Traffic {
	return Traffic{BytesSent: s.BytesSent, BytesRecv: s.BytesRecv, Rounds: s.Rounds}
}

func (t Traffic) add(u Traffic) Traffic {
	return Traffic{t.BytesSent + u.BytesSent, t.BytesRecv + u.BytesRecv, t.Rounds + u.Rounds}
}

// Layer is one instruction of the program as this party ran it: in a batch session, summed over
// the inferences.
type Layer struct {
	Index  int     `json:"index"`
	Op     string  `json:"op"`
	Source string  `json:"source,omitempty"` // the model node it came from
	Shape  []int   `json:"shape"`            // the shape of the tensor it produced (or revealed)
	MS     float64 `json:"ms"`               // wall-clock time at this party
	Engine string  `json:"engine,omitempty"` // matmul and conv: how the layer ran (ot or he)
	// PeakRSS is this party's peak resident memory (bytes) when the layer ended: the process's
	// high-water mark so far (Linux; 0 elsewhere). Summed over nothing in a batch: the maximum.
	PeakRSS int64 `json:"peak_rss,omitempty"`
	Traffic
}

// Inference is one inference of a batch session: its wall-clock time at this party and its
// traffic (rounds count this party's flights within it).
type Inference struct {
	Index int     `json:"index"`
	MS    float64 `json:"ms"`
	Traffic
}

// Report describes one session from one party's side. In a batch session (Inferences > 1),
// Layers sum each instruction over the inferences, Each gives every inference's time and
// traffic, and the Per* and InferencesPerSec fields summarise them.
type Report struct {
	SessionID   string    `json:"session_id,omitempty"` // the same at both parties (Token.ID)
	Party       int       `json:"party"`
	Role        string    `json:"role"`
	Peer        string    `json:"peer"`
	ProgramID   string    `json:"program_id"`
	Model       string    `json:"model,omitempty"`   // the source model's file name
	Program     string    `json:"program,omitempty"` // the program's own name (athosc -o), when it records one
	Backend     string    `json:"backend"`
	Ring        string    `json:"ring"`
	Scale       int       `json:"scale"`
	Streams     int       `json:"streams"` // connections (OT streams); traffic is summed over them
	TLS         bool      `json:"tls"`
	Net         string    `json:"net,omitempty"` // the emulated link, if any
	Started     time.Time `json:"started"`
	HandshakeMS float64   `json:"handshake_ms"`
	SetupMS     float64   `json:"setup_ms"` // backend set-up (base OTs and the like)
	RunMS       float64   `json:"run_ms"`   // the program itself (every inference of a batch)
	TotalMS     float64   `json:"total_ms"`
	Handshake   Traffic   `json:"handshake"`
	Setup       Traffic   `json:"setup"`
	Layers      []Layer   `json:"layers"`
	Total       Traffic   `json:"total"`
	// Helper is this party's traffic with the helper (party 2) of a three-party backend (sci3):
	// Total is then the traffic between the two data parties only.
	// Helper.Pairs and the *_ms fields split the session into set-up, offline and online.
	Helper *ThreeParty `json:"helper,omitempty"`
	// Offline splits a two-party session whose backend works ahead (sci on Ferret) into the
	// offline phase (at the inferences' starts, before their inputs are used) and the online one.
	Offline *Offline `json:"offline,omitempty"`
	// FHE is the fhe mode's account (keys, bytes up and down, the client's encryption and
	// decryption time, the server's evaluation per layer), from a backend that keeps one.
	FHE   *FHEAccount `json:"fhe,omitempty"`
	Error string      `json:"error,omitempty"`

	Inferences       int         `json:"inferences"`                 // program runs completed in the session
	Requested        int         `json:"requested,omitempty"`        // inferences asked for, when fewer completed
	Interrupted      string      `json:"interrupted,omitempty"`      // "interrupted after N of M inferences" when this party was cancelled
	Each             []Inference `json:"each,omitempty"`             // per inference, for a batch
	PerInferenceMS   float64     `json:"per_inference_ms,omitempty"` // RunMS / Inferences
	PerInference     *Traffic    `json:"per_inference,omitempty"`    // the run's traffic / Inferences (rounded down)
	InferencesPerSec float64     `json:"inferences_per_s,omitempty"` // Inferences / TotalMS: set-up included
}

// summarise fills in the per-inference averages and the throughput of a completed session.
func (r *Report) summarise() {
	if r.Inferences < 1 {
		return
	}
	n := int64(r.Inferences)
	run := r.Total
	for _, t := range []Traffic{r.Handshake, r.Setup} {
		run = Traffic{run.BytesSent - t.BytesSent, run.BytesRecv - t.BytesRecv, run.Rounds - t.Rounds}
	}
	r.PerInference = &Traffic{run.BytesSent / n, run.BytesRecv / n, run.Rounds / n}
	r.PerInferenceMS = r.RunMS / float64(n)
	if r.TotalMS > 0 {
		r.InferencesPerSec = float64(n) / (r.TotalMS / 1000)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// WriteTable writes the per-layer table: the handshake, the backend set-up, one row per
// instruction, and the totals.
func (r *Report) WriteTable(w io.Writer) error {
	rows := [][]string{{"#", "op", "source", "shape", "time", "sent", "received", "rounds"}}
	row := func(idx, op, src, shape string, d float64, t Traffic) {
		rows = append(rows, []string{idx, op, src, shape, fmtMS(d), FormatBytes(t.BytesSent), FormatBytes(t.BytesRecv), strconv.FormatInt(t.Rounds, 10)})
	}
	row("", "handshake", "", "", r.HandshakeMS, r.Handshake)
	row("", "setup", "", "", r.SetupMS, r.Setup)
	for _, l := range r.Layers {
		op := l.Op
		if l.Engine != "" {
			op += " by " + l.Engine
		}
		row(strconv.Itoa(l.Index), op, clip(l.Source, 28), shapeString(l.Shape), l.MS, l.Traffic)
	}
	row("", "total", "", "", r.TotalMS, r.Total)
	if r.Inferences > 1 && r.PerInference != nil {
		row("", "per inference", "", "", r.PerInferenceMS, *r.PerInference)
	}
	width := make([]int, len(rows[0]))
	for _, cells := range rows {
		for i, c := range cells {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s (party %d) with %s: program %s, backend %s, %s scale %d%s\n",
		r.Role, r.Party, r.Peer, short(r.ProgramID), r.Backend, r.Ring, r.Scale, netSuffix(r))
	if r.Inferences > 1 {
		fmt.Fprintf(&b, "batch of %d inferences: the layers are summed over them; %.2f inferences/s (set-up included)\n",
			r.Inferences, r.InferencesPerSec)
	}
	leftAligned := map[int]bool{1: true, 2: true, 3: true}
	for _, cells := range rows {
		line := make([]string, len(cells))
		for i, c := range cells {
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if leftAligned[i] {
				line[i] = c + pad
			} else {
				line[i] = pad + c
			}
		}
		b.WriteString(strings.TrimRight(strings.Join(line, "  "), " ") + "\n")
	}
	if r.Helper != nil {
		r.Helper.write(&b, r.RunMS)
	}
	if r.Offline != nil {
		r.Offline.write(&b, r.RunMS)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes the report as indented JSON with one line per layer.
func (r *Report) WriteJSON(w io.Writer) error {
	c := *r
	c.Layers = nil
	head, err := json.MarshalIndent(&c, "", "  ")
	if err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString(`"layers": [`)
	for i, l := range r.Layers {
		line, err := json.Marshal(l)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n    ")
		b.Write(line)
	}
	b.WriteString("\n  ]")
	out := bytes.Replace(head, []byte(`"layers": null`), b.Bytes(), 1)
	_, err = w.Write(append(out, '\n'))
	return err
}

func netSuffix(r *Report) string {
	s := ""
	if r.Streams > 1 {
		s += fmt.Sprintf(", %d streams", r.Streams)
	}
	if r.TLS {
		s += ", TLS"
	}
	if r.Net != "" {
		s += ", emulated " + r.Net
	}
	return s
}

func clip(s string, n int) string {
	if len([]rune(s)) <= n {
		return s
	}
	return "…" + string([]rune(s)[len([]rune(s))-n+1:])
}

func shapeString(s []int) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = strconv.Itoa(d)
	}
	return strings.Join(parts, "x")
}

func fmtMS(v float64) string {
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.1f s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f ms", v)
	case v >= 1:
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

// FormatBytes prints a byte count with a binary unit (B, KiB, MiB, GiB).
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// recorder wraps the backend of a session: it charges the transport traffic and the wall-clock
// time of every instruction to that instruction (one transport phase per instruction) and calls
// the progress hook after each one.
//
// The VM calls Observe after every instruction except outputs, and an output instruction makes
// exactly one backend call (Reveal); together they mark every instruction boundary.
type recorder struct {
	vm.Backend
	conns    []*transport.Conn
	prog     *fixed.Program
	producer []int // tensor id -> index of the instruction that defines it
	labels   []string
	layers   []Layer
	cur      int // the instruction running now
	// onStart, when set, is told when instruction i of inference k of n starts (Options.Running).
	onStart  func(k, n, i int, in *fixed.Instr)
	mark     time.Time
	progress func(done, total int, in *fixed.Instr)
	batch    int   // inferences in the session
	k        int   // the inference running
	peak     int64 // the highest peak RSS read so far (see peakRSS on why it is kept here)
}

func newRecorder(be vm.Backend, conns []*transport.Conn, p *fixed.Program, progress func(int, int, *fixed.Instr), batch int) *recorder {
	rc := &recorder{Backend: be, conns: conns, prog: p, progress: progress, batch: max(batch, 1)}
	rc.producer = make([]int, len(p.Tensors))
	rc.labels = make([]string, len(p.Instrs))
	rc.layers = make([]Layer, len(p.Instrs))
	for i, in := range p.Instrs {
		rc.labels[i] = "instr " + strconv.Itoa(i)
		l := Layer{Index: i, Op: in.Op.String(), Source: in.Source}
		if in.Op == fixed.OpOutput {
			l.Shape = p.Tensors[in.In[0]].Shape.Clone()
		} else {
			rc.producer[in.Out] = i
			l.Shape = p.Tensors[in.Out].Shape.Clone()
		}
		rc.layers[i] = l
	}
	return rc
}

// engineResolver is a backend that runs linear layers by more than one engine (vm/sci's): it
// says which engine runs a layer for which the program records e.
type engineResolver interface {
	EngineFor(e fixed.Engine) fixed.Engine
}

// linearEngineNamer is a backend that runs every linear layer one way, not among vm/sci's
// engines (sci3: "dealer").
type linearEngineNamer interface {
	LinearEngine() string
}

// noteEngine records in the report the engine the backend runs the current layer with, when it
// has more than one.
func (rc *recorder) noteEngine(e fixed.Engine) {
	if n, ok := rc.Backend.(linearEngineNamer); ok && rc.cur < len(rc.layers) {
		rc.layers[rc.cur].Engine = n.LinearEngine()
		return
	}
	if er, ok := rc.Backend.(engineResolver); ok && rc.cur < len(rc.layers) {
		rc.layers[rc.cur].Engine = er.EngineFor(e).String()
	}
}

// MatMul records the layer's engine and runs the wrapped backend's product.
func (rc *recorder) MatMul(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, m, k, n int, x ring.Tensor) error {
	rc.noteEngine(e)
	return rc.Backend.MatMul(ctx, e, dst, w, m, k, n, x)
}

// convRecorder is a recorder over a backend with its own convolution (vm.ConvBackend): the VM
// finds the interface by a type assertion, so the wrapper must expose it too.
type convRecorder struct {
	*recorder
	conv vm.ConvBackend
}

// UseConv2D asks the wrapped backend.
func (c convRecorder) UseConv2D(g ring.ConvGeom, e fixed.Engine) bool { return c.conv.UseConv2D(g, e) }

// Conv2D records the layer's engine and runs the wrapped backend's convolution.
func (c convRecorder) Conv2D(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, x ring.Tensor, g ring.ConvGeom) error {
	c.noteEngine(e)
	return c.conv.Conv2D(ctx, e, dst, w, x, g)
}

// ReLULow runs the wrapped backend's low-bit ReLU (vm.LowReLUBackend), or its ReLU when it has
// none (the same result).
func (rc *recorder) ReLULow(ctx context.Context, dst, x ring.Tensor, bits int) error {
	if lb, ok := rc.Backend.(vm.LowReLUBackend); ok {
		return lb.ReLULow(ctx, dst, x, bits)
	}
	return rc.Backend.ReLU(ctx, dst, x)
}

// UseReLUTrunc asks the wrapped backend whether it fuses the ReLU and truncation
// (vm.ReLUTruncBackend); false when it cannot.
func (rc *recorder) UseReLUTrunc(bits, s int) bool {
	fb, ok := rc.Backend.(vm.ReLUTruncBackend)
	return ok && fb.UseReLUTrunc(bits, s)
}

// ReLUTrunc runs the wrapped backend's fused ReLU and truncation and names the ReLU's layer
// "relu+trunc" (the fused layer's time and traffic are the ReLU's row; the truncation's row,
// which then runs nothing, stays at zero).
func (rc *recorder) ReLUTrunc(ctx context.Context, dst, x ring.Tensor, bits, s int) error {
	fb, ok := rc.Backend.(vm.ReLUTruncBackend)
	if !ok {
		return fmt.Errorf("internal error: ReLUTrunc on a backend (%T) without it", rc.Backend)
	}
	if rc.cur < len(rc.layers) {
		rc.layers[rc.cur].Op = ReLUTruncOp
	}
	return fb.ReLUTrunc(ctx, dst, x, bits, s)
}

// ReLUTruncOp is the op name of a ReLU fused with its truncation in a report's layers.
const ReLUTruncOp = "relu+trunc"

// mathFuncs forwards the wrapped backend's math functions (vm.MathBackend).
type mathFuncs struct{ math vm.MathBackend }

// Math runs the wrapped backend's math function.
func (x mathFuncs) Math(ctx context.Context, f fxmath.Func, dst, in ring.Tensor, scale int) error {
	return x.math.Math(ctx, f, dst, in, scale)
}

// extras forwards the math functions and the products of two shared matrices of a wrapped
// backend that implements both (vm.MathBackend, vm.SharedMatMulBackend), as every secure
// backend does.
type extras struct {
	mathFuncs
	shared vm.SharedMatMulBackend
}

// MatMulShared runs the wrapped backend's product of two shared matrices.
func (x extras) MatMulShared(ctx context.Context, e fixed.Engine, dst, a, b ring.Tensor, batch, m, k, n int) error {
	return x.shared.MatMulShared(ctx, e, dst, a, b, batch, m, k, n)
}

// The recorder as the VM sees it: one type per combination of the optional interfaces the
// wrapped backend has, since the VM finds them by type assertion.
type (
	mathRecorder struct {
		*recorder
		mathFuncs
	}
	extrasRecorder struct {
		*recorder
		extras
	}
	convMathRecorder struct {
		convRecorder
		mathFuncs
	}
	fullRecorder struct {
		convRecorder
		extras
	}
)

// backend returns the recorder as the vm.Backend to run on, exposing the optional interfaces
// of the wrapped backend: its convolution, its math functions, and its products of two shared
// matrices (only beside the math functions: no backend has them alone).
func (rc *recorder) backend() vm.Backend {
	cb, conv := rc.Backend.(vm.ConvBackend)
	mb, math := rc.Backend.(vm.MathBackend)
	sb, shared := rc.Backend.(vm.SharedMatMulBackend)
	cr := convRecorder{recorder: rc, conv: cb}
	switch {
	case conv && math && shared:
		return fullRecorder{cr, extras{mathFuncs{mb}, sb}}
	case conv && math:
		return convMathRecorder{cr, mathFuncs{mb}}
	case conv:
		return cr
	case math && shared:
		return extrasRecorder{rc, extras{mathFuncs{mb}, sb}}
	case math:
		return mathRecorder{rc, mathFuncs{mb}}
	}
	return rc
}

// start begins the accounting of instruction 0 of inference k (the phases of every inference
// share their labels, so their traffic adds up).
func (rc *recorder) start(k int) {
	rc.k = k
	rc.cur = 0
	rc.mark = time.Now()
	if len(rc.labels) > 0 {
		setPhase(rc.conns, rc.labels[0])
		rc.started(0)
	}
}

// started tells the Running hook that instruction i of the current inference starts.
func (rc *recorder) started(i int) {
	if rc.onStart != nil && i < len(rc.prog.Instrs) {
		rc.onStart(rc.k, rc.batch, i, rc.prog.Instrs[i])
	}
}

// finish closes instruction i and opens instruction i+1.
func (rc *recorder) finish(i int) {
	now := time.Now()
	rc.layers[i].MS += ms(now.Sub(rc.mark))
	rc.peak = max(rc.peak, peakRSS())
	rc.layers[i].PeakRSS = max(rc.layers[i].PeakRSS, rc.peak)
	rc.mark = now
	rc.cur = i + 1
	if rc.cur < len(rc.labels) {
		setPhase(rc.conns, rc.labels[rc.cur])
	} else {
		setPhase(rc.conns, "after run")
	}
	if rc.progress != nil {
		n := len(rc.layers)
		rc.progress(rc.k*n+i+1, rc.batch*n, rc.prog.Instrs[i])
	}
	rc.started(rc.cur)
}

// observe is the Machine's Observe hook.
func (rc *recorder) observe(tensor int, _ ring.Tensor) { rc.finish(rc.producer[tensor]) }

// Reveal is the one backend call of an output instruction.
func (rc *recorder) Reveal(ctx context.Context, to int, x ring.Tensor) (bool, error) {
	j := rc.cur
	for j < len(rc.prog.Instrs) && rc.prog.Instrs[j].Op != fixed.OpOutput {
		j++
	}
	if j != rc.cur && j < len(rc.labels) {
		rc.cur = j
		setPhase(rc.conns, rc.labels[j])
		rc.started(j)
	}
	ok, err := rc.Backend.Reveal(ctx, to, x)
	if err == nil && j < len(rc.layers) {
		rc.finish(j)
	}
	return ok, err
}

// result returns the layers with their traffic.
func (rc *recorder) result() []Layer {
	for i := range rc.layers {
		rc.layers[i].Traffic = trafficOf(phaseStats(rc.conns, rc.labels[i]))
	}
	return rc.layers
}

// FHEAccounter is a backend of the fhe mode that accounts for its session (Report.FHE).
type FHEAccounter interface {
	FHEAccount() *FHEAccount
}

// FHEAccount is Report.FHE: what one party of an fhe session measured, cumulative over the
// session's round trips. The client fills the key, encryption and decryption fields; the server
// the evaluation ones; both the bytes.
type FHEAccount struct {
	Params        string     `json:"params"`
	Period        int        `json:"elements_per_lane"`
	Lanes         int        `json:"lanes_per_ciphertext"`
	Group         int        `json:"inferences_per_round_trip"`
	RoundTrips    int        `json:"round_trips"`
	Rotations     []int      `json:"rotation_keys,omitempty"`
	KeyBytes      int64      `json:"key_bytes"`
	UploadBytes   int64      `json:"upload_bytes"`
	DownloadBytes int64      `json:"download_bytes"`
	KeygenMS      float64    `json:"keygen_ms,omitempty"`
	EncryptMS     float64    `json:"encrypt_ms,omitempty"`
	DecryptMS     float64    `json:"decrypt_ms,omitempty"`
	EvalMS        float64    `json:"eval_ms,omitempty"`
	Ops           FHEOps     `json:"ops"`
	Layers        []FHELayer `json:"layers,omitempty"` // the server's, of the last round trip
}

// FHEOps counts homomorphic operations.
type FHEOps struct {
	Rotations int `json:"rotations"`
	PlainMuls int `json:"plaintext_products"`
	CtMuls    int `json:"ciphertext_products"`
	Rescales  int `json:"rescalings"`
}

// FHELayer is the server's evaluation of one instruction (a composed linear map, a square).
type FHELayer struct {
	Op     string  `json:"op"`
	Source string  `json:"source"`
	MS     float64 `json:"ms"`
	Ops    FHEOps  `json:"ops"`
}
