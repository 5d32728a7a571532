package main

import (
	"encoding/csv"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/frontend/onnx"
	"github.com/cryptflow-go/cryptflow/internal/npy"
)

// writeCIFAR writes a binary batch of n records: record i has label (i+first)%10 and pixel p of
// channel c equal to (i + 7c + p) % 256.
func writeCIFAR(t *testing.T, path string, n, first int) {
	t.Helper()
	var b []byte
	for i := range n {
		b = append(b, byte((i+first)%10))
		for c := range 3 {
			for p := range 1024 {
				b = append(b, byte(i+7*c+p))
			}
		}
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readNpy(t *testing.T, path string) ([]int, []float32) {
	t.Helper()
	a, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x, err := a.Float32()
	if err != nil {
		t.Fatal(err)
	}
	return a.Shape, x
}

func TestCIFAR10(t *testing.T) {
	dir := t.TempDir()
	b1, b2 := filepath.Join(dir, "data_batch_1.bin"), filepath.Join(dir, "data_batch_2.bin")
	writeCIFAR(t, b1, 3, 0)
	writeCIFAR(t, b2, 4, 3)

	// Two batches as one sequence, across the boundary; raw values, NCHW.
	out := filepath.Join(dir, "nchw")
	code, stdout, stderr := runArgs("cifar10", "--batch", b1+","+b2, "--from", "2", "--count", "3", "--scale", "255", "--out", out)
	if code != 0 || !strings.Contains(stdout, "wrote 3 images [2, 5) of the 2 batches") {
		t.Fatalf("exit %d: %q %q", code, stdout, stderr)
	}
	checkLabels(t, out, "00002.npy 2\n00003.npy 3\n00004.npy 4\n")
	classes, _ := os.ReadFile(filepath.Join(out, "classes.txt"))
	if string(classes) != strings.Join(cifarClasses, "\n")+"\n" || !strings.HasPrefix(string(classes), "airplane\nautomobile\n") {
		t.Errorf("classes.txt = %q", classes)
	}
	shape, x := readNpy(t, filepath.Join(out, "00004.npy")) // record 1 of the second batch
	if !reflect.DeepEqual(shape, []int{1, 3, 32, 32}) || x[0] != 1 || x[1024+5] != 1+7+5 || x[2048+1023] != float32((1+14+1023)%256) {
		t.Errorf("NCHW: shape %v, values %v %v %v", shape, x[0], x[1024+5], x[2048+1023])
	}

	// NHWC, scale 1 with mean/std; the second batch given as a positional argument.
	out = filepath.Join(dir, "nhwc")
	if code, _, stderr := runArgs("cifar10", "--batch", b1, b2, "--from", "5", "--layout", "NHWC", "--mean", "0.5,0.25,0", "--std", "0.5", "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkLabels(t, out, "00005.npy 5\n00006.npy 6\n")
	shape, x = readNpy(t, filepath.Join(out, "00006.npy")) // record 3 of the second batch
	want := func(c, p int) float32 {
		m := []float32{0.5, 0.25, 0}[c]
		return (float32(byte(3+7*c+p))*(float32(1)/255) - m) / 0.5
	}
	if !reflect.DeepEqual(shape, []int{1, 32, 32, 3}) || x[0] != want(0, 0) || x[3*10+1] != want(1, 10) || x[3*1023+2] != want(2, 1023) {
		t.Errorf("NHWC: shape %v, values %v %v %v; want %v %v %v", shape, x[0], x[31], x[3071], want(0, 0), want(1, 10), want(2, 1023))
	}
}

func TestCIFAR10Errors(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.bin")
	writeCIFAR(t, good, 2, 0)
	short := filepath.Join(dir, "short.bin")
	os.WriteFile(short, make([]byte, 3072), 0o644)
	bad := filepath.Join(dir, "label.bin")
	b := make([]byte, 3073)
	b[0] = 10
	os.WriteFile(bad, b, 0o644)
	out := filepath.Join(dir, "out")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--out", out}, 2, "--batch is required"},
		{[]string{"--batch", good}, 2, "--out is required"},
		{[]string{"--batch", good, "--out", out, "--scale", "3"}, 2, "--scale must be 1 or 255"},
		{[]string{"--batch", good, "--out", out, "--layout", "HWC"}, 2, "--layout must be NCHW or NHWC"},
		{[]string{"--batch", good, "--out", out, "--mean", "1,2"}, 2, "--mean: \"1,2\" has 2 values, want 1 or 3"},
		{[]string{"--batch", good, "--out", out, "--std", "0"}, 2, "--std: channel 0 is 0"},
		{[]string{"--batch", good, "--out", out, "--std", "x"}, 2, "not a finite number"},
		{[]string{"--batch", good, "--out", out, "--count", "3"}, 1, "outside the 2 samples of " + good},
		{[]string{"--batch", short, "--out", out}, 1, "not a whole number of 3073-byte CIFAR-10 records"},
		{[]string{"--batch", filepath.Join(dir, "none.bin"), "--out", out}, 1, "no such file"},
	} {
		code, stdout, stderr := runArgs(append([]string{"cifar10"}, tc.args...)...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run created %s", out)
	}
	if code, _, stderr := runArgs("cifar10", "--batch", bad, "--out", out); code != 1 || !strings.Contains(stderr, "has label 10") {
		t.Errorf("label 10: exit %d, %q", code, stderr)
	}
}

// TestSharedCIFAR10 exports the shared copy of test images 0..99 and checks them against the
// CSV (HWC order, raw values) they were converted from, and the known first labels.
func TestSharedCIFAR10(t *testing.T) {
	dir := sharedData(t, "cifar10")
	out := t.TempDir()
	if code, _, stderr := runArgs("cifar10", "--batch", filepath.Join(dir, "test_batch_first100.bin"), "--scale", "255", "--layout", "NHWC", "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	labels, _ := os.ReadFile(filepath.Join(out, "labels.txt"))
	if !strings.HasPrefix(string(labels), "00000.npy 3\n00001.npy 8\n00002.npy 8\n00003.npy 0\n00004.npy 6\n") || strings.Count(string(labels), "\n") != 100 {
		t.Errorf("labels.txt starts %q", string(labels)[:50])
	}
	meta, _ := os.ReadFile(filepath.Join(dir, "batches.meta.txt"))
	classes, _ := os.ReadFile(filepath.Join(out, "classes.txt"))
	if !reflect.DeepEqual(strings.Fields(string(classes)), strings.Fields(string(meta))) {
		t.Errorf("classes.txt %q, batches.meta.txt %q", classes, meta)
	}
	f, err := os.Open(filepath.Join(dir, "cifar10_test_first100_eran.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 42, 99} {
		_, x := readNpy(t, filepath.Join(out, fmt.Sprintf("%05d.npy", i)))
		for j, v := range rows[i][1:] {
			if want, _ := strconv.Atoi(v); x[j] != float32(want) {
				t.Fatalf("image %d value %d: %v, the CSV says %v", i, j, x[j], want)
			}
		}
	}
}

// TestSharedCIFAR10OvalInput: --mean/--std reproduce the input that the cifar10-oval model's
// test set 0 holds (CIFAR-10 test image 0, preprocessed as its meta.json says).
func TestSharedCIFAR10OvalInput(t *testing.T) {
	dir := sharedData(t, "cifar10")
	pb := filepath.Join(dir, "..", "..", "models", "cifar10-oval-base-kw", "test_data_set_0", "input_0.pb")
	want, err := onnx.ReadTensor(pb)
	if err != nil {
		t.Skipf("shared model test set not available: %v", err)
	}
	wx, err := want.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if code, _, stderr := runArgs("cifar10", "--batch", filepath.Join(dir, "test_batch_first100.bin"), "--count", "1",
		"--mean", "0.485,0.456,0.406", "--std", "0.225,0.225,0.225", "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	shape, x := readNpy(t, filepath.Join(out, "00000.npy"))
	if fmt.Sprint(shape) != fmt.Sprint(want.Dims) {
		t.Fatalf("shape %v, the test set's %v", shape, want.Dims)
	}
	worst := 0.0
	for i := range x {
		worst = max(worst, math.Abs(float64(x[i]-wx[i])))
	}
	if worst > 1e-6 {
		t.Errorf("largest difference from the test set's input: %g", worst)
	}
	t.Logf("largest difference from %s: %g", pb, worst)
}
