package transport

import (
	"context"
	"fmt"
)

// SendUint64s sends v as one frame of 8·len(v) bytes.
func (c *Conn) SendUint64s(ctx context.Context, v []uint64) error {
	return c.Send(ctx, wordBytes(v))
}

// RecvUint64s receives one frame of exactly 8·len(dst) bytes into dst.
func (c *Conn) RecvUint64s(ctx context.Context, dst []uint64) error {
	return c.Recv(ctx, wordBytes(dst))
}

// PackedWords is the number of 64-bit words that hold n values of l bits.
func PackedWords(n, l int) int { return (n*l + 63) / 64 }

// PackedBytes is the number of bytes that hold n values of l bits.
func PackedBytes(n, l int) int { return (n*l + 7) / 8 }

// mask returns the low-l-bit mask (l in 1..64).
func mask(l int) uint64 { return ^uint64(0) >> (64 - l) }

// Pack writes the low l bits (1 ≤ l ≤ 64) of every src value, in order, as a
// little-endian bit string into dst: value i occupies bits [i·l, (i+1)·l).
// dst must hold PackedWords(len(src), l) words; bits past the end are zeroed.
func Pack(dst, src []uint64, l int) {
	m := mask(l)
	switch l {
	case 64:
		copy(dst, src)
		return
	case 32:
		n := len(src) / 2
		d := dst[:n]
		for i := range d {
			d[i] = src[2*i]&m | src[2*i+1]<<32
		}
		if len(src)%2 == 1 {
			dst[n] = src[len(src)-1] & m
		}
		return
	case 16, 8, 4, 2, 1:
		per := 64 / l
		full := len(src) / per
		d := dst[:full]
		for i := range d {
			s := src[i*per : i*per+per]
			var w uint64
			for k := range s {
				w |= (s[k] & m) << (k * l)
			}
			d[i] = w
		}
		if rest := src[full*per:]; len(rest) > 0 {
			var w uint64
			for k := range rest {
				w |= (rest[k] & m) << (k * l)
			}
			dst[full] = w
		}
		return
	}
	var acc uint64
	nb := 0
	w := 0
	for _, v := range src {
		v &= m
		acc |= v << nb
		nb += l
		if nb >= 64 {
			dst[w] = acc
			w++
			nb -= 64
			acc = v >> (l - nb) // Go defines over-wide shifts as 0
		}
	}
	if nb > 0 {
		dst[w] = acc
	}
}

// Unpack is the inverse of Pack: dst[i] = bits [i·l, (i+1)·l) of src.
// src must hold PackedWords(len(dst), l) words.
func Unpack(dst, src []uint64, l int) {
	m := mask(l)
	switch l {
	case 64:
		copy(dst, src[:len(dst)])
		return
	case 32:
		n := len(dst) / 2
		for i := 0; i < n; i++ {
			w := src[i]
			dst[2*i] = w & m
			dst[2*i+1] = w >> 32
		}
		if len(dst)%2 == 1 {
			dst[len(dst)-1] = src[n] & m
		}
		return
	case 16, 8, 4, 2, 1:
		per := 64 / l
		full := len(dst) / per
		for w := 0; w < full; w++ {
			v := src[w]
			d := dst[w*per : w*per+per]
			for k := range d {
				d[k] = v & m
				v >>= uint(l)
			}
		}
		if rest := dst[full*per:]; len(rest) > 0 {
			v := src[full]
			for k := range rest {
				rest[k] = v & m
				v >>= uint(l)
			}
		}
		return
	}
	bit := 0
	for i := range dst {
		w, off := bit>>6, bit&63
		v := src[w] >> off
		if off+l > 64 {
			v |= src[w+1] << (64 - off)
		}
		dst[i] = v & m
		bit += l
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
	return c.Send(ctx, wordBytes(buf)[:PackedBytes(len(v), l)])
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
	if nw > 0 {
		buf[nw-1] = 0
	}
	if err := c.Recv(ctx, wordBytes(buf)[:PackedBytes(len(dst), l)]); err != nil {
		return err
	}
	Unpack(dst, buf, l)
	return nil
}
