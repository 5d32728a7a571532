package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/serve"
)

// TestOfflinePlans: on Ferret, a first session without a plan runs its first inference's
// iterations online and writes each party's plan (--offline-plans); a second session runs them
// all before the input is used — no Ferret iteration on the first inference's critical path —
// with exactly the same bytes in all, bitwise equal to the clear run. A batch's later
// inferences are planned from the earlier ones. --offline-mib 0 switches the phase off. A
// corrupt plan is noted, not used, and rewritten.
func TestOfflinePlans(t *testing.T) {
	full, _, data := program(t)
	dir := t.TempDir()
	plans := filepath.Join(dir, "plans")
	batch := filepath.Join(dir, "batch")
	if err := os.MkdirAll(batch, 0o755); err != nil {
		t.Fatal(err)
	}
	var clear [][]int64
	for _, name := range []string{"00002.npy", "00003.npy"} {
		b, err := os.ReadFile(filepath.Join(data, "inputs", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(batch, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
		clr := filepath.Join(dir, "clear-"+name)
		if _, _, err := runArgs("--clear", full, "--input", filepath.Join(batch, name), "--output", clr, "--raw"); err != nil {
			t.Fatal(err)
		}
		clear = append(clear, readInts(t, clr))
	}
	rep := filepath.Join(dir, "r.json")
	run := func(extra ...string) (*serve.Report, string) {
		t.Helper()
		out := filepath.Join(dir, "out") + string(filepath.Separator)
		args := append([]string{"--local", full, "--backend", "auto", "--ot", "ferret", "--input", batch, "--output", out, "--raw",
			"--report", rep, "--offline-plans", plans}, extra...)
		_, stderr, err := runArgs(args...)
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range []string{"00002.npy", "00003.npy"} {
			if !slices.Equal(clear[i], readInts(t, filepath.Join(out, name))) {
				t.Fatalf("inference %d: the secure output differs from the clear run", i)
			}
		}
		return readReport(t, rep), stderr
	}
	first, stderr := run()
	o := first.Offline
	if o == nil || o.FirstPlanned || o.FirstOnlineIterations == 0 || !strings.Contains(stderr, "no plan") {
		t.Fatalf("first session: %+v\n%s", o, stderr)
	}
	if o.FirstCOTs[0] == 0 || o.FirstCOTs[1] == 0 {
		t.Errorf("first session: COTs drawn %v", o.FirstCOTs)
	}
	files, err := filepath.Glob(filepath.Join(plans, "*.plan.json"))
	if err != nil || len(files) != 2 {
		t.Fatalf("plan files %v (%v), want one per party", files, err)
	}
	second, stderr := run()
	o2 := second.Offline
	if !o2.FirstPlanned || o2.FirstOnlineIterations != 0 || o2.OnlineIterations != 0 || o2.AheadIterations < o.FirstOnlineIterations ||
		o2.OfflineBytes <= o.OfflineBytes || o2.OfflineMS <= 0 {
		t.Errorf("second session: %+v; first: %+v", o2, o)
	}
	if !strings.Contains(stderr, "the first inference planned, 0 of its iterations online") {
		t.Errorf("the table does not say the first inference was planned:\n%s", stderr)
	}
	// Every iteration run ahead was used, so the run's bytes are the same: the offline phase
	// moved them before the input.
	if got, want := o2.OfflineBytes+o2.OnlineBytes, o.OfflineBytes+o.OnlineBytes; o2.UnusedIterations != 0 || got != want {
		t.Errorf("run bytes: %d with the plan (%d iterations unused), %d without", got, o2.UnusedIterations, want)
	}
	if o2.FirstCOTs != o.FirstCOTs {
		t.Errorf("COTs drawn: %v with the plan, %v without", o2.FirstCOTs, o.FirstCOTs)
	}
	t.Logf("first session: %d iterations online, %d B offline; second: %d ahead, %d online, offline %.1f ms and %d B, online %.1f ms and %d B",
		o.OnlineIterations, o.OfflineBytes, o2.AheadIterations, o2.OnlineIterations, o2.OfflineMS, o2.OfflineBytes, o2.OnlineMS, o2.OnlineBytes)

	off, _ := run("--offline-mib", "0")
	if o := off.Offline; o.CapBytes != 0 || o.AheadIterations != 0 || o.OnlineIterations != first.Offline.OnlineIterations {
		t.Errorf("--offline-mib 0: %+v", o)
	}

	if err := os.WriteFile(files[0], []byte("not a plan"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr := run(); !strings.Contains(stderr, "not used") {
		t.Errorf("a corrupt plan was not noted:\n%s", stderr)
	}
	if b, err := os.ReadFile(files[0]); err != nil || string(b) == "not a plan" {
		t.Errorf("the corrupt plan was not rewritten (%v)", err)
	}
}
