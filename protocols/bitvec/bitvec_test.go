package bitvec_test

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// bitsOf is the specification of the layout: bit i of v, one byte per bit.
func bitsOf(v []uint64, n int) []uint8 {
	out := make([]uint8, n)
	for i := range out {
		out[i] = uint8(v[i/64] >> (i % 64) & 1)
	}
	return out
}

func randomWords(rng *rand.Rand, n int) []uint64 {
	v := make([]uint64, n)
	for i := range v {
		v[i] = rng.Uint64()
	}
	return v
}

func TestMaskAndWords(t *testing.T) {
	for l := 0; l <= 64; l++ {
		var want uint64
		for i := 0; i < l; i++ {
			want |= 1 << i
		}
		if got := bitvec.Mask(l); got != want {
			t.Errorf("Mask(%d) = %#x, want %#x", l, got, want)
		}
	}
	for _, l := range []int{65, 66, 128} {
		if got := bitvec.Mask(l); got != ^uint64(0) {
			t.Errorf("Mask(%d) = %#x, want all ones", l, got)
		}
	}
	for n, want := range map[int]int{0: 0, 1: 1, 63: 1, 64: 1, 65: 2, 128: 2, 129: 3} {
		if got := bitvec.Words(n); got != want {
			t.Errorf("Words(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestBitGetPeekExtract(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	src := randomWords(rng, 6)
	spec := bitsOf(src, 6*64)
	for i, b := range spec {
		if bitvec.Bit(src, i) != uint64(b) {
			t.Fatalf("Bit(%d) = %d, want %d", i, bitvec.Bit(src, i), b)
		}
	}
	value := func(off, l int) uint64 {
		var v uint64
		for k := 0; k < l; k++ {
			v |= uint64(spec[off+k]) << k
		}
		return v
	}
	for off := 0; off < 4*64; off += 7 {
		for _, l := range []int{1, 2, 13, 31, 63, 64} {
			want := value(off, l)
			if got := bitvec.Get(src, off, l); got != want {
				t.Fatalf("Get(off %d, l %d) = %#x, want %#x", off, l, got, want)
			}
			if got := bitvec.Peek(src, uint(off)) & bitvec.Mask(l); got != want {
				t.Fatalf("Peek(%d) mod 2^%d = %#x, want %#x", off, l, got, want)
			}
		}
	}
	// Get reads no word past the last bit it returns.
	if got := bitvec.Get(src[:1], 60, 4); got != src[0]>>60 {
		t.Fatalf("Get at the end of the vector = %#x, want %#x", got, src[0]>>60)
	}
	for _, off := range []int{0, 1, 63, 64, 100} {
		for _, n := range []int{0, 1, 64, 65, 130, 6*64 - 100} {
			if off+n > 6*64 {
				continue
			}
			dst := randomWords(rng, bitvec.Words(n)) // garbage that Extract must overwrite
			bitvec.Extract(dst, src, off, n)
			if !slices.Equal(bitsOf(dst, n), spec[off:off+n]) {
				t.Fatalf("Extract(off %d, n %d) has the wrong bits", off, n)
			}
			if n%64 != 0 && dst[len(dst)-1]>>(n%64) != 0 {
				t.Fatalf("Extract(off %d, n %d) left bits past n", off, n)
			}
		}
	}
	v := []uint64{^uint64(0), ^uint64(0)}
	bitvec.ClearTail(v, 70)
	if v[0] != ^uint64(0) || v[1] != 1<<6-1 {
		t.Fatalf("ClearTail(70) = %#x", v)
	}
	bitvec.ClearTail(v[:1], 100) // no word for bit 100: nothing to clear
	bitvec.ClearTail(v, 128)
	if v[1] != 1<<6-1 {
		t.Fatal("ClearTail(128) changed a full vector")
	}
}

func TestCopy(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		src := []uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
		dst := []uint64{r.Uint64(), r.Uint64(), r.Uint64(), r.Uint64()}
		orig := append([]uint64(nil), dst...)
		n := r.IntN(129)
		so, do := r.IntN(256-n+1), r.IntN(256-n+1)
		bitvec.Copy(dst, do, src, so, n)
		for i := 0; i < 256; i++ {
			want := orig[i/64] >> (i % 64) & 1
			if i >= do && i < do+n {
				j := so + i - do
				want = src[j/64] >> (j % 64) & 1
			}
			if dst[i/64]>>(i%64)&1 != want {
				t.Fatalf("n=%d so=%d do=%d bit %d", n, so, do, i)
			}
		}
	}
}

func TestXorAndPackBit(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	a, b := randomWords(rng, 5), randomWords(rng, 7)
	want := make([]uint64, 5)
	for i := range want {
		want[i] = a[i] ^ b[i]
	}
	bitvec.Xor(a, b)
	if !slices.Equal(a, want) {
		t.Fatal("Xor")
	}
	for _, n := range []int{0, 1, 64, 100} {
		src := randomWords(rng, n)
		for _, k := range []uint{0, 1, 63} {
			dst := randomWords(rng, bitvec.Words(n))
			bitvec.PackBit(dst, src, k)
			for i := 0; i < n; i++ {
				if bitvec.Bit(dst, i) != src[i]>>k&1 {
					t.Fatalf("PackBit(n %d, k %d): bit %d", n, k, i)
				}
			}
			if n%64 != 0 && dst[len(dst)-1]>>(n%64) != 0 {
				t.Fatalf("PackBit(n %d) left bits past n", n)
			}
		}
	}
}

func TestPackBytesRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{0, 1, 63, 64, 65, 200} {
		b := make([]uint8, n)
		for i := range b {
			b[i] = uint8(r.IntN(2))
		}
		p := randomWords(r, bitvec.Words(n))
		if err := bitvec.PackBytes(p, b); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(bitsOf(p, n), b) || (n%64 != 0 && p[len(p)-1]>>(n%64) != 0) {
			t.Fatalf("PackBytes(n %d) has the wrong bits", n)
		}
		back := make([]uint8, n)
		if err := bitvec.UnpackBytes(back, p); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(back, b) {
			t.Fatalf("UnpackBytes(n %d) does not invert PackBytes", n)
		}
	}
	if bitvec.PackBytes(nil, []uint8{1}) == nil || bitvec.UnpackBytes([]uint8{0}, nil) == nil {
		t.Fatal("PackBytes/UnpackBytes accepted a short buffer")
	}
}

func TestWriterReader(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var vals []uint64
	var widths []uint
	total := 0
	for i := 0; i < 5000; i++ {
		w := uint(1 + rng.IntN(64))
		if i < 128 {
			w = uint(64 - i%64) // every width, including runs of 64
		}
		vals = append(vals, rng.Uint64()&bitvec.Mask(int(w)))
		widths = append(widths, w)
		total += int(w)
	}
	buf := make([]uint64, bitvec.Words(total))
	var bw bitvec.Writer
	bw.Reset(buf)
	for i, v := range vals {
		bw.Put(v, widths[i])
	}
	if got := bw.Flush(); got != len(buf) {
		t.Fatalf("writer used %d words, want %d", got, len(buf))
	}
	var br bitvec.Reader
	br.Reset(buf)
	pos := 0
	for i, v := range vals {
		if got := br.Get(widths[i]) & bitvec.Mask(int(widths[i])); got != v {
			t.Fatalf("value %d (width %d): read %#x, wrote %#x", i, widths[i], got, v)
		}
		if got := bitvec.Get(buf, pos, int(widths[i])); got != v {
			t.Fatalf("value %d (width %d) is not at bit %d", i, widths[i], pos)
		}
		pos += int(widths[i])
	}
	// The layout is transport.Pack's for a constant width.
	same := make([]uint64, 100)
	for i := range same {
		same[i] = rng.Uint64() & bitvec.Mask(13)
	}
	packed := make([]uint64, transport.PackedWords(100, 13))
	transport.Pack(packed, same, 13)
	mine := make([]uint64, len(packed))
	bw.Reset(mine)
	for _, v := range same {
		bw.Put(v, 13)
	}
	bw.Flush()
	if !slices.Equal(packed, mine) {
		t.Fatal("Writer layout differs from transport.Pack")
	}
}

func TestAppender(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var a bitvec.Appender
	for round := 0; round < 2; round++ { // the second round reuses the first one's memory
		a.Reset(a.Words())
		var spec []uint8
		for _, n := range []int{0, 5, 64, 1, 63, 130, 64, 7} {
			v := randomWords(rng, bitvec.Words(n))
			bitvec.ClearTail(v, n)
			a.Append(v, n)
			spec = append(spec, bitsOf(v, n)...)
		}
		if a.Len() != len(spec) || len(a.Words()) != bitvec.Words(len(spec)) {
			t.Fatalf("appended %d bits in %d words, want %d in %d", a.Len(), len(a.Words()), len(spec), bitvec.Words(len(spec)))
		}
		if !slices.Equal(bitsOf(a.Words(), len(spec)), spec) {
			t.Fatal("Appender has the wrong bits")
		}
	}
}

func TestBytes(t *testing.T) {
	if bitvec.Bytes(nil) != nil {
		t.Fatal("Bytes(nil) is not nil")
	}
	w := []uint64{0x0807060504030201, 0x100f0e0d0c0b0a09}
	b := bitvec.Bytes(w)
	if len(b) != 16 {
		t.Fatalf("Bytes: %d bytes, want 16", len(b))
	}
	// On the little-endian hosts this module runs on (the OT session checks), memory order is the
	// little-endian encoding.
	want := binary.NativeEndian.AppendUint64(binary.NativeEndian.AppendUint64(nil, w[0]), w[1])
	if !slices.Equal(b, want) {
		t.Fatalf("Bytes = %x, want %x", b, want)
	}
	b[0] = 0xff // a view, not a copy
	if w[0]&0xff != 0xff {
		t.Fatal("Bytes returned a copy")
	}
}
