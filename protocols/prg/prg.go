package prg

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// SeedSize is the size of a PRG seed in bytes (an AES-128 key).
const SeedSize = 16

// Seed is the key of a PRG.
type Seed [SeedSize]byte

// RandomSeed returns a fresh seed from crypto/rand.
func RandomSeed() (Seed, error) {
	var s Seed
	if _, err := rand.Read(s[:]); err != nil {
		return Seed{}, fmt.Errorf("prg: reading crypto/rand: %w", err)
	}
	return s, nil
}

// PRG is an AES-128-CTR keystream generator. A PRG is not safe for
// concurrent use; give each goroutine its own (see [PRG.Split]).
type PRG struct {
	s   cipher.Stream
	buf [8]byte
}

// New returns the PRG with key seed and stream number 0.
func New(seed Seed) *PRG { return NewStream(seed, 0) }

// NewStream returns the PRG with key seed whose counter starts at
// stream·2^64. Different stream numbers give disjoint keystreams (as long as
// fewer than 2^64 blocks are drawn from each), so one seed can drive many
// independent generators.
func NewStream(seed Seed, stream uint64) *PRG {
	blk, err := aes.NewCipher(seed[:])
	if err != nil {
		// Unreachable: a 16-byte key is always valid for AES-128.
		panic("prg: " + err.Error())
	}
	var iv [aes.BlockSize]byte
	binary.BigEndian.PutUint64(iv[:8], stream)
	return &PRG{s: cipher.NewCTR(blk, iv[:])}
}

// NewRandom returns a PRG seeded from crypto/rand.
func NewRandom() (*PRG, error) {
	s, err := RandomSeed()
	if err != nil {
		return nil, err
	}
	return New(s), nil
}

// Fill overwrites b with the next len(b) keystream bytes.
func (g *PRG) Fill(b []byte) {
	clear(b)
	g.s.XORKeyStream(b, b)
}

// XOR xors the next len(b) keystream bytes into b.
func (g *PRG) XOR(b []byte) { g.s.XORKeyStream(b, b) }

// Read fills p with keystream bytes; it never fails. It makes *PRG an
// io.Reader.
func (g *PRG) Read(p []byte) (int, error) {
	g.Fill(p)
	return len(p), nil
}

// Uint64s fills dst with pseudorandom words.
func (g *PRG) Uint64s(dst []uint64) { g.Fill(bitvec.Bytes(dst)) }

// Blocks fills dst with pseudorandom blocks.
func (g *PRG) Blocks(dst []Block) { g.Fill(BlockBytes(dst)) }

// Uint64 returns one pseudorandom word. Prefer [PRG.Uint64s] in loops.
func (g *PRG) Uint64() uint64 {
	g.Fill(g.buf[:])
	return binary.LittleEndian.Uint64(g.buf[:])
}

// Seed draws a fresh seed from the keystream (seed splitting).
func (g *PRG) Seed() Seed {
	var s Seed
	g.Fill(s[:])
	return s
}

// Split returns a new, independent PRG keyed by a seed drawn from g.
func (g *PRG) Split() *PRG { return New(g.Seed()) }
