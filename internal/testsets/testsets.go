// Package testsets reads the shared test datasets (../shared/testdata/datasets: MNIST t10k and the
// first 100 CIFAR-10 test images) into labelled samples, for the tests of several packages. Only
// tests import it.
package testsets

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/mnist"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// Sample is one labelled input. Its layout is that of dataset.Sample, so callers convert each
// element with dataset.Sample(s).
type Sample struct {
	Name  string
	Input []float32
	Label int
}

// MNIST returns t10k images from..to-1 of the shared MNIST set, raw 0..255 or, with unit, scaled to
// 0..1 (shape [1,1,28,28] in row-major order). shared is the ../shared/testdata directory.
func MNIST(t testenv.TB, shared string, from, to int, unit bool) []Sample {
	t.Helper()
	dir := filepath.Join(shared, "datasets", "mnist")
	im, err := mnist.ReadImagesFile(filepath.Join(dir, "t10k-images-idx3-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	lb, err := mnist.ReadLabelsFile(filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	s := make([]Sample, 0, to-from)
	for i := from; i < to; i++ {
		px, err := im.Image(i)
		if err != nil {
			t.Fatal(err)
		}
		x := append([]float32(nil), px...)
		if unit {
			mnist.ScaleToUnit(x)
		}
		s = append(s, Sample{Name: "t10k-" + strconv.Itoa(i), Input: x, Label: int(lb[i])})
	}
	return s
}

// CIFAROval returns the first n CIFAR-10 test images (HWC 0..255 CSV rows), normalised as the OVAL
// cifar10 models expect: (pixel/255 − mean)/0.225, NCHW.
func CIFAROval(t testenv.TB, shared string, n int) []Sample {
	t.Helper()
	f, err := os.Open(filepath.Join(shared, "datasets", "cifar10", "cifar10_test_first100_eran.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mean := []float64{0.485, 0.456, 0.406}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	var s []Sample
	for sc.Scan() && len(s) < n {
		fields := strings.Split(strings.TrimSpace(sc.Text()), ",")
		if len(fields) != 3073 {
			t.Fatalf("CIFAR row with %d fields", len(fields))
		}
		label, _ := strconv.Atoi(fields[0])
		x := make([]float32, 3072)
		for i, v := range fields[1:] {
			p, _ := strconv.Atoi(v)
			c, hw := i%3, i/3
			x[c*1024+hw] = float32((float64(p)/255 - mean[c]) / 0.225)
		}
		s = append(s, Sample{Name: "cifar-" + strconv.Itoa(len(s)), Input: x, Label: label})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return s
}
