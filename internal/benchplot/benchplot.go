// Package benchplot draws the benchmark harness's comparison plot: for every model, the time and
// the communication of each measured configuration beside published figures, on log scales so
// that seconds and hours, MiB and hundreds of GiB share one picture.
package benchplot

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/atomicfile"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Point is one configuration's result on one model.
type Point struct {
	Series  string  // legend entry, e.g. "ours scihe/iknp/lan" or "CrypTFlow2 SCI_HE LAN"
	Model   string  // x category
	Seconds float64 // end-to-end time
	GiB     float64 // communication, both directions
	Paper   bool    // a published figure (drawn hollow) rather than a measurement (filled)
}

// Compare draws two panels, time (s) and communication (GiB), with the models along x and one
// glyph per series, into file (.png, .svg or .pdf). Points with a non-positive value are left out
// of that panel (log scale).
func Compare(file, title string, models []string, pts []Point) error {
	if len(models) == 0 || len(pts) == 0 {
		return errors.New("benchplot: nothing to plot")
	}
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(file)), ".")
	if ext != "png" && ext != "svg" && ext != "pdf" {
		return fmt.Errorf("benchplot: %s: the extension must be .png, .svg or .pdf", file)
	}
	idx := map[string]int{}
	for i, m := range models {
		idx[m] = i
	}
	// Series in first-seen order, measured ones first.
	var series []string
	seen := map[string]bool{}
	for _, paper := range []bool{false, true} {
		for _, p := range pts {
			if p.Paper == paper && !seen[p.Series] {
				seen[p.Series] = true
				series = append(series, p.Series)
			}
		}
	}
	timeP := panel(title, "time (s, log)", models)
	commP := panel("", "communication (GiB, log)", models)
	for si, s := range series {
		var tXY, cXY plotter.XYs
		paper := false
		for _, p := range pts {
			if p.Series != s {
				continue
			}
			i, ok := idx[p.Model]
			if !ok {
				return fmt.Errorf("benchplot: point of series %q has unknown model %q", s, p.Model)
			}
			paper = p.Paper
			// Spread the series side by side within a model's slot.
			x := float64(i) + 0.6*(float64(si)+0.5)/float64(len(series)) - 0.3
			if p.Seconds > 0 {
				tXY = append(tXY, plotter.XY{X: x, Y: p.Seconds})
			}
			if p.GiB > 0 {
				cXY = append(cXY, plotter.XY{X: x, Y: p.GiB})
			}
		}
		for k, xy := range []plotter.XYs{tXY, cXY} {
			if len(xy) == 0 {
				continue
			}
			sort.Slice(xy, func(a, b int) bool { return xy[a].X < xy[b].X })
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return fmt.Errorf("benchplot: %w", err)
			}
			sc.GlyphStyle.Color = plotutil.Color(si)
			sc.GlyphStyle.Shape = glyph(si, paper)
			sc.GlyphStyle.Radius = vg.Points(4)
			p := timeP
			if k == 1 {
				p = commP
			}
			p.Add(sc)
			if k == 0 || len(tXY) == 0 {
				timeP.Legend.Add(s, sc)
			}
		}
	}
	// Explicit log ranges: gonum widens an empty or single-valued range to include 0.
	for k, p := range []*plot.Plot{timeP, commP} {
		lo, hi := 0.0, 0.0
		for _, pt := range pts {
			v := pt.Seconds
			if k == 1 {
				v = pt.GiB
			}
			if v <= 0 {
				continue
			}
			if lo == 0 || v < lo {
				lo = v
			}
			hi = max(hi, v)
		}
		if lo == 0 {
			lo, hi = 1, 10
		}
		p.Y.Min, p.Y.Max = lo/2, hi*2
	}
	const w, h = 26 * vg.Centimeter, 20 * vg.Centimeter
	c, err := draw.NewFormattedCanvas(w, h, ext)
	if err != nil {
		return fmt.Errorf("benchplot: %w", err)
	}
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2,
		PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2, PadY: vg.Millimeter * 4}
	plots := [][]*plot.Plot{{timeP}, {commP}}
	canvases := plot.Align(plots, tiles, draw.New(c))
	timeP.Draw(canvases[0][0])
	commP.Draw(canvases[1][0])
	if err := atomicfile.Write(file, 0o644, func(w io.Writer) error { _, err := c.WriteTo(w); return err }); err != nil {
		return fmt.Errorf("benchplot: write %s: %w", file, err)
	}
	return nil
}

func panel(title, ylabel string, models []string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.NominalX(models...)
	p.X.Min, p.X.Max = -0.5, float64(len(models))-0.5
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(8)
	return p
}

// glyph gives measurements filled shapes and published figures hollow ones.
func glyph(i int, paper bool) draw.GlyphDrawer {
	filled := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}
	hollow := []draw.GlyphDrawer{draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{}, draw.PlusGlyph{}}
	if paper {
		return hollow[i%len(hollow)]
	}
	return filled[i%len(filled)]
}
