package iknp

import "github.com/cryptflow-go/cryptflow/protocols/prg"

// pickTranspose returns the fastest 128×128 transpose for this CPU: the
// AVX-512 one (the same rounds on 512-bit registers) when available, else
// the portable one.
func pickTranspose() func(*[128]prg.Block) {
	if haveAVX512() {
		return transpose128AVX512
	}
	return transpose128
}

// transpose128 transposes a 128×128 bit matrix in place. Row r is m[r]
// (bit c of the row is bit c%64 of word c/64), so afterwards bit c of row r
// holds what was bit r of row c.
//
// It is Eklundh's recursive block swap: first the two off-diagonal 64×64
// quadrants are exchanged (a word swap), then all four quadrants are
// transposed together by six rounds of masked swaps between rows r and r+j
// (j = 32, 16, …, 1), each round unrolled for its constant shift and mask.
func transpose128(m *[128]prg.Block) {
	for r := 0; r < 64; r++ {
		m[r][1], m[r+64][0] = m[r+64][0], m[r][1]
	}
	swap32(m)
	swap16(m)
	swap8(m)
	swap4(m)
	swap2(m)
	swap1(m)
}

// swapJ (J = 32, 16, …, 1) exchanges, for every row r with r&J == 0, the bits
// of row r in columns c with c&J != 0 against the bits of row r+J in columns
// c−J. Each round is its own function so that the shift and mask are
// constants and the fixed-size array views need no bounds checks: one function parametrised by
// the shift and mask measured 1.6× slower (1.7 µs against 1.1 µs per transpose), and this is the
// hot loop of IKNP on CPUs without AVX-512.

func swap32(m *[128]prg.Block) {
	const j, mask = 32, 0x00000000ffffffff
	for base := 0; base < 128; base += 2 * j {
		lo := (*[j]prg.Block)(m[base : base+j])
		hi := (*[j]prg.Block)(m[base+j : base+2*j])
		for r := 0; r < j; r++ {
			x0, x1 := lo[r][0], lo[r][1]
			y0, y1 := hi[r][0], hi[r][1]
			t0 := (x0>>j ^ y0) & mask
			t1 := (x1>>j ^ y1) & mask
			lo[r][0], lo[r][1] = x0^t0<<j, x1^t1<<j
			hi[r][0], hi[r][1] = y0^t0, y1^t1
		}
	}
}

func swap16(m *[128]prg.Block) {
	const j, mask = 16, 0x0000ffff0000ffff
	for base := 0; base < 128; base += 2 * j {
		lo := (*[j]prg.Block)(m[base : base+j])
		hi := (*[j]prg.Block)(m[base+j : base+2*j])
		for r := 0; r < j; r++ {
			x0, x1 := lo[r][0], lo[r][1]
			y0, y1 := hi[r][0], hi[r][1]
			t0 := (x0>>j ^ y0) & mask
			t1 := (x1>>j ^ y1) & mask
			lo[r][0], lo[r][1] = x0^t0<<j, x1^t1<<j
			hi[r][0], hi[r][1] = y0^t0, y1^t1
		}
	}
}

func swap8(m *[128]prg.Block) {
	const j, mask = 8, 0x00ff00ff00ff00ff
	for base := 0; base < 128; base += 2 * j {
		lo := (*[j]prg.Block)(m[base : base+j])
		hi := (*[j]prg.Block)(m[base+j : base+2*j])
		for r := 0; r < j; r++ {
			x0, x1 := lo[r][0], lo[r][1]
			y0, y1 := hi[r][0], hi[r][1]
			t0 := (x0>>j ^ y0) & mask
			t1 := (x1>>j ^ y1) & mask
			lo[r][0], lo[r][1] = x0^t0<<j, x1^t1<<j
			hi[r][0], hi[r][1] = y0^t0, y1^t1
		}
	}
}

func swap4(m *[128]prg.Block) {
	const j, mask = 4, 0x0f0f0f0f0f0f0f0f
	for base := 0; base < 128; base += 2 * j {
		lo := (*[j]prg.Block)(m[base : base+j])
		hi := (*[j]prg.Block)(m[base+j : base+2*j])
		for r := 0; r < j; r++ {
			x0, x1 := lo[r][0], lo[r][1]
			y0, y1 := hi[r][0], hi[r][1]
			t0 := (x0>>j ^ y0) & mask
			t1 := (x1>>j ^ y1) & mask
			lo[r][0], lo[r][1] = x0^t0<<j, x1^t1<<j
			hi[r][0], hi[r][1] = y0^t0, y1^t1
		}
	}
}

func swap2(m *[128]prg.Block) {
	const j, mask = 2, 0x3333333333333333
	for base := 0; base < 128; base += 2 * j {
		lo := (*[j]prg.Block)(m[base : base+j])
		hi := (*[j]prg.Block)(m[base+j : base+2*j])
		for r := 0; r < j; r++ {
			x0, x1 := lo[r][0], lo[r][1]
			y0, y1 := hi[r][0], hi[r][1]
			t0 := (x0>>j ^ y0) & mask
			t1 := (x1>>j ^ y1) & mask
			lo[r][0], lo[r][1] = x0^t0<<j, x1^t1<<j
			hi[r][0], hi[r][1] = y0^t0, y1^t1
		}
	}
}

func swap1(m *[128]prg.Block) {
	const j, mask = 1, 0x5555555555555555
	for base := 0; base < 128; base += 2 * j {
		lo := (*[j]prg.Block)(m[base : base+j])
		hi := (*[j]prg.Block)(m[base+j : base+2*j])
		for r := 0; r < j; r++ {
			x0, x1 := lo[r][0], lo[r][1]
			y0, y1 := hi[r][0], hi[r][1]
			t0 := (x0>>j ^ y0) & mask
			t1 := (x1>>j ^ y1) & mask
			lo[r][0], lo[r][1] = x0^t0<<j, x1^t1<<j
			hi[r][0], hi[r][1] = y0^t0, y1^t1
		}
	}
}
