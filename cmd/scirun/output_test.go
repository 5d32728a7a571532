package main

import (
	"bytes"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/sciir"
	"github.com/cryptflow-go/cryptflow/vm"
	"github.com/cryptflow-go/cryptflow/vm/sci"
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
	printTop(&b, r, vm.Output{Name: "prob", Value: x, Scale: 8}, 5, nil, nil)
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

func TestCheckRange(t *testing.T) {
	r := &sciir.Range{Min: 0, Max: 1}
	if msg := checkRange([]float32{0, 0.5, 1}, r); msg != "" {
		t.Errorf("inside: %q", msg)
	}
	if msg := checkRange([]float32{0, 2}, nil); msg != "" {
		t.Errorf("no range recorded: %q", msg)
	}
	msg := checkRange([]float32{-0.5, 1}, r)
	if !strings.Contains(msg, "by up to 0.5") || strings.Contains(msg, "pixels") {
		t.Errorf("below: %q", msg)
	}
	if msg := checkRange([]float32{0, 255}, r); !strings.Contains(msg, "raw 0-255 pixels") {
		t.Errorf("raw pixels: %q", msg)
	}
}

// TestInputOutsideValidatedRange: scirun warns (or with --strict refuses) an input outside the
// range the program was validated on.
func TestInputOutsideValidatedRange(t *testing.T) {
	prog, _, data := program(t)
	f, err := sciir.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	// As athosc --validate records it for MNIST digits scaled to 0..1.
	f.Meta.InputRange = &sciir.Range{Min: 0, Max: 1}
	full := filepath.Join(t.TempDir(), "ranged.sciir")
	if err := cli.WriteProgram(full, f, true); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(data, "inputs", "00003.npy")
	a, err := npy.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	x, err := a.Float32()
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		x[i] *= 255
	}
	raw := filepath.Join(t.TempDir(), "raw.npy")
	if err := npy.WriteFileFloat32(raw, a.Shape, x); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runArgs("--clear", full, "--input", raw)
	if err != nil || !strings.Contains(stderr, "warning: input") || !strings.Contains(stderr, "leave the range") {
		t.Errorf("warning: %v\n%s", err, stderr)
	}
	_, _, err = runArgs("--clear", full, "--input", raw, "--strict")
	if err == nil || !strings.Contains(err.Error(), "--strict") {
		t.Errorf("--strict: %v", err)
	}
	if _, stderr, err := runArgs("--clear", full, "--input", in, "--strict"); err != nil || strings.Contains(stderr, "warning") {
		t.Errorf("in range: %v %s", err, stderr)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"": 0, "1800MiB": 1800 << 20, "2GiB": 2 << 30, "1.5GiB": 3 << 29, "500MB": 500e6, "4096": 4096, "64KiB": 64 << 10} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("%q: %d, %v; want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"x", "-1GiB", "0", "2TiB", "GiB"} {
		if _, err := parseSize(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// --ot auto follows the link the program was planned for; an explicit source wins.
func TestOTSourceAuto(t *testing.T) {
	wan := &sciir.File{Meta: sciir.Meta{Net: "wan"}}
	lan := &sciir.File{Meta: sciir.Meta{Net: "lan"}}
	old := &sciir.File{} // a program from before the field, or not planned (sciot, scihe)
	for _, c := range []struct {
		name string
		f    *sciir.File
		want sci.OTSource
	}{
		{"auto", wan, sci.OTFerret}, {"auto", lan, sci.OTIKNP}, {"auto", old, sci.OTIKNP},
		{"auto", &sciir.File{Meta: sciir.Meta{Net: "62.5MB/s,1ms"}}, sci.OTFerret}, // 500 Mbit/s
		{"auto", &sciir.File{Meta: sciir.Meta{Net: "80MB/s,1ms"}}, sci.OTFerret},   // the crossover
		{"auto", &sciir.File{Meta: sciir.Meta{Net: "125MB/s,500µs"}}, sci.OTIKNP},  // 1 Gbit/s
		{"iknp", wan, sci.OTIKNP}, {"ferret", lan, sci.OTFerret},
	} {
		got, err := otSource(c.name, c.f)
		if err != nil || got != c.want {
			t.Errorf("--ot %s, net %q: %v, %v; want %v", c.name, c.f.Meta.Net, got, err, c.want)
		}
	}
	if _, err := otSource("kos", wan); err == nil {
		t.Error("--ot kos accepted")
	}
	if _, err := otSource("auto", &sciir.File{Meta: sciir.Meta{Net: "fast"}}); err == nil {
		t.Error("--ot auto accepted a program whose planned link is unreadable")
	}
}

// TestDecodeDequantized: an output the program dequantizes (a quantized model's
// DequantizeLinear) is printed and written as float32(q − zp)·scale, and --raw still writes q.
func TestDecodeDequantized(t *testing.T) {
	r := ring.Must(64)
	x := ring.NewTensor([]int{1, 4})
	for i, v := range []int64{0, 75, 76, 255} {
		x.Data[i] = r.FromSigned(v)
	}
	o := vm.Output{Name: "output", Value: x, Scale: 0}
	dq := &sciir.Quant{Scale: 0.160144582, ZeroPoint: 75, Type: "uint8"}
	got := decodeOutput(r, o, dq)
	for i, q := range []int64{0, 75, 76, 255} {
		if want := float32(q-75) * float32(0.160144582); got[i] != want {
			t.Errorf("value %d: %g, want %g", i, got[i], want)
		}
	}
	if plain := decodeOutput(r, o, nil); plain[3] != 255 {
		t.Errorf("without a dequantization: %v", plain)
	}
	var b bytes.Buffer
	printTop(&b, r, o, 2, nil, dq)
	if !strings.Contains(b.String(), "top class 3 (28.83)") {
		t.Errorf("printed:\n%s", b.String())
	}
	dir := t.TempDir()
	for _, raw := range []bool{false, true} {
		c := &config{raw: raw}
		path := filepath.Join(dir, "out.npy")
		if err := c.writeOutput(path, r, o, dq); err != nil {
			t.Fatal(err)
		}
		a, err := npy.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := a.Float32()
		if err != nil {
			t.Fatal(err)
		}
		want := []float32{got[0], got[1], got[2], got[3]}
		if raw {
			want = []float32{0, 75, 76, 255}
		}
		for i := range want {
			if f[i] != want[i] {
				t.Errorf("raw=%v: wrote %v, want %v", raw, f, want)
				break
			}
		}
	}
}
