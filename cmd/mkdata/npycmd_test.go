package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/npy"
)

func writeArray(t *testing.T, path string, shape []int, data any) {
	t.Helper()
	a, err := npy.NewArray(shape, data)
	if err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(path, a); err != nil {
		t.Fatal(err)
	}
}

func readArray(t *testing.T, path string) *npy.Array {
	t.Helper()
	a, err := npy.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestNpyRoundTrip exports MNIST-shaped images, stacks the folder into one batch, slices it,
// reshapes the slice, and checks that the values come back unchanged.
func TestNpyRoundTrip(t *testing.T) {
	dir := t.TempDir()
	images, labels := writeIdx(t, dir, 6)
	set := filepath.Join(dir, "set")
	if code, _, stderr := runArgs("mnist", "--images", images, "--labels", labels, "--scale", "255", "--out", set); code != 0 {
		t.Fatal(stderr)
	}
	batch := filepath.Join(set, "batch.npy")
	code, stdout, stderr := runArgs("npy", "stack", "-o", batch, set)
	if code != 0 || !strings.Contains(stdout, "6 arrays joined, float32 [6 1 28 28]") {
		t.Fatalf("stack: exit %d, %q %q", code, stdout, stderr)
	}
	// Stacking again skips the output file that now sits in the folder.
	if code, stdout, _ := runArgs("npy", "stack", set, "-o", batch); code != 0 || !strings.Contains(stdout, "6 arrays joined") {
		t.Fatalf("restack: exit %d, %q", code, stdout)
	}
	b := readArray(t, batch)
	x, _ := b.Float32()
	for i := range 6 {
		if x[i*784] != float32(10*i+1) || x[i*784+783] != float32(10*i+1) {
			t.Fatalf("image %d of the batch: %v", i, x[i*784])
		}
	}
	slice := filepath.Join(dir, "slice.npy")
	if code, stdout, stderr := runArgs("npy", "slice", "-o", slice, "--from", "2", "--count", "3", batch); code != 0 || !strings.Contains(stdout, "rows [2, 5)") {
		t.Fatalf("slice: exit %d, %q %q", code, stdout, stderr)
	}
	flat := filepath.Join(dir, "flat.npy")
	if code, stdout, stderr := runArgs("npy", "reshape", "-o", flat, "--shape", "-1,784", slice); code != 0 || !strings.Contains(stdout, "float32 [3 784] (from [3 1 28 28])") {
		t.Fatalf("reshape: exit %d, %q %q", code, stdout, stderr)
	}
	f := readArray(t, flat)
	y, _ := f.Float32()
	if !reflect.DeepEqual(f.Shape, []int{3, 784}) || !reflect.DeepEqual(y, x[2*784:5*784]) {
		t.Errorf("slice+reshape: shape %v, values differ: %v", f.Shape, !reflect.DeepEqual(y, x[2*784:5*784]))
	}
	// Default --count takes the rest.
	if code, stdout, _ := runArgs("npy", "slice", "-o", slice, "--from", "4", batch); code != 0 || !strings.Contains(stdout, "[2 1 28 28]") {
		t.Errorf("slice to the end: exit %d, %q", code, stdout)
	}
	if code, stdout, _ := runArgs("npy", "info", batch, flat); code != 0 || stdout != batch+": float32 [6 1 28 28]\n"+flat+": float32 [3 784]\n" {
		t.Errorf("info: exit %d, %q", code, stdout)
	}
}

// TestNpyKeepsDType: stack (both modes), slice and reshape keep every element type.
func TestNpyKeepsDType(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		a, b any
	}{
		{[]uint8{1, 2, 3, 4}, []uint8{5, 6, 7, 8}},
		{[]int64{-1, 2, 3, 1 << 40}, []int64{5, 6, 7, 8}},
		{[]int32{-1, 2, 3, 4}, []int32{5, 6, 7, 8}},
		{[]float64{0.1, 2, 3, 4}, []float64{5, 6, 7, 1e-300}},
	} {
		a, b := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy")
		writeArray(t, a, []int{2, 2}, tc.a)
		writeArray(t, b, []int{2, 2}, tc.b)
		out := filepath.Join(dir, "out.npy")
		if code, _, stderr := runArgs("npy", "stack", "--new-axis", "-o", out, a, b); code != 0 {
			t.Fatal(stderr)
		}
		s := readArray(t, out)
		if !reflect.DeepEqual(s.Shape, []int{2, 2, 2}) || fmt.Sprint(s.Data()) != fmt.Sprint(tc.a)[:len(fmt.Sprint(tc.a))-1]+" "+fmt.Sprint(tc.b)[1:] {
			t.Errorf("stack --new-axis %T: %v %v", tc.a, s.Shape, s.Data())
		}
		if code, _, stderr := runArgs("npy", "stack", "-o", out, a, b); code != 0 {
			t.Fatal(stderr)
		}
		if s := readArray(t, out); !reflect.DeepEqual(s.Shape, []int{4, 2}) || reflect.TypeOf(s.Data()) != reflect.TypeOf(tc.a) {
			t.Errorf("stack %T: %v %T", tc.a, s.Shape, s.Data())
		}
		if code, _, stderr := runArgs("npy", "slice", "-o", out, "--from", "1", "--count", "1", a); code != 0 {
			t.Fatal(stderr)
		}
		if s := readArray(t, out); !reflect.DeepEqual(s.Shape, []int{1, 2}) || reflect.TypeOf(s.Data()) != reflect.TypeOf(tc.a) {
			t.Errorf("slice %T: %v %T", tc.a, s.Shape, s.Data())
		}
		// Reshape in place.
		if code, _, stderr := runArgs("npy", "reshape", "-o", a, "--shape", "4", a); code != 0 {
			t.Fatal(stderr)
		}
		if s := readArray(t, a); !reflect.DeepEqual(s.Shape, []int{4}) || !reflect.DeepEqual(s.Data(), tc.a) {
			t.Errorf("reshape %T: %v %v", tc.a, s.Shape, s.Data())
		}
	}
}

func TestNpyErrors(t *testing.T) {
	dir := t.TempDir()
	f22 := filepath.Join(dir, "f22.npy")
	writeArray(t, f22, []int{2, 2}, []float32{1, 2, 3, 4})
	f23 := filepath.Join(dir, "f23.npy")
	writeArray(t, f23, []int{2, 3}, make([]float32, 6))
	f32 := filepath.Join(dir, "f32.npy")
	writeArray(t, f32, []int{3, 2}, make([]float32, 6))
	i22 := filepath.Join(dir, "i22.npy")
	writeArray(t, i22, []int{2, 2}, []int64{1, 2, 3, 4})
	scalar := filepath.Join(dir, "scalar.npy")
	writeArray(t, scalar, nil, []float32{1})
	trunc := filepath.Join(dir, "trunc.npy")
	b, _ := os.ReadFile(f22)
	os.WriteFile(trunc, b[:len(b)-2], 0o644)
	empty := filepath.Join(dir, "empty")
	os.Mkdir(empty, 0o755)
	out := filepath.Join(dir, "out.npy")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"npy"}, 2, "name a command"},
		{[]string{"npy", "squash"}, 2, `unknown command "squash"`},
		{[]string{"npy", "stack", f22}, 2, "-o OUT.npy is required"},
		{[]string{"npy", "stack", "-o", out}, 2, "give the .npy files"},
		{[]string{"npy", "stack", "-o", out, f22, i22}, 1, i22 + " is int64 but " + f22 + " is float32"},
		{[]string{"npy", "stack", "-o", out, f22, f23}, 1, f23 + " has shape [2 3] but " + f22 + " has [2 2]: only the first dimension may differ"},
		{[]string{"npy", "stack", "--new-axis", "-o", out, f22, f32}, 1, "with --new-axis the shapes must be equal"},
		{[]string{"npy", "stack", "-o", out, scalar, scalar}, 1, "scalar (0-d) array: it has no first axis to join along (use --new-axis)"},
		{[]string{"npy", "stack", "-o", out, f22, trunc}, 1, "truncated"},
		{[]string{"npy", "stack", "-o", out, empty}, 1, "holds no .npy files"},
		{[]string{"npy", "stack", "-o", out, filepath.Join(dir, "none.npy")}, 1, "no such file"},
		{[]string{"npy", "reshape", "-o", out, f22}, 2, "--shape is required"},
		{[]string{"npy", "reshape", "-o", out, "--shape", "3,x", f22}, 2, `"x" is not a dimension`},
		{[]string{"npy", "reshape", "-o", out, "--shape", "3,-1", f22}, 1, "cannot reshape 4 elements"},
		{[]string{"npy", "reshape", "-o", out, "--shape", "4", f22, f23}, 2, "give one input file, not 2"},
		{[]string{"npy", "reshape", "-o", out, "--shape", "4", trunc}, 1, "truncated"},
		{[]string{"npy", "slice", "-o", out, "--from", "1", "--count", "2", f22}, 1, "outside the 2 samples of " + f22},
		{[]string{"npy", "slice", "-o", out, "--from", "-1", f22}, 2, "--from must be >= 0"},
		{[]string{"npy", "slice", "-o", out, scalar}, 1, "scalar (0-d) array; it has no rows"},
		{[]string{"npy", "slice", f22}, 2, "-o OUT.npy is required"},
		{[]string{"npy", "info"}, 2, "give one or more .npy files"},
		{[]string{"npy", "info", trunc}, 1, "truncated"},
	} {
		code, stdout, stderr := runArgs(tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%q: exit %d, %q; want exit %d and %q", tc.args, code, stderr, tc.code, tc.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run wrote %s", out)
	}
	// A scalar from a one-element array and back.
	one := filepath.Join(dir, "one.npy")
	writeArray(t, one, []int{1, 1}, []float32{7})
	if code, stdout, stderr := runArgs("npy", "reshape", "-o", out, "--shape", "", one); code != 0 || !strings.Contains(stdout, "float32 []") {
		t.Errorf("reshape to a scalar: exit %d, %q %q", code, stdout, stderr)
	}
}

func TestNpyHelp(t *testing.T) {
	code, stdout, _ := runArgs("npy", "--help")
	if code != 0 || !strings.Contains(stdout, "mkdata npy stack -o OUT.npy") || !strings.Contains(stdout, "checked before any") {
		t.Errorf("npy --help: exit %d, %q", code, stdout)
	}
	for _, tc := range []struct{ cmd, want string }{
		{"stack", "numpy.concatenate(axis=0)"},
		{"reshape", "one dimension may be -1"},
		{"slice", "Only those rows' bytes are read"},
		{"info", "DTYPE [SHAPE]"},
	} {
		code, stdout, _ := runArgs("npy", tc.cmd, "--help")
		if code != 0 || !strings.Contains(stdout, tc.want) {
			t.Errorf("npy %s --help: exit %d, %q", tc.cmd, code, stdout)
		}
	}
	if _, stdout, _ := runArgs("--help"); !strings.Contains(stdout, "mkdata npy stack|reshape|slice") {
		t.Errorf("mkdata --help lacks npy: %q", stdout)
	}
}
