package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// TestClassNamesPrinted: a program that records class names prints them with every prediction
// (top class, top K, batch lines and labels), and a batch's labels.txt may name the classes.
func TestClassNamesPrinted(t *testing.T) {
	full, _, data := program(t)
	names := []string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"}
	f, err := sciir.ReadFile(full)
	if err != nil {
		t.Fatal(err)
	}
	f.Meta.Classes = names
	named := filepath.Join(t.TempDir(), "named.sciir")
	if err := cli.WriteProgram(named, f, true); err != nil {
		t.Fatal(err)
	}
	out, _, err := runArgs("--clear", named, "--input", inputPath(data, 0))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`top class ([0-9]) (zero|one|two|three|four|five|six|seven|eight|nine) \(`).MatchString(out) ||
		!regexp.MustCompile(`top 5: [0-9] [a-z]+ -?[0-9.]+, [0-9] [a-z]+ -?[0-9.]+`).MatchString(out) {
		t.Errorf("output:\n%s", out)
	}

	// labels.txt by name.
	in := batchFolder(t, data, 4)
	b, err := os.ReadFile(filepath.Join(in, "labels.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		file, label, _ := strings.Cut(l, " ")
		lines = append(lines, file+" "+names[label[0]-'0'])
	}
	if err := os.WriteFile(filepath.Join(in, "labels.txt"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _, err = runArgs("--clear", named, "--input", in, "--quiet")
	if err != nil {
		t.Fatal(err)
	}
	if n := len(regexp.MustCompile(`(?m)^0000[0-3]\.npy logits: top class [0-9] [a-z]+ \([-0-9.]+\), label`).FindAllString(out, -1)); n != 4 ||
		!strings.Contains(out, "accuracy: ") {
		t.Errorf("%d named batch lines:\n%s", n, out)
	}
	// A name the program does not know.
	if err := os.WriteFile(filepath.Join(in, "labels.txt"), []byte("00000.npy ten\n00001.npy 1\n00002.npy 2\n00003.npy 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runArgs("--clear", named, "--input", in); err == nil || !strings.Contains(err.Error(), `label "ten" is neither a class index nor one of the 10 class names (zero, one, two, three, four, …)`) {
		t.Errorf("unknown name: %v", err)
	}
}
