package cryptflow

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/cryptflow-go/cryptflow/frontend"
	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/internal/input"
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
	Classes []string
}

// Compile compiles the ONNX or TensorFlow (frozen GraphDef) classifier at modelPath into a
// program, as athosc does: clean-up, autotuning of l and s on the validation inputs (see
// passes.SelectionRule), lowering, peepholes and, for backend auto, the per-layer engine plan.
// The program returned is the server's copy, with the weights.
func Compile(modelPath string, opts CompileOptions) (*Program, error) {
	g, err := frontend.Load(modelPath, frontend.Options{})
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", modelPath, err)
	}
	b, err := os.ReadFile(modelPath)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	sum := sha256.Sum256(b)
	meta := sciir.Meta{Compiler: "cryptflow-go API", Source: filepath.Base(modelPath), SourceSHA256: hex.EncodeToString(sum[:]),
		Name: opts.Name}
	if meta.Name == "" {
		meta.Name = strings.TrimSuffix(filepath.Base(modelPath), filepath.Ext(modelPath))
	}
	meta.Inputs, meta.Outputs = sciir.IOInfo(g)
	if len(opts.Classes) > 0 {
		for i, c := range opts.Classes {
			if strings.TrimSpace(c) == "" || strings.ContainsAny(c, "\r\n") {
				return nil, fmt.Errorf("compile: class %d: %q: want a non-empty name on one line", i, c)
			}
		}
		if len(g.Outputs) > 0 {
			if v := g.Values[g.Outputs[0]]; v != nil {
				if n := lastNonUnit(v.Shape); n > 1 && n != len(opts.Classes) {
					return nil, fmt.Errorf("compile: %d class names, but the model's output %s has %d classes: give one name per output class, in index order",
						len(opts.Classes), g.Outputs[0], n)
				}
			}
		}
		meta.Classes = append([]string(nil), opts.Classes...)
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
	po := passes.DefaultOptions()
	po.Bits, po.Backend, po.Net = opts.Bits, backend, nm.Spec()
	if opts.Scale > 0 {
		po.Scale = opts.Scale
	}
	if backend == "auto" {
		meta.Net = nm.Spec()
	}
	po.Workers = opts.Workers
	if po.Workers < 1 {
		po.Workers = runtime.NumCPU()
	}
	var samples []dataset.Sample
	if opts.ValidationDir != "" {
		if len(g.Inputs) != 1 {
			return nil, fmt.Errorf("compile: validation needs a model with one input; %s has %d", modelPath, len(g.Inputs))
		}
		var prep *sciir.Preprocess
		if len(g.Inputs[0].Shape) == 4 {
			if prep, err = input.DefaultPreprocess(g.Inputs[0].Shape, "NCHW"); err != nil {
				return nil, fmt.Errorf("compile: %w", err)
			}
		}
		ds, err := dataset.Load(opts.ValidationDir, g.Inputs[0], prep)
		if err != nil {
			return nil, fmt.Errorf("compile: validation: %w", err)
		}
		samples = ds.Samples
		meta.Preprocess = ds.Preprocess
	}
	if len(opts.Samples) > 0 && len(g.Inputs) != 1 {
		return nil, fmt.Errorf("compile: validation needs a model with one input; %s has %d", modelPath, len(g.Inputs))
	}
	for i, s := range opts.Samples {
		samples = append(samples, dataset.Sample{Name: fmt.Sprintf("sample %d", i), Input: s.Input, Label: s.Label})
	}
	if len(samples) > 0 {
		lo, hi := float32(math.Inf(1)), float32(math.Inf(-1))
		for _, s := range samples {
			for _, v := range s.Input {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		if lo > hi {
			return nil, fmt.Errorf("compile: the validation samples are empty")
		}
		meta.InputRange = &sciir.Range{Min: float64(lo), Max: float64(hi)}
		po.Samples = samples
	}
	prog, rep, err := passes.Compile(g, po)
	if err != nil {
		return nil, fmt.Errorf("compile %s: %w", modelPath, err)
	}
	meta.Passes = rep.Lines()
	f := &sciir.File{Program: prog, Backend: backend, Meta: meta}
	// Marshalling sets the program ID; the parsed copy is what a reader of the file would get.
	full, err := sciir.Marshal(f, true)
	if err != nil {
		return nil, fmt.Errorf("compile: %w", err)
	}
	return ParseProgram(full)
}

// lastNonUnit returns the class count of an output of shape: its last dimension other than 1.
func lastNonUnit(shape []int) int {
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 {
			return shape[i]
		}
	}
	return 1
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
