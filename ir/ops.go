package ir

// Op names an HLIL operator. The comment on each constant is its canonical schema: inputs, then
// attributes, all of which are always present after the front end (no defaults are left implicit).
// Spatial attributes have one entry per spatial dimension (k = rank-2 for NC... layouts); pads are
// [begin_0, ..., begin_{k-1}, end_0, ..., end_{k-1}] as in ONNX.
type Op string

const (
	// Conv: X[N,C,spatial...], W[M,C/group,kernel...], optional B[M].
	// Attrs: group int, kernel_shape ints, strides ints, pads ints (2k), dilations ints.
	// auto_pad is resolved into pads by the front end.
	Conv Op = "Conv"
	// Gemm: A, B (2-D), optional C (unidirectionally broadcast to [M,N]).
	// Attrs: alpha float, beta float, transA int, transB int.
	Gemm Op = "Gemm"
	// MatMul: A, B with numpy matmul semantics (1-D promotion, batch broadcasting).
	MatMul Op = "MatMul"
	// Add, Sub, Mul, Div: two inputs with multidirectional (numpy) broadcasting.
	Add Op = "Add"
	Sub Op = "Sub"
	Mul Op = "Mul"
	Div Op = "Div"
	// Sum: one or more inputs with multidirectional broadcasting.
	Sum Op = "Sum"
	// Relu: one input.
	Relu Op = "Relu"
	// LeakyRelu: one input. Attrs: alpha float.
	LeakyRelu Op = "LeakyRelu"
	// Clip: one input. Attrs: min float, max float (±Inf when unbounded).
	Clip Op = "Clip"
	// Sigmoid: one input. Lowered to the fixed-point sigmoid (docs/fixed-point.md, "Math functions").
	Sigmoid Op = "Sigmoid"
	// Tanh: one input. Lowered to the fixed-point tanh.
	Tanh Op = "Tanh"
	// Exp: one input. Lowered to the fixed-point exp, which is exp(min(x, 0)): the compiler accepts
	// it only where its input is known to be non-positive (see passes.Lower).
	Exp Op = "Exp"
	// MaxPool: X. Attrs: kernel_shape, strides, pads (2k), dilations ints; ceil_mode int.
	MaxPool Op = "MaxPool"
	// AveragePool: X. Attrs: kernel_shape, strides, pads (2k), dilations ints; ceil_mode int,
	// count_include_pad int.
	AveragePool Op = "AveragePool"
	// GlobalAveragePool, GlobalMaxPool: X[N,C,spatial...] -> [N,C,1,...,1].
	GlobalAveragePool Op = "GlobalAveragePool"
	GlobalMaxPool     Op = "GlobalMaxPool"
	// BatchNormalization (inference form): X, scale, B, mean, var (each [C]). Attrs: epsilon float.
	BatchNormalization Op = "BatchNormalization"
	// LRN: X. Attrs: size int, alpha float, beta float, bias float (float reference only).
	LRN Op = "LRN"
	// Flatten: X. Attrs: axis int (non-negative) -> [prod(dims[:axis]), prod(dims[axis:])].
	Flatten Op = "Flatten"
	// Reshape: X. Attrs: shape ints (the full static output shape, no 0 or -1).
	Reshape Op = "Reshape"
	// Transpose: X. Attrs: perm ints.
	Transpose Op = "Transpose"
	// Concat: one or more inputs. Attrs: axis int (non-negative).
	Concat Op = "Concat"
	// Pad: X. Attrs: mode string (constant|reflect|edge|wrap), pads ints (2*rank, may be negative),
	// value float.
	Pad Op = "Pad"
	// Squeeze: X. Attrs: axes ints (non-negative, sorted).
	Squeeze Op = "Squeeze"
	// Unsqueeze: X. Attrs: axes ints (non-negative in the output rank, sorted).
	Unsqueeze Op = "Unsqueeze"
	// Identity: X. Dropout in inference is imported as Identity.
	Identity Op = "Identity"
	// Softmax: X. Attrs: axis int (non-negative); softmax along that one axis (opset-13 meaning;
	// the front end lowers the older coerce-to-2-D form to Flatten/Softmax/Reshape).
	Softmax Op = "Softmax"
	// LogSoftmax: X. Attrs: axis int (non-negative); log(softmax) along that one axis, as Softmax.
	LogSoftmax Op = "LogSoftmax"
	// ArgMax: X -> Int64. Attrs: axis int (non-negative), keepdims int, select_last_index int.
	ArgMax Op = "ArgMax"
	// ReduceSum, ReduceMean, ReduceMax: X. Attrs: axes ints (non-negative, sorted, distinct, not
	// empty: the front end resolves ONNX's "empty means all axes" and turns a no-op reduction into
	// Identity), keepdims int. The reduced axes become 1 (keepdims = 1) or are removed.
	ReduceSum  Op = "ReduceSum"
	ReduceMean Op = "ReduceMean"
	ReduceMax  Op = "ReduceMax"
	// LayerNormalization: X, Scale, optional B (each of the normalised shape X.shape[axis:], or
	// broadcastable to it). Attrs: axis int (non-negative), epsilon float. y = (x − mean)/
	// sqrt(var + epsilon)·Scale + B over the axes axis..rank−1 (ONNX opset 17, inference outputs).
	LayerNormalization Op = "LayerNormalization"
	// Erf: one input, the error function (its fixed-point form is a tanh-based definition, see
	// docs/fixed-point.md, "Erf").
	Erf Op = "Erf"
	// Requant: X1[, X2] (equal shapes), integer-valued tensors; the exact requantisation of the
	// quantized (QLinear*) operators. Attrs: axis int (the axis the per-channel parameters run
	// along; any axis when C = 1), mult ints (C values per input, input-major), add ints (C),
	// shift int (0..62), min int, max int. y = clip(floor((Σ_i x_i·mult[i·C+c] + add[c]) / 2^shift),
	// min, max), c the index along axis; with one input, optional fix_at, fix_add ints (J·C each,
	// slot-major) add fix_add[j·C+c] before the clip where x = fix_at[j·C+c] (docs/fixed-point.md,
	// "Quantized operators").
	Requant Op = "Requant"
	// Slice: X, a runtime tensor (the front ends fold slices of constants). Attrs: starts, steps,
	// sizes ints, one each per axis of X (normalised: 0 ≤ starts[a] < X.shape[a] when sizes[a] > 0,
	// steps[a] ≠ 0, every element read in range). y[i] = x[starts + i·steps] per axis; y.shape = sizes.
	Slice Op = "Slice"
	// Gather: X, a runtime tensor, and constant indices (attributes). Attrs: axis int, indices ints
	// (non-negative, < X.shape[axis]), indices_shape ints. y = X's slices at indices along axis:
	// y.shape = X.shape[:axis] + indices_shape + X.shape[axis+1:] (ONNX Gather).
	Gather Op = "Gather"
)

// AllOps returns every HLIL operator, in the order used by error messages and reports.
func AllOps() []Op {
	return []Op{
		Conv, Gemm, MatMul, Add, Sub, Mul, Div, Sum, Relu, LeakyRelu, Clip, Sigmoid, Tanh, Exp,
		MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, BatchNormalization, LRN,
		Flatten, Reshape, Transpose, Concat, Pad, Squeeze, Unsqueeze, Identity, Softmax, LogSoftmax,
		ArgMax, ReduceSum, ReduceMean, ReduceMax, Erf, LayerNormalization, Requant, Slice, Gather,
	}
}
