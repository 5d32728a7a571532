package dataset

import (
	"errors"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/ir"
)

func writeNpy(t *testing.T, path string, shape []int, v float32) {
	t.Helper()
	data := make([]float32, ir.Shape(shape).Size())
	for i := range data {
		data[i] = v
	}
	if err := npy.WriteFileFloat32(path, shape, data); err != nil {
		t.Fatal(err)
	}
}

func TestLoadNpyFolder(t *testing.T) {
	in := ir.Value{Name: "x", Shape: ir.Shape{1, 2, 3}}
	dir := t.TempDir()
	writeNpy(t, filepath.Join(dir, "00001.npy"), []int{1, 2, 3}, 1)
	writeNpy(t, filepath.Join(dir, "00000.npy"), []int{2, 3}, 2) // without the batch dimension
	ds, err := Load(dir, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Format != "npy" || ds.Labelled || len(ds.Samples) != 2 || ds.Samples[0].Name != "00000.npy" ||
		ds.Samples[0].Input[0] != 2 || ds.Samples[1].Label != -1 {
		t.Errorf("unlabelled folder: %+v", ds)
	}
	if err := os.WriteFile(filepath.Join(dir, "labels.txt"), []byte("# file label\n00000.npy 3\n\n00001.npy 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err = Load(dir, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !ds.Labelled || ds.Samples[0].Label != 3 || ds.Samples[1].Label != 7 {
		t.Errorf("labelled folder: %+v", ds)
	}
	for _, c := range []struct{ labels, want string }{
		{"00000.npy 3\n", "no label for 00001.npy"},
		{"00000.npy 3\n00001.npy x\n", `label "x" is not a class index, and no class names are known`},
		{"00000.npy 3 4\n", `label "3 4" is not a class index`},
		{"00000.npy\n", "want `file label`"},
		{"00000.npy -1\n", "label -1 is negative"},
		{"00000.npy 3\n00001.npy 1\n00002.npy 1\n", "not a .npy file"},
		{"00000.npy 3\n00000.npy 1\n", "second label"},
	} {
		if err := os.WriteFile(filepath.Join(dir, "labels.txt"), []byte(c.labels), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Load(dir, in, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("labels %q: error %v, want %q", c.labels, err, c.want)
		}
	}
	os.Remove(filepath.Join(dir, "labels.txt"))
	writeNpy(t, filepath.Join(dir, "00002.npy"), []int{3, 2}, 0)
	if _, err := Load(dir, in, nil); err == nil || !strings.Contains(err.Error(), "array of shape [3,2] does not fit") {
		t.Errorf("wrong shape: %v", err)
	}
}

func writePNG(t *testing.T, path string, w, h int, c color.Color) {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, c)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := png.Encode(f, img); err != nil {
		t.Fatal(err)
	}
}

func TestLoadImageFolder(t *testing.T) {
	dir := t.TempDir()
	for _, class := range []string{"cat", "dog"} {
		if err := os.Mkdir(filepath.Join(dir, class), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writePNG(t, filepath.Join(dir, "cat", "a.png"), 8, 6, color.RGBA{255, 0, 0, 255})
	writePNG(t, filepath.Join(dir, "dog", "b.PNG"), 3, 3, color.RGBA{0, 0, 255, 255})
	os.WriteFile(filepath.Join(dir, "dog", "notes.txt"), []byte("ignored"), 0o644)
	in := ir.Value{Name: "x", Shape: ir.Shape{1, 3, 4, 4}}
	prep, err := input.DefaultPreprocess(in.Shape, "NCHW")
	if err != nil {
		t.Fatal(err)
	}
	prep.Mean = []float64{0.5, 0.5, 0.5}
	prep.Std = []float64{0.5, 0.5, 0.5}
	ds, err := Load(dir, in, prep)
	if err != nil {
		t.Fatal(err)
	}
	if ds.Format != "images" || !ds.Labelled || len(ds.Samples) != 2 || ds.Samples[0].Label != 0 || ds.Samples[1].Label != 1 {
		t.Fatalf("dataset %+v", ds)
	}
	if got := ds.Preprocess.ClassDirs; len(got) != 2 || got[1] != "dog" {
		t.Errorf("class dirs %v", got)
	}
	// Red at (1*1/255... ) -> (1-0.5)/0.5 = 1 in channel 0, (0-0.5)/0.5 = -1 in the others.
	x := ds.Samples[0].Input
	if len(x) != 48 || x[0] != 1 || x[16] != -1 || x[47] != -1 {
		t.Errorf("red image preprocessed to %v", x)
	}
	if y := ds.Samples[1].Input; y[47] != 1 || y[0] != -1 {
		t.Errorf("blue image preprocessed to %v", y)
	}
	// NHWC and grey.
	grey := ir.Value{Name: "x", Shape: ir.Shape{1, 4, 4, 1}}
	gp, _ := input.DefaultPreprocess(grey.Shape, "NHWC")
	ds, err = Load(dir, grey, gp)
	if err != nil {
		t.Fatal(err)
	}
	if v := ds.Samples[0].Input[0]; v < 0.29 || v > 0.3 { // luma of pure red is 0.299
		t.Errorf("grey value %g", v)
	}
	// A preprocessing that does not fit the model input.
	if _, err := Load(dir, ir.Value{Name: "x", Shape: ir.Shape{1, 3, 5, 5}}, prep); err == nil {
		t.Error("mismatched preprocessing accepted")
	}
	// An empty class folder.
	os.Mkdir(filepath.Join(dir, "emu"), 0o755)
	if _, err := Load(dir, in, prep); !errors.Is(err, ErrValidationFormat) || !strings.Contains(err.Error(), `"emu"`) {
		t.Errorf("empty class: %v", err)
	}
}

func TestLoadRejects(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "data.csv"), []byte("1,2,3"), 0o644)
	in := ir.Value{Name: "x", Shape: ir.Shape{1, 3}}
	_, err := Load(dir, in, nil)
	if !errors.Is(err, ErrValidationFormat) || !strings.Contains(err.Error(), "accepted formats") {
		t.Errorf("unrecognised folder: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing"), in, nil); err == nil {
		t.Error("missing folder accepted")
	}
}

func TestValidationFolderChecks(t *testing.T) {
	in := ir.Value{Name: "x", Shape: ir.Shape{1, 2, 3}}
	dir := t.TempDir()
	writeNpy(t, filepath.Join(dir, "00000.npy"), []int{2, 3}, -2)
	writeNpy(t, filepath.Join(dir, "00001.npy"), []int{2, 3}, 5)
	if err := os.WriteFile(filepath.Join(dir, "labels.txt"), []byte("00000.npy 3\n00001.npy 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ds, err := Load(dir, in, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lo, hi := ds.InputRange(); lo != -2 || hi != 5 {
		t.Errorf("range [%g, %g], want [-2, 5]", lo, hi)
	}
	if err := ds.CheckLabels(11); err != nil {
		t.Error(err)
	}
	if err := ds.CheckLabels(10); err == nil || !strings.Contains(err.Error(), "00001.npy has label 10, but the model has 10 classes") {
		t.Errorf("label 10 of 10 classes: %v", err)
	}
	if !strings.Contains(ds.Layout(), "labels.txt") {
		t.Errorf("layout %q", ds.Layout())
	}
	// A folder mixing .npy files and class subfolders is refused, not read halfway.
	if err := os.Mkdir(filepath.Join(dir, "cats"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = Load(dir, in, nil)
	if !errors.Is(err, ErrValidationFormat) || !strings.Contains(err.Error(), "both .npy files") {
		t.Errorf("mixed folder: %v", err)
	}
}
