package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cryptflow-go/cryptflow/passes"
)

// listPasses prints the compiler's pass table and its ordering rules (athosc compile --list-passes).
func listPasses(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "PASS\tIR\tKIND\tDOES\n")
	for _, p := range passes.Table() {
		req := "optional"
		if p.Required {
			req = "required"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, p.IR, req, p.Doc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nordering rules (checked before every compilation):\n")
	for _, r := range passes.OrderRules() {
		fmt.Fprintf(w, "  %s before %s: %s\n", r.Before, r.After, r.Why)
	}
	return nil
}
