package he

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/he/heplan"
)

// The messages of a session, each one transport frame (4-byte header):
//
//   - hello, both ways: helloMagic, helloVersion, the party, l, log2 N, and the first and last
//     primes of Q xored (so that parties whose parameters differ refuse each other);
//   - party 1's public key, once, in the upload format (scheme.Encryptor.Encrypt);
//   - per product, party 1's uploads (one per input ciphertext of the plan) in one flight, then
//     party 0's replies (scheme.Evaluator.Finish, one per output ciphertext) in one flight.
const (
	helloMagic   = "CFHE"
	helloVersion = 1
	helloSize    = 16
)

// HelloBytes is the traffic of New, both directions, frame headers included: two hellos and
// party 1's public key.
func HelloBytes(l int) (int64, error) {
	p, err := heplan.ParamsFor(l)
	if err != nil {
		return 0, err
	}
	return 2*(4+helloSize) + 4 + int64(p.KeyBytes()), nil
}

// hello exchanges the hello messages and checks the peer's.
func (s *Session) hello(ctx context.Context) error {
	p := s.p
	var msg [helloSize]byte
	copy(msg[:4], helloMagic)
	msg[4], msg[5], msg[6], msg[7] = helloVersion, byte(s.party), byte(s.r.Bits), byte(p.LogN)
	binary.LittleEndian.PutUint64(msg[8:], p.Q[len(p.Q)-1]^p.Q[0])
	if err := s.conn.Send(ctx, msg[:]); err != nil {
		return err
	}
	var peer [helloSize]byte
	if err := s.conn.Recv(ctx, peer[:]); err != nil {
		return err
	}
	switch {
	case string(peer[:4]) != helloMagic || peer[4] != helloVersion:
		return errors.New("the peer is not an HE session of this version")
	case int(peer[5]) == s.party:
		return fmt.Errorf("both parties are party %d", s.party)
	case peer[6] != msg[6] || peer[7] != msg[7] || binary.LittleEndian.Uint64(peer[8:]) != binary.LittleEndian.Uint64(msg[8:]):
		return fmt.Errorf("the peer uses Z_2^%d with other parameters", peer[6])
	}
	return nil
}
