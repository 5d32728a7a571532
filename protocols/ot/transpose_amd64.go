//go:build amd64 && !purego

package ot

import "github.com/cryptflow-go/cryptflow/protocols/prg"

//go:noescape
func cpuidOT(leaf, sub uint32) (a, b, c, d uint32)

func xgetbvOT() uint32

// transpose128AVX512 is transpose128 with 512-bit registers.
//
//go:noescape
func transpose128AVX512(m *[128]prg.Block)

// haveAVX512 reports whether AVX-512F may be used (CPU support and the OS
// saving the opmask and ZMM state).
func haveAVX512() bool {
	_, _, c1, _ := cpuidOT(1, 0)
	if c1&(1<<27) == 0 { // OSXSAVE
		return false
	}
	if xgetbvOT()&0xe6 != 0xe6 {
		return false
	}
	if max, _, _, _ := cpuidOT(0, 0); max < 7 {
		return false
	}
	_, b7, _, _ := cpuidOT(7, 0)
	return b7&(1<<16) != 0
}
