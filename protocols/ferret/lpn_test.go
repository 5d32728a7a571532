package ferret

import (
	"crypto/sha256"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/prg"
)

// TestCodeRows checks the code against its definition: row i's columns
// are ⌊v·k/2^32⌋ for words [10i, 10i+10) of the AES_seed counter stream.
func TestCodeRows(t *testing.T) {
	const n, k = 1000, 777
	seed := prg.Seed{1, 2, 3}
	for _, useZ := range []bool{false, true} {
		cd := newCode(seed, k)
		if useZ && !cd.useZ {
			continue
		}
		cd.useZ = useZ
		base := make([]prg.Block, k)
		g := prg.New(prg.Seed{9})
		g.Blocks(base)
		out := make([]prg.Block, n)
		g.Blocks(out)
		orig := append([]prg.Block(nil), out...)
		var sc lpnScratch
		cd.apply(&sc, out, base, 0, 512)
		cd.apply(&sc, out[512:], base, 512, n) // out[0] is row r0
		// The reference: the block stream of the definition, word by word.
		d := sha256.Sum256(append([]byte("cryptflow-go ferret LPN code"), seed[:]...))
		ha, hb := prg.NewHashWithKey(prg.Seed(d[:16])), prg.NewHashWithKey(prg.Seed(d[16:]))
		var stream []prg.Block
		for q := 0; q*lpnRows < n; q++ {
			ctr := make([]prg.Block, 320)
			for j := range ctr {
				ctr[j] = prg.Block{uint64(320*q + j), 0}
			}
			a, b := make([]prg.Block, 320), make([]prg.Block, 320)
			ha.Permute(a, ctr)
			hb.Permute(b, ctr)
			for j := range a {
				a[j], b[j] = a[j].Xor(ctr[j]), b[j].Xor(ctr[j])
			}
			stream = append(append(stream, a...), b...)
		}
		word := func(i int) uint32 { return uint32(stream[i/4][i%4/2] >> (32 * (i % 2))) }
		for i := 0; i < n; i++ {
			want := orig[i]
			for d := 0; d < lpnD; d++ {
				j := uint64(word(i*lpnD+d)) * k >> 32
				want = want.Xor(base[j])
			}
			if out[i] != want {
				t.Fatalf("row %d: %x want %x", i, out[i], want)
			}
		}
	}
}

func BenchmarkLPN(b *testing.B) {
	for _, p := range []Params{Small().Main, B13().Main} {
		b.Run(map[int]string{72000: "small", 460000: "b13"}[p.K], func(b *testing.B) {
			const n = 1 << 20
			cd := newCode(prg.Seed{1}, p.K)
			base := make([]prg.Block, p.K)
			out := make([]prg.Block, n)
			var sc lpnScratch
			c0 := cpuSeconds()
			b.ResetTimer()
			for range b.N {
				cd.apply(&sc, out, base, 0, n)
			}
			b.ReportMetric((cpuSeconds()-c0)*1e9/float64(b.N*n), "cpu-ns/row")
		})
	}
}

func BenchmarkGGMLevels(b *testing.B) {
	e := newExpander(13, treesPerFrame)
	store := make([]prg.Block, treesPerFrame<<13)
	trees := make([][]prg.Block, treesPerFrame)
	for g := range trees {
		trees[g] = store[g<<13 : (g+1)<<13]
	}
	c0 := cpuSeconds()
	b.ResetTimer()
	for range b.N {
		for lvl := 1; lvl <= 13; lvl++ {
			e.level(trees, lvl)
		}
	}
	b.ReportMetric((cpuSeconds()-c0)*1e9/float64(b.N*len(store)), "cpu-ns/leaf")
}

// TestGGMKernel checks the expander (VAES kernel or not) against the
// definition with prg.Hash.Permute, and the key schedule against crypto/aes
// through it.
func TestGGMKernel(t *testing.T) {
	kl, kr := ggmKeys()
	hl, hr := prg.NewHashWithKey(kl), prg.NewHashWithKey(kr)
	for _, useZ := range []bool{false, true} {
		e := newExpander(7, 3)
		if useZ && !e.useZ {
			t.Log("no VAES on this CPU: kernel path not tested")
			continue
		}
		e.useZ = useZ
		store := make([]prg.Block, 3<<7)
		trees := [][]prg.Block{store[:128], store[128:256], store[256:]}
		g := prg.New(prg.Seed{byte(len(store))})
		ref := make([][]prg.Block, 3)
		for i, tr := range trees {
			g.Blocks(tr[:1])
			ref[i] = []prg.Block{tr[0]}
		}
		for lvl := 1; lvl <= 7; lvl++ {
			e.level(trees, lvl)
			for i, tr := range trees {
				half := len(ref[i])
				next := make([]prg.Block, 2*half)
				l, r := make([]prg.Block, half), make([]prg.Block, half)
				hl.Permute(l, ref[i])
				hr.Permute(r, ref[i])
				var s0, s1 prg.Block
				for p := range ref[i] {
					next[p] = l[p].Xor(ref[i][p])
					next[p+half] = r[p].Xor(ref[i][p])
					s0, s1 = s0.Xor(next[p]), s1.Xor(next[p+half])
				}
				ref[i] = next
				for p := range next {
					if tr[p] != next[p] {
						t.Fatalf("useZ=%v level %d tree %d node %d", useZ, lvl, i, p)
					}
				}
				if e.sum0[i] != s0 || e.sum1[i] != s1 {
					t.Fatalf("useZ=%v level %d tree %d: sums", useZ, lvl, i)
				}
			}
		}
	}
}
