package main

import (
	"bytes"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/serve"
)

func TestLayerKind(t *testing.T) {
	for op, want := range map[string]string{"conv": "linear", "matmul": "linear", "relu": "ReLU",
		"trunc": "truncation", "maxpool": "pooling", "div": "pooling", "argmax": "pooling", "reshape": "other"} {
		if got := layerKinds[layerKind(op)].name; got != want {
			t.Errorf("%s: %s, want %s", op, got, want)
		}
	}
}

func TestPlotReport(t *testing.T) {
	dir := t.TempDir()
	rep := &serve.Report{Model: "m", Backend: "sciot", Ring: "Z_2^32", Role: "client", ProgramID: "ab",
		TotalMS: 1234, Layers: []serve.Layer{
			{Index: 0, Op: "conv", MS: 10, Traffic: serve.Traffic{BytesSent: 1 << 20, BytesRecv: 3 << 20}},
			{Index: 1, Op: "relu", MS: 4, Traffic: serve.Traffic{BytesSent: 1 << 18}},
			{Index: 2, Op: "trunc", MS: 2},
			{Index: 3, Op: "maxpool", MS: 3},
			{Index: 4, Op: "reshape"},
		}}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	// Two sessions as JSON lines, as --serve writes them.
	in := filepath.Join(dir, "r.json")
	if err := os.WriteFile(in, append(append([]byte{}, b.Bytes()...), b.Bytes()...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.png")
	var stdout bytes.Buffer
	if err := runPlot([]string{in, "-o", out, "--session", "2"}, &stdout); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 300 {
		t.Errorf("image of %v", b)
	}
	if !strings.Contains(stdout.String(), "5 layers") {
		t.Errorf("stdout %q", stdout.String())
	}
	svg := filepath.Join(dir, "r.svg")
	if err := runPlot([]string{in, "-o", svg}, &stdout); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{in}, "-o FILE is required"},
		{[]string{in, "-o", filepath.Join(dir, "x.gif")}, "extension"},
		{[]string{in, "-o", out, "--session", "3"}, "holds 2 reports"},
		{[]string{filepath.Join(dir, "missing.json"), "-o", out}, "no such file"},
		{[]string{out, "-o", filepath.Join(dir, "y.png")}, "not a scirun JSON report"},
	} {
		if err := runPlot(c.args, &stdout); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// batchReport is a two-inference client report of a small program, as --report writes it.
func batchReport() *serve.Report {
	return &serve.Report{Model: "model.onnx", Program: "mnist-small", Backend: "auto", Ring: "Z_2^19", Role: "client",
		ProgramID: "ab", Scale: 6, Streams: 2, TotalMS: 900, HandshakeMS: 1, SetupMS: 99, RunMS: 800,
		Handshake: serve.Traffic{BytesSent: 100, BytesRecv: 100, Rounds: 2}, Setup: serve.Traffic{BytesSent: 5000, BytesRecv: 300, Rounds: 9},
		Total:      serve.Traffic{BytesSent: 9 << 20, BytesRecv: 5 << 20, Rounds: 111},
		Inferences: 2, PerInferenceMS: 400, PerInference: &serve.Traffic{BytesSent: 4 << 20, BytesRecv: 2 << 20, Rounds: 50}, InferencesPerSec: 2.2,
		Layers: []serve.Layer{
			{Index: 0, Op: "input", Source: "input input", MS: 1},
			{Index: 1, Op: "conv", Source: "/conv1/Conv", MS: 300, Engine: "he", Traffic: serve.Traffic{BytesSent: 1 << 20, BytesRecv: 3 << 20, Rounds: 4}},
			{Index: 2, Op: "addconst", Source: "/conv1/Conv", MS: 1},
			{Index: 3, Op: "relu", Source: "/Relu", MS: 200, Traffic: serve.Traffic{BytesSent: 2 << 20, BytesRecv: 2 << 20, Rounds: 40}},
			{Index: 4, Op: "trunc", Source: "/Relu", MS: 100, Traffic: serve.Traffic{BytesSent: 1 << 20, BytesRecv: 1 << 20, Rounds: 24}},
			{Index: 5, Op: "trunc", MS: 50, Traffic: serve.Traffic{Rounds: 20}},
			{Index: 6, Op: "output", Source: "output logits", MS: 1},
		}}
}

// TestPlotLayersNamed (issue 23): the x axis has one slot per model node, named by it (not the
// instruction index), after a set-up slot holding the handshake and backend set-up; the values
// of a node's instructions add up; the title names the program, not its source "model.onnx", and
// says a batch's bars are summed over its inferences.
func TestPlotLayersNamed(t *testing.T) {
	r := batchReport()
	g := groupLayers(r, 1)
	var labels []string
	for _, s := range g {
		labels = append(labels, s.label)
	}
	if want := []string{"set-up", "input input", "conv1/Conv", "Relu", "trunc", "output logits"}; !slices.Equal(labels, want) {
		t.Fatalf("slots %q, want %q", labels, want)
	}
	if g[0].ms[kindSetup] != 100 || g[0].sent != 5100 || g[0].recv != 400 || g[0].rounds != 11 {
		t.Errorf("set-up slot %+v", g[0])
	}
	if g[3].totalMS() != 300 || g[3].ms[layerKind("relu")] != 200 || g[3].ms[layerKind("trunc")] != 100 || g[3].sent != 3<<20 || g[3].rounds != 64 {
		t.Errorf("Relu slot %+v", g[3])
	}
	title := reportTitle(r)
	for _, want := range []string{"mnist-small", "batch of 2 inferences, bars summed over them", "per inference 400 ms", "set-up 100 ms", "sent 9.00 MiB, received 5.00 MiB, 111 rounds"} {
		if !strings.Contains(title, want) {
			t.Errorf("title %q lacks %q", title, want)
		}
	}
	if strings.Contains(title, "model.onnx") {
		t.Errorf("title %q names the source model instead of the program", title)
	}
	r.Program = ""
	if !strings.Contains(reportTitle(r), "model.onnx") {
		t.Error("a report without a program name: the title does not fall back to the model")
	}
	p := newPanel("time", labels, true)
	ticks := p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max)
	for i, tk := range ticks {
		if tk.Label != labels[i] {
			t.Errorf("x tick %d labelled %q, want %q", i, tk.Label, labels[i])
		}
	}
	if up := newPanel("time", labels, false); up.X.Tick.Marker.Ticks(0, 1)[1].Label != "" {
		t.Error("an upper panel repeats the x labels")
	}
}

// TestPlotTicksAndRange (issue 23): every y axis has more than two labelled ticks and a range that
// holds the tallest bar (a stacked bar: the sum of its kinds).
func TestPlotTicksAndRange(t *testing.T) {
	for _, hi := range []float64{0.003, 0.9, 1, 5.9, 7, 13, 99, 150, 679, 1234, 4.2e6} {
		p := newPanel("y", []string{"a", "b"}, true)
		setYRange(p, []float64{hi / 3, hi})
		if p.Y.Min != 0 || p.Y.Max < hi {
			t.Errorf("range [%g, %g] does not hold %g", p.Y.Min, p.Y.Max, hi)
		}
		n := 0
		for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
			if tk.Label != "" {
				n++
				if tk.Value > p.Y.Max || tk.Value < 0 {
					t.Errorf("tick %g outside [0, %g]", tk.Value, p.Y.Max)
				}
			}
		}
		if n < 4 || n > 8 {
			t.Errorf("max %g: %d labelled ticks", hi, n)
		}
	}
	for _, c := range []struct {
		v, step float64
		want    string
	}{{0.25, 0.05, "0.25"}, {7.5, 2.5, "7.5"}, {1250, 250, "1250"}, {0.0075, 0.0025, "0.0075"}, {0, 2.5, "0"}} {
		if got := formatTick(c.v, c.step); got != c.want {
			t.Errorf("formatTick(%g, %g) = %q, want %q", c.v, c.step, got, c.want)
		}
	}
}

// TestPlotCompare (issue 23): scirun plot A.json B.json -o cmp.png draws both runs; reports with
// different numbers of inferences are compared per inference; the title gives the ratios.
func TestPlotCompare(t *testing.T) {
	dir := t.TempDir()
	a := batchReport()
	b := batchReport()
	b.Program, b.Backend, b.Inferences, b.TotalMS = "other", "sciot", 1, 800
	b.Layers = append(b.Layers[:5:5], serve.Layer{Index: 5, Op: "maxpool", Source: "/Pool", MS: 10})
	var files []string
	for i, r := range []*serve.Report{a, b} {
		var buf bytes.Buffer
		if err := r.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(dir, fmt.Sprintf("%d.json", i))
		if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	out := filepath.Join(dir, "cmp.png")
	var stdout bytes.Buffer
	if err := runPlot([]string{files[0], files[1], "-o", out}, &stdout); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "mnist-small vs other") {
		t.Errorf("stdout %q", stdout.String())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	title := compareTitle(a, b)
	for _, want := range []string{"A: mnist-small", "B: other", "(batch of 2)", "B / A per inference: time 1.78×"} {
		if !strings.Contains(title, want) {
			t.Errorf("title %q lacks %q", title, want)
		}
	}
	if err := runPlot([]string{files[0], files[1], files[0], "-o", out}, &stdout); err == nil || !strings.Contains(err.Error(), "two to compare") {
		t.Errorf("three reports: %v", err)
	}
}

// TestPlotOffline (issue 25): a report with an offline phase gets an "offline" slot after the
// set-up, with its time, bytes and flights, and the title gives the offline/online split.
func TestPlotOffline(t *testing.T) {
	r := batchReport()
	r.Offline = &serve.Offline{OfflineMS: 120, OnlineMS: 680, OfflineBytes: 3 << 20, OnlineBytes: 11 << 20,
		OfflineTraffic: serve.Traffic{BytesSent: 2 << 20, BytesRecv: 1 << 20, Rounds: 3}}
	g := groupLayers(r, 2)
	var labels []string
	for _, s := range g {
		labels = append(labels, s.label)
	}
	if want := []string{"set-up", "offline", "input input", "conv1/Conv", "Relu", "trunc", "output logits"}; !slices.Equal(labels, want) {
		t.Fatalf("slots %q, want %q", labels, want)
	}
	if o := g[1]; o.ms[kindOffline] != 60 || o.totalMS() != 60 || o.sent != 1<<20 || o.recv != 1<<19 || o.rounds != 1.5 {
		t.Errorf("offline slot %+v", o)
	}
	if title := reportTitle(r); !strings.Contains(title, "offline (before the inputs are used) 120 ms, 3.00 MiB; online 680 ms, 11.00 MiB") {
		t.Errorf("title %q lacks the offline/online split", title)
	}
	if err := plotReport(r, filepath.Join(t.TempDir(), "p.png")); err != nil {
		t.Fatal(err)
	}
}
