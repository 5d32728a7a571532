package input

import (
	"image"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/cryptflow-go/cryptflow/sciir"
)

func TestPreprocessCheck(t *testing.T) {
	if _, err := DefaultPreprocess([]int{1, 3, 8}, "NCHW"); err == nil {
		t.Error("rank-3 input accepted")
	}
	if _, err := DefaultPreprocess([]int{1, 2, 8, 8}, "NCHW"); err == nil {
		t.Error("2 channels accepted")
	}
	if _, err := DefaultPreprocess([]int{1, 8, 8, 3}, "CHWN"); err == nil {
		t.Error("unknown layout accepted")
	}
	p, err := DefaultPreprocess([]int{1, 8, 6, 3}, "NHWC")
	if err != nil || p.Width != 6 || p.Height != 8 || p.Channels != 3 {
		t.Fatalf("NHWC default %+v %v", p, err)
	}
	for name, mutate := range map[string]func(q *sciir.Preprocess){
		"std zero":   func(q *sciir.Preprocess) { q.Std[1] = 0 },
		"mean nan":   func(q *sciir.Preprocess) { q.Mean[0] = math.NaN() },
		"scale inf":  func(q *sciir.Preprocess) { q.Scale = math.Inf(1) },
		"resize":     func(q *sciir.Preprocess) { q.Resize = "lanczos" },
		"size":       func(q *sciir.Preprocess) { q.Width = 0 },
		"mean count": func(q *sciir.Preprocess) { q.Mean = q.Mean[:1] },
	} {
		q := *p
		q.Mean = append([]float64(nil), p.Mean...)
		q.Std = append([]float64(nil), p.Std...)
		mutate(&q)
		if q.Check() == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestPreprocessApply(t *testing.T) {
	// A 2x1 grey image [0, 255] resized to 4x1.
	img := image.NewGray(image.Rect(0, 0, 2, 1))
	img.Pix[1] = 255
	p := &sciir.Preprocess{Width: 4, Height: 1, Channels: 1, Layout: "NCHW", Scale: 1.0 / 255,
		Mean: []float64{0}, Std: []float64{1}, Resize: "bilinear"}
	x, err := Apply(p, img)
	if err != nil {
		t.Fatal(err)
	}
	// Half-pixel centres: source positions -0.25, 0.25, 0.75, 1.25 -> 0, 0.25, 0.75, 1.
	want := []float32{0, 0.25, 0.75, 1}
	for i := range want {
		if math.Abs(float64(x[i]-want[i])) > 1e-6 {
			t.Errorf("bilinear %v, want %v", x, want)
			break
		}
	}
	p.Resize = "nearest"
	if x, _ = Apply(p, img); x[0] != 0 || x[1] != 0 || x[2] != 1 || x[3] != 1 {
		t.Errorf("nearest %v", x)
	}
	// RGB, NHWC, mean/std.
	rgb := image.NewRGBA(image.Rect(0, 0, 1, 1))
	rgb.Set(0, 0, color.RGBA{255, 0, 51, 255})
	q := &sciir.Preprocess{Width: 1, Height: 1, Channels: 3, Layout: "NHWC", Scale: 1.0 / 255,
		Mean: []float64{0.5, 0.5, 0.5}, Std: []float64{0.5, 0.5, 0.1}, Resize: "bilinear"}
	y, err := Apply(q, rgb)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(y[0]-1)) > 1e-6 || math.Abs(float64(y[1]+1)) > 1e-6 || math.Abs(float64(y[2]+3)) > 1e-5 {
		t.Errorf("rgb %v", y)
	}
	if _, err := LoadImage(q, filepath.Join(t.TempDir(), "missing.png")); err == nil {
		t.Error("missing file loaded")
	}
	bad := filepath.Join(t.TempDir(), "bad.png")
	os.WriteFile(bad, []byte("not a png"), 0o644)
	if _, err := LoadImage(q, bad); err == nil {
		t.Error("garbage decoded")
	}
}
