package main

// scirun plot: per-layer time, traffic and rounds of a secure run drawn from its JSON report, or
// two reports side by side.

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/cryptflow-go/cryptflow/internal/atomicfile"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/serve"
)

const plotUsage = `usage:
  scirun plot REPORT.json -o FILE.png [--session N]
  scirun plot A.json B.json -o FILE.png [--session N]    (compare two runs)

Draws a secure run from the JSON report that --report wrote, in three panels that share the x
axis: wall-clock time (stacked by kind: set-up, linear layers, ReLU, truncation, pooling, other),
traffic (bytes this party sent and received, side by side) and rounds (this party's flights). The x
axis has one slot per model layer, named by its node (instructions from one node are summed), after
a first slot for the handshake and backend set-up. The title gives the program's name, backend,
ring and the totals; for a batch report the bars sum over the inferences, which the axis labels and
the title (with the per-inference averages) say.

With two reports, the panels show A and B side by side per layer (layers matched by name; per
inference when the reports ran different numbers of inferences) and the title gives both totals
and their ratio. A --serve report has one JSON line per session: --session picks one (default the
first). The output format follows the extension: .png, .svg or .pdf.

Flags:
`

// layerKinds are the colours of the time panel, in legend order.
var layerKinds = []struct {
	name  string
	color color.RGBA
}{
	{"linear", color.RGBA{0x1f, 0x77, 0xb4, 0xff}},
	{"ReLU", color.RGBA{0xff, 0x7f, 0x0e, 0xff}},
	{"truncation", color.RGBA{0x2c, 0xa0, 0x2c, 0xff}},
	{"pooling", color.RGBA{0xd6, 0x27, 0x28, 0xff}},
	{"other", color.RGBA{0x7f, 0x7f, 0x7f, 0xff}},
	{"set-up", color.RGBA{0x30, 0x30, 0x30, 0xff}},
	{"offline", color.RGBA{0x94, 0x67, 0xbd, 0xff}},
}

// numKinds is len(layerKinds); kindSetup is the index of the set-up kind in it.
const numKinds = 7

// kindSetup is the set-up kind.
const kindSetup = 5

// kindOffline is the offline phase's kind (Report.Offline: made before the inputs are used).
const kindOffline = 6

// layerKind maps an opcode name (fixed.Opcode.String) to an index into layerKinds.
func layerKind(op string) int {
	switch op {
	case "matmul", "conv", "mulconst", "mul":
		return 0
	case "relu", "relu+trunc": // serve.ReLUTruncOp: a ReLU fused with its truncation
		return 1
	case "trunc":
		return 2
	case "maxpool", "sumpool", "div", "argmax":
		return 3
	}
	return 4
}

func runPlot(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("scirun plot", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), plotUsage)
		fs.PrintDefaults()
	}
	out := fs.String("o", "", "write the plot to `FILE` (.png, .svg or .pdf)")
	session := fs.Int("session", 1, "with a --serve report (JSON lines): plot session `N` (from 1)")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 && len(pos) != 2 {
		return cli.Usagef("plot: want one report file, or two to compare, got %d arguments", len(pos))
	}
	if *out == "" {
		return cli.Usagef("plot: -o FILE is required")
	}
	ext := strings.ToLower(filepath.Ext(*out))
	if ext != ".png" && ext != ".svg" && ext != ".pdf" {
		return cli.Usagef("plot: -o %s: the extension must be .png, .svg or .pdf", *out)
	}
	if *session < 1 {
		return cli.Usagef("plot: --session %d: want 1 or more", *session)
	}
	var reps []*serve.Report
	for _, path := range pos {
		rep, err := loadReport(path, *session)
		if err != nil {
			return err
		}
		reps = append(reps, rep)
	}
	if len(reps) == 1 {
		g := groupLayers(reps[0], 1)
		if err := plotReport(reps[0], *out); err != nil {
			return fmt.Errorf("plot %s: %w", *out, err)
		}
		fmt.Fprintf(stdout, "wrote %s (%d layers from %d instructions)\n", *out, len(g)-1, len(reps[0].Layers))
		return nil
	}
	if err := plotCompare(reps[0], reps[1], *out); err != nil {
		return fmt.Errorf("plot %s: %w", *out, err)
	}
	fmt.Fprintf(stdout, "wrote %s (%s vs %s)\n", *out, reportName(reps[0]), reportName(reps[1]))
	return nil
}

// loadReport reads the n-th report (from 1) of a file holding one JSON report, or JSON lines.
func loadReport(path string, n int) (*serve.Report, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(bufio.NewReader(f))
	for i := 1; ; i++ {
		var r serve.Report
		if err := dec.Decode(&r); err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("plot: %s holds %d reports, not %d", path, i-1, n)
			}
			return nil, fmt.Errorf("plot: %s is not a scirun JSON report: %w", path, err)
		}
		if i == n {
			if len(r.Layers) == 0 {
				return nil, fmt.Errorf("plot: report %d of %s has no layers (a failed session or a server's idle report?)", n, path)
			}
			return &r, nil
		}
	}
}

// layerGroup is one slot of the x axis: the handshake and set-up, or the consecutive instructions
// of one model node.
type layerGroup struct {
	label  string
	ms     [numKinds]float64 // time by kind
	sent   float64           // bytes
	recv   float64
	rounds float64
}

func (g *layerGroup) totalMS() float64 {
	t := 0.0
	for _, v := range g.ms {
		t += v
	}
	return t
}

// groupLayers turns a report into x-axis slots: first the handshake and backend set-up, then one
// slot per run of consecutive instructions with the same source node (an instruction without one
// is its own slot, named by its op). Values are divided by div (1, or the number of inferences
// for a per-inference comparison).
func groupLayers(r *serve.Report, div float64) []layerGroup {
	setup := layerGroup{label: "set-up"}
	setup.ms[kindSetup] = (r.HandshakeMS + r.SetupMS) / div
	setup.sent = float64(r.Handshake.BytesSent+r.Setup.BytesSent) / div
	setup.recv = float64(r.Handshake.BytesRecv+r.Setup.BytesRecv) / div
	setup.rounds = float64(r.Handshake.Rounds+r.Setup.Rounds) / div
	out := []layerGroup{setup}
	if o := r.Offline; o != nil {
		off := layerGroup{label: "offline"}
		off.ms[kindOffline] = o.OfflineMS / div
		off.sent, off.recv = float64(o.OfflineTraffic.BytesSent)/div, float64(o.OfflineTraffic.BytesRecv)/div
		off.rounds = float64(o.OfflineTraffic.Rounds) / div
		out = append(out, off)
	}
	first := len(out) // the first layer slot
	var ops []string  // the ops of the slot being filled
	prev := "\x00"
	for _, l := range r.Layers {
		if l.Source == "" || l.Source != prev {
			if len(out) > first {
				out[len(out)-1].label = slotLabel(prev, ops)
			}
			out = append(out, layerGroup{})
			ops = nil
		}
		prev = l.Source
		ops = append(ops, l.Op)
		g := &out[len(out)-1]
		g.ms[layerKind(l.Op)] += l.MS / div
		g.sent += float64(l.BytesSent) / div
		g.recv += float64(l.BytesRecv) / div
		g.rounds += float64(l.Rounds) / div
	}
	if len(out) > first {
		out[len(out)-1].label = slotLabel(prev, ops)
	}
	return out
}

// slotLabel names a slot by its node (clipped to its last 24 characters), or by its op when the
// instruction records no node.
func slotLabel(source string, ops []string) string {
	if src := strings.TrimPrefix(source, "/"); src != "" {
		return clipLabel(src, 24)
	}
	return ops[0]
}

func clipLabel(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return "…" + string(r[len(r)-n+1:])
}

// reportName is the program's name in a report: its own name, else the source model's, else the
// start of its ID.
func reportName(r *serve.Report) string {
	switch {
	case r.Program != "":
		return r.Program
	case r.Model != "":
		return r.Model
	}
	return r.ProgramID[:min(16, len(r.ProgramID))]
}

// batchNote is the y-axis note of a batch report.
func batchNote(r *serve.Report) string {
	if r.Inferences > 1 {
		return fmt.Sprintf(", Σ %d inferences", r.Inferences)
	}
	return ""
}

// reportTitle is the title of a one-report plot: the program, its configuration and the totals.
func reportTitle(r *serve.Report) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s — %s, backend %s, %s scale %d, %d stream(s)", reportName(r), r.Role, r.Backend, r.Ring, r.Scale, r.Streams)
	if r.Net != "" {
		fmt.Fprintf(&b, ", emulated %s", r.Net)
	}
	fmt.Fprintf(&b, "\ntotal %.2f s: sent %s, received %s, %d rounds; set-up %.0f ms, %s",
		r.TotalMS/1000, serve.FormatBytes(r.Total.BytesSent), serve.FormatBytes(r.Total.BytesRecv), r.Total.Rounds,
		r.HandshakeMS+r.SetupMS, serve.FormatBytes(r.Handshake.BytesSent+r.Handshake.BytesRecv+r.Setup.BytesSent+r.Setup.BytesRecv))
	if o := r.Offline; o != nil {
		fmt.Fprintf(&b, "\noffline (before the inputs are used) %.0f ms, %s; online %.0f ms, %s", o.OfflineMS, serve.FormatBytes(o.OfflineBytes),
			o.OnlineMS, serve.FormatBytes(o.OnlineBytes))
	}
	if r.Inferences > 1 {
		fmt.Fprintf(&b, "\nbatch of %d inferences, bars summed over them; %.2f inferences/s", r.Inferences, r.InferencesPerSec)
		if r.PerInference != nil {
			fmt.Fprintf(&b, "; per inference %.0f ms, sent %s, received %s, %d rounds", r.PerInferenceMS,
				serve.FormatBytes(r.PerInference.BytesSent), serve.FormatBytes(r.PerInference.BytesRecv), r.PerInference.Rounds)
		}
	}
	return b.String()
}

// plotReport draws the three panels of one report into file.
func plotReport(r *serve.Report, file string) error {
	groups := groupLayers(r, 1)
	labels := make([]string, len(groups))
	for i, g := range groups {
		labels[i] = g.label
	}
	note := batchNote(r)
	barW := slotWidth(len(groups)) * 0.8

	timeP := newPanel("time (ms"+note+")", labels, false)
	timeP.Title.Text = reportTitle(r)
	var below *plotter.BarChart
	stackMax := make([]float64, len(groups))
	for k, kind := range layerKinds {
		vals := make(plotter.Values, len(groups))
		any := false
		for i, g := range groups {
			vals[i] = g.ms[k]
			stackMax[i] += g.ms[k]
			any = any || vals[i] > 0
		}
		if !any {
			continue
		}
		bars, err := bar(vals, barW, 0, kind.color)
		if err != nil {
			return err
		}
		if below != nil {
			bars.StackOn(below)
		}
		below = bars
		timeP.Add(bars)
		timeP.Legend.Add(kind.name, bars)
	}
	setYRange(timeP, stackMax)

	trafficP := newPanel("traffic (MiB"+note+")", labels, false)
	sent := make(plotter.Values, len(groups))
	recv := make(plotter.Values, len(groups))
	rounds := make(plotter.Values, len(groups))
	for i, g := range groups {
		sent[i], recv[i], rounds[i] = g.sent/(1<<20), g.recv/(1<<20), g.rounds
	}
	for j, s := range []struct {
		name string
		vals plotter.Values
		c    color.RGBA
	}{{"sent", sent, color.RGBA{0x08, 0x45, 0x94, 0xff}}, {"received", recv, color.RGBA{0x6b, 0xae, 0xd6, 0xff}}} {
		bars, err := bar(s.vals, barW/2, (vg.Length(j)-0.5)*barW/2, s.c)
		if err != nil {
			return err
		}
		trafficP.Add(bars)
		trafficP.Legend.Add(s.name+" by this party ("+r.Role+")", bars)
	}
	setYRange(trafficP, append(append([]float64{}, sent...), recv...))

	roundsP := newPanel("rounds (flights"+note+")", labels, true)
	rb, err := bar(rounds, barW, 0, color.RGBA{0x75, 0x6b, 0xb1, 0xff})
	if err != nil {
		return err
	}
	roundsP.Add(rb)
	setYRange(roundsP, rounds)
	return drawPanels(file, len(groups), timeP, trafficP, roundsP)
}

// plotCompare draws two reports side by side per layer into file.
func plotCompare(a, b *serve.Report, file string) error {
	divA, divB, note := 1.0, 1.0, ""
	switch {
	case max(a.Inferences, 1) != max(b.Inferences, 1):
		divA, divB, note = float64(max(a.Inferences, 1)), float64(max(b.Inferences, 1)), ", per inference"
	case a.Inferences > 1:
		note = batchNote(a)
	}
	ga, gb := groupLayers(a, divA), groupLayers(b, divB)
	// Match the slots by label (the k-th occurrence of a label with the k-th): A's order, then
	// the slots only B has.
	type key struct {
		label string
		n     int
	}
	keys := func(gs []layerGroup) []key {
		seen := map[string]int{}
		out := make([]key, len(gs))
		for i, g := range gs {
			out[i] = key{g.label, seen[g.label]}
			seen[g.label]++
		}
		return out
	}
	ka, kb := keys(ga), keys(gb)
	index := map[key]int{}
	var labels []string
	for _, k := range append(append([]key{}, ka...), kb...) {
		if _, ok := index[k]; !ok {
			index[k] = len(labels)
			labels = append(labels, k.label)
		}
	}
	n := len(labels)
	type series struct {
		name, tag          string
		ms, sent, recv, rd plotter.Values
		c, light           color.RGBA
	}
	mk := func(r *serve.Report, gs []layerGroup, ks []key, c, light color.RGBA, tag string) series {
		s := series{name: tag + ": " + reportName(r) + " (" + r.Backend + ")", tag: tag, c: c, light: light,
			ms: make(plotter.Values, n), sent: make(plotter.Values, n), recv: make(plotter.Values, n), rd: make(plotter.Values, n)}
		for i, g := range gs {
			j := index[ks[i]]
			s.ms[j], s.sent[j], s.recv[j], s.rd[j] = g.totalMS(), g.sent/(1<<20), g.recv/(1<<20), g.rounds
		}
		return s
	}
	ss := []series{
		mk(a, ga, ka, color.RGBA{0x1f, 0x77, 0xb4, 0xff}, color.RGBA{0x9e, 0xc9, 0xe8, 0xff}, "A"),
		mk(b, gb, kb, color.RGBA{0xe6, 0x55, 0x0d, 0xff}, color.RGBA{0xfd, 0xbe, 0x85, 0xff}, "B"),
	}
	barW := slotWidth(n) * 0.8 / 2
	timeP := newPanel("time (ms"+note+")", labels, false)
	timeP.Title.Text = compareTitle(a, b)
	trafficP := newPanel("traffic (MiB"+note+")", labels, false)
	roundsP := newPanel("rounds (flights"+note+")", labels, true)
	var msAll, trAll, rdAll []float64
	for j, s := range ss {
		off := (vg.Length(j) - 0.5) * barW
		tb, err := bar(s.ms, barW, off, s.c)
		if err != nil {
			return err
		}
		timeP.Add(tb)
		timeP.Legend.Add(s.name, tb)
		sb, err := bar(s.sent, barW, off, s.c)
		if err != nil {
			return err
		}
		rb, err := bar(s.recv, barW, off, s.light)
		if err != nil {
			return err
		}
		rb.StackOn(sb)
		trafficP.Add(sb, rb)
		trafficP.Legend.Add(s.tag+" sent", sb)
		trafficP.Legend.Add(s.tag+" received", rb)
		db, err := bar(s.rd, barW, off, s.c)
		if err != nil {
			return err
		}
		roundsP.Add(db)
		msAll = append(msAll, s.ms...)
		rdAll = append(rdAll, s.rd...)
		for i := range s.sent {
			trAll = append(trAll, s.sent[i]+s.recv[i])
		}
	}
	setYRange(timeP, msAll)
	setYRange(trafficP, trAll)
	setYRange(roundsP, rdAll)
	return drawPanels(file, n, timeP, trafficP, roundsP)
}

// compareTitle gives both programs with their totals and the ratios B/A.
func compareTitle(a, b *serve.Report) string {
	line := func(tag string, r *serve.Report) string {
		s := fmt.Sprintf("%s: %s — %s, %s, %s: %.2f s, sent %s, received %s, %d rounds", tag, reportName(r), r.Role, r.Backend, r.Ring,
			r.TotalMS/1000, serve.FormatBytes(r.Total.BytesSent), serve.FormatBytes(r.Total.BytesRecv), r.Total.Rounds)
		if r.Inferences > 1 {
			s += fmt.Sprintf(" (batch of %d)", r.Inferences)
		}
		return s
	}
	ratio := func(x, y float64) string {
		if x <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f×", y/x)
	}
	perInf := func(r *serve.Report) float64 { return float64(max(r.Inferences, 1)) }
	ta, tb := a.TotalMS/perInf(a), b.TotalMS/perInf(b)
	ba := float64(a.Total.BytesSent+a.Total.BytesRecv) / perInf(a)
	bb := float64(b.Total.BytesSent+b.Total.BytesRecv) / perInf(b)
	return line("A", a) + "\n" + line("B", b) + fmt.Sprintf("\nB / A per inference: time %s, traffic %s, rounds %s",
		ratio(ta, tb), ratio(ba, bb), ratio(float64(a.Total.Rounds)/perInf(a), float64(b.Total.Rounds)/perInf(b)))
}

// slotWidth is the width of one x slot: the canvas width over the slots.
func slotWidth(n int) vg.Length {
	w, _ := canvasSize(n)
	return (w - 4*vg.Centimeter) / vg.Length(n+1)
}

// canvasSize grows the canvas with the number of slots so that every label fits.
func canvasSize(n int) (vg.Length, vg.Length) {
	w := vg.Length(n)*0.55*vg.Centimeter + 6*vg.Centimeter
	return min(max(w, 28*vg.Centimeter), 150*vg.Centimeter), 30 * vg.Centimeter
}

// newPanel makes one panel with the slots along x: labelled (rotated) only in the bottom panel.
func newPanel(ylabel string, labels []string, bottom bool) *plot.Plot {
	p := plot.New()
	p.Y.Label.Text = ylabel
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Tick.Marker = niceTicks{}
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Add(plotter.NewGrid())
	p.X.Min, p.X.Max = -0.6, float64(len(labels))-0.4
	ticks := make([]plot.Tick, len(labels))
	for i, l := range labels {
		ticks[i] = plot.Tick{Value: float64(i)}
		if bottom {
			ticks[i].Label = l
		}
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Tick.Label.Rotation = math.Pi / 2
	p.X.Tick.Label.XAlign = draw.XRight
	p.X.Tick.Label.YAlign = draw.YCenter
	p.X.Tick.Label.Font.Size = vg.Points(9)
	if bottom {
		p.X.Label.Text = "layer (model node; the first slot is the handshake and backend set-up)"
	}
	return p
}

// setYRange makes the y axis run from 0 to just above the tallest bar.
func setYRange(p *plot.Plot, vals []float64) {
	hi := 0.0
	for _, v := range vals {
		hi = max(hi, v)
	}
	if hi <= 0 {
		hi = 1
	}
	p.Y.Min, p.Y.Max = 0, hi*1.08
}

func bar(vals plotter.Values, w, offset vg.Length, c color.Color) (*plotter.BarChart, error) {
	b, err := plotter.NewBarChart(vals, max(w, 0.5))
	if err != nil {
		return nil, err
	}
	b.Color = c
	b.LineStyle.Width = 0
	b.Offset = offset
	return b, nil
}

// drawPanels stacks the panels, aligned, into file.
func drawPanels(file string, slots int, panels ...*plot.Plot) error {
	w, h := canvasSize(slots)
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(file)), ".")
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: len(panels), Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4, PadY: vg.Millimeter * 4}
	grid := make([][]*plot.Plot, len(panels))
	for i, p := range panels {
		grid[i] = []*plot.Plot{p}
	}
	canvases := plot.Align(grid, tiles, draw.New(c))
	for i, p := range panels {
		p.Draw(canvases[i][0])
	}
	return atomicfile.Write(file, 0o644, func(w io.Writer) error { _, err := c.WriteTo(w); return err })
}

// niceTicks marks 4 to 7 round values (1, 2, 2.5 or 5 times a power of ten) over the axis range, with
// minor ticks between them.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return []plot.Tick{{Value: lo, Label: formatTick(lo, 1)}}
	}
	step := niceStep((hi - lo) / 6)
	var out []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi+step*1e-9; v += step {
		out = append(out, plot.Tick{Value: v, Label: formatTick(v, step)})
		if m := v + step/2; m < hi {
			out = append(out, plot.Tick{Value: m})
		}
	}
	return out
}

// niceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= x {
			return m * p
		}
	}
	return 10 * p
}

func formatTick(v, step float64) string {
	if math.Abs(v) < step*1e-9 {
		return "0"
	}
	// As many decimals as the step needs (2.5 needs one, 0.25 two).
	digits := 0
	for scaled := step; digits < 12 && math.Abs(scaled-math.Round(scaled)) > 1e-6*scaled; scaled *= 10 {
		digits++
	}
	return fmt.Sprintf("%.*f", digits, v)
}
