package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// runDisasm implements `athosc disasm FILE.sciir`: it prints a program file readably (sections,
// header, metadata, and the instruction stream).
func runDisasm(args []string) error {
	fs := flag.NewFlagSet("athosc disasm", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: athosc disasm FILE.sciir\n\nPrints a .sciir program file readably.\n")
		fs.PrintDefaults()
	}
	pos, err := cli.Parse(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return cli.Usagef("disasm takes one program file, got %d arguments", len(pos))
	}
	b, err := os.ReadFile(pos[0])
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	if err := sciir.Disasm(w, b); err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	return w.Flush()
}
