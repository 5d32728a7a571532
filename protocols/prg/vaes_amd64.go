//go:build amd64 && !purego

package prg

import "golang.org/x/sys/cpu"

// tccrZ is the 32-blocks-per-step VAES TCCR kernel.
//
//go:noescape
func tccrZ(rk *[176]byte, dst, src *Block, n int, p *[24]uint64)

// hash256Z is the 32-blocks-per-step VAES Hash256 kernel.
//
//go:noescape
func hash256Z(rk *[176]byte, dst, lo, hi *Block, n int, p *[32]uint64)

// haveVAES reports whether the CPU and OS support VAES on 512-bit registers: AES-NI, AVX,
// AVX-512F and VAES, with the OS saving the opmask and ZMM state (golang.org/x/sys/cpu checks
// OSXSAVE and XCR0 before it reports AVX or AVX-512F). The kernels use no AVX-512 subset beyond
// F.
func haveVAES() bool {
	return cpu.X86.HasAES && cpu.X86.HasAVX && cpu.X86.HasAVX512F && cpu.X86.HasAVX512VAES
}

// tweakLanes fills p[0:16] with the initial tweaks of the four lanes and the
// per-step increment.
func tweakLanes(p []uint64, t Tweak) {
	for k := 0; k < 4; k++ {
		p[2*k], p[2*k+1] = t.Lo+uint64(k), t.Hi
		p[8+2*k], p[8+2*k+1] = 4, 0
	}
}

func broadcast(p []uint64, d Block) {
	for k := 0; k < 4; k++ {
		p[2*k], p[2*k+1] = d[0], d[1]
	}
}

func tccrWide(rk *[176]byte, dst, src []Block, d Block, t Tweak) {
	var p [24]uint64
	tweakLanes(p[:], t)
	broadcast(p[16:], d)
	tccrZ(rk, &dst[0], &src[0], len(src), &p)
}

func hash256Wide(rk *[176]byte, dst, lo, hi []Block, dlo, dhi Block, t Tweak) {
	var p [32]uint64
	tweakLanes(p[:], t)
	broadcast(p[16:], dlo)
	broadcast(p[24:], dhi)
	hash256Z(rk, &dst[0], &lo[0], &hi[0], len(dst), &p)
}
