package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// TestProductionServer runs the scirun binary as a production server: TLS with a pinned client
// key (--tls-client-pin), --metrics, --log-format json and --drain-timeout. A client with the
// pinned key (--tls-client-self) is served and its report carries the session ID that the
// server's JSON log gives; a client without a key is refused with the reason; the metrics count
// the session. On SIGTERM /readyz turns 503, a session still running at the drain timeout is
// aborted with the reason, and the server exits 0.
func TestProductionServer(t *testing.T) {
	full, client, data := program(t)
	dir := t.TempDir()
	clientKey := filepath.Join(dir, "client.pem")
	_, clientFP, _, err := serve.LoadOrCreateClientKey(clientKey)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "--party", "0", full, "--serve", "--listen", "127.0.0.1:0", "--tls-self", filepath.Join(dir, "server.pem"),
		"--tls-client-pin", clientFP, "--metrics", "127.0.0.1:0", "--log-format", "json", "--drain-timeout", "2s", "--timeout", "30s")
	stderr := &testenv.SyncBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	after := func(s, prefix, end string) string {
		_, rest, ok := strings.Cut(s, prefix)
		if !ok {
			return ""
		}
		v, _, ok := strings.Cut(rest, end)
		if !ok {
			return ""
		}
		return v
	}
	var addr, pin, metrics string
	waitFor(t, "the server's addresses", func() bool {
		s := stderr.String()
		addr, pin, metrics = after(s, "listening on ", "\n"), after(s, "--tls-pin ", "\n"), after(s, `"addr":"`, `"`)
		return addr != "" && pin != "" && metrics != ""
	})
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + metrics + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	report := filepath.Join(dir, "report.json")
	if _, _, err := runArgs("--party", "1", client, "--connect", addr, "--input", inputPath(data, 1), "--quiet",
		"--tls-pin", pin, "--tls-client-self", clientKey, "--report", report); err != nil {
		t.Fatalf("pinned client: %v\n%s", err, stderr.String())
	}
	id := readReport(t, report).SessionID
	if id == "" || !strings.Contains(stderr.String(), `"session_id":"`+id+`"`) {
		t.Errorf("the client's session ID %q is not in the server's JSON log:\n%s", id, stderr.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if strings.HasPrefix(line, "{") && !json.Valid([]byte(line)) {
			t.Errorf("not a JSON log line: %s", line)
		}
	}
	_, _, err = runArgs("--party", "1", client, "--connect", addr, "--input", inputPath(data, 1), "--quiet", "--tls-pin", pin)
	if err == nil || !strings.Contains(err.Error(), "the server refused this client's TLS certificate") {
		t.Errorf("a client without a key: %v", err)
	}
	waitFor(t, "the refusal in the log", func() bool {
		s := stderr.String()
		return strings.Contains(s, `"msg":"client refused"`) && strings.Contains(s, `"why":"the client presented no certificate`)
	})
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "scirun_sessions_finished_total 1") ||
		!strings.Contains(body, `scirun_clients_refused_total{reason="tls_client"} 1`) {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	if code, _ := get("/readyz"); code != 200 {
		t.Errorf("/readyz while serving: %d", code)
	}

	// A session slowed by an emulated 1 s one-way latency (each round) runs when SIGTERM comes.
	slow := make(chan error, 1)
	go func() {
		_, _, err := runArgs("--party", "1", client, "--connect", addr, "--input", inputPath(data, 1), "--quiet",
			"--tls-pin", pin, "--tls-client-self", clientKey, "--net", "1Gbit/s,2s")
		slow <- err
	}()
	waitFor(t, "the slow session", func() bool { return strings.Count(stderr.String(), `"msg":"session started"`) == 2 })
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "/readyz 503", func() bool { code, _ := get("/readyz"); return code == http.StatusServiceUnavailable })
	if err := cmd.Wait(); err != nil {
		t.Errorf("server after SIGTERM: %v (want exit 0)\n%s", err, stderr.String())
	}
	took := time.Since(start)
	select {
	case err := <-slow:
		if err == nil || !strings.Contains(err.Error(), "shutting down") {
			t.Errorf("the session aborted at the drain timeout: client error %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the aborted client did not stop")
	}
	t.Logf("SIGTERM to exit with a session running: %v (--drain-timeout 2s)", took.Round(time.Millisecond))
	if took < 2*time.Second || took > 8*time.Second {
		t.Errorf("the server exited %v after SIGTERM, want about --drain-timeout (2s)", took)
	}
	_ = os.Remove(report)
}

// The production flags are refused outside their mode and with bad values, before anything runs.
func TestProductionUsageErrors(t *testing.T) {
	full, client, data := program(t)
	in := inputPath(data, 0)
	pin := "sha256:" + strings.Repeat("ab", 32)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--party", "0", full, "--metrics", ":9090"}, "--metrics is not used without --party 0 --serve"},
		{[]string{"--party", "0", full, "--drain-timeout", "5s"}, "--drain-timeout is not used without --party 0 --serve"},
		{[]string{"--party", "0", full, "--serve", "--log-format", "xml"}, `--log-format "xml": want text or json`},
		{[]string{"--party", "0", full, "--serve", "--metrics", "9090"}, `--metrics "9090": want an address host:port`},
		{[]string{"--party", "0", full, "--serve", "--sessions-per-minute", "-1"}, "want 0 (no limit) or more"},
		{[]string{"--party", "0", full, "--serve", "--tls-client-pin", pin}, "need the server's TLS"},
		{[]string{"--party", "0", full, "--serve", "--tls-self", "k.pem", "--tls-client-pin", "sha256:12"}, "--tls-client-pin: TLS pin"},
		{[]string{"--party", "0", full, "--serve", "--tls-self", "k.pem", "--tls-client-pin", ""}, "--tls-client-pin is empty"},
		{[]string{"--party", "1", client, "--connect", "x:1", "--input", in, "--tls-client-pin", pin}, "--tls-client-pin is not used without --party 0"},
		{[]string{"--party", "0", full, "--tls-client-self", "c.pem"}, "--tls-client-self is not used without --party 1"},
		{[]string{"--party", "1", client, "--connect", "x:1", "--input", in, "--tls-client-self", "c.pem"}, "a client certificate needs TLS"},
		{[]string{"--party", "1", client, "--connect", "x:1", "--input", in, "--tls-pin", pin, "--tls-client-cert", "c.pem"}, "--tls-client-cert and --tls-client-key go together"},
	} {
		_, _, err := runArgs(c.args...)
		if err == nil || !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error %q", c.args, err, c.want)
		}
	}
}
