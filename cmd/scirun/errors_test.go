package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// TestErrorsPointTheRightWay: the errors of issue 23, item 8, say what to do.
func TestErrorsPointTheRightWay(t *testing.T) {
	full, client, data := program(t)
	dir := t.TempDir()

	t.Run("preprocessing differs", func(t *testing.T) {
		// The same model, ring and scale, compiled with another --mean: the handshake names it.
		f, err := sciir.ReadFile(full)
		if err != nil {
			t.Fatal(err)
		}
		p := *f.Meta.Preprocess
		p.Mean = []float64{0.5}
		f.Meta.Preprocess = &p
		other := filepath.Join(dir, "mean.client.sciir")
		if err := cli.WriteProgram(other, f, false); err != nil {
			t.Fatal(err)
		}
		ts := startServer(t, "--party", "0", full, "--quiet")
		_, _, cerr := runArgs("--party", "1", other, "--connect", ts.addr, "--input", inputPath(data, 0), "--quiet")
		serr := <-ts.done
		want := "(same model, ring and scale, compiled differently: preprocessing mean (--mean): client [0.5], server [0])"
		for side, err := range map[string]error{"client": cerr, "server": serr} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v\nwant %q", side, err, want)
			}
		}
	})

	t.Run("tls-self server, client without a pin", func(t *testing.T) {
		ts := startServer(t, "--party", "0", full, "--serve", "--tls-self", filepath.Join(dir, "key.pem"), "--quiet")
		_, _, err := runArgs("--party", "1", client, "--connect", ts.addr, "--input", inputPath(data, 0), "--quiet")
		if err == nil || !strings.Contains(err.Error(), "pass --tls-pin with the fingerprint it printed at start") {
			t.Errorf("client: %v", err)
		}
		if err := ts.stop(t); err != nil {
			t.Error(err)
		}
		if !strings.Contains(ts.stderr.String(), "it needs --tls-pin with the fingerprint printed at start") {
			t.Errorf("server log: %s", ts.stderr.String())
		}
	})

	t.Run("clear with the client copy", func(t *testing.T) {
		_, _, err := runArgs("--clear", client, "--input", inputPath(data, 0))
		want := client + " has no weights (it is a client copy): --clear runs the whole model in the clear and needs the full program file (" +
			strings.Replace(client, ".client.sciir", ".sciir", 1)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "party 0") {
			t.Errorf("%v\nwant %q", err, want)
		}
	})

	t.Run("plot usage points at scirun plot --help", func(t *testing.T) {
		for _, args := range [][]string{{"plot"}, {"plot", "r.json"}, {"plot", "r.json", "-o", "x.gif"}, {"plot", "--nope"}} {
			cmd := exec.Command(binary, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.HasSuffix(stderr.String(), "\nRun 'scirun plot --help' for usage.\n") {
				t.Errorf("scirun %v: %v, stderr %q", args, err, stderr.String())
			}
		}
		// The main command's usage errors still point at scirun --help.
		var b bytes.Buffer
		if code := cli.Report(&b, "scirun", cli.Usagef("choose a mode")); code != 2 || !strings.HasSuffix(b.String(), "Run 'scirun --help' for usage.\n") {
			t.Errorf("%d %q", code, b.String())
		}
	})
}
