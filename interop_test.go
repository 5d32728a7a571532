package cryptflow

import (
	"bufio"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestInferAgainstScirunServer: a Go client with default options runs a secure inference against
// a `scirun --party 0` server with its default flags (same streams, OT source and backend).
func TestInferAgainstScirunServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds scirun")
	}
	bin := buildTools(t)
	prog, err := Compile("testdata/mnist-small/model.onnx", CompileOptions{Bits: 32, Scale: 8})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.sciir")
	clientPath, err := prog.WriteFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, filepath.Join(bin, "scirun"), "--party", "0", path, "--listen", "127.0.0.1:0")
	out, err := srv.StderrPipe() // a single-session server says where it listens on stderr
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Wait() }()
	defer cancel()
	sc := bufio.NewScanner(out)
	addr := ""
	for addr == "" && sc.Scan() {
		if m := regexp.MustCompile(`listening on (\S+)`).FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	if addr == "" {
		t.Fatalf("scirun server printed no address: %v", sc.Err())
	}
	go func() {
		for sc.Scan() {
		}
	}()
	client, err := ReadProgram(clientPath)
	if err != nil {
		t.Fatal(err)
	}
	x, err := client.ReadInput("testdata/mnist-small/inputs/00002.npy")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Infer(ctx, addr, client, x, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Class != 1 || res.BytesRecv == 0 || res.Rounds == 0 {
		t.Errorf("class %d (want 1), received %d B in %d rounds", res.Class, res.BytesRecv, res.Rounds)
	}
}
