package serve

// Only allowed clients: mutual TLS with a CA and/or pinned client keys, the client's own key
// (from a PKI or self-made, like the server's --tls-self), and the identity per-client limits
// are keyed by.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/atomicfile"
)

// ClientRefusedError is the reason the server's TLS handshake refused a client's certificate
// (none, not signed by the client CA, or a key that is not pinned). The client gets a TLS alert.
type ClientRefusedError struct{ Reason string }

func (e *ClientRefusedError) Error() string { return "client refused: " + e.Reason }

// ClientAuth says which clients a TLS server serves: those whose certificate chains to a CA in
// CAs (when set) and whose public key is pinned in Pins (when not empty); both when both are set.
type ClientAuth struct {
	CAs  *x509.CertPool
	Pins map[string]bool // fingerprints as Fingerprint returns them
}

// LoadClientAuth reads the client CA file (PEM; "" for none) and the pins: each given pin and
// each line of pinsFile ("" for none; blank lines and # comments are skipped).
func LoadClientAuth(caFile string, pins []string, pinsFile string) (*ClientAuth, error) {
	a := &ClientAuth{Pins: map[string]bool{}}
	if caFile != "" {
		b, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("TLS client CA: %w", err)
		}
		a.CAs = x509.NewCertPool()
		if !a.CAs.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("TLS client CA: %s holds no PEM certificate", caFile)
		}
	}
	add := func(pin, where string) error {
		d, err := ParsePin(pin)
		if err != nil {
			return fmt.Errorf("%s%w", where, err)
		}
		a.Pins[PinPrefix+hex.EncodeToString(d)] = true
		return nil
	}
	for _, p := range pins {
		if err := add(p, ""); err != nil {
			return nil, err
		}
	}
	if pinsFile != "" {
		b, err := os.ReadFile(pinsFile)
		if err != nil {
			return nil, fmt.Errorf("TLS client pins: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for n := 1; sc.Scan(); n++ {
			line, _, _ := strings.Cut(sc.Text(), "#")
			if line = strings.TrimSpace(line); line == "" {
				continue
			}
			if err := add(strings.Fields(line)[0], fmt.Sprintf("%s line %d: ", pinsFile, n)); err != nil {
				return nil, err
			}
		}
		if len(a.Pins) == 0 {
			return nil, fmt.Errorf("TLS client pins: %s pins no key (a client would never be served)", pinsFile)
		}
	}
	if a.CAs == nil && len(a.Pins) == 0 {
		return nil, errors.New("TLS client authentication: no client CA and no pinned key")
	}
	return a, nil
}

// Apply makes conf (a server configuration) require a client certificate that a allows. The
// check runs in the TLS handshake, before the client's hello: a refused client does no protocol
// work. The error of the server's handshake is a *ClientRefusedError.
func (a *ClientAuth) Apply(conf *tls.Config) *tls.Config {
	conf = conf.Clone()
	// Requested, not required, so that a client without one is refused below with the reason;
	// the chain is checked below too.
	conf.ClientAuth = tls.RequestClientCert
	conf.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return &ClientRefusedError{Reason: "the client presented no certificate (it needs --tls-client-cert and --tls-client-key, or --tls-client-self)"}
		}
		leaf := cs.PeerCertificates[0]
		fp := Fingerprint(leaf)
		if a.CAs != nil {
			inter := x509.NewCertPool()
			for _, c := range cs.PeerCertificates[1:] {
				inter.AddCert(c)
			}
			if _, err := leaf.Verify(x509.VerifyOptions{Roots: a.CAs, Intermediates: inter,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				return &ClientRefusedError{Reason: fmt.Sprintf("the client's certificate (key %s) is not signed by the client CA: %v", fp, err)}
			}
		}
		if len(a.Pins) > 0 && !a.Pins[fp] {
			return &ClientRefusedError{Reason: fmt.Sprintf("the client's key %s is not pinned", fp)}
		}
		return nil
	}
	return conf
}

// LoadOrCreateClientKey returns the client certificate kept in path, a PEM file with a private
// key and a self-signed certificate for it, made (mode 0600, atomically) when path does not exist
// (created reports that). The fingerprint is what a server pins (--tls-client-pin).
func LoadOrCreateClientKey(path string) (cert tls.Certificate, fingerprint string, created bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if b, err = newSelfSignedFor("scirun client (pinned key)", x509.ExtKeyUsageClientAuth); err != nil {
			return cert, "", false, fmt.Errorf("TLS client key %s: %w", path, err)
		}
		if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
			return cert, "", false, fmt.Errorf("TLS client key %s: %w", path, err)
		}
		created = true
	} else if err != nil {
		return cert, "", false, fmt.Errorf("TLS client key: %w", err)
	}
	if cert, err = tls.X509KeyPair(b, b); err != nil {
		return cert, "", false, fmt.Errorf("TLS client key %s: %w", path, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return cert, "", false, fmt.Errorf("TLS client key %s: %w", path, err)
	}
	return cert, Fingerprint(leaf), created, nil
}

// LoadClientCert reads a client's certificate (chain) and key from PEM files.
func LoadClientCert(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return cert, fmt.Errorf("TLS client certificate: %w", err)
	}
	return cert, nil
}

// ClientIdentity is the identity per-client limits count by: the fingerprint of the client's
// TLS certificate key when it presented one, else its IP address.
func ClientIdentity(nc net.Conn) string {
	if pc, ok := nc.(*prefixConn); ok {
		nc = pc.Conn
	}
	if tc, ok := nc.(*tls.Conn); ok {
		if cs := tc.ConnectionState(); len(cs.PeerCertificates) > 0 {
			return Fingerprint(cs.PeerCertificates[0])
		}
	}
	if host, _, err := net.SplitHostPort(nc.RemoteAddr().String()); err == nil {
		return host
	}
	return nc.RemoteAddr().String()
}
