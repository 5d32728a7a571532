// Package passes is the compiler driver and its passes: Compile runs one table of named passes, from
// the float HLIL graph to the fixed-point program, with a checker after each. The tables are in
// table.go (athosc compile --list-passes prints them): the compile table holds the clean-up table
// on the float HLIL graph (constant folding, BatchNorm folding, bias fusion, dropping Identity and
// a trailing Softmax), the autotuner that picks the ring bitwidth and scale on validation data,
// the build table (the lowering from float HLIL to the fixed-point program of ir/fixed, then the
// peephole table on that program), and storage-slot assignment by liveness. Every table states
// ordering rules, checked before a compilation starts; one loop (driver.go) walks every table,
// sub-tables in place, with the checker (Options.Check), --dump-after and --time-passes.
package passes

import (
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ir/irtext"
)

// PassRecord is what one pass did.
type PassRecord struct {
	Name    string
	IR      IR
	Skipped string        // why the pass did not run ("" when it ran)
	Time    time.Duration // including the checks after it; autotune's includes the builds it ran
	Log     []string      // what it changed, for the compile report
}

// Report is Compile's account of a compilation.
type Report struct {
	Bits, Scale int
	Passes      []PassRecord    // every pass, in table order (sub-tables' passes in place)
	Tune        *TuneResult     // nil when autotune did not run
	Peephole    *PeepholeReport // nil when no peephole ran
	Memory      Memory          // from the slots pass
	// Engines are plan-engines' estimates, one per linear layer in program order (nil when the
	// backend is not auto): the engine chosen and both engines' traffic and time.
	Engines []EngineEstimate
	Checked bool // whether the checker ran after every pass
}

// Lines returns the passes' log lines prefixed with the pass name (for the program metadata).
func (r *Report) Lines() []string {
	var out []string
	for _, p := range r.Passes {
		for _, l := range p.Log {
			out = append(out, p.Name+": "+l)
		}
	}
	return out
}

// WriteTimes writes one line per pass with its time (athosc compile --time-passes).
func (r *Report) WriteTimes(w io.Writer) error {
	for _, p := range r.Passes {
		if p.Skipped != "" {
			if _, err := fmt.Fprintf(w, "  %-24s %10s  (not run: %s)\n", p.Name, "-", p.Skipped); err != nil {
				return err
			}
			continue
		}
		note := ""
		if p.Name == "autotune" {
			note = "  (includes the builds it ran)"
		}
		if _, err := fmt.Fprintf(w, "  %-24s %10s%s\n", p.Name, p.Time.Round(time.Microsecond), note); err != nil {
			return err
		}
	}
	return nil
}

// Compile compiles a float HLIL graph (g is not modified) to a fixed-point program with storage
// slots assigned, walking the compile table in order (athosc compile --list-passes prints it).
// The tables' ordering rules are checked first; after every pass the IR is checked when
// opts.Check is set. With opts.Samples the autotune pass chooses l and s (unless pinned) and the
// program it verified is the one returned.
//
// A quantized graph (one with Requant nodes: the QLinear operators) runs on its integers: its ring
// and scale follow from the quantization parameters — Z_2^64 at scale 0 — and nothing is
// autotuned (docs/fixed-point.md, "Quantized operators").
func Compile(g *ir.Graph, opts Options) (*fixed.Program, *Report, error) {
	if opts.Backend == BackendFHE {
		return compileWith(&fheTable, g, opts) // fhe.go
	}
	if Quantized(g) {
		if (opts.Bits != 0 && opts.Bits != 64) || opts.Scale > 0 {
			return nil, nil, fmt.Errorf("compile: a quantized model runs in Z_2^64 at scale 0 (its ring and scale follow from the quantization parameters); l=%d s=%d were asked for", opts.Bits, opts.Scale)
		}
		opts.Bits, opts.Scale, opts.Samples = 64, 0, nil
	}
	return compileWith(&compileTable, g, opts)
}

// Quantized reports whether g holds quantized operators (Requant nodes).
func Quantized(g *ir.Graph) bool {
	if g == nil {
		return false // Compile's driver reports the missing graph
	}
	for _, n := range g.Nodes {
		if n.Op == ir.Requant {
			return true
		}
	}
	return false
}

// compileWith is Compile with the table given (tests run broken tables through it).
func compileWith(tab *table, g *ir.Graph, opts Options) (*fixed.Program, *Report, error) {
	st, rep, err := drive(tab, g, opts)
	if err != nil {
		return nil, nil, err
	}
	if st.p == nil {
		return nil, nil, fmt.Errorf("compile: no pass made a fixed-point program")
	}
	if err := st.p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("compile: internal error: the program fails validation: %w", err)
	}
	if err := st.p.CheckBounds(); err != nil {
		return nil, nil, fmt.Errorf("compile: internal error: %w", err)
	}
	rep.Bits, rep.Scale = st.p.Bits, st.p.Scale
	rep.Tune, rep.Memory, rep.Engines = st.tune, st.mem, st.engines
	if st.peepRan {
		r := st.peep
		rep.Peephole = &r
	}
	return st.p, rep, nil
}

// driver walks pass tables for one compilation.
type driver struct {
	opts   Options
	check  bool
	rep    *Report
	dumped bool
}

// drive checks tab's ordering rules and opts, then walks tab on a copy of g (shapes inferred) and
// returns the state it leaves and the report of the passes that ran.
func drive(tab *table, g *ir.Graph, opts Options) (*state, *Report, error) {
	if err := tab.checkOrder(); err != nil {
		return nil, nil, fmt.Errorf("compile: the pass table is out of order: %w", err)
	}
	if g == nil {
		return nil, nil, fmt.Errorf("compile: nil graph")
	}
	d, err := newDriver(tab, opts)
	if err != nil {
		return nil, nil, err
	}
	st := &state{opts: &d.opts, ref: g, g: cloneGraph(g)}
	st.g.Values = map[string]*ir.Value{}
	if err := st.g.InferShapes(); err != nil {
		return nil, nil, fmt.Errorf("compile: %w", err)
	}
	if d.check {
		if err := checkGraph(st.g); err != nil {
			return nil, nil, fmt.Errorf("compile: the input graph: %w", err)
		}
	}
	// What lower uses unless autotune runs and chooses.
	st.bits, st.scale = opts.Bits, opts.Scale
	if st.bits == 0 {
		st.bits = defaultBits
	}
	if st.scale < 0 {
		st.scale = defaultScale
	}
	if err := d.run(tab, st, true); err != nil {
		return nil, nil, err
	}
	if opts.DumpAfter != "" && !d.dumped {
		for _, r := range d.rep.Passes {
			if r.Name == opts.DumpAfter && r.Skipped != "" {
				return nil, nil, fmt.Errorf("compile: dump after %s: the pass did not run (%s)", opts.DumpAfter, r.Skipped)
			}
		}
		return nil, nil, fmt.Errorf("compile: dump after %s: the pass did not run", opts.DumpAfter)
	}
	return st, d.rep, nil
}

// newDriver checks opts against the passes of tab (sub-tables' included).
func newDriver(tab *table, opts Options) (*driver, error) {
	switch {
	case opts.Bits != 0 && (opts.Bits < MinBits || opts.Bits > MaxBits):
		return nil, fmt.Errorf("compile: bitwidth %d is not in %d..%d", opts.Bits, MinBits, MaxBits)
	case opts.Scale < -1 || opts.Scale > fixed.MaxScale/2:
		return nil, fmt.Errorf("compile: scale %d is not in 0..%d", opts.Scale, fixed.MaxScale/2)
	}
	leaves, _ := tab.leaves()
	names := make([]string, len(leaves))
	for i, p := range leaves {
		names[i] = p.Name
	}
	for _, pat := range opts.Disable {
		n := 0
		for _, p := range leaves {
			ok, err := path.Match(pat, p.Name)
			if err != nil {
				return nil, fmt.Errorf("compile: disable %q: %w", pat, err)
			}
			if ok {
				if p.Required {
					return nil, fmt.Errorf("compile: pass %s is required and cannot be disabled", p.Name)
				}
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("compile: disable %q: no such pass (%s)", pat, strings.Join(names, ", "))
		}
	}
	if opts.DumpAfter != "" {
		found := false
		for _, n := range names {
			found = found || n == opts.DumpAfter
		}
		if !found {
			return nil, fmt.Errorf("compile: dump after %q: no such pass (%s)", opts.DumpAfter, strings.Join(names, ", "))
		}
		if opts.Dump == nil {
			return nil, fmt.Errorf("compile: dump after %s: no writer to dump to", opts.DumpAfter)
		}
	}
	return &driver{opts: opts, check: opts.Check, rep: &Report{Checked: opts.Check}}, nil
}

// run walks tab on st: the one loop every table goes through. A sub-table entry is walked in
// place. An entry that makes the program from the HLIL graph (IR HLILToFixed) is passed by once
// st has a program: autotune hands on the one it verified, built by its builds table and
// recorded there. With record set, every pass is recorded in the report (a pass that does not
// run with the reason) and the IR dumped after the pass Options.DumpAfter names.
func (d *driver) run(tab *table, st *state, record bool) error {
	for i := range tab.Passes {
		ps := &tab.Passes[i]
		switch {
		case ps.IR == HLILToFixed && st.p != nil:
			continue
		case ps.sub != nil:
			if err := d.run(ps.sub, st, record); err != nil {
				return err
			}
			continue
		}
		if why := d.skipReason(ps); why != "" {
			if record {
				d.rep.Passes = append(d.rep.Passes, PassRecord{Name: ps.Name, IR: ps.IR, Skipped: why})
			}
			continue
		}
		if err := d.runPass(st, ps, record); err != nil {
			return err
		}
	}
	return nil
}

// skipReason returns why pass ps does not run ("" when it does).
func (d *driver) skipReason(ps *pass) string {
	if ps.skip != nil {
		if why := ps.skip(&d.opts); why != "" {
			return why
		}
	}
	for _, pat := range d.opts.Disable {
		if ok, _ := path.Match(pat, ps.Name); ok {
			return "disabled"
		}
	}
	return ""
}

// builder returns the build function a pass with a builds table gets: it walks that table on the
// graph of st for (bits, scale) and returns the program; with final set the passes are recorded
// and the peephole counts kept in st.
func (d *driver) builder(st *state, tab *table) func(bits, scale int, final bool) (*fixed.Program, error) {
	return func(bits, scale int, final bool) (*fixed.Program, error) {
		sub := &state{opts: st.opts, ref: st.ref, g: st.g, bits: bits, scale: scale}
		if err := d.run(tab, sub, final); err != nil {
			return nil, err
		}
		if sub.p == nil {
			return nil, fmt.Errorf("the %s table made no program", tab.Name)
		}
		if final {
			st.peep, st.peepRan = sub.peep, sub.peepRan
		}
		return sub.p, nil
	}
}

// runPass runs one pass on st, re-infers shapes after an HLIL pass, runs the checker, and when
// record is set appends the pass to the report and dumps the IR if asked to.
func (d *driver) runPass(st *state, ps *pass, record bool) error {
	rec := -1
	if record {
		// Reserve the record first: a pass that builds records the passes it runs after it.
		rec = len(d.rep.Passes)
		d.rep.Passes = append(d.rep.Passes, PassRecord{Name: ps.Name, IR: ps.IR})
	}
	start := time.Now()
	st.log = nil
	st.build = nil
	if ps.builds != nil {
		st.build = d.builder(st, ps.builds)
	}
	err := ps.run(st)
	st.build = nil
	if err != nil {
		return fmt.Errorf("pass %s: %w", ps.Name, err)
	}
	log := st.log
	if ps.IR.leavesHLIL() {
		// Later passes read shapes: every HLIL pass leaves g.Values exact.
		st.g.Values = map[string]*ir.Value{}
		if err := st.g.InferShapes(); err != nil {
			return fmt.Errorf("after pass %s: shape inference: %w", ps.Name, err)
		}
	}
	if d.check {
		var err error
		if ps.IR.leavesHLIL() {
			err = checkGraph(st.g)
		} else if st.p == nil {
			err = fmt.Errorf("no fixed-point program")
		} else if err = st.p.Validate(); err == nil {
			err = st.p.CheckBounds()
		}
		if err != nil {
			return fmt.Errorf("check after pass %s: %w", ps.Name, err)
		}
	}
	if !record {
		return nil
	}
	r := &d.rep.Passes[rec]
	r.Time, r.Log = time.Since(start), log
	if d.opts.DumpAfter == ps.Name {
		d.dumped = true
		if err := d.dump(st, ps); err != nil {
			return fmt.Errorf("dump after %s: %w", ps.Name, err)
		}
	}
	return nil
}

func (d *driver) dump(st *state, ps *pass) error {
	w := d.opts.Dump
	if ps.IR.leavesHLIL() {
		if _, err := fmt.Fprintf(w, "# HLIL after pass %s\n", ps.Name); err != nil {
			return err
		}
		return irtext.Write(w, st.g, irtext.Options{ElideData: true, KeepElems: 16})
	}
	if _, err := fmt.Fprintf(w, "# fixed-point program after pass %s\n", ps.Name); err != nil {
		return err
	}
	return st.p.WriteText(w)
}
