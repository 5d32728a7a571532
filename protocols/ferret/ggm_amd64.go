//go:build amd64 && !purego

package ferret

//go:noescape
func cpuidF(leaf, sub uint32) (a, b, c, d uint32)

func xgetbvF() uint32

//go:noescape
func ggmLevelZ(rk *[2][176]byte, t *[2]uint64, half int)

// haveVAESZ reports whether the CPU and OS support AES-NI and VAES on ZMM
// registers (AVX-512F, VAES, OSXSAVE, and the opmask/ZMM state in XCR0).
func haveVAESZ() bool {
	_, _, c1, _ := cpuidF(1, 0)
	if c1&(1<<25) == 0 || c1&(1<<27) == 0 || c1&(1<<28) == 0 { // AES, OSXSAVE, AVX
		return false
	}
	if xgetbvF()&0xe6 != 0xe6 {
		return false
	}
	if mx, _, _, _ := cpuidF(0, 0); mx < 7 {
		return false
	}
	_, b7, c7, _ := cpuidF(7, 0)
	return b7&(1<<16) != 0 && c7&(1<<9) != 0
}
