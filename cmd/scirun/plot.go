package main

// scirun plot: per-layer time and traffic of a secure run, drawn from its JSON report.

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"image/color"
	"io"
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

Draws the per-layer wall-clock time and traffic (bytes sent plus received by this party) of a secure
run from the JSON report that --report wrote, one bar per instruction, coloured by kind: linear
layers, ReLU, truncation, pooling (max, average, argmax) and other. The title gives the model,
backend, ring and totals. A --serve report has one JSON line per session: --session picks one
(default the first). The output format follows the extension: .png, .svg or .pdf.

Flags:
`

// layerKinds are the colours of the plot, in legend order.
var layerKinds = []struct {
	name  string
	color color.RGBA
}{
	{"linear", color.RGBA{0x1f, 0x77, 0xb4, 0xff}},
	{"ReLU", color.RGBA{0xff, 0x7f, 0x0e, 0xff}},
	{"truncation", color.RGBA{0x2c, 0xa0, 0x2c, 0xff}},
	{"pooling", color.RGBA{0xd6, 0x27, 0x28, 0xff}},
	{"other", color.RGBA{0x7f, 0x7f, 0x7f, 0xff}},
}

// layerKind maps an opcode name (fixed.Opcode.String) to an index into layerKinds.
func layerKind(op string) int {
	switch op {
	case "matmul", "conv", "mulconst", "mul":
		return 0
	case "relu":
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
	if len(pos) != 1 {
		return cli.Usagef("plot: want one report file, got %d arguments", len(pos))
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
	rep, err := loadReport(pos[0], *session)
	if err != nil {
		return err
	}
	if err := plotReport(rep, *out); err != nil {
		return fmt.Errorf("plot %s: %w", *out, err)
	}
	fmt.Fprintf(stdout, "wrote %s (%d layers)\n", *out, len(rep.Layers))
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

// plotReport draws two aligned panels (time per layer, traffic per layer) into file.
func plotReport(r *serve.Report, file string) error {
	timeP, err := layerPlot(r, "time (ms)", func(l serve.Layer) float64 { return l.MS })
	if err != nil {
		return err
	}
	bytesP, err := layerPlot(r, "traffic (MiB, sent + received)", func(l serve.Layer) float64 {
		return float64(l.BytesSent+l.BytesRecv) / (1 << 20)
	})
	if err != nil {
		return err
	}
	model := r.Model
	if model == "" {
		model = r.ProgramID[:min(16, len(r.ProgramID))]
	}
	timeP.Title.Text = fmt.Sprintf("%s — %s, %s, %s: %.2f s, %s, %d rounds", model, r.Backend, r.Ring, r.Role,
		r.TotalMS/1000, serve.FormatBytes(r.Total.BytesSent+r.Total.BytesRecv), r.Total.Rounds)
	bytesP.X.Label.Text = "instruction"

	const w, h = 26 * vg.Centimeter, 18 * vg.Centimeter
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(file)), ".")
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2, PadY: vg.Millimeter * 4}
	plots := [][]*plot.Plot{{timeP}, {bytesP}}
	canvases := plot.Align(plots, tiles, draw.New(c))
	timeP.Draw(canvases[0][0])
	bytesP.Draw(canvases[1][0])
	return atomicfile.Write(file, 0o644, func(w io.Writer) error { _, err := c.WriteTo(w); return err })
}

func layerPlot(r *serve.Report, ylabel string, value func(serve.Layer) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	n := len(r.Layers)
	width := vg.Length(600) / vg.Length(max(n, 1))
	width = min(max(width, 1), 12)
	for k, kind := range layerKinds {
		vals := make(plotter.Values, n)
		any := false
		for i, l := range r.Layers {
			if layerKind(l.Op) == k {
				vals[i] = value(l)
				any = any || vals[i] > 0
			}
		}
		if !any {
			continue
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, err
		}
		bars.Color = kind.color
		bars.LineStyle.Width = 0
		p.Add(bars)
		p.Legend.Add(kind.name, bars)
	}
	p.X.Min, p.X.Max = -1, float64(n)
	return p, nil
}
