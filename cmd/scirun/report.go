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

// progress returns the progress bar for a single session (a no-op unless stderr is a terminal)
// and installs it in opt.
func (c *config) progress(e *env, opt *serve.Options) *cli.Progress {
	if !e.terminal || c.quiet {
		return nil
	}
	b := cli.NewProgress(e.stderr, "secure run", true)
	opt.Progress = func(done, total int, in *fixed.Instr) {
		label := in.Op.String()
		if in.Source != "" {
			label += " " + in.Source
		}
		b.Update(done, total, label)
	}
	return b
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
