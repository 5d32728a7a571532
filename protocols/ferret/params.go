package ferret

import (
	"fmt"

	"github.com/cryptflow-go/cryptflow/protocols/transport"
)

// Params is one LPN parameter set of a Ferret iteration: N = T·2^LogBin
// outputs, T noise positions (one per bin of 2^LogBin outputs: regular
// noise), and an LPN secret of K base COTs.
type Params struct {
	N, T, K, LogBin int
}

// Bin is the bin (GGM tree) size 2^LogBin.
func (p Params) Bin() int { return 1 << p.LogBin }

// Reserve is the number of base COTs an iteration consumes (M = K + T·LogBin:
// K for the LPN secret, LogBin per GGM tree); every iteration keeps its first
// Reserve outputs as the base COTs of the next.
func (p Params) Reserve() int { return p.K + p.T*p.LogBin }

// Output is the number of COTs an iteration hands out: N − Reserve.
func (p Params) Output() int { return p.N - p.Reserve() }

// Validate checks the shape of p.
func (p Params) Validate() error {
	switch {
	case p.LogBin < 4 || p.LogBin > 20:
		// At least 16 leaves per tree: a frame's rows (16 trees) are then
		// whole batches of the LPN step and whole words of choice bits.
		return fmt.Errorf("ferret: LogBin=%d outside 4..20", p.LogBin)
	case p.T < 1 || p.K < 1:
		return fmt.Errorf("ferret: T=%d and K=%d must be positive", p.T, p.K)
	case p.N != p.T<<p.LogBin:
		return fmt.Errorf("ferret: N=%d is not T·2^LogBin=%d", p.N, p.T<<p.LogBin)
	case p.N > 1<<25:
		// 2^25 outputs are 512 MB of blocks per direction.
		return fmt.Errorf("ferret: N=%d above the supported 2^25", p.N)
	case p.Output() < 1:
		return fmt.Errorf("ferret: N=%d does not exceed the reserve K+T·LogBin=%d", p.N, p.Reserve())
	}
	return nil
}

// Config is a parameter set for a whole session: the main iteration and an
// optional pre-iteration (zero Pre: bootstrap the main iteration straight
// from IKNP). The pre-iteration must produce at least Main.Reserve() COTs.
type Config struct {
	Name      string
	Main, Pre Params
}

// HasPre reports whether c bootstraps through a pre-iteration.
func (c Config) HasPre() bool { return c.Pre != (Params{}) }

// BaseCOTs is the number of IKNP block COTs the bootstrap needs.
func (c Config) BaseCOTs() int {
	if c.HasPre() {
		return c.Pre.Reserve()
	}
	return c.Main.Reserve()
}

// Validate checks c.
func (c Config) Validate() error {
	if err := c.Main.Validate(); err != nil {
		return fmt.Errorf("ferret: config %q, main iteration: %w", c.Name, err)
	}
	if c.HasPre() {
		if err := c.Pre.Validate(); err != nil {
			return fmt.Errorf("ferret: config %q, pre-iteration: %w", c.Name, err)
		}
		if c.Pre.N < c.Main.Reserve() {
			return fmt.Errorf("ferret: config %q: pre-iteration makes %d COTs, the main iteration needs %d",
				c.Name, c.Pre.N, c.Main.Reserve())
		}
	}
	return nil
}

// B13 returns a set with bins of 2^13 built on emp-ot's "b13" (Ferret's
// 128-bit set: n = 10,485,760, t = 1,280, k = 452,000; pre-iteration n =
// 470,016, t = 918, k = 32,768, bins of 2^9) with longer LPN secrets: the
// 2025 LPN estimator of Yu et al. puts emp-ot's main iteration at 127.8
// bits and its pre-iteration at 119.8, so the main iteration has k =
// 460,000 (129.2 bits) and the pre-iteration k = 40,000 with t = 931 bins
// (n = 476,672, enough for the main iteration's larger base); see
// docs/ferret.md, "LPN estimates". Each main iteration hands out 10,009,120
// COTs for 4,426,240 bits + frame headers (≈ 0.44 bits/COT). It needs about
// 25 MB per direction.
func B13() Config {
	return Config{
		Name: "b13",
		Main: Params{N: 10485760, T: 1280, K: 460000, LogBin: 13},
		Pre:  Params{N: 476672, T: 931, K: 40000, LogBin: 9},
	}
}

// Small returns a set for short sessions: n = 2^20, t = 1,024 bins of 2^10,
// k = 72,000, bootstrapped straight from IKNP (82,240 base COTs). Each
// iteration hands out 966,336 COTs for 2,752,512 bits (≈ 2.85 bits/COT) and
// needs about 7 MB per direction. k was 65,536 until the estimator above put
// that at 124.6 bits (docs/ferret.md, "LPN estimates").
func Small() Config {
	return Config{
		Name: "small",
		Main: Params{N: 1 << 20, T: 1024, K: 72000, LogBin: 10},
	}
}

// treesPerFrame is the number of GGM trees whose messages travel in one
// frame (the unit of pipelining between the parties).
const treesPerFrame = 16

// IterationBytes is the exact number of bytes on the wire for one
// iteration with p (all sent by the COT sender; the receiver sends
// nothing): per GGM tree, two 128-bit masked level sums per level and one
// 128-bit leaf-sum correction, in frames of treesPerFrame trees, each with
// a transport.HeaderSize header:
//
//	T·(2·LogBin + 1)·16 + ⌈T/16⌉·4  bytes.
func IterationBytes(p Params) int64 {
	frames := (p.T + treesPerFrame - 1) / treesPerFrame
	return int64(p.T)*int64(2*p.LogBin+1)*16 + int64(frames)*transport.HeaderSize
}

// helloSize is the size of the sender's opening message: magic, version,
// the two parameter sets (4 × uint32 each), and the public LPN seed.
const helloSize = 4 + 4 + 32 + 16

// iknpBytes is the exact size of the receiver's IKNP block-COT batch of n
// instances (package ot): a 24-byte header frame, then per frame of up to
// 8192 instances 128 columns of ⌈nc/64⌉ words.
func iknpBytes(n int) int64 {
	total := int64(24 + transport.HeaderSize)
	for off := 0; off < n; off += 8192 {
		nc := min(8192, n-off)
		total += int64(128*8*((nc+63)/64)) + transport.HeaderSize
	}
	return total
}

// SetupBytes is the exact number of bytes one direction's setup puts on
// the wire (both ways together): the sender's hello frame, the receiver's
// IKNP batch of c.BaseCOTs() block COTs and, with a pre-iteration, that
// iteration's messages.
func SetupBytes(c Config) int64 {
	b := int64(helloSize+transport.HeaderSize) + iknpBytes(c.BaseCOTs())
	if c.HasPre() {
		b += IterationBytes(c.Pre)
	}
	return b
}
