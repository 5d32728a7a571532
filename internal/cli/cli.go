// Package cli holds the small pieces shared by the project's command-line tools: flag parsing that
// accepts flags before and after positional arguments, and consistent error reporting.
package cli

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/atomicfile"
	"github.com/cryptflow-go/cryptflow/sciir"
)

// ErrUsage marks an error caused by how the command was invoked; main prints the usage hint and
// exits with status 2.
var ErrUsage = errors.New("usage")

// Usagef returns a usage error with a message.
func Usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// Parse parses args into fs, allowing flags to appear after positional arguments
// (`athosc model.onnx -o out.sciir`). A lone "--" ends flag parsing. It returns the positional
// arguments. -h/--help prints fs's usage and returns flag.ErrHelp.
func Parse(fs *flag.FlagSet, args []string) ([]string, error) {
	pos, err := ParseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.SetOutput(os.Stdout)
		fs.Usage()
		return nil, err
	case err != nil:
		return nil, Usagef("%v", err)
	}
	return pos, nil
}

// ParseInterspersed is Parse without its reporting: it parses args into fs (output discarded),
// flags before and after positional arguments, "--" ending the flags, and returns the positional
// arguments or the flag package's error as it is (flag.ErrHelp for -h/--help), for commands that
// print their own help and usage errors.
func ParseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	fs.SetOutput(io.Discard)
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if rest[0] == "--" {
			return append(pos, rest[1:]...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// SubcommandError is a usage error of a subcommand (such as "scirun plot"): Exit points at the
// subcommand's own --help.
type SubcommandError struct {
	Command string // e.g. "scirun plot"
	Err     error  // the usage error
}

func (e *SubcommandError) Error() string { return e.Err.Error() }

// Unwrap returns the usage error.
func (e *SubcommandError) Unwrap() error { return e.Err }

// ForCommand marks err, when it is a usage error, as one of the subcommand command, so that the
// hint names 'command --help'; other errors (and nil) pass unchanged.
func ForCommand(command string, err error) error {
	if err == nil || !errors.Is(err, ErrUsage) {
		return err
	}
	return &SubcommandError{Command: command, Err: err}
}

// Exit reports err for the named program and exits: 0 for nil and for --help, 2 for usage errors,
// 1 otherwise. Errors are printed on one line, never as a stack trace.
func Exit(prog string, err error) {
	os.Exit(Report(os.Stderr, prog, err))
}

// Report prints err for the named program on w as Exit does and returns the exit status.
func Report(w io.Writer, prog string, err error) int {
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, ErrUsage):
		msg := strings.TrimPrefix(err.Error(), ErrUsage.Error()+": ")
		help := prog
		var sub *SubcommandError
		if errors.As(err, &sub) {
			help = sub.Command
		}
		fmt.Fprintf(w, "%s: %s\nRun '%s --help' for usage.\n", prog, msg, help)
		return 2
	default:
		fmt.Fprintf(w, "%s: %v\n", prog, err)
		return 1
	}
}

// Command is one subcommand of a multi-command tool.
type Command struct {
	Name    string
	Summary string
	Run     func(args []string) error
}

// Dispatch runs the subcommand named by args[0]. When args[0] is not a known command and
// fallback is non-nil, fallback runs with all of args (e.g. `athosc model.onnx ...` compiles).
func Dispatch(prog, intro string, cmds []Command, fallback func([]string) error, args []string) error {
	usage := func(w io.Writer) {
		fmt.Fprintf(w, "%s\n\nCommands:\n", intro)
		for _, c := range cmds {
			fmt.Fprintf(w, "  %-10s %s\n", c.Name, c.Summary)
		}
		fmt.Fprintf(w, "\nRun '%s COMMAND --help' for the flags of a command.\n", prog)
	}
	if len(args) == 0 {
		usage(os.Stderr)
		return Usagef("no command given")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		usage(os.Stdout)
		return flag.ErrHelp
	}
	for _, c := range cmds {
		if c.Name == args[0] {
			return c.Run(args[1:])
		}
	}
	if fallback != nil && !strings.HasPrefix(args[0], "-") {
		return fallback(args)
	}
	return Usagef("unknown command %q", args[0])
}

// WriteProgram writes f to path (the full copy with weights, or the client copy) through a
// temporary file in the same folder that is renamed into place: a write that fails part-way
// leaves any previous program at path untouched. A copy with weights is refused under a client
// copy's name (sciir.CheckCopyName).
func WriteProgram(path string, f *sciir.File, withWeights bool) error {
	if err := sciir.CheckCopyName(path, f, withWeights); err != nil {
		return err
	}
	err := atomicfile.Write(path, 0o644, func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		if err := sciir.Write(bw, f, withWeights); err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return fmt.Errorf("write program: %w", err)
	}
	return nil
}
