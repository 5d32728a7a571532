package mnist

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// A hand-made idx3 file: 2 images of 2 rows x 3 columns.
const idxImages = "\x00\x00\x08\x03" + "\x00\x00\x00\x02" + "\x00\x00\x00\x02" + "\x00\x00\x00\x03" +
	"\x00\x01\x02\x03\x04\x05" + "\xff\xfe\x80\x7f\x10\x00"

// A hand-made idx1 file: 3 labels.
const idxLabels = "\x00\x00\x08\x01" + "\x00\x00\x00\x03" + "\x07\x00\x09"

func gz(t *testing.T, s string) string {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(s)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestReadImages(t *testing.T) {
	for _, compressed := range []bool{false, true} {
		in := idxImages
		if compressed {
			in = gz(t, in)
		}
		im, err := ReadImages(strings.NewReader(in))
		if err != nil {
			t.Fatalf("gzip=%v: %v", compressed, err)
		}
		if im.Count != 2 || im.Rows != 2 || im.Cols != 3 {
			t.Errorf("gzip=%v: dims %d x %d x %d, want 2 x 2 x 3", compressed, im.Count, im.Rows, im.Cols)
		}
		want := []float32{0, 1, 2, 3, 4, 5, 255, 254, 128, 127, 16, 0}
		if !reflect.DeepEqual(im.Pixels, want) {
			t.Errorf("gzip=%v: pixels %v, want %v", compressed, im.Pixels, want)
		}
		second, err := im.Image(1)
		if err != nil || !reflect.DeepEqual(second, want[6:]) {
			t.Errorf("Image(1) = %v, %v", second, err)
		}
		if cap(second) != 6 {
			t.Errorf("Image(1) has capacity %d; appending to it would overwrite other images", cap(second))
		}
		for _, i := range []int{-1, 2} {
			if _, err := im.Image(i); err == nil || !strings.Contains(err.Error(), "out of range") {
				t.Errorf("Image(%d): got %v", i, err)
			}
		}
	}
}

func TestReadLabels(t *testing.T) {
	for _, in := range []string{idxLabels, gz(t, idxLabels)} {
		l, err := ReadLabels(strings.NewReader(in))
		if err != nil || !reflect.DeepEqual(l, []uint8{7, 0, 9}) {
			t.Errorf("got %v, %v", l, err)
		}
	}
}

func TestEmpty(t *testing.T) {
	im, err := ReadImages(strings.NewReader("\x00\x00\x08\x03\x00\x00\x00\x00\x00\x00\x00\x1c\x00\x00\x00\x1c"))
	if err != nil || im.Count != 0 || len(im.Pixels) != 0 {
		t.Errorf("empty image set: %+v, %v", im, err)
	}
}

func TestErrors(t *testing.T) {
	corrupt := []byte(gz(t, idxLabels))
	corrupt[len(corrupt)-6] ^= 0xff // damage the CRC-32 in the gzip trailer
	tests := []struct {
		name   string
		images bool
		in     string
		want   string
	}{
		{"empty", true, "", "reading magic: unexpected EOF"},
		{"labels as images", true, idxLabels, "bad magic 0x00000801, want 0x00000803"},
		{"images as labels", false, idxImages, "bad magic 0x00000803, want 0x00000801"},
		{"float idx", true, "\x00\x00\x0d\x03", "bad magic"},
		{"not idx", false, "PK\x03\x04", "bad magic"},
		{"short dims", true, "\x00\x00\x08\x03\x00\x00\x00\x02\x00", "reading 3 dimensions"},
		{"truncated data", true, idxImages[:len(idxImages)-1], "need 12 data bytes, got 11"},
		{"trailing data", true, idxImages + "x", "unexpected bytes after the 12 data bytes"},
		{"truncated labels", false, idxLabels[:9], "need 3 data bytes, got 1"},
		{"label not a digit", false, "\x00\x00\x08\x01\x00\x00\x00\x01\x0a", "label 0 is 10"},
		{"huge dims", true, "\x00\x00\x08\x03\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", "exceed"},
		{"huge claim", false, "\x00\x00\x08\x01\x3f\xff\xff\xff\x01", "got 1"},
		{"bad gzip header", true, "\x1f\x8b\x00", "gzip"},
		{"gzip truncated", true, gz(t, idxImages)[:20], "unexpected EOF"},
		{"gzip bad checksum", false, string(corrupt), "checksum"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if tc.images {
				_, err = ReadImages(strings.NewReader(tc.in))
			} else {
				_, err = ReadLabels(strings.NewReader(tc.in))
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want error containing %q", err, tc.want)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "mnist ") {
				t.Errorf("error %q lacks the mnist prefix", err)
			}
		})
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	ip := filepath.Join(dir, "images.gz")
	lp := filepath.Join(dir, "labels")
	if err := os.WriteFile(ip, []byte(gz(t, idxImages)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(lp, []byte(idxLabels), 0o644); err != nil {
		t.Fatal(err)
	}
	if im, err := ReadImagesFile(ip); err != nil || im.Count != 2 {
		t.Errorf("ReadImagesFile: %v, %v", im, err)
	}
	if l, err := ReadLabelsFile(lp); err != nil || len(l) != 3 {
		t.Errorf("ReadLabelsFile: %v, %v", l, err)
	}
	if _, err := ReadImagesFile(lp); err == nil || !strings.Contains(err.Error(), lp) {
		t.Errorf("error should name the file: %v", err)
	}
	if _, err := ReadLabelsFile(filepath.Join(dir, "none")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestScaleToUnit(t *testing.T) {
	px := []float32{0, 1, 127, 128, 254, 255}
	ScaleToUnit(px)
	for i, v := range []float64{0, 1, 127, 128, 254, 255} {
		// float32 division is correctly rounded: the same as rounding the exact quotient.
		if want := float32(v / 255); px[i] != want {
			t.Errorf("%v/255 = %v, want %v", v, px[i], want)
		}
	}
	if px[5] != 1 || px[0] != 0 {
		t.Errorf("endpoints: %v", px)
	}
	if math.Float32bits(px[1]) != 0x3b808081 { // numpy: np.float32(1)/np.float32(255)
		t.Errorf("1/255 bits %#x, want 0x3b808081", math.Float32bits(px[1]))
	}
}

// TestRealT10k reads the real MNIST test set from ../shared/testdata and checks it against the
// project's bundled inputs, which PyTorch produced from the same files (GoMNIST's copy).
func TestRealT10k(t *testing.T) {
	root := testenv.RepoRoot(t)
	ipath := testenv.SharedTestdata(t, "datasets", "mnist", "t10k-images-idx3-ubyte.gz")
	dir := filepath.Dir(ipath)
	im, err := ReadImagesFile(ipath)
	if err != nil {
		t.Fatal(err)
	}
	labels, err := ReadLabelsFile(filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	if im.Count != 10000 || im.Rows != 28 || im.Cols != 28 || len(labels) != 10000 {
		t.Fatalf("got %d x %d x %d images, %d labels; want 10000 x 28 x 28, 10000", im.Count, im.Rows, im.Cols, len(labels))
	}
	var counts [10]int
	for _, l := range labels {
		counts[l]++
	}
	// Per-digit counts of the MNIST test set.
	if want := [10]int{980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009}; counts != want {
		t.Errorf("label counts %v, want %v", counts, want)
	}

	bundled := filepath.Join(root, "testdata", "mnist-small", "inputs")
	for i := range 8 {
		a, err := npy.ReadFile(filepath.Join(bundled, fmt.Sprintf("%05d.npy", i)))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := a.Float32()
		img, _ := im.Image(i)
		got := append([]float32(nil), img...)
		ScaleToUnit(got)
		if !reflect.DeepEqual(a.Shape, []int{1, 1, 28, 28}) || len(want) != len(got) {
			t.Fatalf("bundled input %d has shape %v", i, a.Shape)
		}
		for k := range got {
			if math.Float32bits(got[k]) != math.Float32bits(want[k]) {
				t.Fatalf("image %d pixel %d: %v, PyTorch export has %v", i, k, got[k], want[k])
			}
		}
	}
}
