package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/irtext"
)

const inspectUsage = `usage: athosc inspect MODEL.onnx|MODEL.pb [flags]

Imports an ONNX or TensorFlow model into HLIL (cryptflow-go's float graph IR), checks every node's
shapes, and prints the HLIL text followed by a summary: operator counts, parameters,
multiply-accumulates, ReLU elements (the main cost of secure inference) and tensor sizes.

` + modelHelp + `
Flags:
`

func runInspect(args []string) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	batch := fs.Int("batch", 1, "fix a symbolic batch dimension to `N`")
	data := fs.Bool("data", false, "print constant data in full (the text then parses back with irtext.Parse)")
	summaryOnly := fs.Bool("summary", false, "print only the summary, not the HLIL text")
	var mf modelFlags
	mf.register(fs)
	fs.Usage = func() { fmt.Fprint(fs.Output(), inspectUsage); fs.PrintDefaults() }
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("inspect takes one model file, got %d arguments", len(pos))
	}
	if *batch < 1 {
		return cli.Usagef("--batch must be at least 1")
	}
	g, err := mf.load(pos[0], *batch)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	return inspect(w, g, *data, *summaryOnly)
}

func inspect(w io.Writer, g *ir.Graph, data, summaryOnly bool) error {
	if !summaryOnly {
		if err := irtext.Write(w, g, irtext.Options{ElideData: !data}); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	s, err := ir.Summarize(g)
	if err != nil {
		return err
	}
	return s.Write(w)
}
