// Command athosc is cryptflow-go's compiler: it reads an ONNX or TensorFlow (frozen GraphDef)
// classifier, the format detected from the file's bytes, converts it to
// fixed-point arithmetic with a bitwidth and scale autotuned on the user's validation data, and
// writes a secure-inference program (.sciir) for scirun.
//
//	athosc MODEL.onnx --validate DIR -o MODEL.sciir   compile (also writes MODEL.client.sciir; .pb alike)
//	athosc compile --list-passes                      print the compiler's pass table and its ordering rules
//	athosc inspect MODEL.onnx                         print the HLIL and a cost summary
//	athosc eval MODEL.onnx --input X.npy              run the float reference interpreter
//
// inspect, eval and compile take --inputs NODE[:[SHAPE]] and --outputs NODE to cut the graph.
//
//	athosc disasm FILE.sciir                          print a program file readably
package main

import (
	"os"

	"github.com/cryptflow-go/cryptflow/internal/cli"
)

const intro = `athosc compiles ONNX and TensorFlow (frozen GraphDef) classifiers into secure two-party inference programs.

Usage:
  athosc MODEL.onnx|MODEL.pb --validate DIR -o MODEL.sciir   (same as 'athosc compile ...')
  athosc COMMAND [flags]`

func main() {
	cmds := []cli.Command{
		{Name: "compile", Summary: "compile and autotune a model into a .sciir program", Run: runCompile},
		{Name: "inspect", Summary: "print a model's HLIL and a summary (ops, parameters, MACs, ReLUs)", Run: runInspect},
		{Name: "eval", Summary: "run a model with the float reference interpreter on .npy inputs", Run: runEval},
		{Name: "disasm", Summary: "print a .sciir program file in readable form", Run: runDisasm},
	}
	cli.Exit("athosc", cli.Dispatch("athosc", intro, cmds, runCompile, os.Args[1:]))
}
