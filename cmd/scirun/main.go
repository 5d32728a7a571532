// Command scirun runs a .sciir fixed-point program.
//
// This version runs programs in the clear (the cleartext fixed-point backend, one process):
//
//	scirun --clear model.sciir --input x.npy [--output y.npy] [--raw]
//
// The input is a .npy array of the model input's shape (or, for programs compiled with an image
// validation folder, a PNG/JPEG image preprocessed as the program records). The output is written
// as decoded float32 values, or with --raw as the signed ring values (int64) for bitwise
// comparisons. The top class is printed. Two-party execution (--party 0|1) comes with the secure
// backends.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cryptflow-go/cryptflow/codegen"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/npy"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/protocols/ring"
	"github.com/cryptflow-go/cryptflow/vm"
)

const usage = `usage: scirun --clear PROGRAM.sciir --input X.npy [--output Y.npy] [--raw]

Runs a fixed-point program. --clear runs it in the clear in this process (the reference for the
secure backends). The input is a .npy array of the model input's shape, or a PNG/JPEG image when
the program records image preprocessing. The output is decoded to float32, or with --raw written
as the signed ring values (int64).

Flags:
`

func main() {
	cli.Exit("scirun", run(os.Args[1:], os.Stdout))
}

// config is the parsed command line.
type config struct {
	program, input, output string
	clear, raw             bool
	party                  int
}

func parse(args []string) (*config, error) {
	fs := flag.NewFlagSet("scirun", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	c := &config{}
	fs.BoolVar(&c.clear, "clear", false, "run in the clear with the cleartext fixed-point backend")
	fs.IntVar(&c.party, "party", -1, "run as party `P` (0 server, 1 client) of a secure two-party run")
	fs.StringVar(&c.input, "input", "", "input `FILE` (.npy, or .png/.jpg for image programs)")
	fs.StringVar(&c.output, "output", "", "write the output to `FILE` (.npy)")
	fs.BoolVar(&c.raw, "raw", false, "write the output as signed ring values (int64) instead of decoded floats")
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) != 1 {
		return nil, cli.Usagef("want one program file, got %d arguments", len(pos))
	}
	c.program = pos[0]
	return c, nil
}

func run(args []string, stdout io.Writer) error {
	c, err := parse(args)
	if err != nil {
		return err
	}
	switch {
	case c.party >= 0 && c.clear:
		return cli.Usagef("--clear and --party exclude each other")
	case c.party >= 0:
		if c.party > 1 {
			return cli.Usagef("--party %d (want 0 or 1)", c.party)
		}
		return fmt.Errorf("party mode is not implemented yet: the secure backends come in a later version; use --clear")
	case !c.clear:
		return cli.Usagef("choose a mode: --clear (party mode is not implemented yet)")
	}
	return runClear(c, stdout)
}

func runClear(c *config, stdout io.Writer) error {
	if c.input == "" {
		return cli.Usagef("--input is required")
	}
	f, err := codegen.ReadFile(c.program)
	if err != nil {
		return err
	}
	p := f.Program
	if len(p.Inputs) != 1 {
		return fmt.Errorf("%s has %d inputs; scirun takes one --input", c.program, len(p.Inputs))
	}
	r, err := ring.New(p.Bits)
	if err != nil {
		return err
	}
	be, err := vm.NewClear(r)
	if err != nil {
		return err
	}
	m, err := vm.New(p, be)
	if err != nil {
		return fmt.Errorf("%s: %w", c.program, err)
	}
	in := p.Tensors[p.Inputs[0].Tensor]
	x, err := readInput(c.input, in.Shape, f.Meta.Preprocess)
	if err != nil {
		return err
	}
	enc, err := r.EncodeTensor(in.Shape, x, in.Scale)
	if err != nil {
		return fmt.Errorf("input %s: %w", c.input, err)
	}
	outs, err := m.Run(context.Background(), []ring.Tensor{enc})
	if err != nil {
		return err
	}
	for _, o := range outs {
		vals := r.DecodeTensor(o.Value, o.Scale)
		top := vm.ArgMaxSigned(r, o.Value.Data)
		fmt.Fprintf(stdout, "%s %v (Z_2^%d, scale %d): top class %d (%.4g)\n", o.Name, o.Value.Shape, p.Bits, o.Scale, top, vals[top])
	}
	if c.output == "" {
		return nil
	}
	if len(outs) != 1 {
		return fmt.Errorf("--output: the program has %d outputs", len(outs))
	}
	o := outs[0]
	if c.raw {
		signed := make([]int64, len(o.Value.Data))
		for i, v := range o.Value.Data {
			signed[i] = r.Signed(v)
		}
		err = npy.WriteFileInt64(c.output, o.Value.Shape, signed)
	} else {
		err = npy.WriteFileFloat32(c.output, o.Value.Shape, r.DecodeTensor(o.Value, o.Scale))
	}
	if err != nil {
		return fmt.Errorf("write output: %w", err)
	}
	return nil
}

// readInput reads a .npy input of the given shape (a missing leading batch dimension of 1 is
// accepted) or an image preprocessed as the program records.
func readInput(path string, shape ir.Shape, prep *codegen.Preprocess) ([]float32, error) {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".png", ".jpg", ".jpeg":
		if prep == nil {
			return nil, fmt.Errorf("input %s is an image, but the program records no image preprocessing; give a .npy input", path)
		}
		if !ir.Shape(prep.Shape()).Equal(shape) {
			return nil, fmt.Errorf("the program's preprocessing makes %v inputs, its input is %v", prep.Shape(), shape)
		}
		return prep.LoadFile(path)
	}
	a, err := npy.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	s := ir.Shape(a.Shape)
	if !s.Equal(shape) && !(len(shape) > 0 && shape[0] == 1 && s.Equal(shape[1:])) {
		return nil, fmt.Errorf("input %s has shape %v, the program wants %v", path, s, shape)
	}
	return a.Float32()
}
