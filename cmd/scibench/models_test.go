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

// buildTools builds scirun and athosc into a temporary directory, or skips the test.
func buildTools(t *testing.T) (scirun, athosc string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds the tools and runs a two-process secure inference")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build scirun and athosc")
	}
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", dir+string(filepath.Separator), "../scirun", "../athosc")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("cannot build scirun and athosc: %v\n%s", err, b)
	}
	return filepath.Join(dir, "scirun"), filepath.Join(dir, "athosc")
}

// TestModelsHarness runs the harness on the bundled MNIST model: one secure inference as two
// processes, then the same model under a budget it cannot meet.
func TestModelsHarness(t *testing.T) {
	scirun, athosc := buildTools(t)
	t.Run("run", func(t *testing.T) { testModelsRun(t, scirun, athosc) })
	t.Run("budget", func(t *testing.T) { testModelsBudget(t, scirun, athosc) })
	t.Run("sci3", func(t *testing.T) { testModelsSci3(t, scirun, athosc) })
}

// testModelsSci3: the three-party backend runs as three processes (server, client, helper over
// TLS), bitwise equal to --clear, with the helper's traffic and process usage recorded.
func testModelsSci3(t *testing.T, scirun, athosc string) {
	out := t.TempDir()
	var stdout, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := []string{"models", "-models", "mnist=../../testdata/mnist-small/model.onnx:32:12",
		"-backends", "sci3", "-ot", "iknp,ferret", "-net", "lan", "-plots=false",
		"-out", out, "-scirun", scirun, "-athosc", athosc, "-quiet", "-timeout", "2m"}
	if code := run(ctx, args, &stdout, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got struct {
		Results []ModelResult `json:"results"`
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	// -ot does not multiply sci3's runs: its OTs are the helper's.
	if len(got.Results) != 1 {
		t.Fatalf("%d results, want 1: %s", len(got.Results), b)
	}
	r := got.Results[0]
	if r.Backend != "sci3" || r.OT != "dealer" || r.Status != "ok" {
		t.Fatalf("result %+v", r)
	}
	if r.EqualClear == nil || !*r.EqualClear {
		t.Fatalf("secure output not bitwise equal to --clear: %+v", r)
	}
	// Since the helper deals short OTs its traffic is below the data parties' (mnist-small:
	// ~0.16 MB against ~0.56 MB), but never nothing.
	if r.HelperBytes <= 0 || r.HelperBytes >= 4*r.TotalBytes() || r.OnlineS <= 0 {
		t.Fatalf("helper traffic %d B (data parties %d B), online %.3f s", r.HelperBytes, r.TotalBytes(), r.OnlineS)
	}
	if r.Server.Measured && (r.Helper.MaxRSS <= 0 || !r.Helper.Measured) {
		t.Fatalf("helper process usage missing: %+v", r.Helper)
	}
	if !strings.Contains(stdout.String(), "| mnist | 32/12 | sci3 | dealer | lan | ok |") || !strings.Contains(stdout.String(), "the helper's links") {
		t.Fatalf("results.md:\n%s", stdout.String())
	}
}

func testModelsRun(t *testing.T, scirun, athosc string) {
	out := t.TempDir()
	var stdout, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// -only keeps one of the two backends' combinations.
	args := []string{"models", "-models", "mnist=../../testdata/mnist-small/model.onnx:32:12",
		"-backends", "sciot,scihe", "-ot", "iknp", "-net", "lan", "-only", "mnist/sciot/*/*",
		"-out", out, "-scirun", scirun, "-athosc", athosc, "-quiet", "-timeout", "2m"}
	if code := run(ctx, args, &stdout, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got struct {
		Budget  int64         `json:"budget_bytes"`
		Results []ModelResult `json:"results"`
		Papers  []paperFigure `json:"papers"`
	}
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(got.Results) != 1 || len(got.Papers) == 0 {
		t.Fatalf("results.json has %d results (want 1) and %d paper figures: %s", len(got.Results), len(got.Papers), b)
	}
	r := got.Results[0]
	if r.Model != "mnist" || r.Backend != "sciot" || r.OT != "iknp" || r.Net != "lan" || r.Status != "ok" {
		t.Fatalf("result %+v", r)
	}
	if r.BytesToSrv <= 0 || r.BytesToCli <= 0 || r.Rounds <= 0 || r.SessionS <= 0 || r.WallS < r.SessionS {
		t.Fatalf("traffic or time missing: %+v", r)
	}
	if r.EqualClear == nil || !*r.EqualClear {
		t.Fatalf("secure output not bitwise equal to --clear: %+v", r)
	}
	if r.OTRan == 0 || r.HERan != 0 || r.Estimate.OTLayers != r.OTRan {
		t.Fatalf("engines: report %d OT / %d HE layers, estimate %d OT", r.OTRan, r.HERan, r.Estimate.OTLayers)
	}
	// The estimate is exact for linear layers and per element for the rest: on IKNP it must be
	// within a few percent of the measured traffic (headers and base OTs are left out).
	est, meas := float64(r.Estimate.Total()), float64(r.TotalBytes())
	if est < 0.9*meas || est > 1.05*meas {
		t.Fatalf("estimate %.0f B, measured %.0f B", est, meas)
	}
	if r.Server.Measured && (r.Server.MaxRSS <= 0 || r.Client.MaxRSS <= 0 || r.Client.UserS <= 0) {
		t.Fatalf("process usage missing: %+v %+v", r.Server, r.Client)
	}
	if r.ClientReport == "" || r.LayerPlot == "" {
		t.Fatalf("no report or layer plot: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(out, "models-compare.png")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, layerPlotName(r))); err != nil {
		t.Fatal(err)
	}

	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(md, stdout.Bytes()) {
		t.Fatal("stdout differs from results.md")
	}
	var header, row string
	for _, line := range strings.Split(string(md), "\n") {
		if strings.HasPrefix(line, "| model |") {
			header = line
		}
		if strings.HasPrefix(line, "| mnist | 32/12 | sciot | iknp | lan | ok |") {
			row = line
		}
	}
	if header == "" || row == "" {
		t.Fatalf("results.md lacks the header or the mnist row:\n%s", md)
	}
	if strings.Count(header, "|") != strings.Count(row, "|") {
		t.Fatalf("row has %d cells, header %d:\n%s\n%s", strings.Count(row, "|"), strings.Count(header, "|"), header, row)
	}
	if strings.Contains(string(md), "CrypTFlow2 Table 7 | squeezenet") {
		t.Fatal("the papers' table lists models the run did not include")
	}
}

func testModelsBudget(t *testing.T, scirun, athosc string) {
	out := t.TempDir()
	var stdout, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := []string{"models", "-models", "mnist=../../testdata/mnist-small/model.onnx:32:12", "-backends", "sciot,scihe",
		"-ot", "iknp", "-net", "lan", "-budget", "64KiB", "-out", out, "-scirun", scirun, "-athosc", athosc, "-quiet", "-plots=false"}
	if code := run(ctx, args, &stdout, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"| mnist | 32/12 | sciot | iknp | lan | skipped |", "| mnist | 32/12 | scihe | iknp | lan | skipped |",
		"mnist sciot would move ~", "(budget 0.00 GiB)"} {
		if !strings.Contains(stdout.String(), want) {
			t.Fatalf("output lacks %q:\n%s", want, stdout.String())
		}
	}
}

func TestModelsFlags(t *testing.T) {
	for _, bad := range [][]string{
		{"models", "-models", "nosuch"},
		{"models", "-models", "x=a.onnx:70:3"},
		{"models", "-models", "x=a.onnx:32"},
		{"models", "-backends", "gc"},
		{"models", "-ot", "kos"},
		{"models", "-net", "moon"},
		{"models", "-budget", "-3GiB"},
		{"models", "-budget", "lots"},
		{"models", "-only", "squeezenet"},
		{"models", "-timeout", "0s"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), bad, &out, &errOut); code != 1 {
			t.Fatalf("%v: exit %d, want 1 (%s)", bad, code, errOut.String())
		}
	}
	for s, want := range map[string]int64{"8GiB": 8 << 30, "500MiB": 500 << 20, "1.5GB": 1.5e9, "4096": 4096, "2 KiB": 2048} {
		if got, err := parseSize(s); err != nil || got != want {
			t.Fatalf("parseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
}
