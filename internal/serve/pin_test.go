package serve

import (
	"context"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func handshakeOver(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srvErr := make(chan error, 1)
	go func() {
		a, err := ln.Accept()
		if err != nil {
			srvErr <- err
			return
		}
		defer a.Close()
		srvErr <- tls.Server(a, server).HandshakeContext(ctx)
	}()
	b, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(b, client)
	err = c.HandshakeContext(ctx)
	b.Close()
	<-srvErr
	return err
}

func TestPinnedKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "server.pem")
	conf, fp, created, err := LoadOrCreateServerKey(path)
	if err != nil || !created || !strings.HasPrefix(fp, PinPrefix) || len(fp) != len(PinPrefix)+64 {
		t.Fatalf("first start: %v created=%v fp=%q", err, created, fp)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode: %v %v", fi.Mode(), err)
	}
	_, fp2, created2, err := LoadOrCreateServerKey(path)
	if err != nil || created2 || fp2 != fp {
		t.Fatalf("second start: %v created=%v, fingerprint %s then %s", err, created2, fp, fp2)
	}

	_, err = PinnedClientTLS(strings.ToUpper(fp[len(PinPrefix):]))
	if err == nil {
		t.Fatal("a pin without its sha256: prefix accepted")
	}
	ok, err := PinnedClientTLS(fp)
	if err != nil {
		t.Fatal(err)
	}
	if err := handshakeOver(t, conf, ok); err != nil {
		t.Fatalf("pinned handshake: %v", err)
	}
	otherConf, otherFP, _, err := LoadOrCreateServerKey(filepath.Join(t.TempDir(), "other.pem"))
	if err != nil || otherFP == fp {
		t.Fatal(err)
	}
	if err := handshakeOver(t, otherConf, ok); err == nil || !strings.Contains(err.Error(), "not the pinned") {
		t.Errorf("another server's key accepted: %v", err)
	}
	for _, bad := range []string{"", "sha256:", "sha256:zz", "md5:" + strings.Repeat("0", 64)} {
		if _, err := ParsePin(bad); err == nil {
			t.Errorf("pin %q accepted", bad)
		}
	}
	// A corrupt key file is an error, not a new key.
	if err := os.WriteFile(path, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := LoadOrCreateServerKey(path); err == nil {
		t.Error("corrupt key file accepted")
	}
}
