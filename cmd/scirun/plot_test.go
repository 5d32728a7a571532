package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/serve"
)

func TestLayerKind(t *testing.T) {
	for op, want := range map[string]string{"conv": "linear", "matmul": "linear", "relu": "ReLU",
		"trunc": "truncation", "maxpool": "pooling", "div": "pooling", "argmax": "pooling", "reshape": "other"} {
		if got := layerKinds[layerKind(op)].name; got != want {
			t.Errorf("%s: %s, want %s", op, got, want)
		}
	}
}

func TestPlotReport(t *testing.T) {
	dir := t.TempDir()
	rep := &serve.Report{Model: "m", Backend: "sciot", Ring: "Z_2^32", Role: "client", ProgramID: "ab",
		TotalMS: 1234, Layers: []serve.Layer{
			{Index: 0, Op: "conv", MS: 10, Traffic: serve.Traffic{BytesSent: 1 << 20, BytesRecv: 3 << 20}},
			{Index: 1, Op: "relu", MS: 4, Traffic: serve.Traffic{BytesSent: 1 << 18}},
			{Index: 2, Op: "trunc", MS: 2},
			{Index: 3, Op: "maxpool", MS: 3},
			{Index: 4, Op: "reshape"},
		}}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b); err != nil {
		t.Fatal(err)
	}
	// Two sessions as JSON lines, as --serve writes them.
	in := filepath.Join(dir, "r.json")
	if err := os.WriteFile(in, append(append([]byte{}, b.Bytes()...), b.Bytes()...), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "r.png")
	var stdout bytes.Buffer
	if err := runPlot([]string{in, "-o", out, "--session", "2"}, &stdout); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 500 || b.Dy() < 300 {
		t.Errorf("image of %v", b)
	}
	if !strings.Contains(stdout.String(), "5 layers") {
		t.Errorf("stdout %q", stdout.String())
	}
	svg := filepath.Join(dir, "r.svg")
	if err := runPlot([]string{in, "-o", svg}, &stdout); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{in}, "-o FILE is required"},
		{[]string{in, "-o", filepath.Join(dir, "x.gif")}, "extension"},
		{[]string{in, "-o", out, "--session", "3"}, "holds 2 reports"},
		{[]string{filepath.Join(dir, "missing.json"), "-o", out}, "no such file"},
		{[]string{out, "-o", filepath.Join(dir, "y.png")}, "not a scirun JSON report"},
	} {
		if err := runPlot(c.args, &stdout); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
