package passes

import (
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cryptflow-go/cryptflow/internal/dataset"
	"github.com/cryptflow-go/cryptflow/ir"
	"github.com/cryptflow-go/cryptflow/ir/fixed"
	"github.com/cryptflow-go/cryptflow/ir/irtext"
)

// The ring bitwidths the compiler accepts for a program: the secure backends need l >= 2 (a sign
// bit and one magnitude bit; the comparison protocols are tested down to l = 2), and a ring
// element is a uint64.
const (
	MinBits = 2
	MaxBits = 64
)

// Defaults used without validation samples (nothing is measured, so nothing is chosen).
const (
	DefaultBits  = 64
	DefaultScale = 12
)

// Options controls Compile. Start from DefaultOptions: the zero value pins scale 0.
type Options struct {
	// Bits pins the ring bitwidth l (MinBits..MaxBits); 0 lets autotune choose, or means
	// DefaultBits when autotune does not run.
	Bits int
	// Scale pins the fixed-point scale s; -1 lets autotune choose, or means DefaultScale when
	// autotune does not run.
	Scale int
	// Samples are the validation inputs; with any, the autotune pass runs.
	Samples []dataset.Sample
	// Scales, Headroom, Workers and Progress are autotune's (see TuneOptions).
	Scales   []int
	Headroom int
	Workers  int
	Progress func(done, total int)
	// KeepSoftmax disables drop-softmax.
	KeepSoftmax bool
	// Backend is the two-party backend the program is for (sciot, scihe, auto; empty: sciot).
	// With "auto" the plan-engines pass chooses OT or HE for every linear layer.
	Backend string
	// Net is the link plan-engines assumes: "lan" (default) or "wan".
	Net string
	// Disable names optional passes not to run (names or path.Match patterns, "peephole-*").
	Disable []string
	// Check runs the checker after every pass: a structural check of the HLIL graph (shapes are
	// re-inferred after every HLIL pass anyway) or (*fixed.Program).Validate. It is always on in
	// test binaries (testing.Testing).
	Check bool
	// DumpAfter names a pass after which the IR is written to Dump: HLIL text (constant data
	// elided) or the fixed-point program's text. It is an error if that pass does not run.
	DumpAfter string
	Dump      io.Writer
}

// DefaultOptions returns options that choose l and s by autotune when given samples (64-bit ring,
// scale 12 without), with headroom 1, 2 workers and every pass enabled.
func DefaultOptions() Options {
	return Options{Scale: -1, Headroom: 1, Workers: 2}
}

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
	Passes      []PassRecord    // every table entry, in table order
	Tune        *TuneResult     // nil when autotune did not run
	Peephole    *PeepholeReport // nil when no peephole ran
	Memory      Memory          // from the slots pass
	Checked     bool            // whether the checker ran after every pass
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

// state is what the passes of one compilation work on.
type state struct {
	d           *driver
	ref         *ir.Graph // the graph as given (autotune's float reference)
	g           *ir.Graph // the HLIL graph being cleaned (a copy)
	p           *fixed.Program
	bits, scale int
	log         []string // the running pass's log
	peep        PeepholeReport
	peepRan     bool
	tune        *TuneResult
	tuned       bool // the build passes ran inside autotune (its verified program is p)
	mem         Memory
}

func (st *state) logf(format string, args ...any) {
	st.log = append(st.log, fmt.Sprintf(format, args...))
}

// driver runs a pass table.
type driver struct {
	table  []Pass
	opts   Options
	check  bool
	rep    *Report
	dumped bool
}

// Compile compiles a float HLIL graph (g is not modified) to a fixed-point program with storage
// slots assigned, running the pass table in order (athosc compile --list-passes prints it). The
// table's ordering constraints are checked first; after every pass the IR is checked when
// opts.Check is set or in tests. With opts.Samples the autotune pass chooses l and s (unless
// pinned) and the program it verified is the one returned.
func Compile(g *ir.Graph, opts Options) (*fixed.Program, *Report, error) {
	if opts.Backend == BackendFHE {
		return compileWith(fheTable(), nil, g, opts) // passes/fhe.go
	}
	return compileWith(passTable, passOrder, g, opts)
}

func compileWith(table []Pass, order []OrderRule, g *ir.Graph, opts Options) (*fixed.Program, *Report, error) {
	if err := checkOrder(table, order); err != nil {
		return nil, nil, fmt.Errorf("compile: the pass table is out of order: %w", err)
	}
	if g == nil {
		return nil, nil, fmt.Errorf("compile: nil graph")
	}
	d, err := newDriver(table, opts)
	if err != nil {
		return nil, nil, err
	}
	st := &state{d: d, ref: g, g: cloneGraph(g)}
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
		st.bits = DefaultBits
	}
	if st.scale < 0 {
		st.scale = DefaultScale
	}
	for i := range d.table {
		ps := &d.table[i]
		if why := d.skipReason(ps); why != "" {
			d.rep.Passes = append(d.rep.Passes, PassRecord{Name: ps.Name, IR: ps.IR, Skipped: why})
			continue
		}
		if ps.build && st.tuned {
			continue // ran inside autotune for the program it verified, and recorded there
		}
		if err := d.runPass(st, ps, true); err != nil {
			return nil, nil, err
		}
	}
	if opts.DumpAfter != "" && !d.dumped {
		for _, r := range d.rep.Passes {
			if r.Name == opts.DumpAfter && r.Skipped != "" {
				return nil, nil, fmt.Errorf("compile: dump after %s: the pass did not run (%s)", opts.DumpAfter, r.Skipped)
			}
		}
		return nil, nil, fmt.Errorf("compile: dump after %s: the pass did not run", opts.DumpAfter)
	}
	if st.p == nil {
		return nil, nil, fmt.Errorf("compile: no pass made a fixed-point program")
	}
	if err := st.p.Validate(); err != nil {
		return nil, nil, fmt.Errorf("compile: internal error: the program fails validation: %w", err)
	}
	d.rep.Bits, d.rep.Scale = st.p.Bits, st.p.Scale
	d.rep.Tune, d.rep.Memory = st.tune, st.mem
	if st.peepRan {
		r := st.peep
		d.rep.Peephole = &r
	}
	return st.p, d.rep, nil
}

func newDriver(table []Pass, opts Options) (*driver, error) {
	switch {
	case opts.Bits != 0 && (opts.Bits < MinBits || opts.Bits > MaxBits):
		return nil, fmt.Errorf("compile: bitwidth %d is not in %d..%d", opts.Bits, MinBits, MaxBits)
	case opts.Scale < -1 || opts.Scale > fixed.MaxScale/2:
		return nil, fmt.Errorf("compile: scale %d is not in 0..%d", opts.Scale, fixed.MaxScale/2)
	}
	for _, pat := range opts.Disable {
		n := 0
		for _, p := range table {
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
			return nil, fmt.Errorf("compile: disable %q: no such pass (%s)", pat, passNames(table))
		}
	}
	if opts.DumpAfter != "" {
		if !slices.ContainsFunc(table, func(p Pass) bool { return p.Name == opts.DumpAfter }) {
			return nil, fmt.Errorf("compile: dump after %q: no such pass (%s)", opts.DumpAfter, passNames(table))
		}
		if opts.Dump == nil {
			return nil, fmt.Errorf("compile: dump after %s: no writer to dump to", opts.DumpAfter)
		}
	}
	check := opts.Check || testing.Testing()
	return &driver{table: table, opts: opts, check: check, rep: &Report{Checked: check}}, nil
}

func passNames(table []Pass) string {
	names := make([]string, len(table))
	for i, p := range table {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// skipReason returns why pass ps does not run ("" when it does).
func (d *driver) skipReason(ps *Pass) string {
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

// runPass runs one pass on st, re-infers shapes after an HLIL pass, runs the checker, and when
// record is set appends the pass to the report and dumps the IR if asked to.
func (d *driver) runPass(st *state, ps *Pass, record bool) error {
	rec := -1
	if record {
		// Reserve the record first: autotune records the build passes it runs inside it.
		rec = len(d.rep.Passes)
		d.rep.Passes = append(d.rep.Passes, PassRecord{Name: ps.Name, IR: ps.IR})
	}
	start := time.Now()
	st.log = nil
	if err := ps.run(st); err != nil {
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
		} else {
			err = st.p.Validate()
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

func (d *driver) dump(st *state, ps *Pass) error {
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

// build runs the build passes (lower and the enabled peepholes) for (bits, scale) on st's graph
// and returns the program. With record set (autotune's verified program) the passes are recorded
// in the report and their peephole counts kept in st.
func (d *driver) build(st *state, bits, scale int, record bool) (*fixed.Program, error) {
	sub := &state{d: d, ref: st.ref, g: st.g, bits: bits, scale: scale}
	for i := range d.table {
		ps := &d.table[i]
		if !ps.build || d.skipReason(ps) != "" {
			continue
		}
		if err := d.runPass(sub, ps, record); err != nil {
			return nil, err
		}
	}
	if record {
		st.peep, st.peepRan = sub.peep, sub.peepRan
	}
	return sub.p, nil
}

func runLower(st *state) error {
	p, err := Lower(st.g, LowerOptions{Bits: st.bits, Scale: st.scale})
	if err != nil {
		return err
	}
	st.p = p
	st.peep = PeepholeReport{Before: Count(p), After: Count(p)}
	st.logf("Z_2^%d, scale %d: %d instructions, %d tensors, %d weights", p.Bits, p.Scale, len(p.Instrs), len(p.Tensors), len(p.Weights))
	return nil
}

func runAutotune(st *state) error {
	o := &st.d.opts
	topts := TuneOptions{Scales: o.Scales, Bits: o.Bits, Scale: o.Scale, Headroom: o.Headroom,
		Workers: o.Workers, Progress: o.Progress}
	res, err := autotune(st.g, st.ref, o.Samples, topts, func(bits, scale int, final bool) (*fixed.Program, error) {
		return st.d.build(st, bits, scale, final)
	})
	if err != nil {
		return err
	}
	st.tune, st.p, st.tuned = res, res.Program, true
	st.bits, st.scale = res.Bits, res.Scale
	st.logf("chose l=%d s=%d over %d sample(s); verified: %v", res.Bits, res.Scale, res.Samples, res.Verified)
	return nil
}

func runSlots(st *state) error {
	st.mem = AssignSlots(st.p)
	st.logf("%d slots for %d tensors", st.mem.Slots, st.mem.Tensors)
	return nil
}

// Build makes the fixed-point program of a cleaned graph for a bitwidth and scale: the table's
// build passes (lower, then the peepholes when enabled), with checks as in Compile. It assigns no
// slots.
func Build(g *ir.Graph, bits, scale int, peephole bool) (*fixed.Program, error) {
	opts := Options{Scale: -1}
	if !peephole {
		opts.Disable = []string{"peephole-*"}
	}
	d, err := newDriver(passTable, opts)
	if err != nil {
		return nil, err
	}
	return d.build(&state{d: d, ref: g, g: g}, bits, scale, false)
}
