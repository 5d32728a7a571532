// Package testenv holds the scaffolding that the project's tests share: finding the repository
// root and the shared test data beside it, running the two parties of a protocol concurrently,
// and the loopback listener, certificate, log sink and goroutine-leak check of the networked
// tests. It is for tests only: no production package may import it (TestNoProductionImports
// enforces this), and it depends on nothing but the standard library (not even package testing:
// the helpers take the small TB interface, which *testing.T, *testing.B and *testing.F satisfy).
package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"sync"
)

// TB is the part of testing.TB the helpers use.
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}

// RepoRoot walks up from the working directory (a test's package directory) to the directory
// holding go.mod, failing the test when there is none.
func RepoRoot(t TB) string {
	t.Helper()
	dir, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("go.mod not found above the test directory")
		}
		dir = parent
	}
}

// SharedTestdata returns ../shared/testdata relative to the repository root, joined with elem
// (e.g. "datasets", "mnist"), and skips the test with a message saying where the data belongs
// when that path does not exist.
func SharedTestdata(t TB, elem ...string) string {
	t.Helper()
	p := filepath.Join(append([]string{RepoRoot(t), "..", "shared", "testdata"}, elem...)...)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("shared test data not available: %v (it lives beside the repository as ../shared/testdata)", err)
	}
	return p
}

// Both runs f0 and f1 (the two parties of a protocol) concurrently and returns their errors.
func Both(f0, f1 func() error) (error, error) {
	var e0, e1 error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); e0 = f0() }()
	go func() { defer wg.Done(); e1 = f1() }()
	wg.Wait()
	return e0, e1
}

// MustBoth runs f0 and f1 concurrently and fails the test if either returns an error.
func MustBoth(t TB, f0, f1 func() error) {
	t.Helper()
	if e0, e1 := Both(f0, f1); e0 != nil || e1 != nil {
		t.Fatalf("party 0: %v; party 1: %v", e0, e1)
	}
}
