package transport

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// mask returns the low-l-bit mask (l in 1..64).
func mask(l int) uint64 { return ^uint64(0) >> (64 - l) }

// refPack is the bit-at-a-time definition of Pack.
func refPack(src []uint64, l int) []uint64 {
	dst := make([]uint64, PackedWords(len(src), l))
	for i, v := range src {
		for k := 0; k < l; k++ {
			bit := i*l + k
			dst[bit/64] |= (v >> k & 1) << (bit % 64)
		}
	}
	return dst
}

// refUnpack is the bit-at-a-time definition of Unpack.
func refUnpack(src []uint64, n, l int) []uint64 {
	dst := make([]uint64, n)
	for i := range dst {
		for k := 0; k < l; k++ {
			bit := i*l + k
			dst[i] |= (src[bit/64] >> (bit % 64) & 1) << k
		}
	}
	return dst
}

// packLengths are the value counts every width is tested on: empty, tails of
// every size below one block, block edges and a few multi-block lengths.
func packLengths() []int {
	var ns []int
	for n := 0; n <= 66; n++ {
		ns = append(ns, n)
	}
	return append(ns, 127, 128, 129, 191, 192, 193, 255, 256, 1000, 4099)
}

func TestPackUnpackMatchReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const sentinel = 0x5a5a5a5a5a5a5a5a
	for l := 1; l <= 64; l++ {
		for _, n := range packLengths() {
			src := make([]uint64, n)
			for i := range src {
				src[i] = r.Uint64() // high bits must be ignored
			}
			if n > 0 {
				src[0] = ^uint64(0)
				src[n-1] = ^uint64(0) // the last value fills its bits up to the end
			}
			nw := PackedWords(n, l)
			// Stale content must be overwritten; the word after the packed
			// ones must stay untouched.
			dst := make([]uint64, nw+1)
			for i := range dst {
				dst[i] = sentinel
			}
			Pack(dst, src, l)
			want := refPack(src, l)
			for i := range want {
				if dst[i] != want[i] {
					t.Fatalf("Pack l=%d n=%d: word %d = %#x, want %#x", l, n, i, dst[i], want[i])
				}
			}
			if dst[nw] != sentinel {
				t.Fatalf("Pack l=%d n=%d wrote past PackedWords", l, n)
			}

			// Garbage past the last value must be ignored, and Unpack must
			// not read past PackedWords (the slice ends there).
			packed := append([]uint64(nil), want...)
			if used := n * l % 64; used != 0 {
				packed[nw-1] |= ^uint64(0) << used
			}
			got := make([]uint64, n+1)
			got[n] = sentinel
			Unpack(got[:n], packed, l)
			wantU := refUnpack(packed, n, l)
			for i := 0; i < n; i++ {
				if got[i] != wantU[i] || got[i] != src[i]&mask(l) {
					t.Fatalf("Unpack l=%d n=%d: value %d = %#x, want %#x", l, n, i, got[i], src[i]&mask(l))
				}
			}
			if got[n] != sentinel {
				t.Fatalf("Unpack l=%d n=%d wrote past len(dst)", l, n)
			}
		}
	}
}

// TestUnpackFromBlockOffsets unpacks runs that start inside a packed stream at
// block boundaries (as the OT extension does, chunk by chunk).
func TestUnpackFromBlockOffsets(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for l := 1; l <= 64; l++ {
		src := make([]uint64, 300)
		for i := range src {
			src[i] = r.Uint64() & mask(l)
		}
		packed := refPack(src, l)
		for _, start := range []int{0, 64, 128, 256} {
			for _, n := range []int{1, 17, 44} {
				got := make([]uint64, n)
				Unpack(got, packed[start*l/64:], l)
				for i := range got {
					if got[i] != src[start+i] {
						t.Fatalf("l=%d start=%d n=%d: value %d = %#x, want %#x", l, start, n, i, got[i], src[start+i])
					}
				}
			}
		}
	}
}

func TestPackUnpackDoNotAllocate(t *testing.T) {
	vals := make([]uint64, 100)
	packed := make([]uint64, PackedWords(100, 37))
	for _, n := range []int{5, 100} {
		if a := testing.AllocsPerRun(100, func() { Pack(packed, vals[:n], 37) }); a != 0 {
			t.Errorf("Pack of %d values: %v allocations", n, a)
		}
		if a := testing.AllocsPerRun(100, func() { Unpack(vals[:n], packed[:PackedWords(n, 37)], 37) }); a != 0 {
			t.Errorf("Unpack of %d values: %v allocations", n, a)
		}
	}
}

func TestPackUnpackBadWidthPanics(t *testing.T) {
	for _, l := range []int{0, -1, 65} {
		for name, f := range map[string]func(){
			"Pack":   func() { Pack(make([]uint64, 8), make([]uint64, 3), l) },
			"Unpack": func() { Unpack(make([]uint64, 3), make([]uint64, 8), l) },
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s with l=%d did not panic", name, l)
					}
				}()
				f()
			}()
		}
	}
}

// TestPackKernelsUpToDate regenerates pack_kernels.go and compares.
func TestPackKernelsUpToDate(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the generator with the go tool")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go tool not found:", err)
	}
	out := filepath.Join(t.TempDir(), "pack_kernels.go")
	cmd := exec.Command(goTool, "run", "gen_pack.go", "-o", out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen_pack.go: %v\n%s", err, msg)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	have, err := os.ReadFile("pack_kernels.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, have) {
		t.Fatal("pack_kernels.go is stale: run go generate ./protocols/transport")
	}
}

// benchWidths are the widths the linear layers use most (odd ring widths,
// and the word-aligned 32 and 64).
var benchWidths = []int{19, 32, 37, 41, 64}

const benchElems = 1 << 14

func benchData(l int) (vals, packed []uint64) {
	r := rand.New(rand.NewPCG(5, 6))
	vals = make([]uint64, benchElems)
	for i := range vals {
		vals[i] = r.Uint64()
	}
	packed = make([]uint64, PackedWords(benchElems, l))
	Pack(packed, vals, l)
	return vals, packed
}

func reportPerElem(b *testing.B, elems int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(elems), "ns/elem")
}

func BenchmarkPack(b *testing.B) {
	for _, l := range benchWidths {
		vals, packed := benchData(l)
		b.Run(fmt.Sprintf("l=%d", l), func(b *testing.B) {
			b.SetBytes(8 * benchElems)
			for b.Loop() {
				Pack(packed, vals, l)
			}
			reportPerElem(b, benchElems)
		})
	}
}

func BenchmarkUnpack(b *testing.B) {
	for _, l := range benchWidths {
		vals, packed := benchData(l)
		b.Run(fmt.Sprintf("l=%d", l), func(b *testing.B) {
			b.SetBytes(8 * benchElems)
			for b.Loop() {
				Unpack(vals, packed, l)
			}
			reportPerElem(b, benchElems)
		})
	}
}

// BenchmarkUnpackShort unpacks runs of 16 values, as the OT extension does
// per instance when an instance's w·l bits are not a whole number of hash
// blocks; "exact" passes src cut to PackedWords(16, l) words.
func BenchmarkUnpackShort(b *testing.B) {
	const run = 16
	for _, l := range benchWidths {
		vals, packed := benchData(l)
		for _, exact := range []bool{false, true} {
			b.Run(fmt.Sprintf("l=%d/exact=%v", l, exact), func(b *testing.B) {
				for b.Loop() {
					for i := 0; i+64 <= benchElems; i += 64 {
						src := packed[i/64*l:]
						if exact {
							src = src[:PackedWords(run, l)]
						}
						Unpack(vals[i:i+run], src, l)
					}
				}
				reportPerElem(b, benchElems/64*run)
			})
		}
	}
}
