package cryptflow

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The tools whose commands README.md names.
var readmeTools = []string{"athosc", "scirun", "mkdata", "scibench"}

// readmeBlocks returns README.md's sh code blocks, each as its logical lines (comments removed,
// continuations joined), and whether the block is marked to be run (<!-- readme-test: run -->).
func readmeBlocks(t *testing.T) (blocks [][]string, run []bool) {
	t.Helper()
	f, err := os.Open("README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var cur []string
	in, mark, pending := false, false, ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "<!-- readme-test: run -->":
			mark = true
		case !in && strings.HasPrefix(line, "```sh"):
			in, cur = true, nil
		case in && strings.HasPrefix(line, "```"):
			blocks, run = append(blocks, cur), append(run, mark)
			in, mark = false, false
		case in:
			line = stripComment(line)
			if strings.HasSuffix(line, "\\") {
				pending += strings.TrimSuffix(line, "\\") + " "
				continue
			}
			if l := strings.TrimSpace(pending + line); l != "" {
				cur = append(cur, l)
			}
			pending = ""
		case strings.TrimSpace(line) != "":
			mark = false
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks, run
}

// stripComment drops a shell comment: a # at the start or after a blank, outside quotes.
func stripComment(line string) string {
	var q rune
	for i, c := range line {
		switch {
		case q != 0:
			if c == q {
				q = 0
			}
		case c == '\'' || c == '"':
			q = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// words splits a command line into words (quotes removed) and commands (at ;, &&, ||, | and &).
func commands(line string) [][]string {
	var out [][]string
	var cmd []string
	var w strings.Builder
	var q rune
	inWord := false
	flush := func() {
		if inWord {
			cmd = append(cmd, w.String())
			w.Reset()
			inWord = false
		}
	}
	end := func() {
		flush()
		if len(cmd) > 0 {
			out = append(out, cmd)
		}
		cmd = nil
	}
	for _, c := range line {
		switch {
		case q != 0:
			if c == q {
				q = 0
			} else {
				w.WriteRune(c)
			}
		case c == '\'' || c == '"':
			q, inWord = c, true
		case c == ' ' || c == '\t':
			flush()
		case c == ';' || c == '|' || c == '&':
			end()
		default:
			w.WriteRune(c)
			inWord = true
		}
	}
	end()
	return out
}

// buildTools builds the README's tools into a temporary bin directory.
func buildTools(t *testing.T) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	bin := t.TempDir()
	args := []string{"build", "-o", bin + string(filepath.Separator)}
	for _, tool := range readmeTools {
		args = append(args, "./cmd/"+tool)
	}
	if out, err := exec.Command(goTool, args...).CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

var flagRE = regexp.MustCompile(`^--?[A-Za-z][A-Za-z0-9-]*`)

// TestREADME (issue 23) keeps README.md's commands working as written: every athosc, scirun,
// mkdata and scibench command names a subcommand that exists and flags its --help lists, and the
// block marked "readme-test: run" runs as is (in a scratch directory beside the bundled
// testdata, with the freshly built tools first on PATH).
func TestREADME(t *testing.T) {
	bin := buildTools(t)
	blocks, run := readmeBlocks(t)
	if len(blocks) < 5 || !slices.Contains(run, true) {
		t.Fatalf("README.md: %d sh blocks, run marks %v", len(blocks), run)
	}
	helps := map[string]string{}
	help := func(tool string, sub []string) (string, error) {
		key := tool + " " + strings.Join(sub, " ")
		if h, ok := helps[key]; ok {
			return h, nil
		}
		cmd := exec.Command(filepath.Join(bin, tool), append(slices.Clone(sub), "--help")...)
		out, err := cmd.CombinedOutput()
		helps[key] = string(out)
		return string(out), err
	}
	checked := 0
	for _, block := range blocks {
		for _, line := range block {
			for _, words := range commands(line) {
				tool := strings.TrimPrefix(strings.TrimPrefix(words[0], "./"), "bin/")
				if !slices.Contains(readmeTools, tool) {
					continue
				}
				var sub []string
				args := words[1:]
				switch tool {
				case "athosc":
					sub = []string{"compile"}
					if len(args) > 0 && slices.Contains([]string{"compile", "inspect", "eval", "disasm"}, args[0]) {
						sub, args = args[:1], args[1:]
					}
				case "scirun":
					if len(args) > 0 && args[0] == "plot" {
						sub, args = args[:1], args[1:]
					}
				case "mkdata":
					n := 1
					if len(args) > 1 && args[0] == "npy" {
						n = 2
					}
					if len(args) < n {
						t.Errorf("README: %q: mkdata without a command", line)
						continue
					}
					sub, args = args[:n], args[n:]
				case "scibench":
					if len(args) < 1 {
						t.Errorf("README: %q: scibench without a subcommand", line)
						continue
					}
					sub, args = args[:1], args[1:]
				}
				h, _ := help(tool, sub)
				// Some tools exit 2 after printing a subcommand's --help (flag.ErrHelp); an
				// unknown subcommand says so.
				known := strings.Contains(strings.ToLower(h), "usage") && !strings.Contains(h, "unknown")
				if !known {
					t.Errorf("README: %q: %s %s: no such command (its --help says:\n%s)", line, tool, strings.Join(sub, " "), h)
					continue
				}
				for _, a := range args {
					f := flagRE.FindString(strings.TrimLeft(a, "["))
					if f == "" {
						continue
					}
					re := regexp.MustCompile(`(^|[^A-Za-z0-9-])--?` + regexp.QuoteMeta(strings.TrimLeft(f, "-")) + `($|[^A-Za-z0-9-])`)
					if !re.MatchString(h) {
						t.Errorf("README: %q: %s %s has no flag %s (not in its --help)", line, tool, strings.Join(sub, " "), f)
					}
				}
				checked++
			}
		}
	}
	if checked < 15 {
		t.Errorf("checked only %d commands", checked)
	}
	t.Logf("checked %d commands against the tools' --help", checked)

	root, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for i, block := range blocks {
		if !run[i] {
			continue
		}
		dir := t.TempDir()
		if err := os.Symlink(filepath.Join(root, "testdata"), filepath.Join(dir, "testdata")); err != nil {
			t.Fatal(err)
		}
		for _, line := range block {
			cmd := exec.Command("bash", "-euo", "pipefail", "-c", line)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("README: %q failed: %v\n%s", line, err, out)
				break
			}
		}
	}
}

// TestREADMEParsing checks the line splitting the README test relies on.
func TestREADMEParsing(t *testing.T) {
	got := commands(`athosc eval M.pb --inputs 'Mfcc:[1,49,10]' && scirun --clear m.sciir | head; mkdata npy info "a b.npy" &`)
	want := [][]string{{"athosc", "eval", "M.pb", "--inputs", "Mfcc:[1,49,10]"}, {"scirun", "--clear", "m.sciir"}, {"head"}, {"mkdata", "npy", "info", "a b.npy"}}
	if len(got) != len(want) {
		t.Fatalf("commands = %q", got)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Errorf("command %d = %q, want %q", i, got[i], want[i])
		}
	}
	if s := stripComment(`scirun --x 'a # b' # comment`); s != `scirun --x 'a # b' ` {
		t.Errorf("stripComment = %q", s)
	}
}
