package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/npy"
)

// batchFolder copies the bundled inputs 0..n-1 into a new folder with a labels.txt for them
// (and returns it and the labels file's lines).
func batchFolder(t *testing.T, data string, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "in")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	labels, err := os.ReadFile(filepath.Join(data, "inputs", "labels.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for i := range n {
		name := fmt.Sprintf("%05d.npy", i)
		b, err := os.ReadFile(filepath.Join(data, "inputs", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(labels), "\n") {
			if strings.HasPrefix(l, name+" ") {
				kept = append(kept, l)
			}
		}
	}
	if len(kept) != n {
		t.Fatalf("labels for %d of %d inputs", len(kept), n)
	}
	if err := os.WriteFile(filepath.Join(dir, "labels.txt"), []byte(strings.Join(kept, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// stackNpy writes the bundled inputs 0..n-1 as one batched array [n,1,28,28].
func stackNpy(t *testing.T, data, path string, n int) {
	t.Helper()
	var all []float32
	var shape []int
	for i := range n {
		a, err := npy.ReadFile(inputPath(data, i))
		if err != nil {
			t.Fatal(err)
		}
		x, err := a.Float32()
		if err != nil {
			t.Fatal(err)
		}
		all, shape = append(all, x...), a.Shape
	}
	if shape[0] != 1 {
		t.Fatalf("input shape %v", shape)
	}
	if err := npy.WriteFileFloat32(path, append([]int{n}, shape[1:]...), all); err != nil {
		t.Fatal(err)
	}
}

// TestBatchLocalBitwise: a folder of inputs runs in one secure session (--local: two parties
// over loopback TCP), each output bitwise equal to that input's own --clear run; the set-up
// traffic equals a single session's; the batched .npy runs the same; the summary gives the
// throughput and the accuracy.
func TestBatchLocalBitwise(t *testing.T) {
	full, _, data := program(t)
	const n = 3
	in := batchFolder(t, data, n)
	dir := t.TempDir()
	single := filepath.Join(dir, "single.json")
	if _, _, err := runArgs("--local", full, "--input", inputPath(data, 0), "--report", single, "--quiet"); err != nil {
		t.Fatal(err)
	}
	out, rep := filepath.Join(dir, "out")+"/", filepath.Join(dir, "batch.json")
	stdout, _, err := runArgs("--local", full, "--input", in, "--output", out, "--raw", "--report", rep, "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		want := clearRaw(t, full, data, dir, i)
		if got := readInts(t, filepath.Join(out, fmt.Sprintf("%05d.npy", i))); !slices.Equal(got, want) {
			t.Errorf("input %d: secure batch %v, clear %v", i, got, want)
		}
	}
	for _, want := range []string{"00000.npy logits: top class 7", "label: right", fmt.Sprintf("batch: %d inferences in one session", n),
		"inferences/s", fmt.Sprintf("accuracy: %d/%d (100.00%%) against labels.txt", n, n)} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	one, b := readReport(t, single), readReport(t, rep)
	if b.Inferences != n || len(b.Each) != n || b.InferencesPerSec <= 0 || b.PerInference == nil {
		t.Errorf("batch report: %d inferences, %d each, %v/s", b.Inferences, len(b.Each), b.InferencesPerSec)
	}
	if b.Setup != one.Setup || b.Handshake.BytesSent != one.Handshake.BytesSent {
		t.Errorf("set-up: batch %+v (handshake %+v), single %+v (%+v)", b.Setup, b.Handshake, one.Setup, one.Handshake)
	}
	if len(b.Layers) != len(one.Layers) {
		t.Errorf("%d layers in the batch report, %d in the single one", len(b.Layers), len(one.Layers))
	}
	// scirun plot reads the batch report (its layers summed over the inferences).
	if err := runPlot([]string{rep, "-o", filepath.Join(dir, "p.png")}, &strings.Builder{}); err != nil {
		t.Errorf("plot: %v", err)
	}

	// A batched .npy: the same outputs (in the clear here), named by index.
	stacked := filepath.Join(dir, "stack.npy")
	stackNpy(t, data, stacked, n)
	sout := filepath.Join(dir, "sout") + "/"
	stdout, _, err = runArgs("--clear", full, "--input", stacked, "--output", sout, "--raw")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "stack.npy[2] logits: top class") || !strings.Contains(stdout, "inferences in the clear") {
		t.Errorf("stdout:\n%s", stdout)
	}
	for i := range n {
		if got, want := readInts(t, filepath.Join(sout, fmt.Sprintf("%05d.npy", i))), readInts(t, filepath.Join(out, fmt.Sprintf("%05d.npy", i))); !slices.Equal(got, want) {
			t.Errorf("batched .npy input %d: %v, folder %v", i, got, want)
		}
	}
}

// TestBatchFolderClassesFile: a folder as mkdata writes it, with classes.txt beside labels.txt,
// runs as if classes.txt were not there.
func TestBatchFolderClassesFile(t *testing.T) {
	full, _, data := program(t)
	in := batchFolder(t, data, 2)
	if err := os.WriteFile(filepath.Join(in, classesFile), []byte("0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, err := runArgs("--clear", full, "--input", in)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "accuracy: 2/2") {
		t.Errorf("stdout:\n%s", stdout)
	}
}

// TestBatchInputErrors: folders and files that are not a batch, and --output that cannot take
// one, fail before any work with a message naming the problem.
func TestBatchInputErrors(t *testing.T) {
	full, _, data := program(t)
	good := batchFolder(t, data, 2)
	mk := func(files map[string]string) string {
		dir := filepath.Join(t.TempDir(), "in")
		os.Mkdir(dir, 0o755)
		for name, from := range files {
			p := filepath.Join(dir, name)
			if name == "sub/" {
				os.Mkdir(p, 0o755)
				continue
			}
			b := []byte(from)
			if strings.HasPrefix(from, "@") {
				var err error
				if b, err = os.ReadFile(from[1:]); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	in0 := "@" + inputPath(data, 0)
	bad := filepath.Join(t.TempDir(), "bad.npy")
	if err := npy.WriteFileFloat32(bad, []int{2, 3, 28, 28}, make([]float32, 2*3*28*28)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"mixed", []string{"--input", mk(map[string]string{"a.npy": in0, "b.png": "x"})}, "mixes .npy arrays (a.npy, ...) and images (b.png, ...)"},
		{"subfolder", []string{"--input", mk(map[string]string{"a.npy": in0, "sub/": ""})}, "holds the folder sub"},
		{"stray file", []string{"--input", mk(map[string]string{"a.npy": in0, "notes.md": "hi"})}, "holds notes.md, which is neither a .npy array nor a PNG/JPEG image"},
		{"empty", []string{"--input", mk(map[string]string{"labels.txt": ""})}, "holds no .npy arrays or PNG/JPEG images"},
		{"unlabelled", []string{"--input", mk(map[string]string{"a.npy": in0, "b.npy": in0, "labels.txt": "a.npy 7\n"})}, "has no label for b.npy"},
		{"label of nothing", []string{"--input", mk(map[string]string{"a.npy": in0, "labels.txt": "a.npy 7\nz.npy 1\n"})}, "names z.npy, which is not an input"},
		{"label range", []string{"--input", mk(map[string]string{"a.npy": in0, "labels.txt": "a.npy 10\n"})}, "label 10 for a.npy, but the program has 10 classes (0..9)"},
		{"bad labels", []string{"--input", mk(map[string]string{"a.npy": in0, "labels.txt": "a.npy seven\n"})}, `label "seven" is not a class index, and no class names are known`},
		{"bad array", []string{"--input", mk(map[string]string{"a.npy": in0, "b.npy": "junk"})}, "b.npy"},
		{"same stem", []string{"--input", mk(map[string]string{"a.png": "x", "a.jpg": "y"})}, "whose outputs would both be a.npy"},
		{"batch shape", []string{"--input", bad}, "nor is it a batch of such inputs (shape [B,1,28,28])"},
		{"output file", []string{"--input", good, "--output", filepath.Join(t.TempDir(), "y.npy")}, "names one file, but --input " + good + " is a batch of 2 inputs: give a folder (--output DIR/)"},
		{"output is input", []string{"--input", good, "--output", good + "/"}, "the output folder is the input folder"},
	} {
		_, _, err := runArgs(append([]string{"--clear", full}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// TestServeBatchClient: a --serve server runs a batch client and a single client at the same
// time, both bitwise equal to the clear runs, and refuses a batch above its --max-batch.
func TestServeBatchClient(t *testing.T) {
	full, client, data := program(t)
	dir := t.TempDir()
	in := batchFolder(t, data, 3)
	ts := startServer(t, "--party", "0", full, "--serve", "--max-sessions", "2", "--max-batch", "3", "--timeout", "20s", "--streams", "1")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		out := filepath.Join(dir, "batch") + "/"
		_, _, err := runArgs("--party", "1", client, "--connect", ts.addr, "--input", in, "--output", out, "--raw", "--quiet", "--streams", "1")
		if err != nil {
			errs[0] = err
			return
		}
		for i := range 3 {
			if got, want := readInts(t, filepath.Join(out, fmt.Sprintf("%05d.npy", i))), clearRaw(t, full, data, dir, i); !slices.Equal(got, want) {
				errs[0] = fmt.Errorf("batch input %d: %v, clear %v", i, got, want)
			}
		}
	}()
	go func() {
		defer wg.Done()
		out := filepath.Join(dir, "single.npy")
		_, _, err := runArgs("--party", "1", client, "--connect", ts.addr, "--input", inputPath(data, 5), "--output", out, "--raw", "--quiet", "--streams", "1")
		if err != nil {
			errs[1] = err
			return
		}
		if got, want := readInts(t, out), clearRaw(t, full, data, dir, 5); !slices.Equal(got, want) {
			errs[1] = fmt.Errorf("single client: %v, clear %v", got, want)
		}
	}()
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("client %d: %v", i, err)
		}
	}
	big := batchFolder(t, data, 4)
	_, _, err := runArgs("--party", "1", client, "--connect", ts.addr, "--input", big, "--quiet", "--streams", "1")
	if err == nil || !strings.Contains(err.Error(), "the client asks for 4 inferences in one session, the server allows at most 3 (its --max-batch)") {
		t.Errorf("over the cap: %v", err)
	}
	waitFor(t, "two sessions done", func() bool { return countLines(ts.stderr.String(), "session done") == 2 })
	if err := ts.stop(t); err != nil {
		t.Fatal(err)
	}
	if log := ts.stderr.String(); !strings.Contains(log, "inferences=3") || !strings.Contains(log, "inferences=1") {
		t.Errorf("server log:\n%s", log)
	}
}
