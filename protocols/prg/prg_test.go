package prg

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"testing"
)

func TestPRGDeterministicAndStreams(t *testing.T) {
	seed := Seed{1, 2, 3}
	a, b := make([]byte, 1000), make([]byte, 1000)
	New(seed).Fill(a)
	New(seed).Fill(b)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed gave different keystreams")
	}
	// The keystream is AES-CTR with a zero IV.
	blk, _ := aes.NewCipher(seed[:])
	want := make([]byte, 1000)
	cipher.NewCTR(blk, make([]byte, 16)).XORKeyStream(want, want)
	if !bytes.Equal(a, want) {
		t.Fatal("keystream is not AES-128-CTR")
	}
	// Stream 1 starts at counter 2^64, i.e. differs from stream 0.
	c := make([]byte, 1000)
	NewStream(seed, 1).Fill(c)
	if bytes.Equal(a, c) {
		t.Fatal("streams 0 and 1 coincide")
	}
	iv := make([]byte, 16)
	binary.BigEndian.PutUint64(iv, 1)
	want2 := make([]byte, 1000)
	cipher.NewCTR(blk, iv).XORKeyStream(want2, want2)
	if !bytes.Equal(c, want2) {
		t.Fatal("stream 1 does not start at counter 2^64")
	}
}

func TestPRGFillIsIncremental(t *testing.T) {
	seed := Seed{9}
	whole := make([]byte, 300)
	New(seed).Fill(whole)
	g := New(seed)
	var parts []byte
	for _, n := range []int{1, 7, 16, 33, 100, 143} {
		p := make([]byte, n)
		g.Fill(p)
		parts = append(parts, p...)
	}
	if !bytes.Equal(whole, parts) {
		t.Fatal("piecewise Fill differs from one Fill")
	}
	// Uint64s, Blocks and Uint64 draw from the same stream.
	g = New(seed)
	w := make([]uint64, 2)
	g.Uint64s(w)
	bl := make([]Block, 1)
	g.Blocks(bl)
	u := g.Uint64()
	if w[0] != binary.LittleEndian.Uint64(whole[0:]) || w[1] != binary.LittleEndian.Uint64(whole[8:]) ||
		bl[0][0] != binary.LittleEndian.Uint64(whole[16:]) || bl[0][1] != binary.LittleEndian.Uint64(whole[24:]) ||
		u != binary.LittleEndian.Uint64(whole[32:]) {
		t.Fatal("typed draws disagree with the byte stream")
	}
}

func TestPRGXOR(t *testing.T) {
	seed := Seed{5}
	ks := make([]byte, 64)
	New(seed).Fill(ks)
	b := bytes.Repeat([]byte{0xa5}, 64)
	New(seed).XOR(b)
	for i := range b {
		if b[i] != ks[i]^0xa5 {
			t.Fatal("XOR did not xor the keystream")
		}
	}
}

func TestSplitAndRandom(t *testing.T) {
	g := New(Seed{7})
	c1, c2 := g.Split(), g.Split()
	if c1.Uint64() == c2.Uint64() {
		t.Fatal("split children coincide")
	}
	r1, err := NewRandom()
	if err != nil {
		t.Fatal(err)
	}
	r2, err := NewRandom()
	if err != nil {
		t.Fatal(err)
	}
	a, b := make([]byte, 32), make([]byte, 32)
	r1.Fill(a)
	r2.Fill(b)
	if bytes.Equal(a, b) {
		t.Fatal("two crypto/rand-seeded PRGs coincide")
	}
	var n int
	if n, err = r1.Read(a); n != 32 || err != nil {
		t.Fatalf("Read = %d, %v", n, err)
	}
}

// Empty and nil buffers are valid: every filler accepts them without panicking and consumes no
// keystream, so the next output is the one a fresh generator gives.
func TestPRGEmptyFill(t *testing.T) {
	want := make([]byte, 40)
	New(Seed{7}).Fill(want)
	g := New(Seed{7})
	g.Fill(nil)
	g.Fill([]byte{})
	g.XOR(nil)
	g.Uint64s(nil)
	g.Uint64s([]uint64{})
	g.Blocks(nil)
	g.Blocks([]Block{})
	if n, err := g.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
	got := make([]byte, 40)
	g.Fill(got)
	if !bytes.Equal(got, want) {
		t.Fatalf("after empty fills the keystream is %x, want %x (an empty fill consumed keystream)", got, want)
	}
}

func BenchmarkPRGFill(b *testing.B) {
	g := New(Seed{1})
	buf := make([]byte, 1024)
	b.SetBytes(int64(len(buf)))
	for b.Loop() {
		g.Fill(buf)
	}
}
