package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/npy"
)

// writeIdx writes a gzip-compressed MNIST-shaped idx pair of n images: image i has every pixel
// equal to 10*i+1, and label i%10.
func writeIdx(t *testing.T, dir string, n int) (images, labels string) {
	t.Helper()
	img := []byte{0, 0, 8, 3, 0, 0, 0, byte(n), 0, 0, 0, 28, 0, 0, 0, 28}
	lab := []byte{0, 0, 8, 1, 0, 0, 0, byte(n)}
	for i := range n {
		img = append(img, bytes.Repeat([]byte{byte(10*i + 1)}, 28*28)...)
		lab = append(lab, byte(i%10))
	}
	images, labels = filepath.Join(dir, "img.gz"), filepath.Join(dir, "lab.gz")
	for _, f := range []struct {
		path string
		data []byte
	}{{images, img}, {labels, lab}} {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(f.data)
		w.Close()
		if err := os.WriteFile(f.path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return images, labels
}

func runArgs(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestExport(t *testing.T) {
	dir := t.TempDir()
	images, labels := writeIdx(t, dir, 12)
	for _, scale := range []int{1, 255} {
		out := filepath.Join(dir, fmt.Sprint("out", scale), "nested")
		code, stdout, stderr := runArgs("mnist", "--images", images, "--labels", labels,
			"--from", "3", "--count", "4", "--scale", fmt.Sprint(scale), "--out", out)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "wrote 4 images [3, 7)") {
			t.Errorf("stdout %q", stdout)
		}
		entries, _ := os.ReadDir(out)
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		want := []string{"00003.npy", "00004.npy", "00005.npy", "00006.npy", "labels.txt"}
		if !reflect.DeepEqual(names, want) {
			t.Errorf("files %v, want %v", names, want)
		}
		list, _ := os.ReadFile(filepath.Join(out, "labels.txt"))
		if string(list) != "00003.npy 3\n00004.npy 4\n00005.npy 5\n00006.npy 6\n" {
			t.Errorf("labels.txt = %q", list)
		}
		a, err := npy.ReadFile(filepath.Join(out, "00005.npy"))
		if err != nil {
			t.Fatal(err)
		}
		px, _ := a.Float32()
		wantPx := float32(51)
		if scale == 1 {
			wantPx = float32(51) / 255
		}
		if !reflect.DeepEqual(a.Shape, []int{1, 1, 28, 28}) || a.DType != npy.Float32 || px[0] != wantPx || px[783] != wantPx {
			t.Errorf("scale %d: shape %v dtype %v px[0] %v, want [1 1 28 28] float32 %v", scale, a.Shape, a.DType, px[0], wantPx)
		}
	}

	// Default --count: everything from --from on.
	out := filepath.Join(dir, "rest")
	if code, _, stderr := runArgs("mnist", "--images", images, "--labels", labels, "--from", "10", "--scale", "1", "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if list, _ := os.ReadFile(filepath.Join(out, "labels.txt")); string(list) != "00010.npy 0\n00011.npy 1\n" {
		t.Errorf("labels.txt = %q", list)
	}
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	images, labels := writeIdx(t, dir, 3)
	_, fewer := writeIdx(t, t.TempDir(), 2)
	out := filepath.Join(dir, "out")
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no args", nil, 2, "Usage:"},
		{"unknown set", []string{"cifar"}, 2, `unknown data set "cifar"`},
		{"unknown flag", []string{"mnist", "--bogus"}, 2, "flag provided but not defined"},
		{"missing inputs", []string{"mnist", "--scale", "1", "--out", out}, 1, "--images and --labels (or --set) are required"},
		{"missing out", []string{"mnist", "--images", images, "--labels", labels, "--scale", "1"}, 1, "--out is required"},
		{"missing scale", []string{"mnist", "--images", images, "--labels", labels, "--out", out}, 1, "--scale must be 1 or 255, not 0"},
		{"bad scale", []string{"mnist", "--images", images, "--labels", labels, "--out", out, "--scale", "2"}, 1, "--scale must be 1 or 255"},
		{"negative from", []string{"mnist", "--images", images, "--labels", labels, "--out", out, "--scale", "1", "--from", "-1"}, 1, "--from must be >= 0"},
		{"negative count", []string{"mnist", "--images", images, "--labels", labels, "--out", out, "--scale", "1", "--count", "-2"}, 1, "--count must be >= 0"},
		{"past the end", []string{"mnist", "--images", images, "--labels", labels, "--out", out, "--scale", "1", "--from", "2", "--count", "2"}, 1, "outside the 3 images"},
		{"from past the end", []string{"mnist", "--images", images, "--labels", labels, "--out", out, "--scale", "1", "--from", "4"}, 1, "outside the 3 images"},
		{"label count mismatch", []string{"mnist", "--images", images, "--labels", fewer, "--out", out, "--scale", "1"}, 1, "3 images but"},
		{"swapped files", []string{"mnist", "--images", labels, "--labels", images, "--out", out, "--scale", "1"}, 1, "bad magic"},
		{"missing file", []string{"mnist", "--images", filepath.Join(dir, "none"), "--labels", labels, "--out", out, "--scale", "1"}, 1, "no such file"},
		{"set and files", []string{"mnist", "--set", "t10k", "--images", images, "--out", out, "--scale", "1"}, 1, "not both"},
		{"stray argument", []string{"mnist", "--scale", "1", "extra"}, 1, "unexpected arguments"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runArgs(tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.want)
			}
			if stdout != "" {
				t.Errorf("stdout %q on error", stdout)
			}
		})
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run created %s", out)
	}
}

func TestHelp(t *testing.T) {
	if code, stdout, _ := runArgs("--help"); code != 0 || !strings.Contains(stdout, "mkdata mnist") {
		t.Errorf("--help: exit %d, %q", code, stdout)
	}
	code, _, stderr := runArgs("mnist", "--help")
	if code != 0 || !strings.Contains(stderr, "--scale 1 divides") || !strings.Contains(stderr, "-count") {
		t.Errorf("mnist --help: exit %d, %q", code, stderr)
	}
}

// TestMatchesBundledInputs exports t10k images 0..7 from the GoMNIST module (--set) and checks
// that the files are byte-identical to testdata/mnist-small/inputs, which PyTorch wrote.
func TestMatchesBundledInputs(t *testing.T) {
	if _, err := goMNISTDir(); err != nil {
		t.Skipf("GoMNIST data not available: %v", err)
	}
	out := t.TempDir()
	if code, _, stderr := runArgs("mnist", "--set", "t10k", "--count", "8", "--scale", "1", "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	bundled := filepath.Join("..", "..", "testdata", "mnist-small", "inputs")
	names, _ := filepath.Glob(filepath.Join(bundled, "*"))
	if len(names) != 9 {
		t.Fatalf("%s holds %d files, want 8 inputs and labels.txt", bundled, len(names))
	}
	for _, p := range names {
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(out, filepath.Base(p)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s differs from the bundled file (%v)", filepath.Base(p), err)
		}
	}
}
