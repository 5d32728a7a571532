// Command scirun runs a .sciir fixed-point program: in the clear, or as one of the two parties of
// a secure inference (CrypTFlow2's SCI_OT protocols), or as both parties in one process.
//
//	scirun --clear model.sciir --input x.npy [--output y.npy] [--raw]
//	scirun --party 0 model.sciir [--listen :7070] [--serve] [--tls-cert c.pem --tls-key k.pem]
//	scirun --party 1 model.client.sciir --connect host:7070 --input x.npy [--tls-ca c.pem]
//	scirun --local model.sciir --input x.npy
//	scirun --party 1 model.client.sciir --connect host:7070 --input inputs/ --output outputs/
//
// The client prints the top classes with their decoded scores; --output writes the decoded float32
// outputs, or with --raw the signed ring values (int64) for bitwise comparisons. Inputs are .npy
// arrays of the model input's shape or, for programs compiled with an image validation folder,
// PNG/JPEG images preprocessed as the program records. A folder of inputs (or a .npy holding a
// batch of them) runs every input in one session, with the set-up paid once. See docs/usage.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/sciir"
)

const usage = `usage:
  scirun --clear   PROGRAM.sciir --input X [--output Y.npy] [--raw]
  scirun --party 0 PROGRAM.sciir [--listen ADDR] [--serve] [--tls-cert F --tls-key F]
  scirun --party 1 PROGRAM.client.sciir --connect HOST:PORT --input X [--output Y.npy] [--tls-ca F]
  scirun --local   PROGRAM.sciir --input X [--output Y.npy]
  scirun ... --input DIR/ [--output OUT/]   (a batch: every input in DIR, one session)
  scirun plot REPORT.json [B.json] -o FILE.png    (per-layer time, traffic and rounds of a --report; two: compared)

--clear runs the program in the clear (the bitwise reference for the secure runs). --party 0 is
the server: it holds the weights (the full program file), listens, and learns nothing about the
input. --party 1 is the client: it holds the input and the client copy of the program (no
weights), connects, and learns the output. --local runs both parties in this process over
loopback TCP. A secure session runs over --streams N connections, one OT stream and one core
each; both parties must pass the same N. The input X is
a .npy array of the model input's shape, or a PNG/JPEG image when the program records image
preprocessing. A folder DIR/ of such files (with an optional labels.txt of "FILE LABEL" lines), or
a .npy of shape [B, ...input shape without its leading 1], is a batch: all its inputs run in one
session (set-up paid once), --output DIR/ gets one NAME.npy per input, and a summary gives the
inferences per second and the accuracy against the labels. A per-layer report goes to stderr (and
with --report FILE to a JSON file).

Linear layers run by correlated OT (--backend sciot), by homomorphic encryption over Z_2^l (scihe)
or per layer as the compiler planned (auto); every OT comes from IKNP extension or Ferret silent OT
(--ot ferret: far fewer bytes, more CPU). The output is bitwise the same in every combination.
`

// softwareName is announced in the handshake.
const softwareName = "scirun (cryptflow-go)"

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	drain := make(chan struct{})
	sig := make(chan os.Signal, 3)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	e := &env{
		stdout:   os.Stdout,
		stderr:   os.Stderr,
		terminal: cli.IsTerminal(os.Stderr),
		drain:    drain,
		backends: map[string]serve.BackendFunc{},
	}
	go onSignals(sig, e, cancel, func(code int) { os.Exit(code) })
	err := run(ctx, os.Args[1:], e)
	cancel()
	cli.Exit("scirun", err)
}

// onSignals handles SIGINT and SIGTERM (docs/usage.md): the first drains a --serve server (it
// stops accepting and finishes its running sessions) or cancels any other run; the next aborts
// a draining server's sessions; any signal after the run was cancelled exits at once, so that no
// signal is ever ignored, whatever the run is blocked in.
func onSignals(sig <-chan os.Signal, e *env, cancel context.CancelFunc, exit func(int)) {
	s := <-sig
	if e.serving.Load() {
		fmt.Fprintf(e.stderr, "scirun: %v: draining: no new sessions, the running ones finish (again to abort them)\n", s)
		close(e.drain)
		s = <-sig
		fmt.Fprintf(e.stderr, "scirun: %v: aborting the running sessions (again to exit at once)\n", s)
	} else {
		fmt.Fprintf(e.stderr, "scirun: %v: stopping (again to exit at once)\n", s)
		close(e.drain)
	}
	cancel()
	s = <-sig
	fmt.Fprintf(e.stderr, "scirun: %v: exiting at once\n", s)
	exit(130)
}

// env is what run needs from the process: its streams, the available backends, whether stderr
// is a terminal (progress bars), and the drain signal for --serve.
type env struct {
	stdout, stderr io.Writer
	terminal       bool
	drain          chan struct{}
	serving        atomic.Bool // a --serve server runs: the first signal drains it
	backends       map[string]serve.BackendFunc
	// listening, when set, is told the address a server listens on (tests use port 0), and
	// metricsListening the address of its --metrics endpoint.
	listening, metricsListening func(addr string)
	// progress is the template of the progress displays (tests inject a clock).
	progress cli.ProgressOptions
}

func run(ctx context.Context, args []string, e *env) error {
	err := runMode(ctx, args, e)
	if err != nil && errors.Is(err, context.Canceled) && !strings.HasPrefix(err.Error(), "interrupted") {
		select {
		case <-e.drain:
			return fmt.Errorf("interrupted: %w", err)
		default:
		}
	}
	return err
}

func runMode(ctx context.Context, args []string, e *env) error {
	if len(args) > 0 && args[0] == "plot" {
		return cli.ForCommand("scirun plot", runPlot(args[1:], e.stdout))
	}
	c, err := parse(args)
	if err != nil {
		return err
	}
	if err := c.check(); err != nil {
		return err
	}
	if c.threads < runtime.NumCPU() {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(c.threads))
	}
	if n, _ := parseSize(c.memLimit); n > 0 {
		defer debug.SetMemoryLimit(debug.SetMemoryLimit(n))
	}
	if c.cpuProfile != "" {
		f, err := os.Create(c.cpuProfile)
		if err != nil {
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return fmt.Errorf("--cpuprofile: %w", err)
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if !(c.party == 0 && c.serveMany) {
		// Only a --serve server drains; anything else stops at the first signal.
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		c.stop = cancel
		go func() {
			select {
			case <-e.drain:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	f, err := sciir.ReadFile(c.program)
	if err != nil {
		return err
	}
	if c.clear {
		return runClear(ctx, c, f, e)
	}
	if c.helperMode {
		return runHelper(ctx, c, f, e)
	}
	opt, err := c.options(f, e)
	if err != nil {
		return err
	}
	switch {
	case c.local:
		return runLocal(ctx, c, f, opt, e)
	case c.party == 0:
		return runServer(ctx, c, opt, e)
	}
	return runClient(ctx, c, f, opt, e)
}
