package main

import (
	"flag"

	"github.com/cryptflow-go/cryptflow/frontend"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/ir"
)

// modelHelp describes the model flags common to inspect, eval and compile.
const modelHelp = `Models: ONNX (.onnx) or TensorFlow frozen GraphDef (.pb); the format is read from the file's
bytes. --inputs NODE[:[SHAPE]] starts the graph at any tensor (a TF node "name" or "name:k", or an
ONNX tensor name), dropping what computes it; SHAPE is bracketed, -1 first dimension = --batch,
e.g. --inputs 'Mfcc:[1,49,10]' (quote the brackets in a shell). Repeat --inputs or separate
items by commas outside brackets: --inputs 'a:[1,3,32,32],b'. A tensor that is not a declared
input needs a shape unless the model records one. --outputs NODE[,NODE...] keeps only those
outputs (e.g. the logits of a graph that ends in ArgMax).
`

// modelFlags are the model-loading flags: the cut (inputs, outputs). The batch flag is each
// command's own.
type modelFlags struct {
	inputs, outputs multiFlag
}

func (m *modelFlags) register(fs *flag.FlagSet) {
	fs.Var(&m.inputs, "inputs", "start the graph at tensor `NODE[:[SHAPE]]` (repeatable or comma list; see above)")
	fs.Var(&m.outputs, "outputs", "keep only the outputs `NODE[,NODE...]` (repeatable)")
}

// options converts the flags to frontend.Options.
func (m *modelFlags) options(batch int) (frontend.Options, error) {
	opts := frontend.Options{Batch: batch}
	for _, s := range m.inputs {
		ins, err := frontend.ParseInputs(s)
		if err != nil {
			return opts, cli.Usagef("--inputs: %v", err)
		}
		opts.Inputs = append(opts.Inputs, ins...)
	}
	for _, s := range m.outputs {
		outs, err := frontend.ParseOutputs(s)
		if err != nil {
			return opts, cli.Usagef("--outputs: %v", err)
		}
		opts.Outputs = append(opts.Outputs, outs...)
	}
	return opts, nil
}

// load reads a model of either format with the flags' cut.
func (m *modelFlags) load(path string, batch int) (*ir.Graph, error) {
	opts, err := m.options(batch)
	if err != nil {
		return nil, err
	}
	return frontend.Load(path, opts)
}
