//go:build unix

package onnx

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Issue 24, finding 4: external data that is a named pipe is refused at once, naming it, instead
// of blocking the import (and the command, past its signals) until a writer comes.
func TestExternalDataFIFORefused(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "data.bin"), 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	enc := cat(dimsField([]int64{1}), fInt(tensorDataType, 1), fString(tensorName, "w"), fInt(tensorDataLocation, 1),
		fBytes(tensorExternalData, cat(fString(1, "location"), fString(2, "data.bin"))))
	tn, err := DecodeTensor(enc)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tn.LoadExternal(dir) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "data.bin is a named pipe") {
			t.Fatalf("got %v, want a refusal naming the named pipe", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("loading external data from a FIFO blocked")
	}
	// The model file itself.
	model := filepath.Join(dir, "m.onnx")
	if err := syscall.Mkfifo(model, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() { _, err := ReadModel(model); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "m.onnx is a named pipe") {
			t.Fatalf("model FIFO: got %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO model blocked")
	}
	_ = os.Remove(model)
}
