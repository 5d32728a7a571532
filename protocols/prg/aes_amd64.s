//go:build amd64 && !purego

#include "textflag.h"

// One AES-128 key-schedule step: X0 holds the previous round key; the next
// one is left in X0 and stored at off(DX).
#define EXPAND(rcon, off) \
	AESKEYGENASSIST $rcon, X0, X1; \
	PSHUFD $0xff, X1, X1; \
	MOVO X0, X2; \
	PSLLO $4, X2; \
	PXOR X2, X0; \
	PSLLO $4, X2; \
	PXOR X2, X0; \
	PSLLO $4, X2; \
	PXOR X2, X0; \
	PXOR X1, X0; \
	MOVOU X0, off(DX)

// func expandKey(key *Seed, rk *[176]byte)
TEXT ·expandKey(SB), NOSPLIT, $0-16
	MOVQ key+0(FP), AX
	MOVQ rk+8(FP), DX
	MOVOU (AX), X0
	MOVOU X0, 0(DX)
	EXPAND(0x01, 16)
	EXPAND(0x02, 32)
	EXPAND(0x04, 48)
	EXPAND(0x08, 64)
	EXPAND(0x10, 80)
	EXPAND(0x20, 96)
	EXPAND(0x40, 112)
	EXPAND(0x80, 128)
	EXPAND(0x1b, 144)
	EXPAND(0x36, 160)
	RET

// One middle round on the eight blocks in X0..X7 with the round key at off(AX).
#define ROUND8(off) \
	MOVOU off(AX), X9; \
	AESENC X9, X0; \
	AESENC X9, X1; \
	AESENC X9, X2; \
	AESENC X9, X3; \
	AESENC X9, X4; \
	AESENC X9, X5; \
	AESENC X9, X6; \
	AESENC X9, X7

// func encryptBlocks(rk *[176]byte, dst, src *Block, n int)
TEXT ·encryptBlocks(SB), NOSPLIT, $0-32
	MOVQ rk+0(FP), AX
	MOVQ dst+8(FP), DI
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	MOVOU 0(AX), X8

loop8:
	CMPQ CX, $8
	JB   tail
	MOVOU 0(SI), X0
	MOVOU 16(SI), X1
	MOVOU 32(SI), X2
	MOVOU 48(SI), X3
	MOVOU 64(SI), X4
	MOVOU 80(SI), X5
	MOVOU 96(SI), X6
	MOVOU 112(SI), X7
	PXOR X8, X0
	PXOR X8, X1
	PXOR X8, X2
	PXOR X8, X3
	PXOR X8, X4
	PXOR X8, X5
	PXOR X8, X6
	PXOR X8, X7
	ROUND8(16)
	ROUND8(32)
	ROUND8(48)
	ROUND8(64)
	ROUND8(80)
	ROUND8(96)
	ROUND8(112)
	ROUND8(128)
	ROUND8(144)
	MOVOU 160(AX), X9
	AESENCLAST X9, X0
	AESENCLAST X9, X1
	AESENCLAST X9, X2
	AESENCLAST X9, X3
	AESENCLAST X9, X4
	AESENCLAST X9, X5
	AESENCLAST X9, X6
	AESENCLAST X9, X7
	MOVOU X0, 0(DI)
	MOVOU X1, 16(DI)
	MOVOU X2, 32(DI)
	MOVOU X3, 48(DI)
	MOVOU X4, 64(DI)
	MOVOU X5, 80(DI)
	MOVOU X6, 96(DI)
	MOVOU X7, 112(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $8, CX
	JMP  loop8

tail:
	TESTQ CX, CX
	JZ    done
	MOVOU 0(SI), X0
	PXOR  X8, X0
	MOVOU 16(AX), X9
	AESENC X9, X0
	MOVOU 32(AX), X9
	AESENC X9, X0
	MOVOU 48(AX), X9
	AESENC X9, X0
	MOVOU 64(AX), X9
	AESENC X9, X0
	MOVOU 80(AX), X9
	AESENC X9, X0
	MOVOU 96(AX), X9
	AESENC X9, X0
	MOVOU 112(AX), X9
	AESENC X9, X0
	MOVOU 128(AX), X9
	AESENC X9, X0
	MOVOU 144(AX), X9
	AESENC X9, X0
	MOVOU 160(AX), X9
	AESENCLAST X9, X0
	MOVOU X0, 0(DI)
	ADDQ $16, SI
	ADDQ $16, DI
	DECQ CX
	JMP  tail

done:
	RET

// Full AES-128 on X0..X7: round key 0 in X10, X9 is scratch.
#define ENC8 \
	PXOR X10, X0; \
	PXOR X10, X1; \
	PXOR X10, X2; \
	PXOR X10, X3; \
	PXOR X10, X4; \
	PXOR X10, X5; \
	PXOR X10, X6; \
	PXOR X10, X7; \
	ROUND8(16); \
	ROUND8(32); \
	ROUND8(48); \
	ROUND8(64); \
	ROUND8(80); \
	ROUND8(96); \
	ROUND8(112); \
	ROUND8(128); \
	ROUND8(144); \
	MOVOU 160(AX), X9; \
	AESENCLAST X9, X0; \
	AESENCLAST X9, X1; \
	AESENCLAST X9, X2; \
	AESENCLAST X9, X3; \
	AESENCLAST X9, X4; \
	AESENCLAST X9, X5; \
	AESENCLAST X9, X6; \
	AESENCLAST X9, X7

#define LOAD8(r) \
	MOVOU 0(r), X0; \
	MOVOU 16(r), X1; \
	MOVOU 32(r), X2; \
	MOVOU 48(r), X3; \
	MOVOU 64(r), X4; \
	MOVOU 80(r), X5; \
	MOVOU 96(r), X6; \
	MOVOU 112(r), X7

#define STORE8(r) \
	MOVOU X0, 0(r); \
	MOVOU X1, 16(r); \
	MOVOU X2, 32(r); \
	MOVOU X3, 48(r); \
	MOVOU X4, 64(r); \
	MOVOU X5, 80(r); \
	MOVOU X6, 96(r); \
	MOVOU X7, 112(r)

// XORM8 xors the eight blocks at r into X0..X7 (X9 scratch).
#define XORM8(r) \
	MOVOU 0(r), X9; \
	PXOR X9, X0; \
	MOVOU 16(r), X9; \
	PXOR X9, X1; \
	MOVOU 32(r), X9; \
	PXOR X9, X2; \
	MOVOU 48(r), X9; \
	PXOR X9, X3; \
	MOVOU 64(r), X9; \
	PXOR X9, X4; \
	MOVOU 80(r), X9; \
	PXOR X9, X5; \
	MOVOU 96(r), X9; \
	PXOR X9, X6; \
	MOVOU 112(r), X9; \
	PXOR X9, X7

// TWEAK8 xors the running tweak X8 into X0..X7, adding X11 = (1, 0) to the
// tweak after each block.
#define TWEAK8 \
	PXOR X8, X0; \
	PADDQ X11, X8; \
	PXOR X8, X1; \
	PADDQ X11, X8; \
	PXOR X8, X2; \
	PADDQ X11, X8; \
	PXOR X8, X3; \
	PADDQ X11, X8; \
	PXOR X8, X4; \
	PADDQ X11, X8; \
	PXOR X8, X5; \
	PADDQ X11, X8; \
	PXOR X8, X6; \
	PADDQ X11, X8; \
	PXOR X8, X7; \
	PADDQ X11, X8

// XORR8 xors register r into X0..X7.
#define XORR8(r) \
	PXOR r, X0; \
	PXOR r, X1; \
	PXOR r, X2; \
	PXOR r, X3; \
	PXOR r, X4; \
	PXOR r, X5; \
	PXOR r, X6; \
	PXOR r, X7

// func tccr8(rk *[176]byte, dst, src *Block, n int, tlo, thi, d0, d1 uint64)
// Hashes src[k] ⊕ (d0, d1). n must be a multiple of 8. dst may equal src.
TEXT ·tccr8(SB), NOSPLIT, $128-64
	MOVQ rk+0(FP), AX
	MOVQ dst+8(FP), DI
	MOVQ src+16(FP), SI
	MOVQ n+24(FP), CX
	MOVQ tlo+32(FP), X8
	MOVQ thi+40(FP), X9
	PUNPCKLQDQ X9, X8
	MOVQ $1, R8
	MOVQ R8, X11
	MOVQ d0+48(FP), X12
	MOVQ d1+56(FP), X13
	PUNPCKLQDQ X13, X12
	MOVOU 0(AX), X10
	LEAQ tmp-128(SP), DX

tccrloop:
	TESTQ CX, CX
	JZ    tccrdone
	LOAD8(SI)
	XORR8(X12)
	ENC8
	STORE8(DX)
	TWEAK8
	ENC8
	XORM8(DX)
	STORE8(DI)
	ADDQ $128, SI
	ADDQ $128, DI
	SUBQ $8, CX
	JMP  tccrloop

tccrdone:
	RET

// func hash256x8(rk *[176]byte, dst, lo, hi *Block, n int, tlo, thi, l0, l1, h0, h1 uint64)
// Hashes (lo[k] ⊕ (l0, l1)) ‖ (hi[k] ⊕ (h0, h1)). n must be a multiple of 8.
// dst may equal lo or hi.
TEXT ·hash256x8(SB), NOSPLIT, $128-88
	MOVQ rk+0(FP), AX
	MOVQ dst+8(FP), DI
	MOVQ lo+16(FP), SI
	MOVQ hi+24(FP), BX
	MOVQ n+32(FP), CX
	MOVQ tlo+40(FP), X8
	MOVQ thi+48(FP), X9
	PUNPCKLQDQ X9, X8
	MOVQ $1, R8
	MOVQ R8, X11
	MOVQ l0+56(FP), X12
	MOVQ l1+64(FP), X13
	PUNPCKLQDQ X13, X12
	MOVQ h0+72(FP), X13
	MOVQ h1+80(FP), X14
	PUNPCKLQDQ X14, X13
	MOVOU 0(AX), X10
	LEAQ tmp-128(SP), DX

h256loop:
	TESTQ CX, CX
	JZ    h256done
	LOAD8(BX)
	XORR8(X13)
	TWEAK8
	STORE8(DX)
	ENC8
	XORM8(DX)
	XORM8(SI)
	XORR8(X12)
	STORE8(DX)
	ENC8
	XORM8(DX)
	STORE8(DI)
	ADDQ $128, SI
	ADDQ $128, BX
	ADDQ $128, DI
	SUBQ $8, CX
	JMP  h256loop

h256done:
	RET
