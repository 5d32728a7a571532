package npy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// sparseNpy writes a .npy whose header announces shape (float32) and whose data is a hole of
// the announced size (a sparse file: no disk, no bytes written).
func sparseNpy(t *testing.T, path string, shape []int) int64 {
	t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	var hdr bytes.Buffer
	if err := writeHeader(&hdr, "<f4", shape, n); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, hdr.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	size := int64(hdr.Len()) + 4*int64(n)
	if err := os.Truncate(path, size); err != nil {
		t.Fatal(err)
	}
	return size
}

// Issue 24, finding 5: the shape is checked from the header, before the data is read: a refused
// shape costs no data read, and a header announcing more than the file holds is refused too.
func TestReadFileCheckedRefusesBeforeData(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.npy")
	size := sparseNpy(t, big, []int{20000, 1, 28, 28}) // 62.7 MB of data, all hole
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	errShape := errors.New("a batch is not an input")
	_, err := ReadFileChecked(context.Background(), big, func(shape []int) error {
		if shape[0] != 1 {
			return errShape
		}
		return nil
	})
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("a %d-byte .npy of shape [20000 1 28 28] refused by its header: %d bytes allocated", size, alloc)
	if !errors.Is(err, errShape) || !strings.Contains(err.Error(), big) {
		t.Fatalf("got %v, want the check's error naming the file", err)
	}
	if alloc > 1<<20 {
		t.Errorf("refusing the shape allocated %d bytes: the data was read", alloc)
	}

	// A header alone, announcing 62.7 MB that the file does not hold.
	short := filepath.Join(dir, "short.npy")
	sparseNpy(t, short, []int{20000, 1, 28, 28})
	if err := os.Truncate(short, 128); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFileChecked(context.Background(), short, nil); err == nil || !strings.Contains(err.Error(), "the file holds 0 bytes of data") {
		t.Errorf("header-only file: %v", err)
	}
	// A cancelled context stops the read.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ReadFileChecked(ctx, big, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
