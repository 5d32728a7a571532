package iknp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"filippo.io/edwards25519"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/prg"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// numBase is the number of base OTs per direction (the IKNP width λ).
const numBase = 128

const pointSize = 32

// baseOTs is the outcome of the base OTs at one party.
type baseOTs struct {
	// As base-OT receiver (so as extension sender): choice bits and keys.
	choice []uint64 // numBase bits
	keys   []prg.Seed
	// As base-OT sender (so as extension receiver): both keys.
	k0, k1 []prg.Seed
}

// runBaseOTs runs numBase Chou–Orlandi OTs in each direction at once: party
// p is base sender towards the peer and base receiver from it. Each party
// sends two flights (its sender point A, then its receiver points B_j).
//
// Sender: A = a·G. Receiver with choice c: B = b·G + c·A, key b·(8A).
// Sender keys: k0 = a·(8B), k1 = a·(8B) − a·(8A), so k_c = 8abG. Points
// from the peer are decoded by decodePoint, which rejects non-canonical
// encodings (so the key hash is over the unique encoding both parties
// compute) and every point outside the prime-order subgroup. Clearing the
// cofactor of the peer's point is not enough: a sender whose A carries a
// small-order component T gets B_j = b_j·G + c_j·(A + T) back, and the
// torsion of B_j is c_j·T, which reveals every choice bit; so A and the B_j
// must be torsion-free ([ℓ]P = identity), and are refused otherwise. (The
// multiplication by 8 is then harmless and kept for the key format.) Keys are
// SHA-256(domain, sender party, index, A, B, shared point).
func runBaseOTs(ctx context.Context, conn *transport.Conn, rng *prg.PRG, party int) (*baseOTs, error) {
	a, err := randomScalar(rng)
	if err != nil {
		return nil, err
	}
	A := new(edwards25519.Point).ScalarBaseMult(a)
	Abytes := A.Bytes()
	if err := conn.Send(ctx, Abytes); err != nil {
		return nil, fmt.Errorf("base OT: sending A: %w", err)
	}
	peerAbytes := make([]byte, pointSize)
	if err := conn.Recv(ctx, peerAbytes); err != nil {
		return nil, fmt.Errorf("base OT: receiving A: %w", err)
	}
	peerA, peerA8, err := decodePoint(peerAbytes)
	if err != nil {
		return nil, fmt.Errorf("base OT: peer's point A: %w", err)
	}

	// Receiver role: choose c_j and send B_j.
	out := &baseOTs{
		choice: make([]uint64, numBase/64),
		keys:   make([]prg.Seed, numBase),
		k0:     make([]prg.Seed, numBase),
		k1:     make([]prg.Seed, numBase),
	}
	rng.Uint64s(out.choice)
	// These choice bits are the IKNP sender's secret s, which is also Δ of
	// the raw block COTs (blockcot.go). Its low bit is fixed to 1, so that
	// COTs built on them can carry the receiver's choice bit in the low
	// bit of its block (package ferret; as emp-ot does): s keeps 127
	// secret bits.
	out.choice[0] |= 1
	Bs := make([]byte, numBase*pointSize)
	var B, bG, bGA, K edwards25519.Point
	for j := 0; j < numBase; j++ {
		b, err := randomScalar(rng)
		if err != nil {
			return nil, err
		}
		bG.ScalarBaseMult(b)
		bGA.Add(&bG, peerA)
		B.Select(&bGA, &bG, int(bitvec.Bit(out.choice, j)))
		copy(Bs[j*pointSize:], B.Bytes())
		K.ScalarMult(b, peerA8)
		out.keys[j] = baseKey(1-party, j, peerAbytes, Bs[j*pointSize:(j+1)*pointSize], &K)
	}
	if err := conn.Send(ctx, Bs); err != nil {
		return nil, fmt.Errorf("base OT: sending B: %w", err)
	}

	// Sender role: derive both keys from the peer's B_j.
	peerBs := make([]byte, numBase*pointSize)
	if err := conn.Recv(ctx, peerBs); err != nil {
		return nil, fmt.Errorf("base OT: receiving B: %w", err)
	}
	A8 := new(edwards25519.Point).MultByCofactor(A)
	aA8 := new(edwards25519.Point).ScalarMult(a, A8)
	var K0, K1 edwards25519.Point
	for j := 0; j < numBase; j++ {
		enc := peerBs[j*pointSize : (j+1)*pointSize]
		_, P8, err := decodePoint(enc)
		if err != nil {
			return nil, fmt.Errorf("base OT: peer's point B[%d]: %w", j, err)
		}
		K0.ScalarMult(a, P8)
		K1.Subtract(&K0, aA8)
		out.k0[j] = baseKey(party, j, Abytes, enc, &K0)
		out.k1[j] = baseKey(party, j, Abytes, enc, &K1)
	}
	return out, nil
}

// decodePoint decodes a point received from the peer and returns it and its
// multiple by the cofactor 8. It rejects encodings that do not decode, that
// are not canonical (edwards25519's SetBytes accepts some non-canonical
// encodings of valid points, e.g. a y coordinate ≥ 2^255−19; the point is
// re-encoded and the bytes compared), the identity, and every point outside
// the prime-order subgroup ([ℓ]P is not the identity): a small-order
// component of the peer's A would leak the receiver's choice bits through the
// B_j (see runBaseOTs), and a point of small order would make the shared key
// independent of the peer's secret.
func decodePoint(enc []byte) (P, P8 *edwards25519.Point, err error) {
	P, err = new(edwards25519.Point).SetBytes(enc)
	if err != nil {
		return nil, nil, err
	}
	if !bytes.Equal(P.Bytes(), enc) {
		return nil, nil, fmt.Errorf("non-canonical point encoding %x", enc)
	}
	id := edwards25519.NewIdentityPoint()
	P8 = new(edwards25519.Point).MultByCofactor(P)
	if P8.Equal(id) == 1 {
		return nil, nil, fmt.Errorf("point %x has small order", enc)
	}
	if timesGroupOrder(P).Equal(id) != 1 {
		return nil, nil, fmt.Errorf("point %x is not in the prime-order subgroup (it has a small-order component)", enc)
	}
	return P, P8, nil
}

// timesGroupOrder returns [ℓ]P (ℓ the prime order of the base point), computed as
// [ℓ−1]P + P: a Scalar cannot hold ℓ itself (it is 0 mod ℓ), and the multiplication uses the
// scalar's canonical integer value ℓ−1 whatever the order of P. It is the identity exactly
// when P is in the prime-order subgroup. P is public (the peer's message), so the
// variable-time multiplication is fine.
func timesGroupOrder(P *edwards25519.Point) *edwards25519.Point {
	var one [32]byte
	one[0] = 1
	s, err := edwards25519.NewScalar().SetCanonicalBytes(one[:])
	if err != nil {
		// Unreachable (1 is canonical); answer "not the identity" so the point is refused.
		return edwards25519.NewGeneratorPoint()
	}
	minusOne := edwards25519.NewScalar().Negate(s)
	Q := new(edwards25519.Point).VarTimeDoubleScalarBaseMult(minusOne, P, edwards25519.NewScalar())
	return Q.Add(Q, P)
}

func randomScalar(rng *prg.PRG) (*edwards25519.Scalar, error) {
	var buf [64]byte
	rng.Fill(buf[:])
	s, err := edwards25519.NewScalar().SetUniformBytes(buf[:])
	if err != nil {
		return nil, fmt.Errorf("base OT: scalar: %w", err)
	}
	return s, nil
}

func baseKey(senderParty, j int, A, B []byte, K *edwards25519.Point) prg.Seed {
	h := sha256.New()
	h.Write([]byte("cryptflow-go/ot/chou-orlandi/v1"))
	var idx [3]byte
	idx[0] = byte(senderParty)
	binary.LittleEndian.PutUint16(idx[1:], uint16(j))
	h.Write(idx[:])
	h.Write(A)
	h.Write(B)
	h.Write(K.Bytes())
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	var s prg.Seed
	copy(s[:], sum[:])
	return s
}
