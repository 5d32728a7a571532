package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestWriteReplacesAtomically(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.bin")
	if err := WriteFile(p, []byte("first"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("second"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "second" {
		t.Fatalf("got %q, %v; want second", b, err)
	}
	fi, _ := os.Stat(p)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	assertOnly(t, dir, "out.bin")
}

func TestWriteFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "prog.sciir")
	if err := WriteFile(p, []byte("good"), 0o644); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("disk full")
	err := Write(p, 0o644, func(w io.Writer) error {
		if _, err := w.Write([]byte("half")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), p) {
		t.Fatalf("got %v, want the write error naming the file", err)
	}
	b, _ := os.ReadFile(p)
	if string(b) != "good" {
		t.Fatalf("the previous file became %q", b)
	}
	assertOnly(t, dir, "prog.sciir")
}

func TestWriteRefusesFolder(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(dir, []byte("x"), 0o644); err == nil {
		t.Fatal("writing over a folder succeeded")
	}
	if err := CheckWritable(dir); err == nil {
		t.Fatal("a folder passed CheckWritable")
	}
}

func TestSameFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(in, []byte("model"), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.onnx")
	hard := filepath.Join(dir, "hard.onnx")
	linkDir := filepath.Join(dir, "linkdir")
	haveLinks := runtime.GOOS != "windows"
	if haveLinks {
		if err := os.Symlink(in, link); err != nil {
			t.Fatal(err)
		}
		if err := os.Link(in, hard); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(sub, linkDir); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		a, b string
		same bool
		need bool // needs links
	}{
		{in, in, true, false},
		{in, filepath.Join(sub, "..", "m.onnx"), true, false},
		{in, filepath.Join(dir, "m.sciir"), false, false},
		{filepath.Join(dir, "new.bin"), filepath.Join(sub, "..", "new.bin"), true, false},
		{filepath.Join(dir, "new.bin"), filepath.Join(sub, "new.bin"), false, false},
		{link, in, true, true},
		{hard, in, true, true},
		{filepath.Join(linkDir, "new.bin"), filepath.Join(sub, "new.bin"), true, true},
	}
	for _, c := range cases {
		if c.need && !haveLinks {
			continue
		}
		got, err := SameFile(c.a, c.b)
		if err != nil || got != c.same {
			t.Errorf("SameFile(%s, %s) = %v, %v; want %v", c.a, c.b, got, err, c.same)
		}
	}
	// Relative paths against absolute ones.
	t.Chdir(dir)
	if got, err := SameFile("m.onnx", in); err != nil || !got {
		t.Errorf("relative m.onnx vs %s: %v, %v", in, got, err)
	}
	if got, err := SameFile("./x/../fresh", filepath.Join(dir, "fresh")); err != nil || !got {
		t.Errorf("relative fresh path: %v, %v", got, err)
	}
}

func TestCheckNotInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "m.onnx")
	if err := os.WriteFile(in, []byte("model"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := CheckNotInput(filepath.Join(dir, ".", "m.onnx"), "", in)
	if err == nil || !strings.Contains(err.Error(), "is the input") {
		t.Fatalf("got %v, want an is-the-input error", err)
	}
	if err := CheckNotInput(filepath.Join(dir, "m.sciir"), in, ""); err != nil {
		t.Fatalf("a distinct output was refused: %v", err)
	}
}

func TestCheckWritable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.npy")
	if err := CheckWritable(p); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("CheckWritable created the output: %v", err)
	}
	assertOnly(t, dir)
	if err := CheckWritable(filepath.Join(dir, "missing", "out.npy")); err == nil {
		t.Error("an output in a missing folder passed")
	}
	if os.Geteuid() != 0 && runtime.GOOS != "windows" {
		ro := filepath.Join(dir, "ro")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		if err := CheckWritable(filepath.Join(ro, "out.npy")); err == nil {
			t.Error("an output in a read-only folder passed")
		}
		if err := WriteFile(filepath.Join(ro, "out.npy"), []byte("x"), 0o644); err == nil {
			t.Error("writing into a read-only folder succeeded")
		}
	}
}

// assertOnly fails unless dir holds exactly the named entries (no temporary files left).
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Fatalf("folder holds %v, want %v", got, names)
	}
}
