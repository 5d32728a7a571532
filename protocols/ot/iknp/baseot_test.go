package iknp

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"filippo.io/edwards25519"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// nonCanonicalEncodings returns encodings that edwards25519's SetBytes accepts
// but that differ from the re-encoding of the decoded point: y = p + y0 for
// small y0 (p = 2^255 − 19), with either sign bit.
func nonCanonicalEncodings(t *testing.T) [][]byte {
	t.Helper()
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 255), big.NewInt(19))
	var out [][]byte
	for y0 := int64(0); y0 < 19; y0++ {
		y := new(big.Int).Add(p, big.NewInt(y0))
		be := y.FillBytes(make([]byte, pointSize))
		for sign := byte(0); sign < 2; sign++ {
			enc := make([]byte, pointSize)
			for i := range enc {
				enc[i] = be[pointSize-1-i]
			}
			enc[pointSize-1] |= sign << 7
			P, err := new(edwards25519.Point).SetBytes(enc)
			if err != nil || string(P.Bytes()) == string(enc) {
				continue
			}
			out = append(out, enc)
		}
	}
	return out
}

func TestDecodePoint(t *testing.T) {
	// A canonical encoding of a random point decodes.
	var s [64]byte
	s[0], s[40] = 7, 9
	k, err := edwards25519.NewScalar().SetUniformBytes(s[:])
	if err != nil {
		t.Fatal(err)
	}
	Q := new(edwards25519.Point).ScalarBaseMult(k)
	P, P8, err := decodePoint(Q.Bytes())
	if err != nil {
		t.Fatalf("canonical point rejected: %v", err)
	}
	if P.Equal(Q) != 1 || P8.Equal(new(edwards25519.Point).MultByCofactor(Q)) != 1 {
		t.Fatal("decodePoint returned the wrong point")
	}

	// Non-canonical encodings are rejected, including ones of points that are
	// not of small order (so the canonicity check itself is exercised).
	encs := nonCanonicalEncodings(t)
	large := 0
	for _, enc := range encs {
		P, _ := new(edwards25519.Point).SetBytes(enc)
		if new(edwards25519.Point).MultByCofactor(P).Equal(edwards25519.NewIdentityPoint()) == 0 {
			large++
		}
		_, _, err := decodePoint(enc)
		if err == nil || !strings.Contains(err.Error(), "non-canonical") {
			t.Errorf("non-canonical encoding %x: got %v, want a non-canonical error", enc, err)
		}
	}
	if large == 0 {
		t.Fatalf("found %d accepted non-canonical encodings, none of a large-order point", len(encs))
	}

	// Small-order points (canonically encoded) are rejected.
	id := edwards25519.NewIdentityPoint().Bytes()
	if _, _, err := decodePoint(id); err == nil || !strings.Contains(err.Error(), "small order") {
		t.Errorf("identity: got %v, want a small-order error", err)
	}
	// Bytes that are no point are rejected.
	bad := make([]byte, pointSize)
	bad[0] = 2 // y = 2 has no x on the curve
	if _, err := new(edwards25519.Point).SetBytes(bad); err == nil {
		t.Skip("y = 2 unexpectedly decodes")
	}
	if _, _, err := decodePoint(bad); err == nil {
		t.Error("an invalid encoding was accepted")
	}
}

// TestBaseOTRejectsNonCanonicalPeer runs the base OTs against a peer whose A
// is a non-canonical encoding of a valid large-order point.
func TestBaseOTRejectsNonCanonicalPeer(t *testing.T) {
	var enc []byte
	for _, e := range nonCanonicalEncodings(t) {
		P, _ := new(edwards25519.Point).SetBytes(e)
		if new(edwards25519.Point).MultByCofactor(P).Equal(edwards25519.NewIdentityPoint()) == 0 {
			enc = e
			break
		}
	}
	if enc == nil {
		t.Fatal("no non-canonical encoding of a large-order point found")
	}
	c0, c1 := transport.Pipe(testOpt)
	defer c0.Close()
	defer c1.Close()
	ctx := context.Background()
	e0, e1 := testenv.Both(func() error {
		_, err := runBaseOTs(ctx, c0, prg.New(prg.Seed{1}), 0)
		return err
	}, func() error {
		if err := c1.Send(ctx, enc); err != nil {
			return err
		}
		a := make([]byte, pointSize)
		return c1.Recv(ctx, a)
	})
	if e1 != nil {
		t.Fatalf("malicious peer: %v", e1)
	}
	if e0 == nil || !strings.Contains(e0.Error(), "peer's point A: non-canonical") {
		t.Fatalf("got %v, want a non-canonical point error", e0)
	}
}
