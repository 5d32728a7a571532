package iknp

import (
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

func bitOf(b prg.Block, c int) uint64 { return b[c/64] >> (c % 64) & 1 }

func transposers() map[string]func(*[128]prg.Block) {
	m := map[string]func(*[128]prg.Block){"eklundh": transpose128}
	if haveAVX512() {
		m["avx512"] = transpose128AVX512
	}
	return m
}

func TestTranspose128(t *testing.T) {
	for name, tr := range transposers() {
		t.Run(name, func(t *testing.T) { testTranspose(t, tr) })
	}
}

func testTranspose(t *testing.T, transpose func(*[128]prg.Block)) {
	g := prg.New(prg.Seed{1})
	for trial := 0; trial < 20; trial++ {
		var m, orig [128]prg.Block
		switch trial {
		case 0: // identity stays identity
			for r := range m {
				m[r][r/64] = 1 << (r % 64)
			}
		case 1: // a single set bit moves to the mirrored position
			m[3][1] = 1 << 5 // (row 3, column 69)
		default:
			g.Blocks(m[:])
		}
		orig = m
		transpose(&m)
		for r := 0; r < 128; r++ {
			for c := 0; c < 128; c++ {
				if bitOf(m[r], c) != bitOf(orig[c], r) {
					t.Fatalf("trial %d: bit (%d,%d) wrong", trial, r, c)
				}
			}
		}
		transpose(&m)
		if m != orig {
			t.Fatalf("trial %d: transposing twice is not the identity", trial)
		}
	}
}

func BenchmarkTranspose128(b *testing.B) {
	for name, tr := range transposers() {
		b.Run(name, func(b *testing.B) {
			var m [128]prg.Block
			prg.New(prg.Seed{2}).Blocks(m[:])
			for b.Loop() {
				tr(&m)
			}
		})
	}
}
