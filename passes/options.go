package passes

import (
	"io"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// The ring bitwidths the compiler accepts for a program: the secure backends need l >= 2 (a sign
// bit and one magnitude bit; the comparison protocols are tested down to l = 2), and a ring
// element is a uint64.
const (
	MinBits = 2
	MaxBits = 64
)

// What the compiler uses without validation samples (nothing is measured, so nothing is chosen).
const (
	defaultBits  = 64
	defaultScale = 12
)

// Options controls Compile. Start from DefaultOptions: the zero value pins scale 0.
type Options struct {
	// Bits pins the ring bitwidth l (MinBits..MaxBits); 0 lets autotune choose, or means 64 when
	// autotune does not run.
	Bits int
	// Scale pins the fixed-point scale s; -1 lets autotune choose, or means 12 when autotune does
	// not run.
	Scale int
	// Samples are the validation inputs; with any, the autotune pass runs.
	Samples []dataset.Sample
	// Scales are autotune's candidate scales (default 6..16; ignored when Scale is pinned).
	// Headroom is the number of bits autotune keeps free above the largest magnitude seen on the
	// samples (0..32). Workers run the samples in parallel. Progress, when set, is called as
	// samples complete (done of total, over the whole sweep), never concurrently.
	Scales   []int
	Headroom int
	Workers  int
	Progress func(done, total int)
	// KeepSoftmax disables drop-softmax.
	KeepSoftmax bool
	// Backend is the two-party backend the program is for (sciot, scihe, auto; empty: sciot).
	// With "auto" the plan-engines pass chooses OT or HE for every linear layer.
	Backend string
	// Net is the link plan-engines assumes: any link description netmodel.Parse reads except
	// "none" — "lan" (also the default, ""), "wan", or "BANDWIDTH[,RTT]" such as "1Gbit/s,0.5ms"
	// (NetModelNamed turns it into the model).
	Net string
	// Disable names optional passes not to run (names or path.Match patterns, "peephole-*").
	Disable []string
	// Check runs the checker after every pass: a structural check of the HLIL graph (shapes are
	// re-inferred after every HLIL pass anyway) or (*fixed.Program).Validate. athosc compile --check
	// sets it, and so do the tests that compile.
	Check bool
	// FHEBlocks (fhe mode) is how matmuls with block-circulant weights are evaluated: in the
	// frequency domain when fixed.SpectralWins says so (BlockAuto, the default), always, or by
	// the dense diagonal method (fixed.Instr.Spectral); the structure is recorded either way.
	FHEBlocks fixed.BlockMode
	// DumpAfter names a pass after which the IR is written to Dump: HLIL text (constant data
	// elided) or the fixed-point program's text. It is an error if that pass does not run.
	DumpAfter string
	Dump      io.Writer
}

// DefaultOptions returns options that choose l and s by autotune when given samples (64-bit ring,
// scale 12 without), with headroom 1, 2 workers and every pass enabled.
func DefaultOptions() Options {
	return Options{Scale: -1, Headroom: 1, Workers: 2}
}
