package passes

import (
	"fmt"
	"path"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
)

// IR names the representation a pass reads and the one it leaves.
type IR int

const (
	// OnHLIL passes rewrite the float HLIL graph.
	OnHLIL IR = iota
	// HLILToFixed passes read the HLIL graph and make the fixed-point program (lower, autotune).
	HLILToFixed
	// OnFixed passes rewrite the fixed-point program.
	OnFixed
)

func (r IR) String() string {
	switch r {
	case OnHLIL:
		return "hlil"
	case HLILToFixed:
		return "hlil->fixed"
	case OnFixed:
		return "fixed"
	}
	return fmt.Sprintf("IR(%d)", int(r))
}

// leavesHLIL reports whether a pass working on r leaves the HLIL graph (false: the fixed program).
func (r IR) leavesHLIL() bool { return r == OnHLIL }

// pass is one entry of a pass table: a pass, or a sub-table (sub) whose passes run in its place.
type pass struct {
	Name     string
	IR       IR
	Required bool   // a required pass cannot be disabled (Options.Disable)
	Doc      string // one line for --list-passes

	// skip returns why the pass does not run under o ("" when it runs), besides Disable.
	skip func(o *Options) string
	run  func(st *state) error
	// sub is the table an entry stands for (then run is nil): the driver walks it in place.
	sub *table
	// builds is the table a pass that builds programs for candidate (l, s) runs (autotune): the
	// driver hands the pass st.build, which runs that table.
	builds *table
}

// table is a named list of passes with the ordering rules they satisfy. An entry may be a table
// itself: its passes are this table's passes too, in its place, and rules may name them.
type table struct {
	Name   string
	Passes []pass
	Order  []OrderRule
}

// subTable makes the entry that runs t in place; ir is what t reads and leaves as a whole.
func subTable(t *table, ir IR) pass {
	return pass{Name: t.Name, IR: ir, sub: t}
}

// OrderRule says that the passes matching Before (a name or a path.Match pattern) must all come
// before those matching After, and why. Table names the table whose passes the rule orders.
type OrderRule struct {
	Table              string
	Before, After, Why string
}

// leaves returns t's passes with every sub-table entry replaced by its passes, in run order, and
// for each the name of the table that holds it.
func (t *table) leaves() (passes []*pass, tables []string) {
	for i := range t.Passes {
		p := &t.Passes[i]
		if p.sub != nil {
			ps, ts := p.sub.leaves()
			passes, tables = append(passes, ps...), append(tables, ts...)
			continue
		}
		passes, tables = append(passes, p), append(tables, t.Name)
	}
	return passes, tables
}

// walk calls f for t and every table under it, parents first.
func (t *table) walk(f func(*table) error) error {
	if err := f(t); err != nil {
		return err
	}
	for i := range t.Passes {
		if sub := t.Passes[i].sub; sub != nil {
			if err := sub.walk(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkOrder verifies t and every table under it: every rule's patterns match at least one pass
// of the table it belongs to (sub-tables' passes included), every pass matching Before comes
// before every pass matching After, and no name (of a pass or a table) appears twice.
func (t *table) checkOrder() error {
	seen := map[string]bool{}
	return t.walk(func(tab *table) error {
		if seen[tab.Name] {
			return fmt.Errorf("the name %s appears twice in the pass tables", tab.Name)
		}
		seen[tab.Name] = true
		for _, p := range tab.Passes {
			if p.sub == nil {
				if seen[p.Name] {
					return fmt.Errorf("pass %s appears twice in the pass tables", p.Name)
				}
				seen[p.Name] = true
			}
		}
		leaves, _ := tab.leaves()
		return checkRules(tab.Name, leaves, tab.Order)
	})
}

// checkRules verifies that passes (the passes of table name, in run order) satisfy rules.
func checkRules(name string, passes []*pass, rules []OrderRule) error {
	match := func(pattern string) ([]int, error) {
		var idx []int
		for i, p := range passes {
			ok, err := path.Match(pattern, p.Name)
			if err != nil {
				return nil, fmt.Errorf("pass order rule %q: %w", pattern, err)
			}
			if ok {
				idx = append(idx, i)
			}
		}
		if len(idx) == 0 {
			return nil, fmt.Errorf("pass order rule names %q, which is not in the %s table", pattern, name)
		}
		return idx, nil
	}
	for _, r := range rules {
		before, err := match(r.Before)
		if err != nil {
			return err
		}
		after, err := match(r.After)
		if err != nil {
			return err
		}
		for _, b := range before {
			for _, a := range after {
				if b >= a {
					return fmt.Errorf("pass %s must run before %s (%s), but the %s table has it at position %d, after position %d",
						passes[b].Name, passes[a].Name, r.Why, name, b+1, a+1)
				}
			}
		}
	}
	return nil
}

// state is what the passes of one compilation work on.
type state struct {
	opts        *Options
	ref         *ir.Graph // the graph as given (autotune's float reference)
	g           *ir.Graph // the HLIL graph being cleaned (a copy)
	p           *fixed.Program
	bits, scale int
	log         []string // the running pass's log
	peep        PeepholeReport
	peepRan     bool
	tune        *TuneResult
	engines     []EngineEstimate // plan-engines' estimates (nil when it did not run)
	mem         Memory
	// build makes the program of g for (bits, scale) by the running pass's builds table (the
	// driver sets it for a pass that has one). With final set, the program is the one the
	// compilation goes on with: its passes are recorded, and its peephole counts kept in st.
	build func(bits, scale int, final bool) (*fixed.Program, error)
	// lnVar is the smallest validated row variance of each LayerNormalization input, measured
	// once on the float graph for the lowering (nil until then, or without samples).
	lnVar map[string]float64
}

func (st *state) logf(format string, args ...any) {
	st.log = append(st.log, fmt.Sprintf(format, args...))
}
