//go:build amd64 && !purego

package prg

import "golang.org/x/sys/cpu"

// haveAESNI reports whether the CPU has the AES-NI instructions (CPUID leaf 1, ECX bit 25, as
// probed once at start-up by golang.org/x/sys/cpu).
func haveAESNI() bool { return cpu.X86.HasAES }

// expandKey writes the 11 AES-128 round keys of key into rk.
//
//go:noescape
func expandKey(key *Seed, rk *[176]byte)

// encryptBlocks sets dst[i] = AES_rk(src[i]) for i < n (dst may equal src).
//
//go:noescape
func encryptBlocks(rk *[176]byte, dst, src *Block, n int)

// tccr8 is the fused TCCR kernel; n must be a multiple of 8.
//
//go:noescape
func tccr8(rk *[176]byte, dst, src *Block, n int, tlo, thi, d0, d1 uint64)

// hash256x8 is the fused Hash256 kernel; n must be a multiple of 8.
//
//go:noescape
func hash256x8(rk *[176]byte, dst, lo, hi *Block, n int, tlo, thi, l0, l1, h0, h1 uint64)
