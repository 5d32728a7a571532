package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cryptflow-go/cryptflow/passes"
)

// listPasses prints the compiler's passes, in the order they run, with the table that holds each
// (the compile table and its sub-tables), and the tables' ordering rules (athosc compile
// --list-passes).
func listPasses(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "PASS\tTABLE\tIR\tKIND\tDOES\n")
	for _, p := range passes.PassTable() {
		req := "optional"
		if p.Required {
			req = "required"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.Table, p.IR, req, p.Doc)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	table := ""
	for _, r := range passes.OrderRules() {
		if r.Table != table {
			table = r.Table
			fmt.Fprintf(w, "\nordering rules of the %s table (checked before every compilation):\n", table)
		}
		fmt.Fprintf(w, "  %s before %s: %s\n", r.Before, r.After, r.Why)
	}
	return nil
}
