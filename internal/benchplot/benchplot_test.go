package benchplot

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestCompareWritesPNG(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.png")
	pts := []Point{
		{Series: "ours scihe", Model: "squeezenet", Seconds: 67.6, GiB: 2.7},
		{Series: "ours scihe", Model: "resnet50", Seconds: 0, GiB: 8}, // no time: left out of that panel
		{Series: "CrypTFlow2 SCI_HE LAN", Model: "squeezenet", Seconds: 59.2, GiB: 5.27, Paper: true},
		{Series: "CrypTFlow2 SCI_HE LAN", Model: "resnet50", Seconds: 545.8, GiB: 32.43, Paper: true},
	}
	if err := Compare(file, "t", []string{"squeezenet", "resnet50"}, pts); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("not a PNG (%d bytes)", len(b))
	}
	// A single point still gets a positive log range.
	if err := Compare(file, "one", []string{"m"}, []Point{{Series: "s", Model: "m", Seconds: 1, GiB: 0.01}}); err != nil {
		t.Fatal(err)
	}
}

func TestCompareErrors(t *testing.T) {
	dir := t.TempDir()
	pt := []Point{{Series: "s", Model: "m", Seconds: 1, GiB: 1}}
	for name, f := range map[string]func() error{
		"empty":     func() error { return Compare(filepath.Join(dir, "a.png"), "", nil, nil) },
		"extension": func() error { return Compare(filepath.Join(dir, "a.gif"), "", []string{"m"}, pt) },
		"model":     func() error { return Compare(filepath.Join(dir, "a.png"), "", []string{"x"}, pt) },
	} {
		if err := f(); err == nil {
			t.Fatalf("%s: no error", name)
		}
	}
}
