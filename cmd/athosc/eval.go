package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/input"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/interp"
	"github.com/cryptflow-go/cryptflow/sciir"
)

const evalUsage = `usage: athosc eval MODEL.onnx|MODEL.pb --input X.npy [--output Y.npy] [flags]

Runs the model with cryptflow-go's float32 reference interpreter (the "did we read the model
right" check) and prints each output's shape and, for a classifier's [N, classes] output, the top
classes. A model with several inputs takes --input NAME=FILE.npy once per input. --output writes
the first output, or with several outputs --output NAME=FILE.npy once per output. A quantized
(int8) model takes its float input and gives its dequantized float output, as scirun does.

` + modelHelp + `
Flags:
`

// multiFlag collects a repeated string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

func runEval(args []string) error {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	var inputs multiFlag
	fs.Var(&inputs, "input", "input `FILE.npy` (or NAME=FILE.npy; repeat for several inputs)")
	var outputs multiFlag
	fs.Var(&outputs, "output", "write the first output to `FILE.npy` as float32 (or NAME=FILE.npy; repeatable)")
	batch := fs.Int("batch", 1, "fix a symbolic batch dimension to `N`")
	top := fs.Int("top", 3, "print the top `K` classes of a classifier output")
	var mf modelFlags
	mf.register(fs)
	fs.Usage = func() { fmt.Fprint(fs.Output(), evalUsage); fs.PrintDefaults() }
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("eval takes one model file, got %d arguments", len(pos))
	}
	if len(inputs) == 0 {
		return cli.Usagef("eval needs --input FILE.npy")
	}
	if *batch < 1 {
		return cli.Usagef("--batch must be at least 1")
	}
	g, err := mf.load(pos[0], *batch)
	if err != nil {
		return err
	}
	feeds, err := readInputs(g, inputs)
	if err != nil {
		return err
	}
	// As scirun does: a declared float16 input is rounded to it, a quantized model's input is
	// quantized as its QuantizeLinear (the graph's input is the integer tensor), and its
	// dequantized output is given as the float DequantizeLinear makes.
	var rec sciir.Meta
	rec.Inputs, rec.Outputs = sciir.IOInfo(g)
	for name, t := range feeds {
		rec.PrepareInput(name, t.Data)
	}
	outs, err := interp.Run(g, feeds)
	if err != nil {
		return fmt.Errorf("eval %s: %w", pos[0], err)
	}
	for name, y := range outs {
		if dq := rec.Dequantization(name); dq != nil {
			for i, v := range y.Data {
				y.Data[i] = dq.Dequantize(int64(math.Round(float64(v))))
			}
		}
	}
	for _, spec := range outputs {
		name, file, named := strings.Cut(spec, "=")
		if !named {
			name, file = g.Outputs[0], spec
		}
		y, ok := outs[name]
		if !ok {
			return cli.Usagef("--output %s: the model has no output %q (outputs %q)", spec, name, g.Outputs)
		}
		if err := npy.WriteFileFloat32(file, y.Shape, y.Data); err != nil {
			return err
		}
	}
	for _, name := range g.Outputs {
		printOutput(os.Stdout, name, outs[name], *top)
	}
	return nil
}

// readInputs maps --input flags to the graph's inputs: a bare FILE feeds the only input;
// NAME=FILE names the input.
func readInputs(g *ir.Graph, specs []string) (map[string]*ir.Tensor, error) {
	feeds := map[string]*ir.Tensor{}
	for _, spec := range specs {
		name, file, named := strings.Cut(spec, "=")
		if !named {
			if len(g.Inputs) != 1 || len(specs) != 1 {
				names := make([]string, len(g.Inputs))
				for i, in := range g.Inputs {
					names[i] = in.Name
				}
				return nil, cli.Usagef("the model has inputs %q: give each as --input NAME=FILE.npy", names)
			}
			name, file = g.Inputs[0].Name, spec
		}
		var want ir.Shape
		for _, in := range g.Inputs {
			if in.Name == name {
				want = in.Shape
			}
		}
		if want == nil {
			return nil, cli.Usagef("the model has no input named %q", name)
		}
		t, err := readTensor(file, want)
		if err != nil {
			return nil, err
		}
		feeds[name] = t
	}
	return feeds, nil
}

// readTensor reads an input of shape want with the project's one input loader.
func readTensor(path string, want ir.Shape) (*ir.Tensor, error) {
	data, err := input.ReadNpy(path, want)
	if err != nil {
		return nil, err
	}
	return &ir.Tensor{Shape: want.Clone(), Data: data}, nil
}

func printOutput(w io.Writer, name string, t *ir.Tensor, top int) {
	fmt.Fprintf(w, "%s: f32%v\n", name, t.Shape)
	if len(t.Shape) != 2 || t.Shape[1] < 2 || top <= 0 {
		return
	}
	classes := t.Shape[1]
	for b := 0; b < t.Shape[0]; b++ {
		row := t.Data[b*classes : (b+1)*classes]
		idx := topK(row, top)
		parts := make([]string, len(idx))
		for i, c := range idx {
			parts[i] = fmt.Sprintf("%d (%.4g)", c, row[c])
		}
		fmt.Fprintf(w, "  [%d] top: %s\n", b, strings.Join(parts, ", "))
	}
}

// topK returns the indices of the k largest values, largest first; ties go to the lower index.
func topK(row []float32, k int) []int {
	k = min(k, len(row))
	idx := make([]int, 0, k)
	used := make([]bool, len(row))
	for len(idx) < k {
		best := -1
		for i, v := range row {
			if !used[i] && (best < 0 || v > row[best]) {
				best = i
			}
		}
		used[best] = true
		idx = append(idx, best)
	}
	return idx
}
