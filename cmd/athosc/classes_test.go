package main

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/sciir"
)

var digitNames = []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}

// copyDir copies the regular files of src into a new folder.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// TestClassNames: class names come from classes.txt beside labels.txt (whose labels may then be
// names) or from --classes FILE and are recorded in the program; a --classes list of the wrong
// length is refused; an image folder's class subfolders are numbered by a rule athosc prints, with
// a warning when their number is not the model's output classes.
func TestClassNames(t *testing.T) {
	model, val := smallModel(t)
	dir := t.TempDir()

	// classes.txt and labels by name.
	folder := copyDir(t, val)
	if err := os.WriteFile(filepath.Join(folder, "classes.txt"), []byte(strings.Join(digitNames, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	labels, err := os.ReadFile(filepath.Join(folder, "labels.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var named []string
	for _, l := range strings.Split(strings.TrimSpace(string(labels)), "\n") {
		file, label, _ := strings.Cut(l, " ")
		k := int(label[0] - '0')
		named = append(named, file+" "+digitNames[k])
	}
	if err := os.WriteFile(filepath.Join(folder, "labels.txt"), []byte(strings.Join(named, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "named.sciir")
	cfg, err := parseCompile([]string{model, "--validate", folder, "-o", out, "--scales", "8"})
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if err := compileModel(cfg, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	f, err := sciir.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Meta.Classes, digitNames) || !strings.Contains(stdout.String(), "classes: 10 names from "+filepath.Join(folder, "classes.txt")) ||
		!strings.Contains(stdout.String(), "accuracy") {
		t.Errorf("classes %v\n%s", f.Meta.Classes, stdout.String())
	}

	// --classes of the wrong length.
	short := filepath.Join(dir, "nine.txt")
	if err := os.WriteFile(short, []byte(strings.Join(digitNames[:9], "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err = parseCompile([]string{model, "--classes", short, "-o", filepath.Join(dir, "short.sciir")})
	if err != nil {
		t.Fatal(err)
	}
	if err := compileModel(cfg, &bytes.Buffer{}, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "names 9 classes, but the model's output") {
		t.Errorf("9 names for 10 classes: %v", err)
	}

	// An image folder of 3 classes for a 10-class model.
	images := t.TempDir()
	for _, class := range []string{"cat", "dog", "bird"} {
		if err := os.Mkdir(filepath.Join(images, class), 0o755); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 28, 28))); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(images, class, "a.png"), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out = filepath.Join(dir, "img.sciir")
	cfg, err = parseCompile([]string{model, "--validate", images, "-o", out, "--scales", "8"})
	if err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if err := compileModel(cfg, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout.String(), "classes: the 3 subfolders of "+images+" in sorted name order are classes 0..2: 0 bird, 1 cat, 2 dog (renaming or adding a folder renumbers them") {
		t.Errorf("no rule printed:\n%s", stdout.String())
	}
	if !strings.Contains(stderr.String(), "athosc: warning: "+images+" has 3 class subfolders, but the model's output has 10 classes") {
		t.Errorf("no warning: %q", stderr.String())
	}
}
