package serve

// TLS without a PKI: the server keeps a self-made key and certificate in one file (made on first
// start) and prints the fingerprint of its public key; the client pins that fingerprint.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"strings"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/atomicfile"
)

// PinPrefix starts every fingerprint that Fingerprint returns and ParsePin accepts.
const PinPrefix = "sha256:"

// Fingerprint is the SHA-256 of a certificate's SubjectPublicKeyInfo, as "sha256:HEX". It pins the
// key, not the certificate, so a server that renews its certificate with the same key keeps it.
func Fingerprint(cert *x509.Certificate) string {
	sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return PinPrefix + hex.EncodeToString(sum[:])
}

// ParsePin checks a pin given on the command line ("sha256:" and 64 hex digits) and returns its
// digest.
func ParsePin(pin string) ([]byte, error) {
	h, ok := strings.CutPrefix(strings.ToLower(strings.TrimSpace(pin)), PinPrefix)
	b, err := hex.DecodeString(h)
	if !ok || err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("TLS pin %q: want %s followed by 64 hex digits, as the server prints it", pin, PinPrefix)
	}
	return b, nil
}

// LoadOrCreateServerKey returns a TLS server configuration from path, a PEM file holding a private
// key and a self-signed certificate for it. When path does not exist it makes a new ECDSA P-256
// key and a certificate valid for ten years and writes both there (mode 0600, atomically); created
// reports that. The fingerprint is what clients pin (--tls-pin).
func LoadOrCreateServerKey(path string) (conf *tls.Config, fingerprint string, created bool, err error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if b, err = newSelfSigned(); err != nil {
			return nil, "", false, fmt.Errorf("TLS key %s: %w", path, err)
		}
		if err := atomicfile.WriteFile(path, b, 0o600); err != nil {
			return nil, "", false, fmt.Errorf("TLS key %s: %w", path, err)
		}
		created = true
	} else if err != nil {
		return nil, "", false, fmt.Errorf("TLS key: %w", err)
	}
	cert, err := tls.X509KeyPair(b, b)
	if err != nil {
		return nil, "", false, fmt.Errorf("TLS key %s: %w", path, err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, "", false, fmt.Errorf("TLS key %s: %w", path, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, Fingerprint(leaf), created, nil
}

func newSelfSigned() ([]byte, error) {
	return newSelfSignedFor("scirun server (pinned key)", x509.ExtKeyUsageServerAuth)
}

// newSelfSignedFor makes a P-256 key and a self-signed certificate for it, named cn, valid for
// ten years for the given use, and returns both as PEM.
func newSelfSignedFor(cn string, use x509.ExtKeyUsage) ([]byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.AddDate(10, 0, 0),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{use},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb})
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...), nil
}

// PinnedClientTLS returns a TLS client configuration that accepts exactly the server whose public
// key has the given fingerprint, whatever its certificate's names or issuer: the pin replaces the
// PKI, so a server needs no CA-signed certificate.
func PinnedClientTLS(pin string) (*tls.Config, error) {
	want, err := ParsePin(pin)
	if err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The chain is not checked against a CA: VerifyConnection checks the pin instead, and
		// it runs on every handshake (resumed ones too).
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("TLS pin: the server sent no certificate")
			}
			got := Fingerprint(cs.PeerCertificates[0])
			if got != PinPrefix+hex.EncodeToString(want) {
				return fmt.Errorf("TLS pin: the server's key is %s, not the pinned %s%x (a different server, or someone in between)", got, PinPrefix, want)
			}
			return nil
		},
	}, nil
}
