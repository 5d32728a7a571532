// Command scibench runs the project's benchmarks and prints tables meant for
// docs/benchmarks-*.md.
//
// Usage:
//
//	scibench <subcommand> [flags]
//
// Each subcommand lives in its own file of this package and is listed in
// commands below; add a line there to add one.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"text/tabwriter"
)

// command is one scibench subcommand.
type command struct {
	name    string
	summary string
	// run parses args (without the subcommand name) and writes its report
	// to out. Returning errUsage prints the subcommand's flag help.
	run func(ctx context.Context, args []string, out io.Writer) error
}

// errUsage reports a command-line mistake already described on stderr.
var errUsage = errors.New("usage error")

func commands() []command {
	return []command{
		otCommand(),
		nonlinearCommand(),
		modelsCommand(),
		heCommand(),
		fheCommand(),
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	cmds := commands()
	if len(args) == 0 {
		usage(errOut, cmds)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(out, cmds)
		return 0
	}
	for _, c := range cmds {
		if c.name == args[0] {
			if err := c.run(ctx, args[1:], out); err != nil {
				if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
					return 2
				}
				fmt.Fprintf(errOut, "scibench %s: %v\n", c.name, err)
				return 1
			}
			return 0
		}
	}
	fmt.Fprintf(errOut, "scibench: unknown subcommand %q\n", args[0])
	usage(errOut, cmds)
	return 2
}

func usage(w io.Writer, cmds []command) {
	fmt.Fprintln(w, "usage: scibench <subcommand> [flags]")
	fmt.Fprintln(w, "subcommands:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range cmds {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprintln(w, "run 'scibench <subcommand> -h' for its flags")
}

// startCPUProfile starts a CPU profile into path ("" does nothing) and
// returns the function that stops it. Subcommands share it via a flag.
func startCPUProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}
