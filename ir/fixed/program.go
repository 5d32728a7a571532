// Package fixed holds the fixed-point program: the form a model takes after float-to-fixed
// conversion. It is a flat list of instructions over numbered tensors; every tensor
// has a static shape and a fixed-point scale, and lives in a slot (storage reused by liveness).
// Peepholes, liveness and code generation work on it; the VM executes it. docs/fixed-point.md
// describes the semantics of each opcode, docs/sciir.md its file encoding.
package fixed

import (
	"fmt"
	"slices"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ring/fxmath"
)

// Opcode is a fixed-point IR instruction code. The numeric values are part of the .sciir file
// format: never renumber them.
type Opcode uint8

// The opcodes. "local" operations are done by the VM on each party's share tensor; the others are
// calls into the backend (secure protocols, or plain arithmetic for the cleartext backend).
const (
	// OpInput: Out <- program input Index (owned by Inputs[Index].Party). Backend.Input.
	OpInput Opcode = 1
	// OpOutput: reveal In[0] as program output Index to Outputs[Index].Party. Backend.Reveal.
	OpOutput Opcode = 2
	// OpMatMul: Out[M,N] = W[M,K] x In[0][K,N] with W = Weights[Weight] (party 0's). Backend.MatMul.
	OpMatMul Opcode = 3
	// OpConv: Out[N,M,out...] = conv(In[0][N,C,in...], W[M,C/Group,kernel...]) with window Win,
	// 1 or 2 spatial dimensions. The VM hands it whole to a backend that runs it natively
	// (vm.ConvBackend), else lowers it to im2col (local) and one Backend.MatMul per group.
	OpConv Opcode = 4
	// OpAddConst: Out = In[0] + broadcast(W); party 0 adds the constant (local).
	OpAddConst Opcode = 5
	// OpMulConst: Out = In[0] * broadcast(W), elementwise by party 0's constant. Backend.MulConst.
	OpMulConst Opcode = 6
	// OpAdd, OpSub: Out = In[0] +/- In[1] with numpy broadcasting (local).
	OpAdd Opcode = 7
	OpSub Opcode = 8
	// OpScaleUp: Out = In[0] * 2^Shift (local).
	OpScaleUp Opcode = 9
	// OpTrunc: Out = floor(signed(In[0]) / 2^Shift); NonNeg records that the input is known to be
	// non-negative. Backend.Trunc.
	OpTrunc Opcode = 10
	// OpReLU: Out = max(In[0], 0). Backend.ReLU. With Bits (2 ≤ Bits < l; 0: none) the operand
	// is known to hold signed Bits-bit values, −2^(Bits−1) ≤ x < 2^(Bits−1), so the comparison may
	// run on the low Bits bits of the shares (vm.LowReLUBackend). The compiler derives the bound
	// from the inputs' ranges and the weights (Bounds; docs/fixed-point.md, "Comparisons on the
	// low bits"), and CheckBounds verifies it.
	OpReLU Opcode = 11
	// OpMaxPool: window maximum (window Win, padding ignored). The VM gathers windows into rows;
	// Backend.MaxRows.
	OpMaxPool Opcode = 12
	// OpSumPool: window sum with zero padding (local); followed by OpDiv for average pooling.
	OpSumPool Opcode = 13
	// OpDiv: Out[i] = floor(signed(In[0][i]) / Divisors[i mod len(Divisors)]). Backend.Div, called
	// once per distinct divisor.
	OpDiv Opcode = 14
	// OpArgMax: index of the largest element along Axis (ties: lowest index); Out has scale 0.
	// Backend.ArgMaxRows.
	OpArgMax Opcode = 15
	// OpReshape: Out = In[0] with Out's shape (local). Flatten, Squeeze and Unsqueeze lower to it.
	OpReshape Opcode = 16
	// OpTranspose: Out = In[0] with axes permuted by Perm (local).
	OpTranspose Opcode = 17
	// OpConcat: Out = concatenation of In along Axis (local).
	OpConcat Opcode = 18
	// OpPad: Out = In[0] padded by Pads (begins then ends, non-negative) in mode PadMode; constant
	// padding uses PadValue (an encoded ring value, added by party 0).
	OpPad Opcode = 19
	// OpMul: Out = In[0] * In[1] elementwise with numpy broadcasting, both operands shared, exact
	// in the ring; Out's scale is the sum of the operands' scales. Backend.Mul (the VM expands the
	// broadcast operands first).
	OpMul Opcode = 20
	// OpExp, OpSigmoid, OpTanh, OpRecip, OpRsqrt, OpLog: Out = f(In[0]) elementwise, the
	// fixed-point math functions of package ring/fxmath (exp of min(x, 0), sigmoid, tanh,
	// 1/max(x, 1), 1/sqrt(max(x, 1)), ln(max(x, 1))), defined by their integer algorithms; Out has In[0]'s scale, which must
	// be the program's scale s, and the ring needs l ≥ 2s + 5. Backend.Math (vm.MathBackend).
	OpExp     Opcode = 21
	OpSigmoid Opcode = 22
	OpTanh    Opcode = 23
	OpRecip   Opcode = 24
	OpRsqrt   Opcode = 25
	// OpBatchMatMul: Out[..., M, N] = In[0][..., M, K] x In[1][..., K, N], both operands shared,
	// with the same leading (batch) dimensions (none: one 2-D product), exact in the ring; Out's
	// scale is the sum of the operands' scales. Attention's Q·Kᵀ and softmax(…)·V.
	// Backend.MatMulShared (vm.SharedMatMulBackend).
	OpBatchMatMul Opcode = 26
	// OpLog is the math function ln(max(x, 1)) (see OpExp); LogSoftmax's log of the row sum.
	OpLog Opcode = 27
	// OpGather: Out = In[0][Select[0], Select[1], ...], numpy outer indexing by constant index
	// lists, one per axis (an empty list keeps the axis whole): the Slice and Gather of a runtime
	// tensor (local).
	OpGather Opcode = 28
)

var opcodeNames = map[Opcode]string{
	OpInput: "input", OpOutput: "output", OpMatMul: "matmul", OpConv: "conv", OpAddConst: "addconst",
	OpMulConst: "mulconst", OpAdd: "add", OpSub: "sub", OpScaleUp: "scaleup", OpTrunc: "trunc",
	OpReLU: "relu", OpMaxPool: "maxpool", OpSumPool: "sumpool", OpDiv: "div", OpArgMax: "argmax",
	OpReshape: "reshape", OpTranspose: "transpose", OpConcat: "concat", OpPad: "pad", OpMul: "mul",
	OpExp: "exp", OpSigmoid: "sigmoid", OpTanh: "tanh", OpRecip: "recip", OpRsqrt: "rsqrt",
	OpBatchMatMul: "bmatmul", OpLog: "log", OpGather: "gather",
}

// MathFunc returns the fxmath function of a math opcode (OpExp..OpRsqrt, OpLog), or false.
func (o Opcode) MathFunc() (fxmath.Func, bool) {
	switch o {
	case OpExp:
		return fxmath.Exp, true
	case OpSigmoid:
		return fxmath.Sigmoid, true
	case OpTanh:
		return fxmath.Tanh, true
	case OpRecip:
		return fxmath.Recip, true
	case OpRsqrt:
		return fxmath.Rsqrt, true
	case OpLog:
		return fxmath.Log, true
	}
	return 0, false
}

func (o Opcode) String() string {
	if s, ok := opcodeNames[o]; ok {
		return s
	}
	return fmt.Sprintf("opcode(%d)", uint8(o))
}

// Valid reports whether o is a known opcode.
func (o Opcode) Valid() bool { _, ok := opcodeNames[o]; return ok }

// UsesWeight reports whether instructions with this opcode read a weight tensor.
func (o Opcode) UsesWeight() bool {
	switch o {
	case OpMatMul, OpConv, OpAddConst, OpMulConst:
		return true
	}
	return false
}

// Engine is how a linear layer (OpMatMul, OpConv) runs between the two parties: by OT or by
// homomorphic encryption. The compiler records it per instruction when it plans a program for the
// "auto" backend; a backend that runs everything one way ignores it. The numeric values are part
// of the .sciir file format.
type Engine uint8

// The engines.
const (
	EngineDefault Engine = 0 // not chosen: the backend's own rule
	EngineOT      Engine = 1 // correlated OT (CrypTFlow2 SCI_OT)
	EngineHE      Engine = 2 // coefficient-encoded RLWE (Cheetah-style)
)

func (e Engine) String() string {
	switch e {
	case EngineDefault:
		return "default"
	case EngineOT:
		return "ot"
	case EngineHE:
		return "he"
	}
	return fmt.Sprintf("engine(%d)", uint8(e))
}

// Valid reports whether e is a known engine.
func (e Engine) Valid() bool { return e <= EngineHE }

// PadMode is the padding mode of OpPad.
type PadMode uint8

// The pad modes (file format values).
const (
	PadConstant PadMode = 0
	PadReflect  PadMode = 1
	PadEdge     PadMode = 2
	PadWrap     PadMode = 3
)

var padModeNames = []string{"constant", "reflect", "edge", "wrap"}

func (m PadMode) String() string {
	if int(m) < len(padModeNames) {
		return padModeNames[m]
	}
	return fmt.Sprintf("padmode(%d)", uint8(m))
}

// ParsePadMode maps an HLIL Pad mode attribute to a PadMode.
func ParsePadMode(s string) (PadMode, error) {
	for i, n := range padModeNames {
		if n == s {
			return PadMode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown pad mode %q", s)
}

// Instr is one fixed-point instruction. Which fields are meaningful depends on Op (see the
// opcode constants); the rest are zero (Weight is -1 when unused).
type Instr struct {
	Op     Opcode
	Out    int   // the tensor produced (-1 for OpOutput)
	In     []int // the tensors read
	Weight int   // index into Program.Weights, or -1

	Index    int       // OpInput/OpOutput: index into Inputs/Outputs
	Shift    int       // OpScaleUp, OpTrunc
	NonNeg   bool      // OpTrunc: the input is known to be non-negative
	Axis     int       // OpArgMax, OpConcat
	Group    int       // OpConv
	Win      ir.Window // OpConv, OpMaxPool, OpSumPool (CeilMode is already resolved into Out's shape)
	Perm     []int     // OpTranspose
	Select   [][]int   // OpGather: per axis the indices read (empty: the whole axis)
	Pads     []int     // OpPad: begins then ends, one pair per axis
	PadMode  PadMode   // OpPad
	PadValue int64     // OpPad with PadConstant: the signed encoded value
	Divisors []int     // OpDiv
	Source   string    // the HLIL node this instruction came from (for reports and errors)
	Engine   Engine    // OpMatMul, OpConv: how the layer runs (EngineDefault: the backend decides)
	Bits     int       // OpReLU: the operand's signed width when known to be below l (0: the whole ring)
	Block    int       // OpMatMul: the weight is block-circulant with Block×Block blocks (BlockCirculant; 0: no structure recorded)
	Spectral bool      // OpMatMul with Block: the fhe mode evaluates it in the frequency domain (FrequencyDomain)
}

// Clone returns a deep copy of the instruction.
func (in *Instr) Clone() *Instr {
	c := *in
	c.In = slices.Clone(in.In)
	c.Perm = slices.Clone(in.Perm)
	if in.Select != nil {
		c.Select = make([][]int, len(in.Select))
		for a, s := range in.Select {
			c.Select[a] = slices.Clone(s)
		}
	}
	c.Pads = slices.Clone(in.Pads)
	c.Divisors = slices.Clone(in.Divisors)
	c.Win = ir.Window{Kernel: slices.Clone(in.Win.Kernel), Strides: slices.Clone(in.Win.Strides),
		Pads: slices.Clone(in.Win.Pads), Dilations: slices.Clone(in.Win.Dilations), CeilMode: in.Win.CeilMode}
	return &c
}

// Tensor is a tensor of the fixed-point program: a runtime value (an input, an intermediate or
// an output) in the ring, with a public shape and scale.
type Tensor struct {
	Name  string // the HLIL value it comes from, or a derived name; for reports only
	Shape ir.Shape
	Scale int // fixed-point scale: the tensor holds encode(x, Scale)
	Slot  int // storage slot assigned by liveness; -1 when unassigned
}

// Weight is a constant of the program known only to party 0 (weights, biases, BatchNorm
// factors), as signed integers at Scale. Data is nil in a client copy.
type Weight struct {
	Name  string
	Shape ir.Shape
	Scale int
	Data  []int64
}

// IO is a program input or output.
type IO struct {
	Name   string // the model's input or output name
	Tensor int    // the tensor it defines or reveals
	Party  int    // the input's owner, or the party the output is revealed to
	// Bounded (inputs only) says that every element of the input is a signed value in [Lo, Hi]
	// (a quantized model's uint8 or int8 input: [0, 255] or [−128, 127]). The bounds of the
	// program's tensors (Bounds) start from it, and the VM refuses, at the input's owner, an
	// input outside it.
	Bounded bool
	Lo, Hi  int64
}

// Program is a fixed-point program over Z_{2^Bits}, or over Z_Modulus when Modulus is set (the
// fhe mode: the CRT product of the plaintext primes in FHE; Bits is then Modulus's bit length).
type Program struct {
	Bits    int        // ring bitwidth l (for Z_n: the bit length of n)
	Modulus uint64     // n for a program over Z_n (the fhe mode), 0 for Z_{2^Bits}
	FHE     *FHEParams // the fhe mode's encryption parameters (nil otherwise); see fhe.go
	Scale   int        // the program's scale s (weights and activations between layers)
	Tensors []Tensor
	Weights []Weight
	Instrs  []*Instr
	Inputs  []IO
	Outputs []IO
}

// HasWeights reports whether every weight carries its data (false for a client copy).
func (p *Program) HasWeights() bool {
	for i := range p.Weights {
		if p.Weights[i].Data == nil && p.Weights[i].Shape.Size() > 0 {
			return false
		}
	}
	return true
}

// Clone returns a deep copy of the program (weight data is shared: it is never modified).
func (p *Program) Clone() *Program {
	c := &Program{Bits: p.Bits, Modulus: p.Modulus, Scale: p.Scale, FHE: p.FHE.clone()}
	c.Tensors = make([]Tensor, len(p.Tensors))
	for i, t := range p.Tensors {
		t.Shape = t.Shape.Clone()
		c.Tensors[i] = t
	}
	c.Weights = make([]Weight, len(p.Weights))
	for i, w := range p.Weights {
		w.Shape = w.Shape.Clone()
		c.Weights[i] = w
	}
	c.Instrs = make([]*Instr, len(p.Instrs))
	for i, in := range p.Instrs {
		c.Instrs[i] = in.Clone()
	}
	c.Inputs = slices.Clone(p.Inputs)
	c.Outputs = slices.Clone(p.Outputs)
	return c
}

// StripWeights returns a copy of the program without weight data (the client's view).
func (p *Program) StripWeights() *Program {
	c := p.Clone()
	for i := range c.Weights {
		c.Weights[i].Data = nil
	}
	return c
}

// AddTensor appends a tensor (slot unassigned) and returns its id.
func (p *Program) AddTensor(name string, shape ir.Shape, scale int) int {
	p.Tensors = append(p.Tensors, Tensor{Name: name, Shape: shape.Clone(), Scale: scale, Slot: -1})
	return len(p.Tensors) - 1
}

// AddWeight appends a weight and returns its index.
func (p *Program) AddWeight(name string, shape ir.Shape, scale int, data []int64) int {
	p.Weights = append(p.Weights, Weight{Name: name, Shape: shape.Clone(), Scale: scale, Data: data})
	return len(p.Weights) - 1
}

// Uses returns, for every tensor, the indices of the instructions that read it, in order.
func (p *Program) Uses() [][]int {
	uses := make([][]int, len(p.Tensors))
	for i, in := range p.Instrs {
		for _, t := range in.In {
			if t >= 0 && t < len(uses) {
				uses[t] = append(uses[t], i)
			}
		}
	}
	return uses
}

// Defs returns, for every tensor, the index of the instruction that produces it (-1 if none).
func (p *Program) Defs() []int {
	defs := make([]int, len(p.Tensors))
	for i := range defs {
		defs[i] = -1
	}
	for i, in := range p.Instrs {
		if in.Op != OpOutput && in.Out >= 0 && in.Out < len(defs) {
			defs[in.Out] = i
		}
	}
	return defs
}

// Compact drops tensors and weights that no instruction references and renumbers the rest:
// tensors in the order instructions define them, weights in their original order. Passes call it
// after rewriting.
func (p *Program) Compact() {
	tmap := make([]int, len(p.Tensors))
	wmap := make([]int, len(p.Weights))
	for i := range tmap {
		tmap[i] = -1
	}
	for i := range wmap {
		wmap[i] = -1
	}
	var ts []Tensor
	for _, in := range p.Instrs {
		if in.Op != OpOutput && tmap[in.Out] < 0 {
			tmap[in.Out] = len(ts)
			ts = append(ts, p.Tensors[in.Out])
		}
		if in.Weight >= 0 {
			wmap[in.Weight] = 0
		}
	}
	var ws []Weight
	for i, w := range p.Weights {
		if wmap[i] == 0 {
			wmap[i] = len(ws)
			ws = append(ws, w)
		}
	}
	for _, in := range p.Instrs {
		if in.Op != OpOutput {
			in.Out = tmap[in.Out]
		}
		for j, t := range in.In {
			in.In[j] = tmap[t]
		}
		if in.Weight >= 0 {
			in.Weight = wmap[in.Weight]
		}
	}
	for i := range p.Inputs {
		p.Inputs[i].Tensor = tmap[p.Inputs[i].Tensor]
	}
	for i := range p.Outputs {
		p.Outputs[i].Tensor = tmap[p.Outputs[i].Tensor]
	}
	p.Tensors, p.Weights = ts, ws
}
