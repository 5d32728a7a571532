package main

import (
	"flag"
	"strings"
	"testing"
)

// TestHelpListsEveryFlagOnce: --help lists each flag exactly once, under a section of its mode
// (not under "Other"), with at most one "(default", and none for a sentinel such as --party's -1.
func TestHelpListsEveryFlagOnce(t *testing.T) {
	fs := newFlagSet(&config{})
	var b strings.Builder
	fs.SetOutput(&b)
	fs.Usage()
	help, ok := strings.CutPrefix(b.String(), usage)
	if !ok {
		t.Fatalf("help does not start with the usage text:\n%s", b.String())
	}
	seen := map[string]int{}
	entry := map[string]string{}
	var section, cur string
	for _, line := range strings.Split(help, "\n") {
		switch {
		case line == "":
		case !strings.HasPrefix(line, " "):
			if !strings.HasSuffix(line, ":") {
				t.Fatalf("line %q is neither a section title nor a flag", line)
			}
			section, cur = strings.TrimSuffix(line, ":"), ""
		case strings.HasPrefix(line, "  --"):
			cur = strings.Fields(line)[0][2:]
			seen[cur]++
			if section == "" || section == "Other" {
				t.Errorf("--%s is listed under no mode's section (%q)", cur, section)
			}
		case strings.HasPrefix(line, "        ") && cur != "":
			entry[cur] += line + "\n"
		default:
			t.Fatalf("unexpected line %q", line)
		}
	}
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		n++
		if seen[f.Name] != 1 {
			t.Errorf("--%s is listed %d times, want once", f.Name, seen[f.Name])
		}
		if c := strings.Count(entry[f.Name], "(default"); c > 1 {
			t.Errorf("--%s states its default %d times:\n%s", f.Name, c, entry[f.Name])
		}
	})
	if len(seen) != n {
		t.Errorf("help lists %d flags, the flag set has %d", len(seen), n)
	}
	for _, bad := range []string{"(default -1)", "(default 0)", `(default "")`} {
		if strings.Contains(help, bad) {
			t.Errorf("help prints a sentinel default %s", bad)
		}
	}
	if !strings.Contains(entry["top"], "(default 5)") || !strings.Contains(entry["streams"], "(default: 2, or 1 on a single core)") {
		t.Errorf("defaults missing:\n--top:\n%s--streams:\n%s", entry["top"], entry["streams"])
	}
}
