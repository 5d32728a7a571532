package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/serve"
)

// TestOfflineHELayers: with --backend scihe, the HE linear layers of every inference of a batch
// are made before its input is used (the default --offline-he-mib), the outputs equal the clear
// run's bitwise, the report and the table say so, and the online bytes fall (the layers' HE
// uploads and replies move offline; online they send l bits per input element);
// --offline-he-mib 0 runs them online.
func TestOfflineHELayers(t *testing.T) {
	full, _, data := program(t)
	dir := t.TempDir()
	batch := filepath.Join(dir, "batch")
	if err := os.MkdirAll(batch, 0o755); err != nil {
		t.Fatal(err)
	}
	names := []string{"00004.npy", "00005.npy"}
	var clear [][]int64
	for _, name := range names {
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
		args := append([]string{"--local", full, "--backend", "scihe", "--ot", "iknp", "--input", batch, "--output", out, "--raw",
			"--report", rep}, extra...)
		_, stderr, err := runArgs(args...)
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range names {
			if !slices.Equal(clear[i], readInts(t, filepath.Join(out, name))) {
				t.Fatalf("%v: inference %d: the secure output differs from the clear run", extra, i)
			}
		}
		return readReport(t, rep), stderr
	}
	ahead, stderr := run()
	online, _ := run("--offline-he-mib", "0")
	a, o := ahead.Offline, online.Offline
	if a == nil || o == nil {
		t.Fatalf("no offline account: %+v, %+v", a, o)
	}
	if a.HELayersAhead == 0 || a.HELayersAhead%2 != 0 || a.HELayersCapped != 0 || a.HELayersBytes <= 0 || a.HELayersBytes > a.HELayersCap {
		t.Errorf("default: HE layers %d made ahead, %d capped, %d of %d B held", a.HELayersAhead, a.HELayersCapped, a.HELayersBytes, a.HELayersCap)
	}
	if !strings.Contains(stderr, "HE linear layers made ahead") {
		t.Errorf("the table does not say the HE layers were made ahead:\n%s", stderr)
	}
	if o.HELayersAhead != 0 || o.HELayersCapped != 0 {
		t.Errorf("--offline-he-mib 0: %+v", o)
	}
	if a.OnlineBytes >= o.OnlineBytes || a.OfflineBytes <= o.OfflineBytes {
		t.Errorf("bytes offline/online: %d/%d made ahead, %d/%d not", a.OfflineBytes, a.OnlineBytes, o.OfflineBytes, o.OnlineBytes)
	}
	t.Logf("made ahead: offline %.1f ms, %d B; online %.1f ms, %d B. Not: offline %.1f ms, %d B; online %.1f ms, %d B",
		a.OfflineMS, a.OfflineBytes, a.OnlineMS, a.OnlineBytes, o.OfflineMS, o.OfflineBytes, o.OnlineMS, o.OnlineBytes)
}
