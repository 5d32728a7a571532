package main

// Progress on stderr and the per-layer reports.

import (
	"bytes"
	"fmt"

	"github.com/cryptflow-go/cryptflow/internal/atomicfile"
	"github.com/cryptflow-go/cryptflow/internal/cli"
	"github.com/cryptflow-go/cryptflow/internal/serve"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// progress returns the progress display of a run: one line redrawn in place when stderr is a
// terminal, plain lines (on each change of status and every 10 s) when it is not, nothing with
// --quiet.
func (c *config) progress(e *env, label string) *cli.Progress {
	o := e.progress
	switch {
	case c.quiet:
		o.Mode = cli.ProgressOff
	case e.terminal:
		o.Mode = cli.ProgressTerminal
	default:
		o.Mode = cli.ProgressLines
	}
	return cli.NewProgressWith(e.stderr, label, o)
}

// watch shows a session's progress on bar: what it waits for before the program runs (waiting:
// the peer's hello), then the instruction running (named while it runs) and, for a batch,
// the inputs done with their rate and the time left.
func watch(bar *cli.Progress, opt *serve.Options, waiting string) {
	if bar == nil {
		return
	}
	p := opt.File.Program
	opt.Phase = func(phase string) {
		switch phase {
		case serve.PhaseHandshake:
			bar.Status(waiting)
		case serve.PhaseStreams:
			bar.Status(fmt.Sprintf("opening the session's %d stream connections…", opt.Streams))
		case serve.PhaseSetup:
			bar.Status(fmt.Sprintf("setting up the session (backend %s: base OTs and keys)…", opt.Backend))
		}
	}
	opt.Running = func(k, n, i int, in *fixed.Instr) {
		label := fmt.Sprintf("%d %s", i, in.Op)
		if in.Source != "" {
			label += " " + in.Source
		}
		if i == 0 {
			bar.Items(k, n)
		}
		bar.Update(k*len(p.Instrs)+i, n*len(p.Instrs), label)
	}
}

// writeReports prints the table on stderr and writes the JSON report.
func (c *config) writeReports(res *serve.Result, e *env) error {
	if res == nil || res.Report == nil {
		return nil
	}
	if !c.quiet && len(res.Report.Layers) > 0 {
		if err := res.Report.WriteTable(e.stderr); err != nil {
			return err
		}
	}
	if c.report == "" {
		return nil
	}
	var b bytes.Buffer
	if err := res.Report.WriteJSON(&b); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(c.report, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}
