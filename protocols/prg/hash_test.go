package prg

import (
	"crypto/aes"
	"testing"
)

// refPermute is π computed with crypto/aes, one block at a time.
func refPermute(key Seed, x Block) Block {
	blk, _ := aes.NewCipher(key[:])
	in := []Block{x}
	out := []Block{{}}
	blk.Encrypt(BlockBytes(out), BlockBytes(in))
	return out[0]
}

func randomBlocks(n int, seed byte) []Block {
	b := make([]Block, n)
	New(Seed{seed}).Blocks(b)
	return b
}

func TestPermuteMatchesAES(t *testing.T) {
	for _, key := range []Seed{fixedKey, {}, {0xff, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0xee}} {
		h := NewHashWithKey(key)
		for _, n := range []int{0, 1, 7, 8, 9, 16, 63, 64, 65, 200} {
			src := randomBlocks(n, byte(n))
			dst := make([]Block, n)
			h.Permute(dst, src)
			for i := range src {
				if want := refPermute(key, src[i]); dst[i] != want {
					t.Fatalf("key %x n=%d block %d: got %x want %x", key, n, i, dst[i], want)
				}
			}
			// In place.
			cp := append([]Block(nil), src...)
			h.Permute(cp, cp)
			for i := range cp {
				if cp[i] != dst[i] {
					t.Fatalf("in-place Permute differs at %d", i)
				}
			}
		}
	}
}

func TestFallbackMatchesAsm(t *testing.T) {
	fast := NewHash()
	if !fast.useAsm {
		t.Skip("no AES-NI assembly path on this machine")
	}
	t.Logf("AES-NI: %v, VAES: %v", fast.useAsm, fast.useVAES)
	aesni := *fast
	aesni.useVAES = false
	gen := *fast
	gen.useAsm, gen.useVAES = false, false
	for _, asm := range []*Hash{fast, &aesni} {
		testAgainstGeneric(t, asm, &gen)
	}
}

func testAgainstGeneric(t *testing.T, asm, gen *Hash) {
	for _, n := range []int{0, 1, 8, 13, 31, 32, 33, 64, 100, 300} {
		src, src2 := randomBlocks(n, 3), randomBlocks(n, 4)
		a, b := make([]Block, n), make([]Block, n)
		asm.TCCR(a, src, Tweak{^uint64(0) - 3, 6}) // the tweak counter wraps
		gen.TCCR(b, src, Tweak{^uint64(0) - 3, 6})
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("TCCR n=%d: assembly and crypto/aes paths differ at %d", n, i)
			}
		}
		asm.Hash256(a, src, src2, Tweak{7, 8})
		gen.Hash256(b, src, src2, Tweak{7, 8})
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("Hash256 n=%d: assembly and crypto/aes paths differ at %d", n, i)
			}
		}
		d1, d2 := Block{3, 4}, Block{5, 6}
		asm.TCCRXor(a, src, d1, Tweak{1, 2})
		gen.TCCRXor(b, src, d1, Tweak{1, 2})
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("TCCRXor n=%d: paths differ at %d", n, i)
			}
		}
		asm.Hash256Xor(a, src, src2, d1, d2, Tweak{1, 2})
		gen.Hash256Xor(b, src, src2, d1, d2, Tweak{1, 2})
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("Hash256Xor n=%d: paths differ at %d", n, i)
			}
		}
	}
}

func TestTCCRDefinition(t *testing.T) {
	h := NewHash()
	n := 150
	src := randomBlocks(n, 11)
	dst := make([]Block, n)
	tw := Tweak{Lo: 1 << 40, Hi: 77}
	h.TCCR(dst, src, tw)
	for k := range src {
		y := refPermute(fixedKey, src[k])
		z := refPermute(fixedKey, Block{y[0] ^ (tw.Lo + uint64(k)), y[1] ^ tw.Hi})
		if want := z.Xor(y); dst[k] != want {
			t.Fatalf("TCCR block %d: got %x want %x", k, dst[k], want)
		}
	}
	// Tweak sensitivity: a different Hi gives different outputs.
	other := make([]Block, n)
	h.TCCR(other, src, Tweak{Lo: tw.Lo, Hi: 78})
	for k := range other {
		if other[k] == dst[k] {
			t.Fatalf("tweak Hi ignored at %d", k)
		}
	}
	// In place.
	h.TCCR(src, src, tw)
	for k := range src {
		if src[k] != dst[k] {
			t.Fatal("in-place TCCR differs")
		}
	}
}

func TestHash256Definition(t *testing.T) {
	h := NewHash()
	n := 130
	lo, hi := randomBlocks(n, 21), randomBlocks(n, 22)
	dst := make([]Block, n)
	tw := Tweak{Lo: 9, Hi: 1}
	h.Hash256(dst, lo, hi, tw)
	mmo := func(y Block) Block { return refPermute(fixedKey, y).Xor(y) }
	for k := range dst {
		a := mmo(Block{hi[k][0] ^ (tw.Lo + uint64(k)), hi[k][1] ^ tw.Hi})
		if want := mmo(lo[k].Xor(a)); dst[k] != want {
			t.Fatalf("Hash256 block %d: got %x want %x", k, dst[k], want)
		}
	}
	// Aliasing dst with lo and with hi.
	lo2 := append([]Block(nil), lo...)
	h.Hash256(lo2, lo2, hi, tw)
	hi2 := append([]Block(nil), hi...)
	h.Hash256(hi2, lo, hi2, tw)
	for k := range dst {
		if lo2[k] != dst[k] || hi2[k] != dst[k] {
			t.Fatal("aliased Hash256 differs")
		}
	}
}

func TestXorVariants(t *testing.T) {
	h := NewHash()
	n := 77
	src, src2 := randomBlocks(n, 31), randomBlocks(n, 32)
	d1, d2 := Block{0xdead, 0xbeef}, Block{1, 1 << 63}
	x1, x2 := make([]Block, n), make([]Block, n)
	for k := range src {
		x1[k], x2[k] = src[k].Xor(d1), src2[k].Xor(d2)
	}
	want, got := make([]Block, n), make([]Block, n)
	h.TCCR(want, x1, Tweak{3, 4})
	h.TCCRXor(got, src, d1, Tweak{3, 4})
	if !slicesEqual(want, got) {
		t.Fatal("TCCRXor(src, d) != TCCR(src ⊕ d)")
	}
	h.Hash256(want, x1, x2, Tweak{5, 6})
	h.Hash256Xor(got, src, src2, d1, d2, Tweak{5, 6})
	if !slicesEqual(want, got) {
		t.Fatal("Hash256Xor(lo, hi, dlo, dhi) != Hash256(lo ⊕ dlo, hi ⊕ dhi)")
	}
}

func slicesEqual(a, b []Block) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

func TestHashDoesNotAllocate(t *testing.T) {
	h := NewHash()
	src, src2 := randomBlocks(133, 1), randomBlocks(133, 2)
	dst := make([]Block, 133)
	for _, n := range []int{5, 32, 133} {
		if a := testing.AllocsPerRun(10, func() {
			h.TCCRXor(dst[:n], src[:n], Block{1, 2}, Tweak{3, 4})
			h.Hash256Xor(dst[:n], src[:n], src2[:n], Block{1, 2}, Block{5, 6}, Tweak{3, 4})
		}); a != 0 {
			t.Fatalf("n=%d: %v allocations per call", n, a)
		}
	}
}

func TestHashLengthMismatchPanics(t *testing.T) {
	h := NewHash()
	defer func() {
		if recover() == nil {
			t.Fatal("no panic on mismatched lengths")
		}
	}()
	h.TCCR(make([]Block, 2), make([]Block, 3), Tweak{})
}

func BenchmarkPermute(b *testing.B) {
	h := NewHash()
	src := randomBlocks(1024, 1)
	b.SetBytes(16 * 1024)
	for b.Loop() {
		h.Permute(src, src)
	}
}

func BenchmarkTCCR(b *testing.B) {
	h := NewHash()
	src := randomBlocks(1024, 1)
	dst := make([]Block, 1024)
	b.SetBytes(16 * 1024)
	for b.Loop() {
		h.TCCR(dst, src, Tweak{})
	}
}

func BenchmarkHash256(b *testing.B) {
	h := NewHash()
	lo, hi := randomBlocks(1024, 1), randomBlocks(1024, 2)
	dst := make([]Block, 1024)
	b.SetBytes(32 * 1024)
	for b.Loop() {
		h.Hash256(dst, lo, hi, Tweak{})
	}
}
