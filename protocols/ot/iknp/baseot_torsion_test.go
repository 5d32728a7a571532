package iknp

import (
	"context"
	"strings"
	"testing"

	"filippo.io/edwards25519"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
	"github.com/cryptflow-go/cryptflow/protocols/ot"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// torsionPoints returns the seven non-identity points of small order of edwards25519, by
// their canonical encodings (the eight-torsion subgroup: orders 2, 4, 4, 8, 8, 8, 8). They are
// found as [ℓ]Q for points Q that decode from small y values, so no constant is copied.
func torsionPoints(t *testing.T) []*edwards25519.Point {
	t.Helper()
	seen := map[string]*edwards25519.Point{}
	id := edwards25519.NewIdentityPoint()
	for y := 2; y < 2000 && len(seen) < 7; y++ {
		for sign := byte(0); sign < 2; sign++ {
			var enc [pointSize]byte
			enc[0], enc[1] = byte(y), byte(y>>8)
			enc[pointSize-1] = sign << 7
			Q, err := new(edwards25519.Point).SetBytes(enc[:])
			if err != nil {
				continue
			}
			T := timesOrder(Q)
			if T.Equal(id) == 0 {
				seen[string(T.Bytes())] = T
			}
		}
	}
	if len(seen) != 7 {
		t.Fatalf("found %d torsion points, want 7", len(seen))
	}
	var out []*edwards25519.Point
	for _, T := range seen {
		if new(edwards25519.Point).MultByCofactor(T).Equal(id) != 1 {
			t.Fatalf("%x is not of small order", T.Bytes())
		}
		out = append(out, T)
	}
	return out
}

// timesOrder returns [ℓ]P (ℓ the prime order of the base point), as [ℓ−1]P + P.
func timesOrder(P *edwards25519.Point) *edwards25519.Point {
	minusOne := edwards25519.NewScalar().Subtract(edwards25519.NewScalar(), scalarOne())
	Q := new(edwards25519.Point).ScalarMult(minusOne, P)
	return Q.Add(Q, P)
}

func scalarOne() *edwards25519.Scalar {
	var b [32]byte
	b[0] = 1
	s, _ := edwards25519.NewScalar().SetCanonicalBytes(b[:])
	return s
}

// TestDecodePointRejectsTorsion plants each small-order component on a prime-order point: the
// result is of large order (so the old small-order check passed it) but not in the prime-order
// subgroup, and must be refused.
func TestDecodePointRejectsTorsion(t *testing.T) {
	var s [64]byte
	s[0], s[17] = 3, 5
	k, err := edwards25519.NewScalar().SetUniformBytes(s[:])
	if err != nil {
		t.Fatal(err)
	}
	A := new(edwards25519.Point).ScalarBaseMult(k)
	if _, _, err := decodePoint(A.Bytes()); err != nil {
		t.Fatalf("a prime-order point was refused: %v", err)
	}
	for _, T := range torsionPoints(t) {
		P := new(edwards25519.Point).Add(A, T)
		_, _, err := decodePoint(P.Bytes())
		if err == nil || !strings.Contains(err.Error(), "prime-order subgroup") {
			t.Errorf("A + torsion %x: got %v, want a prime-order subgroup error", T.Bytes(), err)
		}
		// A torsion point alone is refused too.
		if _, _, err := decodePoint(T.Bytes()); err == nil {
			t.Errorf("torsion point %x accepted", T.Bytes())
		}
	}
}

// TestBaseOTRefusesTorsionInA is the attack: a base-OT sender that adds the point of order 2
// to its A would read every choice bit of the receiver from the torsion of the B_j (B_j =
// b_j·G + c_j·A' has a torsion component exactly when c_j = 1). The receiver must refuse A'
// before it sends any B_j.
func TestBaseOTRefusesTorsionInA(t *testing.T) {
	var T2 *edwards25519.Point
	for _, T := range torsionPoints(t) {
		if new(edwards25519.Point).Add(T, T).Equal(edwards25519.NewIdentityPoint()) == 1 {
			T2 = T
		}
	}
	if T2 == nil {
		t.Fatal("no point of order 2 found")
	}
	var s [64]byte
	s[0] = 42
	a, _ := edwards25519.NewScalar().SetUniformBytes(s[:])
	Aevil := new(edwards25519.Point).ScalarBaseMult(a)
	Aevil.Add(Aevil, T2)

	c0, c1 := transport.Pipe(testOpt)
	defer c0.Close()
	defer c1.Close()
	ctx := context.Background()
	leaked := make([]uint64, numBase/64)
	var choice []uint64
	e0, e1 := testenv.Both(func() error {
		res, err := runBaseOTs(ctx, c0, prg.New(prg.Seed{7}), 0)
		if res != nil {
			choice = res.choice
		}
		if err != nil {
			_ = c0.Close() // so that the sender's receive ends at once
		}
		return err
	}, func() error {
		if err := c1.Send(ctx, Aevil.Bytes()); err != nil {
			return err
		}
		peerA := make([]byte, pointSize)
		if err := c1.Recv(ctx, peerA); err != nil {
			return err
		}
		Bs := make([]byte, numBase*pointSize)
		if err := c1.Recv(ctx, Bs); err != nil {
			return nil // refused: the receiver closed or aborted before sending its B_j
		}
		// The receiver accepted A': read its choice bits from the torsion of the B_j.
		for j := 0; j < numBase; j++ {
			B, err := new(edwards25519.Point).SetBytes(Bs[j*pointSize : (j+1)*pointSize])
			if err != nil {
				return err
			}
			if timesOrder(B).Equal(edwards25519.NewIdentityPoint()) == 0 {
				leaked[j/64] |= 1 << (j % 64)
			}
		}
		// Finish the flight with valid points, so that the receiver completes.
		G := edwards25519.NewGeneratorPoint().Bytes()
		out := make([]byte, 0, numBase*pointSize)
		for j := 0; j < numBase; j++ {
			out = append(out, G...)
		}
		if err := c1.Send(ctx, out); err != nil {
			return err
		}
		return c1.Flush(ctx)
	})
	if e1 != nil {
		t.Fatalf("malicious sender: %v", e1)
	}
	if e0 == nil || !strings.Contains(e0.Error(), "prime-order subgroup") {
		right := -1
		if choice != nil {
			right = 0
			for j := 0; j < numBase; j++ {
				if ot.Bit(choice, j) == ot.Bit(leaked, j) {
					right++
				}
			}
		}
		t.Fatalf("the receiver accepted a peer A with a torsion component (err %v): the sender read %d of its %d choice bits", e0, right, numBase)
	}
}
