//go:build amd64 && !purego

#include "textflag.h"

// Masks of the Eklundh swap rounds: bits c with c&j == 0.
DATA tmasks<>+0(SB)/8, $0x5555555555555555
DATA tmasks<>+8(SB)/8, $0x3333333333333333
DATA tmasks<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA tmasks<>+24(SB)/8, $0x00ff00ff00ff00ff
DATA tmasks<>+32(SB)/8, $0x0000ffff0000ffff
DATA tmasks<>+40(SB)/8, $0x00000000ffffffff
GLOBL tmasks<>(SB), RODATA|NOPTR, $48

// A ZMM register holds four consecutive 128-bit rows (one per 128-bit lane).
// All rounds of the transpose commute (each swaps one bit of the row index
// with the same bit of the column index), so they are grouped by which rows
// they pair: rounds 1 and 2 pair lanes of one register, round 4 pairs
// adjacent registers, rounds 8..64 pair registers of the same parity.

// PAIR does round j between registers a (rows r) and b (rows r+j):
// t = ((a >> j) ^ b) & mask; a ^= t << j; b ^= t. Z0, Z1 are scratch.
#define PAIR(j, a, b, mask) \
	VPSRLQ $j, a, Z0; \
	VPTERNLOGQ $0x28, mask, b, Z0; \
	VPSLLQ $j, Z0, Z1; \
	VPXORQ Z1, a, a; \
	VPXORQ Z0, b, b

// INLANE does round j (1 or 2) inside register a: lanes selected by klo
// hold the lower rows, their partners (lane shuffle imm) the upper rows.
#define INLANE(j, imm, a, mask, klo, khi) \
	VPSRLQ $j, a, Z0; \
	VSHUFI64X2 $imm, a, a, Z1; \
	VPTERNLOGQ $0x28, mask, Z1, Z0; \
	VPSLLQ $j, Z0, Z1; \
	VSHUFI64X2 $imm, Z0, Z0, Z0; \
	VPXORQ Z1, a, klo, a; \
	VPXORQ Z0, a, khi, a

// UNPK does round 64 between a (rows r) and b (rows r+64): the high word
// of each row of a trades places with the low word of the row of b.
#define UNPK(a, b) \
	VPUNPCKLQDQ b, a, Z0; \
	VPUNPCKHQDQ b, a, b; \
	VMOVDQA64 Z0, a

// func transpose128AVX512(m *[128]prg.Block)
TEXT ·transpose128AVX512(SB), NOSPLIT, $0-8
	MOVQ m+0(FP), DI
	VPBROADCASTQ tmasks<>+0(SB), Z10
	VPBROADCASTQ tmasks<>+8(SB), Z11
	VPBROADCASTQ tmasks<>+16(SB), Z12
	VPBROADCASTQ tmasks<>+24(SB), Z2
	VPBROADCASTQ tmasks<>+32(SB), Z3
	VPBROADCASTQ tmasks<>+40(SB), Z4
	MOVL $0x33, AX
	KMOVW AX, K1
	MOVL $0xcc, AX
	KMOVW AX, K2
	MOVL $0x0f, AX
	KMOVW AX, K3
	MOVL $0xf0, AX
	KMOVW AX, K4

	// Pass 1: rounds 1, 2 and 4 on eight rows at a time.
	MOVQ DI, SI
	MOVQ $16, CX

pass1:
	VMOVDQU64 0(SI), Z5
	VMOVDQU64 64(SI), Z6
	INLANE(1, 0xb1, Z5, Z10, K1, K2)
	INLANE(1, 0xb1, Z6, Z10, K1, K2)
	INLANE(2, 0x4e, Z5, Z11, K3, K4)
	INLANE(2, 0x4e, Z6, Z11, K3, K4)
	PAIR(4, Z5, Z6, Z12)
	VMOVDQU64 Z5, 0(SI)
	VMOVDQU64 Z6, 64(SI)
	ADDQ $128, SI
	DECQ CX
	JNZ  pass1

	// Pass 2: rounds 8, 16, 32 and 64 on the 16 registers of each parity
	// (register q holds rows 4q..4q+3; q = c, c+2, …, c+30).
	MOVQ DI, SI
	MOVQ $2, CX

pass2:
	VMOVDQU64 0(SI), Z16
	VMOVDQU64 128(SI), Z17
	VMOVDQU64 256(SI), Z18
	VMOVDQU64 384(SI), Z19
	VMOVDQU64 512(SI), Z20
	VMOVDQU64 640(SI), Z21
	VMOVDQU64 768(SI), Z22
	VMOVDQU64 896(SI), Z23
	VMOVDQU64 1024(SI), Z24
	VMOVDQU64 1152(SI), Z25
	VMOVDQU64 1280(SI), Z26
	VMOVDQU64 1408(SI), Z27
	VMOVDQU64 1536(SI), Z28
	VMOVDQU64 1664(SI), Z29
	VMOVDQU64 1792(SI), Z30
	VMOVDQU64 1920(SI), Z31

	PAIR(8, Z16, Z17, Z2)
	PAIR(8, Z18, Z19, Z2)
	PAIR(8, Z20, Z21, Z2)
	PAIR(8, Z22, Z23, Z2)
	PAIR(8, Z24, Z25, Z2)
	PAIR(8, Z26, Z27, Z2)
	PAIR(8, Z28, Z29, Z2)
	PAIR(8, Z30, Z31, Z2)

	PAIR(16, Z16, Z18, Z3)
	PAIR(16, Z17, Z19, Z3)
	PAIR(16, Z20, Z22, Z3)
	PAIR(16, Z21, Z23, Z3)
	PAIR(16, Z24, Z26, Z3)
	PAIR(16, Z25, Z27, Z3)
	PAIR(16, Z28, Z30, Z3)
	PAIR(16, Z29, Z31, Z3)

	PAIR(32, Z16, Z20, Z4)
	PAIR(32, Z17, Z21, Z4)
	PAIR(32, Z18, Z22, Z4)
	PAIR(32, Z19, Z23, Z4)
	PAIR(32, Z24, Z28, Z4)
	PAIR(32, Z25, Z29, Z4)
	PAIR(32, Z26, Z30, Z4)
	PAIR(32, Z27, Z31, Z4)

	UNPK(Z16, Z24)
	UNPK(Z17, Z25)
	UNPK(Z18, Z26)
	UNPK(Z19, Z27)
	UNPK(Z20, Z28)
	UNPK(Z21, Z29)
	UNPK(Z22, Z30)
	UNPK(Z23, Z31)

	VMOVDQU64 Z16, 0(SI)
	VMOVDQU64 Z17, 128(SI)
	VMOVDQU64 Z18, 256(SI)
	VMOVDQU64 Z19, 384(SI)
	VMOVDQU64 Z20, 512(SI)
	VMOVDQU64 Z21, 640(SI)
	VMOVDQU64 Z22, 768(SI)
	VMOVDQU64 Z23, 896(SI)
	VMOVDQU64 Z24, 1024(SI)
	VMOVDQU64 Z25, 1152(SI)
	VMOVDQU64 Z26, 1280(SI)
	VMOVDQU64 Z27, 1408(SI)
	VMOVDQU64 Z28, 1536(SI)
	VMOVDQU64 Z29, 1664(SI)
	VMOVDQU64 Z30, 1792(SI)
	VMOVDQU64 Z31, 1920(SI)
	ADDQ $64, SI
	DECQ CX
	JNZ  pass2

	VZEROUPPER
	RET
