// Command mkdata exports data sets as folders of .npy inputs, the validation-set layout that
// athosc --validate and scirun --input read, and edits .npy arrays.
//
// Usage:
//
//	mkdata mnist         [--from-dir DIR | --images FILE --labels FILE] [--set t10k|train] --scale 1|255 --out DIR
//	mkdata fashion-mnist [--from-dir DIR | --images FILE --labels FILE] [--set t10k|train] --scale 1|255 --out DIR
//	mkdata cifar10       --batch FILE[,FILE...] --out DIR [--from N --count N --scale 1|255 --layout NCHW|NHWC]
//	mkdata images        --in DIR --out DIR --size WxH [--resize-shorter N --center-crop WxH --mean ... --std ...]
//	mkdata npy stack     -o OUT.npy FILE.npy... | DIR
//	mkdata npy reshape   -o OUT.npy --shape D,D,... FILE.npy
//	mkdata npy slice     -o OUT.npy --from N --count N FILE.npy
//	mkdata npy info      FILE.npy...
//
// Every data set export writes sample i as DIR/NNNNN.npy (NNNNN = i zero-padded to five digits,
// one float32 array of shape [1,C,H,W] or [1,H,W,C]), DIR/labels.txt with one "NNNNN.npy label"
// line per sample, and DIR/classes.txt with the class names in index order (line k names class k).
// Run "mkdata COMMAND --help" for each command's details.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/npy"
)

const usage = `mkdata exports data sets as folders of .npy files, the layout that athosc --validate and
scirun --input read, and edits .npy arrays.

Usage:
  mkdata mnist [flags]          MNIST digits (idx files; offline from a local copy)
  mkdata fashion-mnist [flags]  Fashion-MNIST (same idx format and flags as mnist)
  mkdata cifar10 [flags]        CIFAR-10 binary batches (data_batch_N.bin, test_batch.bin)
  mkdata images [flags]         a folder of PNG/JPEG images, one subfolder per class
  mkdata npy stack|reshape|slice|info  join, reshape, cut or inspect .npy arrays (dtype kept)

A data set export writes into --out DIR:
  NNNNN.npy    one float32 input per sample, NNNNN its index in the source, zero-padded
               to five digits; shape [1,C,H,W] (NCHW) or [1,H,W,C] (NHWC)
  labels.txt   "NNNNN.npy LABEL" per line, LABEL the class index
  classes.txt  the class names in index order: line k (from 0) names class k

Run "mkdata COMMAND --help" for a command's flags and details.
`

type command struct {
	name string
	run  func(args []string, stdout io.Writer) error
}

var commands = []command{
	{"mnist", func(args []string, stdout io.Writer) error { return runIdx(mnistSet, args, stdout) }},
	{"fashion-mnist", func(args []string, stdout io.Writer) error { return runIdx(fashionSet, args, stdout) }},
	{"cifar10", runCIFAR10},
	{"images", runImages},
	{"npy", runNpy},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line and returns the process exit code: 0 on success and for --help,
// 2 for a usage error, 1 for any other error.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], stdout)
		var ue *usageError
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &ue):
			fmt.Fprintf(stderr, "mkdata %s: %v\n(run \"mkdata %s --help\" for the flags)\n", ue.cmd, ue.msg, ue.cmd)
			return 2
		default:
			fmt.Fprintf(stderr, "mkdata %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "mkdata: unknown command %q\n\n%s", args[0], usage)
	return 2
}

// usageError is a mistake in how a command was invoked (exit status 2).
type usageError struct {
	cmd, msg string
}

func (e *usageError) Error() string { return e.msg }

func usagef(cmd, format string, args ...any) error {
	return &usageError{cmd: cmd, msg: fmt.Sprintf(format, args...)}
}

// parseFlags parses args into fs, allowing flags after positional arguments ("a.npy -o b.npy"); a
// lone "--" ends the flags. --help prints help (the text, then fs's flags) to stdout and returns
// flag.ErrHelp. It returns the positional arguments.
func parseFlags(fs *flag.FlagSet, help string, args []string, stdout io.Writer) ([]string, error) {
	pos, err := cli.ParseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, help)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return nil, err
	case err != nil:
		return nil, usagef(fs.Name(), "%v", err)
	}
	return pos, nil
}

// setWriter writes a data set folder: NNNNN.npy per sample, then labels.txt and classes.txt.
type setWriter struct {
	dir    string
	labels strings.Builder
	n      int
}

// newSetWriter creates dir (and its parents) if missing.
func newSetWriter(dir string) (*setWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the output folder: %w", err)
	}
	return &setWriter{dir: dir}, nil
}

// add writes sample index as NNNNN.npy with its label.
func (w *setWriter) add(index int, shape []int, x []float32, label int) error {
	name := fmt.Sprintf("%05d.npy", index)
	if err := npy.WriteFileFloat32(filepath.Join(w.dir, name), shape, x); err != nil {
		return err
	}
	fmt.Fprintf(&w.labels, "%s %d\n", name, label)
	w.n++
	return nil
}

// finish writes labels.txt and classes.txt (one class name per line, in index order).
func (w *setWriter) finish(classes []string) error {
	if err := writeFile(filepath.Join(w.dir, "labels.txt"), w.labels.String()); err != nil {
		return err
	}
	return writeFile(filepath.Join(w.dir, "classes.txt"), strings.Join(classes, "\n")+"\n")
}

func writeFile(path, s string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	_, err = w.WriteString(s)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// checkRange checks --from and --count against a source of total samples and returns the count
// (-1 means "all from --from on").
func checkRange(cmd string, from, count, total int, source string) (int, error) {
	switch {
	case from < 0:
		return 0, usagef(cmd, "--from must be >= 0, not %d", from)
	case count < -1:
		return 0, usagef(cmd, "--count must be >= 0, not %d", count)
	}
	n := count
	if n == -1 {
		n = total - from
	}
	if from > total || n > total-from {
		return 0, fmt.Errorf("--from %d --count %d is outside the %d samples of %s", from, n, total, source)
	}
	return n, nil
}

// imageShape is the shape of one image input [1,C,H,W] or [1,H,W,C].
func imageShape(layout string, c, h, w int) []int {
	if layout == "NHWC" {
		return []int{1, h, w, c}
	}
	return []int{1, c, h, w}
}

func checkLayout(cmd, layout string) error {
	if layout != "NCHW" && layout != "NHWC" {
		return usagef(cmd, "--layout must be NCHW or NHWC, not %q", layout)
	}
	return nil
}
