package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFHEHarness runs scibench fhe on the synthetic polynomial CNN: a batch in one session,
// its output bitwise equal to --clear, the fhe account read from the report, the per-layer
// table written.
func TestFHEHarness(t *testing.T) {
	scirun, athosc := buildTools(t)
	dir := t.TempDir()
	mkmodel := filepath.Join(dir, "mkmodel")
	if b, err := exec.Command("go", "build", "-o", mkmodel, "../mkmodel").CombinedOutput(); err != nil {
		t.Skipf("cannot build mkmodel: %v\n%s", err, b)
	}
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var stdout, errOut bytes.Buffer
	args := []string{"fhe", "-models", "polycnn", "-n", "3", "-out", out, "-scirun", scirun, "-athosc", athosc, "-mkmodel", mkmodel, "-quiet"}
	if code := run(ctx, args, &stdout, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rs []FHEResult
	if err := json.Unmarshal(b, &rs); err != nil {
		t.Fatal(err)
	}
	if len(rs) != 1 || rs[0].Status != "ok" || rs[0].EqualClear == nil || !*rs[0].EqualClear {
		t.Fatalf("results: %s", b)
	}
	a := rs[0].Account
	// Three inferences share one ciphertext: one round trip.
	if a.RoundTrips != 1 || a.Group != 3 || a.KeyBytes <= 0 || a.UploadBytes <= 0 || a.EvalMS <= 0 || len(a.Layers) == 0 || a.KeygenMS <= 0 {
		t.Fatalf("fhe account: %+v", a)
	}
	// Two processes (the default): the server's own CPU, part of both processes'.
	if r := rs[0]; r.ServerCPUS <= 0 || r.ServerCPUS >= r.CPUS {
		t.Errorf("server CPU %.3f s of %.3f s in all", r.ServerCPUS, r.CPUS)
	}
	md := stdout.String()
	if !strings.Contains(md, "| polycnn | 3 | ok |") || !strings.Contains(md, "the server's last round trip per instruction") {
		t.Fatalf("results.md:\n%s", md)
	}
	// A bad model spec is a usage error naming the form.
	if code := run(ctx, []string{"fhe", "-models", "nosuch"}, &stdout, &errOut); code == 0 || !strings.Contains(errOut.String(), "NAME=FILE.onnx:INPUTDIR") {
		t.Errorf("unknown model: exit %d, %s", code, errOut.String())
	}
	errOut.Reset()
	if code := run(ctx, []string{"fhe", "-models", "lola-bc8@sometimes"}, &stdout, &errOut); code == 0 || !strings.Contains(errOut.String(), "@frequency or @dense") {
		t.Errorf("bad evaluation mode: exit %d, %s", code, errOut.String())
	}
}
