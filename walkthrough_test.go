package cryptflow

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// walkthroughPort is the port the walkthrough in docs/usage.md serves on; the test runs it on a
// free port instead.
const walkthroughPort = "127.0.0.1:7443"

// usageBlock returns the bash code block of docs/usage.md that follows the marker line
// <!-- usage-test: NAME -->, as it is written.
func usageBlock(t *testing.T, name string) string {
	t.Helper()
	f, err := os.Open(filepath.Join("docs", "usage.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	marked, in := false, false
	var b strings.Builder
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in && strings.TrimSpace(line) == "<!-- usage-test: "+name+" -->":
			marked = true
		case marked && !in && strings.HasPrefix(line, "```bash"):
			in = true
		case in && strings.HasPrefix(line, "```"):
			return b.String()
		case in:
			b.WriteString(line + "\n")
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("docs/usage.md: no bash block after <!-- usage-test: %s --> (marked %v)", name, marked)
	return ""
}

// TestWalkthrough (issue 23) runs the new-user walkthrough of docs/usage.md ("Walkthrough: a
// CIFAR-10 classifier over TLS") as a user pastes it: one bash block, with set -euo pipefail, the
// freshly built tools first on PATH, in a scratch folder that has the shared test data at
// ../shared/testdata as a repository root has; only the port is swapped for a free one.
func TestWalkthrough(t *testing.T) {
	shared := testenv.SharedTestdata(t)
	for _, p := range []string{"datasets/cifar10/test_batch_first100.bin", "models/cifar10-oval-base-kw/model.onnx"} {
		testenv.SharedTestdata(t, strings.Split(p, "/")...)
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not on PATH")
	}
	script := usageBlock(t, "walkthrough")
	if n := strings.Count(script, walkthroughPort); n != 2 {
		t.Fatalf("the walkthrough names %s %d times; want 2 (--listen and --connect)", walkthroughPort, n)
	}
	for _, want := range []string{"mkdata cifar10", "athosc ", "--tls-self", "--tls-pin", "--input batch/", "scirun plot"} {
		if !strings.Contains(script, want) {
			t.Errorf("the walkthrough has no %q", want)
		}
	}
	bin := buildTools(t)

	ws := t.TempDir()
	root := filepath.Join(ws, "repo")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "shared"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(shared, filepath.Join(ws, "shared", "testdata")); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().String()
	ln.Close()
	script = strings.ReplaceAll(script, walkthroughPort, port)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	// On a timeout bash gets SIGTERM, so that its EXIT trap stops the server it started.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the walkthrough failed after %v: %v\n%s", time.Since(start).Round(time.Millisecond), err, out)
	}
	t.Logf("the walkthrough ran in %v", time.Since(start).Round(time.Millisecond))
	text := string(out)
	for _, want := range []string{"server key sha256:", "4 inferences in one session", "accuracy: ", "wrote batch.png"} {
		if !strings.Contains(text, want) {
			t.Errorf("its output has no %q:\n%s", want, text)
		}
	}
	for _, name := range []string{"00020.npy", "00021.npy", "00022.npy", "00023.npy"} {
		if !strings.Contains(text, name+" output: top class ") {
			t.Errorf("no result line for %s", name)
		}
		if fi, err := os.Stat(filepath.Join(root, "out", name)); err != nil || fi.Size() == 0 {
			t.Errorf("out/%s: %v", name, err)
		}
	}
	for _, name := range []string{"batch.png", "batch.json", "cifar.sciir", "cifar.client.sciir", "server.key"} {
		if fi, err := os.Stat(filepath.Join(root, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", name, err)
		}
	}
	if log, err := os.ReadFile(filepath.Join(root, "server.log")); err != nil || !strings.Contains(string(log), "session done") {
		t.Errorf("server.log has no finished session (%v):\n%s", err, log)
	}
}
