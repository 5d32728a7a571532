//go:build amd64 && !purego

#include "textflag.h"

// The VAES kernels keep 32 blocks in flight: four per ZMM register in
// Z0..Z7, copies in Z8..Z14 and Z31 (Z15 is left alone), the 11 round keys
// broadcast in Z16..Z26, the running tweaks in Z27 (lane k of register r
// holds τ for block 4r+k), the tweak increment (4, 0) per lane in Z28 and
// the input offsets in Z29 and Z30.

#define KEYSZ \
	VBROADCASTI32X4 0(AX), Z16; \
	VBROADCASTI32X4 16(AX), Z17; \
	VBROADCASTI32X4 32(AX), Z18; \
	VBROADCASTI32X4 48(AX), Z19; \
	VBROADCASTI32X4 64(AX), Z20; \
	VBROADCASTI32X4 80(AX), Z21; \
	VBROADCASTI32X4 96(AX), Z22; \
	VBROADCASTI32X4 112(AX), Z23; \
	VBROADCASTI32X4 128(AX), Z24; \
	VBROADCASTI32X4 144(AX), Z25; \
	VBROADCASTI32X4 160(AX), Z26

#define XORZ(r) \
	VPXORQ r, Z0, Z0; \
	VPXORQ r, Z1, Z1; \
	VPXORQ r, Z2, Z2; \
	VPXORQ r, Z3, Z3; \
	VPXORQ r, Z4, Z4; \
	VPXORQ r, Z5, Z5; \
	VPXORQ r, Z6, Z6; \
	VPXORQ r, Z7, Z7

#define ROUNDZ(k) \
	VAESENC k, Z0, Z0; \
	VAESENC k, Z1, Z1; \
	VAESENC k, Z2, Z2; \
	VAESENC k, Z3, Z3; \
	VAESENC k, Z4, Z4; \
	VAESENC k, Z5, Z5; \
	VAESENC k, Z6, Z6; \
	VAESENC k, Z7, Z7

#define ENCZ \
	XORZ(Z16); \
	ROUNDZ(Z17); \
	ROUNDZ(Z18); \
	ROUNDZ(Z19); \
	ROUNDZ(Z20); \
	ROUNDZ(Z21); \
	ROUNDZ(Z22); \
	ROUNDZ(Z23); \
	ROUNDZ(Z24); \
	ROUNDZ(Z25); \
	VAESENCLAST Z26, Z0, Z0; \
	VAESENCLAST Z26, Z1, Z1; \
	VAESENCLAST Z26, Z2, Z2; \
	VAESENCLAST Z26, Z3, Z3; \
	VAESENCLAST Z26, Z4, Z4; \
	VAESENCLAST Z26, Z5, Z5; \
	VAESENCLAST Z26, Z6, Z6; \
	VAESENCLAST Z26, Z7, Z7

#define LOADZ(r) \
	VMOVDQU64 0(r), Z0; \
	VMOVDQU64 64(r), Z1; \
	VMOVDQU64 128(r), Z2; \
	VMOVDQU64 192(r), Z3; \
	VMOVDQU64 256(r), Z4; \
	VMOVDQU64 320(r), Z5; \
	VMOVDQU64 384(r), Z6; \
	VMOVDQU64 448(r), Z7

#define STOREZ(r) \
	VMOVDQU64 Z0, 0(r); \
	VMOVDQU64 Z1, 64(r); \
	VMOVDQU64 Z2, 128(r); \
	VMOVDQU64 Z3, 192(r); \
	VMOVDQU64 Z4, 256(r); \
	VMOVDQU64 Z5, 320(r); \
	VMOVDQU64 Z6, 384(r); \
	VMOVDQU64 Z7, 448(r)

#define XORMZ(r) \
	VPXORQ 0(r), Z0, Z0; \
	VPXORQ 64(r), Z1, Z1; \
	VPXORQ 128(r), Z2, Z2; \
	VPXORQ 192(r), Z3, Z3; \
	VPXORQ 256(r), Z4, Z4; \
	VPXORQ 320(r), Z5, Z5; \
	VPXORQ 384(r), Z6, Z6; \
	VPXORQ 448(r), Z7, Z7

#define SAVEZ \
	VMOVDQA64 Z0, Z8; \
	VMOVDQA64 Z1, Z9; \
	VMOVDQA64 Z2, Z10; \
	VMOVDQA64 Z3, Z11; \
	VMOVDQA64 Z4, Z12; \
	VMOVDQA64 Z5, Z13; \
	VMOVDQA64 Z6, Z14; \
	VMOVDQA64 Z7, Z31

#define XORSAVEDZ \
	VPXORQ Z8, Z0, Z0; \
	VPXORQ Z9, Z1, Z1; \
	VPXORQ Z10, Z2, Z2; \
	VPXORQ Z11, Z3, Z3; \
	VPXORQ Z12, Z4, Z4; \
	VPXORQ Z13, Z5, Z5; \
	VPXORQ Z14, Z6, Z6; \
	VPXORQ Z31, Z7, Z7

#define TWEAKZ \
	VPXORQ Z27, Z0, Z0; \
	VPADDQ Z28, Z27, Z27; \
	VPXORQ Z27, Z1, Z1; \
	VPADDQ Z28, Z27, Z27; \
	VPXORQ Z27, Z2, Z2; \
	VPADDQ Z28, Z27, Z27; \
	VPXORQ Z27, Z3, Z3; \
	VPADDQ Z28, Z27, Z27; \
	VPXORQ Z27, Z4, Z4; \
	VPADDQ Z28, Z27, Z27; \
	VPXORQ Z27, Z5, Z5; \
	VPADDQ Z28, Z27, Z27; \
	VPXORQ Z27, Z6, Z6; \
	VPADDQ Z28, Z27, Z27; \
	VPXORQ Z27, Z7, Z7; \
	VPADDQ Z28, Z27, Z27

// func tccrZ(rk *[176]byte, dst, src *Block, n int, p *[24]uint64)
// p: initial tweaks of lanes 0..3, the increment vector, the offset d (×4).
// n must be a multiple of 32. dst may equal src.
TEXT ·tccrZ(SB), NOSPLIT, $0-40
	MOVQ rk+0(FP), AX
	MOVQ dst+8(FP), DI
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ p+32(FP), DX
	KEYSZ
	VMOVDQU64 0(DX), Z27
	VMOVDQU64 64(DX), Z28
	VMOVDQU64 128(DX), Z29

tzloop:
	CMPQ CX, $32
	JB   tzdone
	LOADZ(SI)
	XORZ(Z29)
	ENCZ
	SAVEZ
	TWEAKZ
	ENCZ
	XORSAVEDZ
	STOREZ(DI)
	ADDQ $512, SI
	ADDQ $512, DI
	SUBQ $32, CX
	JMP  tzloop

tzdone:
	VZEROUPPER
	RET

// func hash256Z(rk *[176]byte, dst, lo, hi *Block, n int, p *[32]uint64)
// p: initial tweaks, increment, dlo (×4), dhi (×4). n must be a multiple of
// 32. dst may equal lo or hi.
TEXT ·hash256Z(SB), NOSPLIT, $0-48
	MOVQ rk+0(FP), AX
	MOVQ dst+8(FP), DI
	MOVQ lo+16(FP), SI
	MOVQ hi+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ p+40(FP), DX
	KEYSZ
	VMOVDQU64 0(DX), Z27
	VMOVDQU64 64(DX), Z28
	VMOVDQU64 128(DX), Z29
	VMOVDQU64 192(DX), Z30

hzloop:
	CMPQ CX, $32
	JB   hzdone
	LOADZ(BX)
	XORZ(Z30)
	TWEAKZ
	SAVEZ
	ENCZ
	XORSAVEDZ
	XORMZ(SI)
	XORZ(Z29)
	SAVEZ
	ENCZ
	XORSAVEDZ
	STOREZ(DI)
	ADDQ $512, SI
	ADDQ $512, BX
	ADDQ $512, DI
	SUBQ $32, CX
	JMP  hzloop

hzdone:
	VZEROUPPER
	RET
