package cryptflow

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/cryptflow-go/cryptflow/compile"
	"github.com/cryptflow-go/cryptflow/frontend"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/passes"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// Sample is one validation input: the model input's values in row-major order, and its class
// label (-1 when unknown).
type Sample struct {
	Input []float32
	Label int
}

// CompileOptions control Compile. The zero value autotunes on the validation data given and plans
// backend auto for a LAN.
type CompileOptions struct {
	// ValidationDir is a validation folder as athosc --validate reads it: NNNNN.npy inputs with an
	// optional labels.txt, or one subfolder per class of PNG/JPEG images (preprocessed with
	// athosc's defaults: resized to the input's size, pixels scaled by 1/255, NCHW).
	ValidationDir string
	// Samples are validation inputs given directly (added after those of ValidationDir).
	// Without any validation input nothing is autotuned: the ring is Z_2^64 at scale 12 unless
	// Bits and Scale pin them.
	Samples []Sample
	// Bits pins the ring bitwidth l (passes.MinBits..passes.MaxBits); 0 lets autotune choose.
	Bits int
	// Scale pins the fixed-point scale s when positive; 0 lets autotune choose.
	Scale int
	// Backend is the two-party backend recorded in the program: "auto" (the default: OT or HE
	// per linear layer, planned for Net), "sciot" or "scihe".
	Backend string
	// Net is the link backend auto plans for: "lan" (the default), "wan" or "BANDWIDTH[,RTT]".
	Net string
	// Name is the program's own name (default: the model file's base name without extension).
	Name string
	// Workers run the validation inputs in parallel (default: every core).
	Workers int
	// Classes name the output's classes, name k for class k; they are recorded in the program
	// (sciir.Meta.Classes, as athosc --classes records them), so that every Result carries its
	// ClassName and scirun prints them. Their number must match the output's class count.
	// Without them, a validation folder's classes.txt or class subfolders name the classes, as
	// with athosc.
	Classes []string
}

// Compile compiles the ONNX or TensorFlow (frozen GraphDef) classifier at modelPath into a
// program, as athosc does: clean-up, autotuning of l and s on the validation inputs (see
// passes.SelectionRule), lowering, peepholes and, for backend auto, the per-layer engine plan.
// It runs the same code as athosc (package compile), so the program is the one athosc
// would write for the same model, data and options.
// The program returned is the server's copy, with the weights.
func Compile(modelPath string, opts CompileOptions) (*Program, error) {
	m, err := compile.Load(modelPath, frontend.Options{})
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", modelPath, err)
	}
	backend := opts.Backend
	if backend == "" {
		backend = "auto"
	}
	switch backend {
	case "auto", "sciot", "scihe":
	default:
		return nil, fmt.Errorf("compile: backend %q: unknown; two-party backends: auto, sciot, scihe", backend)
	}
	nm, err := passes.NetModelNamed(opts.Net)
	if err != nil {
		return nil, fmt.Errorf("compile: net: %w", err)
	}
	co := compile.Options{Passes: passes.DefaultOptions(), Backend: backend, Compiler: "cryptflow-go API", Name: opts.Name,
		Validate: opts.ValidationDir, Classes: opts.Classes, ClassesFrom: "CompileOptions.Classes"}
	co.Passes.Bits, co.Passes.Net = opts.Bits, nm.Spec()
	if opts.Scale > 0 {
		co.Passes.Scale = opts.Scale
	}
	co.Passes.Workers = opts.Workers
	if co.Passes.Workers < 1 {
		co.Passes.Workers = runtime.NumCPU()
	}
	for i, s := range opts.Samples {
		co.Samples = append(co.Samples, dataset.Sample{Name: fmt.Sprintf("sample %d", i), Input: s.Input, Label: s.Label})
	}
	res, err := compile.Program(m, co)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", modelPath, err)
	}
	// Marshalling sets the program ID; the parsed copy is what a reader of the file would get.
	full, err := sciir.Marshal(res.File, true)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	return ParseProgram(full)
}

// CompileBytes compiles a model held in memory (see Compile). A model whose tensors live in
// external data files needs Compile with its path instead.
func CompileBytes(model []byte, opts CompileOptions) (*Program, error) {
	dir, err := os.MkdirTemp("", "cryptflow-model-")
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	defer os.RemoveAll(dir)
	name := "model.onnx"
	if frontend.DetectBytes(model) == frontend.TF {
		name = "model.pb"
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, model, 0o600); err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	if opts.Name == "" {
		opts.Name = "model"
	}
	return Compile(path, opts)
}
