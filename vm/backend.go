// Package vm executes fixed-point programs (fixed.Program, usually read from a .sciir file).
//
// The Machine walks the instruction stream over tensor slots. Operations that are local on
// additive shares — additions, constants added by party 0, scaling by powers of two, data movement,
// im2col, gathering pooling windows — it performs itself on the share tensors, identically for every
// backend. Everything that needs the two parties to interact (or, for the cleartext backend, plain
// fixed-point arithmetic) it hands to a Backend, one call per layer. A convolution is lowered to
// im2col and one MatMul per group, unless the backend implements the optional ConvBackend and
// accepts the convolution's geometry: then it gets the un-gathered input (Conv2D).
//
// The backends live in packages of their own above vm and protocols: vm/cleartext (full values in
// one process, the reference) and vm/sci (the two-party protocols: sciot, scihe, auto). vm knows
// them only through the Backend interface.
package vm

import (
	"context"

	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ring"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// Backend performs the non-local operations of a fixed-point program on this party's share
// tensors. Every method works on whole tensors (a layer at a time). dst arguments are allocated by
// the VM with the right shape and never alias an operand; a method writes all of dst.Data.
//
// Shares are additive in Backend.Ring(): the value of a tensor is the sum of both parties' shares.
// Party 0 (the server) holds the weights; party 1 (the client) gets nil weight pointers.
type Backend interface {
	// Party is 0 for the server (holds the weights), 1 for the client. The cleartext backend
	// reports 0: it holds full values and the other party's share is implicitly zero, so local
	// operations (constants added by party 0) work unchanged.
	Party() int
	// Ring is the ring the shares live in; it must match the program's.
	Ring() ring.Ring
	// Input turns x, which holds the input's value at party owner and zeros at the other party,
	// into this party's share, in place.
	Input(ctx context.Context, owner int, x ring.Tensor) error
	// Reveal opens the shared tensor x to party to, in place, and reports whether x now holds the
	// plaintext value at this party (always true for the cleartext backend).
	Reveal(ctx context.Context, to int, x ring.Tensor) (bool, error)
	// MatMul sets dst[m,n] = W[m,k] x X[k,n]: W (row-major [m,k]) is party 0's private weight
	// matrix (nil at party 1); x (row-major [k,n]) is shared; dst is [m,n]. e is the engine the
	// program records for the layer (fixed.EngineDefault when none); a backend with a single
	// engine ignores it, one with several decides from e and its configuration alone (public data,
	// so both parties decide alike).
	MatMul(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, m, k, n int, x ring.Tensor) error
	// MulConst sets dst = w * x elementwise; w (party 0's, same shape as x; nil at party 1) is
	// private, x is shared.
	MulConst(ctx context.Context, dst ring.Tensor, w *ring.Tensor, x ring.Tensor) error
	// Mul sets dst = x * y elementwise, exactly in the ring (products wrap); x, y and dst have the
	// same shape and both x and y are shared (the VM expands broadcast operands first). x and y may
	// be the same tensor.
	Mul(ctx context.Context, dst, x, y ring.Tensor) error
	// ReLU sets dst = max(x, 0) on signed values.
	ReLU(ctx context.Context, dst, x ring.Tensor) error
	// Trunc sets dst = floor(signed(x) / 2^k). knownNonNeg promises that every signed(x) >= 0, so
	// a backend may use a cheaper protocol.
	Trunc(ctx context.Context, dst, x ring.Tensor, k int, knownNonNeg bool) error
	// Div sets dst = floor(signed(x) / d) for d >= 1.
	Div(ctx context.Context, dst, x ring.Tensor, d int) error
	// MaxRows sets dst[i] = max_j signed(x[i*d+j]) for i < rows (x is [rows,d], dst is [rows]).
	MaxRows(ctx context.Context, dst, x ring.Tensor, rows, d int) error
	// ArgMaxRows sets dst[i] to the index j of the largest signed x[i*d+j] (the lowest such j on
	// ties), as a ring element.
	ArgMaxRows(ctx context.Context, dst, x ring.Tensor, rows, d int) error
}

// ConvBackend is implemented by backends with a convolution of their own. New asks UseConv2D once
// for every convolution of the program; for those it accepts, Run calls Conv2D, and it lowers the
// others to an im2col gather (local on shares) and one MatMul per group. UseConv2D must depend on
// public data only (the geometry, the layer's engine and the backend's configuration) so that
// both parties decide alike. Both methods get the engine the program records for the layer, as
// MatMul does.
type ConvBackend interface {
	Backend
	// UseConv2D reports whether Conv2D should run convolutions of geometry g by engine e.
	UseConv2D(g ring.ConvGeom, e fixed.Engine) bool
	// Conv2D sets dst [N, M, OH, OW] to the convolution of x [N, C, H, W] (shared) with W
	// [M, C/Groups, KH, KW] (party 0's; nil at party 1), exactly in the ring (products and sums
	// wrap), as defined by ring.ConvGeom. dst never aliases x.
	Conv2D(ctx context.Context, e fixed.Engine, dst ring.Tensor, w *ring.Tensor, x ring.Tensor, g ring.ConvGeom) error
}

// MathBackend is implemented by backends that run the fixed-point math functions (OpExp,
// OpSigmoid, OpTanh, OpRecip, OpRsqrt, OpLog). Math sets dst = f(x) elementwise, both at the program's
// scale, exactly as fxmath defines f (Params.Eval on the ring and scale). A backend without it
// cannot run programs that use them: vm.New says so.
type MathBackend interface {
	Backend
	Math(ctx context.Context, f fxmath.Func, dst, x ring.Tensor, scale int) error
}

// SharedMatMulBackend is implemented by backends that multiply two shared matrices
// (OpBatchMatMul: attention's Q·Kᵀ and softmax(…)·V). A backend without it cannot run programs
// that use them: vm.New says so.
type SharedMatMulBackend interface {
	Backend
	// MatMulShared sets dst[b] = X[b]·Y[b] for b < batch, exactly in the ring (products and sums
	// wrap): x holds batch row-major m×k matrices one after the other, y batch k×n, dst batch m×n;
	// x and y are shared. dst never aliases x or y; x and y may be the same tensor.
	MatMulShared(ctx context.Context, e fixed.Engine, dst, x, y ring.Tensor, batch, m, k, n int) error
}

// LowReLUBackend is implemented by backends that compare on the low bits: a ReLU whose operand
// the program records as a signed bits-bit value (fixed.OpReLU with Bits, 2 ≤ bits < l). The VM
// calls ReLULow for such ReLUs when the backend has it, ReLU otherwise (the same result: the low
// bits are only cheaper). The cleartext backend checks the bound on the values it sees.
type LowReLUBackend interface {
	Backend
	// ReLULow sets dst = max(x, 0) for x whose signed values lie in [−2^(bits−1), 2^(bits−1)).
	ReLULow(ctx context.Context, dst, x ring.Tensor, bits int) error
}

// ReLUTruncBackend is implemented by backends that fuse a ReLU with the truncation of its result:
// an OpReLU whose result only the next instruction reads, an OpTrunc of it by s with NonNeg (every
// CNN's activation: `%8 = relu %7` then `%9 = trunc %8 by 12 nonneg`). New asks UseReLUTrunc once
// for every such pair; for those it accepts, Run calls ReLUTrunc at the ReLU with the truncation's
// result as dst, and the truncation does nothing (Observe still marks both instructions; the
// ReLU's own tensor is then not computed). The cleartext backend does not implement it: it runs
// the two instructions, whose result is the same.
type ReLUTruncBackend interface {
	Backend
	// UseReLUTrunc reports whether ReLUTrunc runs a ReLU of operands the program records as signed
	// bits-bit values (bits = l: any value) followed by a truncation by s. It must depend on public
	// data only (the widths and the backend's configuration) so that both parties decide alike.
	UseReLUTrunc(bits, s int) bool
	// ReLUTrunc sets dst = floor(max(signed(x), 0) / 2^s) for x whose signed values lie in
	// [−2^(bits−1), 2^(bits−1)). dst may be x itself (the same slot), but overlaps it in no other way.
	ReLUTrunc(ctx context.Context, dst, x ring.Tensor, bits, s int) error
}
