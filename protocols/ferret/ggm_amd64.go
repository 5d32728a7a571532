//go:build amd64 && !purego

package ferret

import "golang.org/x/sys/cpu"

//go:noescape
func ggmLevelZ(rk *[2][176]byte, t *[2]uint64, half int)

// haveVAESZ reports whether the CPU and OS support AES-NI and VAES on ZMM
// registers: AES, AVX, AVX-512F and VAES, with the OS saving the opmask and
// ZMM state (golang.org/x/sys/cpu checks OSXSAVE and XCR0). The kernel uses
// no AVX-512 subset beyond F.
func haveVAESZ() bool {
	return cpu.X86.HasAES && cpu.X86.HasAVX && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VAES
}
