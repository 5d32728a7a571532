package transport

import (
	"context"
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/bitvec"
)

// SendUint64s sends v as one frame of 8·len(v) bytes.
func (c *Conn) SendUint64s(ctx context.Context, v []uint64) error {
	return c.Send(ctx, bitvec.Bytes(v))
}

// RecvUint64s receives one frame of exactly 8·len(dst) bytes into dst.
func (c *Conn) RecvUint64s(ctx context.Context, dst []uint64) error {
	return c.Recv(ctx, bitvec.Bytes(dst))
}

// SendBits sends the first nbits bits of the bit vector v (the layout of package bitvec) as one
// frame of ⌈nbits/8⌉ bytes. v must hold bitvec.Words(nbits) words.
func (c *Conn) SendBits(ctx context.Context, v []uint64, nbits int) error {
	if nbits < 0 || len(v) < bitvec.Words(nbits) {
		return fmt.Errorf("transport: SendBits: %d bits from %d words", nbits, len(v))
	}
	return c.Send(ctx, bitvec.Bytes(v)[:(nbits+7)/8])
}

// RecvBits receives a frame written by SendBits with the same nbits into the first
// bitvec.Words(nbits) words of dst; the bits of the last of them past nbits are zeroed.
func (c *Conn) RecvBits(ctx context.Context, dst []uint64, nbits int) error {
	nw := bitvec.Words(nbits)
	if nbits < 0 || len(dst) < nw {
		return fmt.Errorf("transport: RecvBits: %d bits into %d words", nbits, len(dst))
	}
	if nw > 0 {
		dst[nw-1] = 0
	}
	if err := c.Recv(ctx, bitvec.Bytes(dst)[:(nbits+7)/8]); err != nil {
		return err
	}
	bitvec.ClearTail(dst, nbits)
	return nil
}

// PackedWords is the number of 64-bit words that hold n values of l bits.
func PackedWords(n, l int) int { return (n*l + 63) / 64 }

// PackedBytes is the number of bytes that hold n values of l bits.
func PackedBytes(n, l int) int { return (n*l + 7) / 8 }

//go:generate go run gen_pack.go -o pack_kernels.go

// Pack writes the low l bits (1 ≤ l ≤ 64) of every src value, in order, as a
// little-endian bit string into dst: value i occupies bits [i·l, (i+1)·l).
// dst must hold PackedWords(len(src), l) words; Pack writes exactly those
// words, and the bits of the last one past len(src)·l are zeroed. It panics
// if l is outside 1..64 or dst is too short.
//
// Every block of 64 values (l whole words) goes through a kernel unrolled
// for its width (pack_kernels.go); a final partial block is padded with
// zeros on the stack.
func Pack(dst, src []uint64, l int) {
	if l == 64 {
		copy(dst[:len(src)], src)
		return
	}
	checkWidth("Pack", l)
	for len(src) >= 64 {
		packBlock(dst, src, l)
		dst, src = dst[l:], src[64:]
	}
	if len(src) == 0 {
		return
	}
	var in [64]uint64
	var out [63]uint64
	copy(in[:], src)
	packBlock(out[:], in[:], l)
	copy(dst[:PackedWords(len(src), l)], out[:])
}

// Unpack is the inverse of Pack: dst[i] = bits [i·l, (i+1)·l) of src
// (1 ≤ l ≤ 64). src must hold PackedWords(len(dst), l) words; no word past
// those is read, and bits of the last word past len(dst)·l are ignored. It
// panics if l is outside 1..64 or src is too short.
//
// Blocks of 64 values (and the final partial block) go through a kernel
// unrolled for the width (pack_kernels.go).
func Unpack(dst, src []uint64, l int) {
	if l == 64 {
		copy(dst, src[:len(dst)])
		return
	}
	checkWidth("Unpack", l)
	for len(dst) >= 64 {
		unpackBlock(dst[:64], src, l)
		dst, src = dst[64:], src[l:]
	}
	if n := len(dst); n > 0 {
		if len(src) < l {
			// The kernel reads from a whole block of l words.
			var in [63]uint64
			copy(in[:], src[:PackedWords(n, l)])
			src = in[:]
		}
		unpackBlock(dst, src, l)
	}
}

// checkWidth panics with a clear message on a bit width outside 1..64 (a
// programming error: every caller validates widths that come from outside).
func checkWidth(fn string, l int) {
	if l < 1 || l > 64 {
		panic(fmt.Sprintf("transport: %s: bit width %d outside 1..64", fn, l))
	}
}

// SendPacked sends the low l bits (1 ≤ l ≤ 64) of every value of v as one
// frame of PackedBytes(len(v), l) bytes.
func (c *Conn) SendPacked(ctx context.Context, v []uint64, l int) error {
	if l < 1 || l > 64 {
		return fmt.Errorf("transport: SendPacked: bit width %d outside 1..64", l)
	}
	// spack belongs to the (single) sending goroutine.
	nw := PackedWords(len(v), l)
	if cap(c.spack) < nw {
		c.spack = make([]uint64, nw)
	}
	buf := c.spack[:nw]
	Pack(buf, v, l)
	return c.SendBits(ctx, buf, len(v)*l)
}

// RecvPacked receives a frame written by SendPacked with the same len(dst)
// and l, and unpacks it into dst.
func (c *Conn) RecvPacked(ctx context.Context, dst []uint64, l int) error {
	if l < 1 || l > 64 {
		return fmt.Errorf("transport: RecvPacked: bit width %d outside 1..64", l)
	}
	nw := PackedWords(len(dst), l)
	if cap(c.rpack) < nw {
		c.rpack = make([]uint64, nw)
	}
	buf := c.rpack[:nw]
	if err := c.RecvBits(ctx, buf, len(dst)*l); err != nil {
		return err
	}
	Unpack(dst, buf, l)
	return nil
}
