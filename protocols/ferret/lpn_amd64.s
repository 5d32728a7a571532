//go:build amd64 && !purego

#include "textflag.h"

// lpnColsZ maps n 32-bit words v of w (n a positive multiple of 32), in
// place, to the column indices ⌊v·k / 2^32⌋ (k < 2^32): the even words of
// each quadword multiply k directly, the odd ones after a 32-bit shift;
// the high halves of the 64-bit products are the indices. AVX-512F.
//
// func lpnColsZ(w *uint32, n int, k uint64)
TEXT ·lpnColsZ(SB), NOSPLIT, $0-24
	MOVQ w+0(FP), DI
	MOVQ n+8(FP), CX
	MOVQ k+16(FP), AX
	VPBROADCASTQ AX, Z31
	VPTERNLOGD $0xff, Z30, Z30, Z30
	VPSLLQ $32, Z30, Z30 // high dword of each quadword

cols:
	VMOVDQU32 0(DI), Z0
	VMOVDQU32 64(DI), Z1
	VPSRLQ $32, Z0, Z2
	VPSRLQ $32, Z1, Z3
	VPMULUDQ Z31, Z0, Z0
	VPMULUDQ Z31, Z1, Z1
	VPMULUDQ Z31, Z2, Z2
	VPMULUDQ Z31, Z3, Z3
	VPSRLQ $32, Z0, Z0
	VPSRLQ $32, Z1, Z1
	VPANDQ Z30, Z2, Z2
	VPANDQ Z30, Z3, Z3
	VPORQ Z2, Z0, Z0
	VPORQ Z3, Z1, Z1
	VMOVDQU32 Z0, 0(DI)
	VMOVDQU32 Z1, 64(DI)
	ADDQ $128, DI
	SUBQ $32, CX
	JG   cols
	VZEROUPPER
	RET

// GATHER10 XORs into X0 (five loads) and X1 (five) the ten base blocks of
// the row whose column indices are at SI. BX: base.
#define GATHER10 \
	MOVL 0(SI), R8; \
	MOVL 4(SI), R9; \
	MOVL 8(SI), R10; \
	MOVL 12(SI), R11; \
	MOVL 16(SI), R12; \
	SHLQ $4, R8; \
	SHLQ $4, R9; \
	SHLQ $4, R10; \
	SHLQ $4, R11; \
	SHLQ $4, R12; \
	VPXOR (BX)(R8*1), X0, X0; \
	VPXOR (BX)(R9*1), X1, X1; \
	VPXOR (BX)(R10*1), X0, X0; \
	VPXOR (BX)(R11*1), X1, X1; \
	VPXOR (BX)(R12*1), X0, X0; \
	MOVL 20(SI), R8; \
	MOVL 24(SI), R9; \
	MOVL 28(SI), R10; \
	MOVL 32(SI), R11; \
	MOVL 36(SI), R12; \
	SHLQ $4, R8; \
	SHLQ $4, R9; \
	SHLQ $4, R10; \
	SHLQ $4, R11; \
	SHLQ $4, R12; \
	VPXOR (BX)(R8*1), X1, X1; \
	VPXOR (BX)(R9*1), X0, X0; \
	VPXOR (BX)(R10*1), X1, X1; \
	VPXOR (BX)(R11*1), X0, X0; \
	VPXOR (BX)(R12*1), X1, X1

// lpnXorX adds A·base to rows out[0:rows] (rows ≥ 1): out[i] ^= ⊕_j
// base[idx[10i+j]]. Every index must be below len(base).
//
// func lpnXorX(out *[2]uint64, base *[2]uint64, idx *uint32, rows int)
TEXT ·lpnXorX(SB), NOSPLIT, $0-32
	MOVQ out+0(FP), DI
	MOVQ base+8(FP), BX
	MOVQ idx+16(FP), SI
	MOVQ rows+24(FP), CX

rowx:
	VMOVDQU 0(DI), X0
	VPXOR X1, X1, X1
	GATHER10
	VPXOR X1, X0, X0
	VMOVDQU X0, 0(DI)
	ADDQ $16, DI
	ADDQ $40, SI
	DECQ CX
	JNZ  rowx
	VZEROUPPER
	RET
