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
		want := []string{"00003.npy", "00004.npy", "00005.npy", "00006.npy", "classes.txt", "labels.txt"}
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
	// Nothing to auto-detect from an empty working directory.
	t.Chdir(t.TempDir())
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no args", nil, 2, "Usage:"},
		{"unknown command", []string{"cifar"}, 2, `unknown command "cifar"`},
		{"unknown flag", []string{"mnist", "--bogus"}, 2, "flag provided but not defined"},
		{"half a pair", []string{"mnist", "--images", images, "--scale", "1", "--out", out}, 2, "--images and --labels together"},
		{"missing out", []string{"mnist", "--images", images, "--labels", labels, "--scale", "1"}, 2, "--out is required"},
		{"missing scale", []string{"mnist", "--images", images, "--labels", labels, "--out", out}, 2, "--scale must be 1 or 255, not 0"},
		{"bad scale", []string{"mnist", "--images", images, "--labels", labels, "--out", out, "--scale", "2"}, 2, "--scale must be 1 or 255"},
		{"bad layout", []string{"mnist", "--images", images, "--labels", labels, "--out", out, "--scale", "1", "--layout", "CHW"}, 2, "--layout must be NCHW or NHWC"},
		{"negative from", []string{"mnist", "--images", images, "--labels", labels, "--out", out, "--scale", "1", "--from", "-1"}, 2, "--from must be >= 0"},
		{"negative count", []string{"mnist", "--images", images, "--labels", labels, "--out", out, "--scale", "1", "--count", "-2"}, 2, "--count must be >= 0"},
		{"past the end", []string{"mnist", "--images", images, "--labels", labels, "--out", out, "--scale", "1", "--from", "2", "--count", "2"}, 1, "outside the 3 samples"},
		{"from past the end", []string{"mnist", "--images", images, "--labels", labels, "--out", out, "--scale", "1", "--from", "4"}, 1, "outside the 3 samples"},
		{"label count mismatch", []string{"mnist", "--images", images, "--labels", fewer, "--out", out, "--scale", "1"}, 1, "3 images but"},
		{"swapped files", []string{"mnist", "--images", labels, "--labels", images, "--out", out, "--scale", "1"}, 1, "bad magic"},
		{"missing file", []string{"mnist", "--images", filepath.Join(dir, "none"), "--labels", labels, "--out", out, "--scale", "1"}, 1, "no such file"},
		{"set and files", []string{"mnist", "--set", "t10k", "--images", images, "--labels", labels, "--out", out, "--scale", "1"}, 2, "not both"},
		{"bad set", []string{"mnist", "--set", "test", "--out", out, "--scale", "1"}, 2, "--set must be t10k or train"},
		{"empty from-dir", []string{"fashion-mnist", "--from-dir", dir, "--out", out, "--scale", "1"}, 1, "--from-dir " + dir + " holds no t10k-images-idx3-ubyte[.gz]"},
		{"stray argument", []string{"mnist", "--scale", "1", "extra"}, 2, "unexpected arguments"},
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

// TestNotFound: with nothing given and nothing to find, the error says what to pass.
func TestNotFound(t *testing.T) {
	for _, d := range fashionSet.system {
		if _, err := os.Stat(d); err == nil {
			t.Skipf("%s exists on this machine, so Fashion-MNIST is always found", d)
		}
	}
	t.Chdir(t.TempDir())
	code, _, stderr := runArgs("fashion-mnist", "--scale", "1", "--out", filepath.Join(t.TempDir(), "out"))
	for _, want := range []string{"no Fashion-MNIST t10k files found", "shared/testdata/datasets/fashion-mnist", "pass --from-dir DIR", "--images FILE --labels FILE"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want exit 1 and %q", code, stderr, want)
		}
	}
}

// TestFromDirAndAutoDetect finds the idx files by their standard names, in --from-dir and in
// shared/testdata/datasets/NAME above the working directory, gzip-compressed or plain.
func TestFromDirAndAutoDetect(t *testing.T) {
	root := t.TempDir()
	data := filepath.Join(root, "shared", "testdata", "datasets", "fashion-mnist")
	if err := os.MkdirAll(data, 0o755); err != nil {
		t.Fatal(err)
	}
	images, labels := writeIdx(t, t.TempDir(), 5)
	copyFile(t, images, filepath.Join(data, "t10k-images-idx3-ubyte.gz"))
	copyFile(t, labels, filepath.Join(data, "t10k-labels-idx1-ubyte.gz"))
	// The training split as plain (uncompressed) files.
	writePlainIdx(t, images, filepath.Join(data, "train-images-idx3-ubyte"))
	writePlainIdx(t, labels, filepath.Join(data, "train-labels-idx1-ubyte"))

	out := filepath.Join(t.TempDir(), "a")
	if code, stdout, stderr := runArgs("fashion-mnist", "--from-dir", data, "--scale", "255", "--count", "2", "--out", out); code != 0 || !strings.Contains(stdout, "t10k-images-idx3-ubyte.gz") {
		t.Fatalf("--from-dir: exit %d, %q %q", code, stdout, stderr)
	}
	checkLabels(t, out, "00000.npy 0\n00001.npy 1\n")
	classes, _ := os.ReadFile(filepath.Join(out, "classes.txt"))
	if !strings.HasPrefix(string(classes), "T-shirt/top\nTrouser\n") || !strings.HasSuffix(string(classes), "Bag\nAnkle boot\n") {
		t.Errorf("classes.txt = %q", classes)
	}

	// Auto-detection from a folder two levels below the one holding shared/ (a worktree).
	work := filepath.Join(root, "wt", "branch")
	os.MkdirAll(work, 0o755)
	t.Chdir(work)
	out = filepath.Join(t.TempDir(), "b")
	if code, stdout, stderr := runArgs("fashion-mnist", "--set", "train", "--scale", "1", "--from", "3", "--layout", "NHWC", "--out", out); code != 0 || !strings.Contains(stdout, "train-images-idx3-ubyte") {
		t.Fatalf("auto-detect: exit %d, %q %q", code, stdout, stderr)
	}
	checkLabels(t, out, "00003.npy 3\n00004.npy 4\n")
	a, err := npy.ReadFile(filepath.Join(out, "00004.npy"))
	if err != nil {
		t.Fatal(err)
	}
	if px, _ := a.Float32(); !reflect.DeepEqual(a.Shape, []int{1, 28, 28, 1}) || px[0] != float32(41)/255 {
		t.Errorf("NHWC export: shape %v, first value %v", a.Shape, px[0])
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// writePlainIdx writes the decompressed content of the gzip file from to to.
func writePlainIdx(t *testing.T, from, to string) {
	t.Helper()
	f, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if _, err := b.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func checkLabels(t *testing.T, dir, want string) {
	t.Helper()
	got, err := os.ReadFile(filepath.Join(dir, "labels.txt"))
	if err != nil || string(got) != want {
		t.Errorf("labels.txt = %q (%v), want %q", got, err, want)
	}
}

func TestHelp(t *testing.T) {
	code, stdout, _ := runArgs("--help")
	for _, cmd := range []string{"mkdata mnist", "mkdata fashion-mnist", "mkdata cifar10", "mkdata images", "classes.txt"} {
		if code != 0 || !strings.Contains(stdout, cmd) {
			t.Errorf("--help: exit %d, no %q in %q", code, cmd, stdout)
		}
	}
	for _, tc := range []struct{ cmd, want string }{
		{"mnist", "--scale 1 divides"},
		{"mnist", "GoMNIST"},
		{"fashion-mnist", "Ankle boot"},
		{"cifar10", "1024 red then 1024 green"},
		{"images", "LOC_synset_mapping.txt"},
	} {
		code, stdout, stderr := runArgs(tc.cmd, "--help")
		if code != 0 || !strings.Contains(stdout, tc.want) || !strings.Contains(stdout, "-out folder") || stderr != "" {
			t.Errorf("%s --help: exit %d, want %q and the flags on stdout; got %q, stderr %q", tc.cmd, code, tc.want, stdout, stderr)
		}
	}
}

// sharedData returns shared/testdata/datasets/NAME as mkdata finds it (in or above the working
// directory), skipping the test when it is not there.
func sharedData(t *testing.T, name string) string {
	t.Helper()
	dir, ok := sharedDataset(name)
	if !ok {
		t.Skipf("shared test data not available: no shared/testdata/datasets/%s in or above the working directory (it lives beside the repository as ../shared/testdata)", name)
	}
	return dir
}

// TestMatchesBundledInputs exports t10k images 0..7 of the shared MNIST copy (found without any
// flag) and checks that the files are byte-identical to testdata/mnist-small/inputs, which
// PyTorch wrote.
func TestMatchesBundledInputs(t *testing.T) {
	sharedData(t, "mnist")
	out := t.TempDir()
	if code, _, stderr := runArgs("mnist", "--count", "8", "--scale", "1", "--out", out); code != 0 {
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

// TestSharedFashionMNIST exports the first Fashion-MNIST test images from the shared copy.
func TestSharedFashionMNIST(t *testing.T) {
	dir := sharedData(t, "fashion-mnist")
	out := t.TempDir()
	if code, _, stderr := runArgs("fashion-mnist", "--from-dir", dir, "--count", "5", "--scale", "1", "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// The published first labels of the Fashion-MNIST test set: ankle boot, pullover, trouser, trouser, shirt.
	checkLabels(t, out, "00000.npy 9\n00001.npy 2\n00002.npy 1\n00003.npy 1\n00004.npy 6\n")
}
