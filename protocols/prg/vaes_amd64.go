//go:build amd64 && !purego

package prg

//go:noescape
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

func xgetbv0() uint32

// tccrZ is the 32-blocks-per-step VAES TCCR kernel.
//
//go:noescape
func tccrZ(rk *[176]byte, dst, src *Block, n int, p *[24]uint64)

// hash256Z is the 32-blocks-per-step VAES Hash256 kernel.
//
//go:noescape
func hash256Z(rk *[176]byte, dst, lo, hi *Block, n int, p *[32]uint64)

// haveVAES reports whether the CPU and OS support VAES on 512-bit registers
// (AVX-512F, VAES, OSXSAVE and the opmask/ZMM state enabled in XCR0).
func haveVAES() bool {
	if !haveAESNI() {
		return false
	}
	_, _, c1, _ := cpuid(1, 0)
	if c1&(1<<27) == 0 || c1&(1<<28) == 0 { // OSXSAVE, AVX
		return false
	}
	if xgetbv0()&0xe6 != 0xe6 { // SSE, AVX, opmask, ZMM_Hi256, Hi16_ZMM state
		return false
	}
	max, _, _, _ := cpuid(0, 0)
	if max < 7 {
		return false
	}
	_, b7, c7, _ := cpuid(7, 0)
	return b7&(1<<16) != 0 && c7&(1<<9) != 0 // AVX512F, VAES
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
