package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/ring"
	"github.com/cryptflow-go/cryptflow/vm"
)

func TestClassRows(t *testing.T) {
	for _, c := range []struct {
		shape   []int
		rows, d int
	}{
		{[]int{1, 1000, 1, 1}, 1, 1000}, // SqueezeNet's classifier output
		{[]int{1, 10}, 1, 10},
		{[]int{10}, 1, 10},
		{[]int{2, 10}, 2, 10},
		{[]int{2, 10, 1, 1}, 2, 10},
		{[]int{1, 1}, 1, 1},
		{[]int{}, 1, 1},
		{[]int{3, 4, 5}, 12, 5},
	} {
		n := ring.Size(c.shape)
		if rows, d := classRows(c.shape, n); rows != c.rows || d != c.d {
			t.Errorf("%v: %d rows of %d, want %d of %d", c.shape, rows, d, c.rows, c.d)
		}
	}
}

func TestPrintTopSqueezeNetShape(t *testing.T) {
	r := ring.Must(32)
	x := ring.NewTensor([]int{1, 1000, 1, 1})
	x.Data[417] = r.FromSigned(5 << 8)
	var b bytes.Buffer
	printTop(&b, r, vm.Output{Name: "prob", Value: x, Scale: 8}, 5, nil)
	out := b.String()
	if n := strings.Count(out, "top class"); n != 1 {
		t.Fatalf("%d 'top class' lines, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "top class 417 (5)") || !strings.Contains(out, "top 5: 417 5") {
		t.Errorf("output:\n%s", out)
	}
}

// TestOutputFilesNeverClobberInputs: --output and --report may not name the program or the input,
// and an unwritable one is refused before any session starts.
func TestOutputFilesNeverClobberInputs(t *testing.T) {
	full, _, data := program(t)
	in := filepath.Join(data, "inputs", "00003.npy")
	before, err := os.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--clear", full, "--input", in, "--output", full}, "is the input"},
		{[]string{"--clear", full, "--input", in, "--output", in}, "is the input"},
		{[]string{"--local", full, "--input", in, "--report", full}, "is the input"},
		{[]string{"--local", full, "--input", in, "--output", filepath.Join(t.TempDir(), "no", "y.npy")}, "cannot be written"},
	} {
		_, stderr, err := runArgs(c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.args, err, c.want)
		}
		if strings.Contains(stderr, "total") {
			t.Errorf("%q: a session ran before the refusal", c.args)
		}
	}
	if after, _ := os.ReadFile(full); !bytes.Equal(before, after) {
		t.Fatal("the program was changed")
	}
}
