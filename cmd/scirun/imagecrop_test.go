package main

import (
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// TestImageInputCenterCrop: a program whose recorded preprocessing has a shorter-side resize and
// a centre crop (athosc --resize-shorter --center-crop) makes scirun cut the same centre out of an
// image: a digit in the middle of a larger canvas gives the output of the digit alone.
func TestImageInputCenterCrop(t *testing.T) {
	full, _, data := program(t)
	a, err := npy.ReadFile(filepath.Join(data, "inputs", "00000.npy"))
	if err != nil {
		t.Fatal(err)
	}
	x, _ := a.Float32()
	digit := image.NewGray(image.Rect(0, 0, 28, 28))
	// A 36x44 canvas: its shorter side is already 36, and the centre 28x28 starts at (4, 8).
	canvas := image.NewGray(image.Rect(0, 0, 36, 44))
	for i, v := range x {
		p := uint8(math.Round(float64(v) * 255))
		digit.Pix[i] = p
		canvas.Pix[(8+i/28)*36+4+i%28] = p
	}
	dir := t.TempDir()
	writePNG := func(name string, img image.Image) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := png.Encode(f, img); err != nil {
			t.Fatal(err)
		}
		return path
	}
	digitPath, canvasPath := writePNG("digit.png", digit), writePNG("canvas.png", canvas)

	f, err := sciir.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	prep := *f.Meta.Preprocess
	prep.ResizeShorter, prep.CropWidth, prep.CropHeight = 36, 28, 28
	f.Meta.Preprocess = &prep
	cropped := filepath.Join(dir, "crop.sciir")
	if err := cli.WriteProgram(cropped, f, true); err != nil {
		t.Fatal(err)
	}
	want, got := filepath.Join(dir, "want.npy"), filepath.Join(dir, "got.npy")
	if _, _, err := runArgs("--clear", full, "--input", digitPath, "--output", want, "--raw"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runArgs("--clear", cropped, "--input", canvasPath, "--output", got, "--raw"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(readInts(t, got), readInts(t, want)) {
		t.Error("the centre crop of the canvas ran differently from the digit alone")
	}
	// The program without the crop squeezes the whole canvas into 28x28: a different input.
	if _, _, err := runArgs("--clear", full, "--input", canvasPath, "--output", got, "--raw"); err != nil {
		t.Fatal(err)
	}
	if slices.Equal(readInts(t, got), readInts(t, want)) {
		t.Error("the whole canvas, resized, ran like the digit: the test proves nothing")
	}
}
