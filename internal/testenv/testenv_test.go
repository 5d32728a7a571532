package testenv

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// recorder is a TB that records failures and skips instead of stopping the goroutine.
type recorder struct{ fatal, skip []string }

func (r *recorder) Helper()           {}
func (r *recorder) Fatal(args ...any) { r.fatal = append(r.fatal, fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = append(r.fatal, fmt.Sprintf(format, args...))
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skip = append(r.skip, fmt.Sprintf(format, args...))
}

func TestRepoRoot(t *testing.T) {
	root := RepoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "module github.com/cryptflow-go/cryptflow") {
		t.Fatalf("%s/go.mod is not this module's", root)
	}
	if _, err := os.Stat(filepath.Join(root, "internal", "testenv", "testenv.go")); err != nil {
		t.Fatalf("root %s does not hold this package: %v", root, err)
	}
}

func TestRepoRootOutsideModule(t *testing.T) {
	t.Chdir(t.TempDir())
	r := &recorder{}
	RepoRoot(r)
	if len(r.fatal) != 1 || !strings.Contains(r.fatal[0], "go.mod not found") {
		t.Fatalf("failures %q, want one saying go.mod was not found", r.fatal)
	}
}

func TestSharedTestdataSkipsWhenAbsent(t *testing.T) {
	r := &recorder{}
	p := SharedTestdata(r, "no-such-dataset-here")
	want := filepath.Join(RepoRoot(t), "..", "shared", "testdata", "no-such-dataset-here")
	if p != want {
		t.Errorf("path %s, want %s", p, want)
	}
	if len(r.fatal) != 0 || len(r.skip) != 1 || !strings.Contains(r.skip[0], "../shared/testdata") ||
		!strings.Contains(r.skip[0], "no-such-dataset-here") {
		t.Fatalf("failures %q, skips %q; want one skip naming the missing path", r.fatal, r.skip)
	}
}

func TestSharedTestdataPresent(t *testing.T) {
	d := SharedTestdata(t) // skips on machines without the shared data
	if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
		t.Fatalf("%s: %v", d, err)
	}
}

func TestBothRunsConcurrently(t *testing.T) {
	ch := make(chan int) // unbuffered: each party blocks until the other is running
	errA := errors.New("a")
	e0, e1 := Both(func() error { ch <- 1; return errA }, func() error { <-ch; return nil })
	if e0 != errA || e1 != nil {
		t.Fatalf("errors %v, %v; want a, nil", e0, e1)
	}
}

func TestMustBoth(t *testing.T) {
	r := &recorder{}
	MustBoth(r, func() error { return nil }, func() error { return nil })
	if len(r.fatal) != 0 {
		t.Fatalf("failed without errors: %q", r.fatal)
	}
	MustBoth(r, func() error { return nil }, func() error { return errors.New("boom") })
	if len(r.fatal) != 1 || r.fatal[0] != "party 0: <nil>; party 1: boom" {
		t.Fatalf("failures %q", r.fatal)
	}
}

func TestWaitFor(t *testing.T) {
	n := 0
	WaitFor(t, time.Second, "three polls", func() bool { n++; return n == 3 })
	r := &recorder{}
	WaitFor(r, 30*time.Millisecond, "never", func() bool { return len(r.fatal) > 0 })
	if len(r.fatal) != 1 || r.fatal[0] != "timed out waiting for never" {
		t.Fatalf("failures %q", r.fatal)
	}
}

func TestSyncBuffer(t *testing.T) {
	var b SyncBuffer
	done := make(chan struct{})
	for range 4 {
		go func() {
			for range 100 {
				fmt.Fprint(&b, "x")
			}
			done <- struct{}{}
		}()
	}
	for range 4 {
		<-done
	}
	if b.String() != strings.Repeat("x", 400) {
		t.Fatalf("got %d bytes, want 400", len(b.String()))
	}
}

func TestCheckNoLeaksAndListen(t *testing.T) {
	base := runtime.NumGoroutine()
	ln := ListenLoopback(t)
	if !strings.HasPrefix(ln.Addr().String(), "127.0.0.1:") {
		t.Errorf("listening on %s", ln.Addr())
	}
	accepted := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close()
		}
		accepted <- err
	}()
	ln.Close()
	<-accepted
	CheckNoLeaks(t, base)
}

func TestSelfSigned(t *testing.T) {
	cert, key := SelfSigned(t, t.TempDir())
	pair, err := tls.LoadX509KeyPair(cert, key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(cert)
	blk, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(c)
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if _, err := c.Verify(x509.VerifyOptions{DNSName: host, Roots: pool}); err != nil {
			t.Errorf("%s: %v", host, err)
		}
	}
	if len(pair.Certificate) != 1 {
		t.Errorf("%d certificates in the chain", len(pair.Certificate))
	}
}

// TestNoProductionImports checks that only _test.go files (and the test-support packages
// themselves) import this package and internal/testsets.
func TestNoProductionImports(t *testing.T) {
	const self = "github.com/cryptflow-go/cryptflow/internal/testenv"
	support := map[string]bool{self: true, "github.com/cryptflow-go/cryptflow/internal/testsets": true,
		"github.com/cryptflow-go/cryptflow/protocols/ot/ottest": true}
	root := RepoRoot(t)
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		checked++
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		if support["github.com/cryptflow-go/cryptflow/"+filepath.ToSlash(rel)] {
			return nil
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); support[p] {
				t.Errorf("%s imports %s, which is for tests only", path, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d production files checked under %s", checked, root)
	}
}
