package input

import (
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/npy"
)

func TestCheckShape(t *testing.T) {
	want := []int{1, 1, 28, 28}
	for _, got := range [][]int{{1, 1, 28, 28}, {1, 28, 28}, {28, 28}} {
		if err := CheckShape(got, want); err != nil {
			t.Errorf("%v refused for %v: %v", got, want, err)
		}
	}
	for _, got := range [][]int{{784}, {28}, {1, 1, 1, 28, 28}, {28, 28, 1}, {}, {2, 28, 28}} {
		err := CheckShape(got, want)
		if err == nil {
			t.Errorf("%v accepted for %v", got, want)
		} else if !strings.Contains(err.Error(), ShapeRule) {
			t.Errorf("error does not state the rule: %v", err)
		}
	}
	// A leading dimension that is not 1 is never dropped.
	if CheckShape([]int{3, 4}, []int{2, 3, 4}) == nil {
		t.Error("[3,4] accepted for [2,3,4]")
	}
	if err := CheckShape([]int{2, 3, 4}, []int{2, 3, 4}); err != nil {
		t.Error(err)
	}
	// A scalar input takes a scalar array.
	if err := CheckShape([]int{}, []int{}); err != nil {
		t.Error(err)
	}
}

func TestRead(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.npy")
	data := make([]float32, 12)
	for i := range data {
		data[i] = float32(i) / 2
	}
	if err := npy.WriteFileFloat32(path, []int{3, 4}, data); err != nil {
		t.Fatal(err)
	}
	x, err := Read(path, []int{1, 3, 4}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range data {
		if x[i] != data[i] {
			t.Fatalf("element %d: %g, want %g", i, x[i], data[i])
		}
	}
	if _, err := Read(path, []int{1, 12}, nil); err == nil || !strings.Contains(err.Error(), "x.npy") {
		t.Errorf("[3,4] for [1,12]: %v", err)
	}
	if _, err := Read(filepath.Join(dir, "missing.npy"), []int{3, 4}, nil); err == nil {
		t.Error("missing file read")
	}

	img := filepath.Join(dir, "a.png")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := png.Encode(f, image.NewGray(image.Rect(0, 0, 4, 3))); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := Read(img, []int{1, 1, 3, 4}, nil); err == nil || !strings.Contains(err.Error(), "preprocessing") {
		t.Errorf("image without preprocessing: %v", err)
	}
	prep, err := DefaultPreprocess([]int{1, 1, 3, 4}, "NCHW")
	if err != nil {
		t.Fatal(err)
	}
	if x, err := Read(img, []int{1, 1, 3, 4}, prep); err != nil || len(x) != 12 {
		t.Errorf("image: %d values, %v", len(x), err)
	}
	if _, err := Read(img, []int{1, 1, 6, 8}, prep); err == nil {
		t.Error("preprocessing of another shape accepted")
	}
}
