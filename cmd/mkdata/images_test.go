package main

import (
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writePNG writes a w x h RGB image whose pixel (x, y) is (r, x, y).
func writePNG(t *testing.T, path string, w, h int, r uint8) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, color.RGBA{r, uint8(x), uint8(y), 255})
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

func TestImages(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in")
	writePNG(t, filepath.Join(in, "dog", "b.png"), 6, 4, 20)
	writePNG(t, filepath.Join(in, "dog", "a.png"), 6, 4, 10)
	writePNG(t, filepath.Join(in, "cat", "z.png"), 6, 4, 30)
	os.WriteFile(filepath.Join(in, "cat", "notes.txt"), []byte("skipped"), 0o644)

	// Shorter side 4 (no resize), centre 2x2 from (2, 1), raw pixel values, NHWC.
	out := filepath.Join(t.TempDir(), "out")
	code, stdout, stderr := runArgs("images", "--in", in, "--out", out, "--size", "2x2", "--resize-shorter", "4",
		"--center-crop", "2x2", "--pixel-scale", "1", "--layout", "NHWC")
	if code != 0 || !strings.Contains(stdout, "wrote 3 images of 2 classes ([1 2 2 3] NHWC)") {
		t.Fatalf("exit %d: %q %q", code, stdout, stderr)
	}
	checkLabels(t, out, "00000.npy 0\n00001.npy 1\n00002.npy 1\n")
	if classes, _ := os.ReadFile(filepath.Join(out, "classes.txt")); string(classes) != "cat\ndog\n" {
		t.Errorf("classes.txt = %q", classes)
	}
	shape, x := readNpy(t, filepath.Join(out, "00001.npy")) // dog/a.png
	if want := []float32{10, 2, 1, 10, 3, 1, 10, 2, 2, 10, 3, 2}; !reflect.DeepEqual(shape, []int{1, 2, 2, 3}) || !reflect.DeepEqual(x, want) {
		t.Errorf("dog/a.png: %v %v, want [1 2 2 3] %v", shape, x, want)
	}

	// Grey, NCHW, mean/std, plain resize.
	out = filepath.Join(t.TempDir(), "grey")
	if code, _, stderr := runArgs("images", "--in", in, "--out", out, "--size", "3x2", "--channels", "1", "--mean", "0.5", "--std", "0.25"); code != 0 {
		t.Fatal(stderr)
	}
	if shape, _ := readNpy(t, filepath.Join(out, "00000.npy")); !reflect.DeepEqual(shape, []int{1, 1, 2, 3}) {
		t.Errorf("grey shape %v", shape)
	}
}

func TestImagesSynsets(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in")
	writePNG(t, filepath.Join(in, "n03", "x.jpg.png"), 4, 4, 1)
	writePNG(t, filepath.Join(in, "n01", "y.png"), 4, 4, 2)
	list := filepath.Join(t.TempDir(), "LOC_synset_mapping.txt")
	os.WriteFile(list, []byte("n01 tench, Tinca tinca\nn02 goldfish, Carassius auratus\nn03\n"), 0o644)
	out := filepath.Join(t.TempDir(), "out")
	if code, stdout, stderr := runArgs("images", "--in", in, "--out", out, "--size", "2x2", "--synsets", list); code != 0 || !strings.Contains(stdout, "(3 names)") {
		t.Fatalf("exit %d: %q %q", code, stdout, stderr)
	}
	checkLabels(t, out, "00000.npy 0\n00001.npy 2\n")
	if classes, _ := os.ReadFile(filepath.Join(out, "classes.txt")); string(classes) != "tench, Tinca tinca\ngoldfish, Carassius auratus\nn03\n" {
		t.Errorf("classes.txt = %q", classes)
	}

	os.WriteFile(list, []byte("n01 tench\n"), 0o644)
	if code, _, stderr := runArgs("images", "--in", in, "--out", out, "--size", "2x2", "--synsets", list); code != 1 || !strings.Contains(stderr, "n03 is not listed in "+list) {
		t.Errorf("unlisted synset: exit %d, %q", code, stderr)
	}
	os.WriteFile(list, []byte("n01 tench\n\nn03 x\n"), 0o644)
	if code, _, stderr := runArgs("images", "--in", in, "--out", out, "--size", "2x2", "--synsets", list); code != 1 || !strings.Contains(stderr, ":2: blank line") {
		t.Errorf("blank line: exit %d, %q", code, stderr)
	}
	os.WriteFile(list, []byte("n01 tench\nn01 again\n"), 0o644)
	if code, _, stderr := runArgs("images", "--in", in, "--out", out, "--size", "2x2", "--synsets", list); code != 1 || !strings.Contains(stderr, "n01 is already class 0") {
		t.Errorf("duplicate: exit %d, %q", code, stderr)
	}
}

func TestImagesErrors(t *testing.T) {
	in := filepath.Join(t.TempDir(), "in")
	writePNG(t, filepath.Join(in, "a", "x.png"), 4, 4, 1)
	os.MkdirAll(filepath.Join(in, "empty"), 0o755)
	good := filepath.Join(t.TempDir(), "good")
	writePNG(t, filepath.Join(good, "a", "x.png"), 4, 4, 1)
	flat := t.TempDir()
	writePNG(t, filepath.Join(flat, "x.png"), 4, 4, 1)
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--out", out, "--size", "2x2"}, 2, "--in is required"},
		{[]string{"--in", in, "--size", "2x2"}, 2, "--out is required"},
		{[]string{"--in", in, "--out", out}, 2, "--size WxH is required"},
		{[]string{"--in", in, "--out", out, "--size", "2"}, 2, `--size: "2" is not WxH`},
		{[]string{"--in", in, "--out", out, "--size", "2x2", "--center-crop", "ax2"}, 2, "--center-crop: \"ax2\" is not WxH"},
		{[]string{"--in", in, "--out", out, "--size", "2x2", "--channels", "2"}, 2, "--channels must be 1 or 3"},
		{[]string{"--in", in, "--out", out, "--size", "2x2", "--mean", "1,2"}, 2, "--mean: \"1,2\" has 2 values, want 1 or 3"},
		{[]string{"--in", in, "--out", out, "--size", "2x2", "--std", "0"}, 2, "std not 0"},
		{[]string{"--in", in, "--out", out, "--size", "2x2", "--resize", "cubic"}, 2, "resize \"cubic\""},
		{[]string{"--in", in, "--out", out, "--size", "2x2"}, 1, "class folder " + filepath.Join(in, "empty") + " holds no PNG or JPEG images"},
		{[]string{"--in", flat, "--out", out, "--size", "2x2"}, 1, "has no class subfolders"},
		{[]string{"--in", filepath.Join(flat, "none"), "--out", out, "--size", "2x2"}, 1, "no such file"},
		{[]string{"--in", good, "--out", out, "--size", "2x2", "--center-crop", "5x5"}, 1, "smaller than the centre crop 5x5"},
	} {
		code, stdout, stderr := runArgs(append([]string{"images"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
}

// TestSharedImages exports the shared permissively licensed photos (linked into class folders
// in a temporary directory) with ImageNet preprocessing.
func TestSharedImages(t *testing.T) {
	src := sharedData(t, "images-permissive")
	in := t.TempDir()
	for class, name := range map[string]string{"cat": "chelsea.png", "bird": "pelican.jpeg", "rocket": "rocket.jpg"} {
		os.Mkdir(filepath.Join(in, class), 0o755)
		if err := os.Symlink(filepath.Join(src, name), filepath.Join(in, class, name)); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	code, stdout, stderr := runArgs("images", "--in", in, "--out", out, "--size", "224x224", "--resize-shorter", "256", "--center-crop", "224x224",
		"--mean", "0.485,0.456,0.406", "--std", "0.229,0.224,0.225")
	if code != 0 || !strings.Contains(stdout, "wrote 3 images of 3 classes ([1 3 224 224] NCHW)") {
		t.Fatalf("exit %d: %q %q", code, stdout, stderr)
	}
	checkLabels(t, out, "00000.npy 0\n00001.npy 1\n00002.npy 2\n")
	for i := range 3 {
		_, x := readNpy(t, filepath.Join(out, "0000"+string(rune('0'+i))+".npy"))
		for _, v := range x {
			if v < -2.2 || v > 2.7 {
				t.Fatalf("image %d: value %v outside the normalised pixel range", i, v)
			}
		}
	}
}
