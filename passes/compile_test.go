package passes

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/ir"
)

// leafIndex returns the position of the named pass among the compile table's passes (sub-tables'
// in place), as Report.Passes lists them.
func leafIndex(t *testing.T, name string) int {
	t.Helper()
	leaves, _ := compileTable.leaves()
	i := slices.IndexFunc(leaves, func(p *pass) bool { return p.Name == name })
	if i < 0 {
		t.Fatalf("no pass %s", name)
	}
	return i
}

// cloneTable copies tab and every table under it (builds references follow the copies), so a
// test can reorder or insert passes without touching the shipped tables.
func cloneTable(tab *table) *table {
	copies := map[*table]*table{}
	var cp func(*table) *table
	cp = func(t *table) *table {
		if c, ok := copies[t]; ok {
			return c
		}
		c := &table{Name: t.Name, Passes: slices.Clone(t.Passes), Order: slices.Clone(t.Order)}
		copies[t] = c
		for i := range c.Passes {
			if c.Passes[i].sub != nil {
				c.Passes[i].sub = cp(c.Passes[i].sub)
			}
		}
		return c
	}
	root := cp(tab)
	_ = root.walk(func(t *table) error {
		for i := range t.Passes {
			if b := t.Passes[i].builds; b != nil {
				t.Passes[i].builds = cp(b)
			}
		}
		return nil
	})
	return root
}

// findPass returns the table under root that holds the named pass, and its position there.
func findPass(t *testing.T, root *table, name string) (*table, int) {
	t.Helper()
	var at *table
	idx := -1
	_ = root.walk(func(tab *table) error {
		for i, p := range tab.Passes {
			if p.sub == nil && p.Name == name {
				at, idx = tab, i
			}
		}
		return nil
	})
	if at == nil {
		t.Fatalf("no pass %s", name)
	}
	return at, idx
}

// swapped returns a copy of the compile table with passes a and b swapped (across sub-tables if
// they are in different ones).
func swapped(t *testing.T, a, b string) *table {
	root := cloneTable(&compileTable)
	ta, i := findPass(t, root, a)
	tb, j := findPass(t, root, b)
	ta.Passes[i], tb.Passes[j] = tb.Passes[j], ta.Passes[i]
	return root
}

func TestPassOrder(t *testing.T) {
	if err := compileTable.checkOrder(); err != nil {
		t.Fatalf("the shipped tables break their own rules: %v", err)
	}
	// Break rules on purpose, within a sub-table and across tables: Compile must refuse to run.
	for _, tc := range []struct{ a, b, why string }{
		{"fuse-bias", "fold-batchnorm", "Conv, Add, BatchNorm folds only once"},
		{"autotune", "lower", "lowering needs the l and s autotune chooses"},
		{"peephole-trunc-hoist", "peephole-relu-maxpool", "ReLU->MaxPool pairs to swap"},
		{"peephole-trunc-nonneg", "plan-engines", "engines are planned for the final linear layers"},
		{"drop-softmax", "lower", "a trailing Softmax or LogSoftmax is dropped before lowering"},
	} {
		tab := swapped(t, tc.a, tc.b)
		err := tab.checkOrder()
		if err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("swap %s and %s: %v, want the reason %q", tc.a, tc.b, err, tc.why)
		}
		_, _, err = compileWith(tab, cnn(t, 1), Options{Bits: 32, Scale: 8})
		if err == nil || !strings.Contains(err.Error(), "out of order") {
			t.Errorf("compile with %s and %s swapped: %v", tc.a, tc.b, err)
		}
	}
	leaves, _ := compileTable.leaves()
	if err := checkRules("compile", leaves, []OrderRule{{"compile", "lower", "no-such-pass", "x"}}); err == nil {
		t.Error("a rule naming an unknown pass accepted")
	}
	twice := cloneTable(&compileTable)
	twice.Passes = append(twice.Passes, cleanTable.Passes[0])
	if err := twice.checkOrder(); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("a pass listed twice: %v", err)
	}
	info := PassTable()
	if len(info) != len(leaves) || info[0].Name != "drop-identity" || info[0].Table != "clean" ||
		info[leafIndex(t, "peephole-trunc-hoist")].Table != "peephole" || info[leafIndex(t, "slots")].Table != "compile" {
		t.Errorf("Table does not reflect the pass tables: %+v", info)
	}
	rules := 0
	_ = compileTable.walk(func(tab *table) error { rules += len(tab.Order); return nil })
	if got := OrderRules(); len(got) != rules || got[0].Table != "compile" || got[len(got)-1].Table != "peephole" {
		t.Errorf("OrderRules does not reflect the tables' rules: %+v", got)
	}
}

// insertAfter returns a copy of the compile table with p inserted after the named pass, in the
// (sub-)table that holds it.
func insertAfter(t *testing.T, name string, p pass) *table {
	root := cloneTable(&compileTable)
	tab, i := findPass(t, root, name)
	tab.Passes = slices.Insert(tab.Passes, i+1, p)
	return root
}

// TestCheckerCatchesBrokenPasses runs a pass that breaks the IR and sees the checker name it.
func TestCheckerCatchesBrokenPasses(t *testing.T) {
	redefine := pass{Name: "break-hlil", IR: OnHLIL, run: func(st *state) error {
		// A second definition of an existing value: shape inference accepts it (it overwrites
		// the recorded shape), the graph checker does not.
		n := st.g.Nodes[0]
		st.g.Nodes = append(st.g.Nodes, &ir.Node{Op: ir.Relu, Inputs: []string{st.g.Inputs[0].Name}, Outputs: []string{n.Outputs[0]}})
		return nil
	}}
	badRef := pass{Name: "break-fixed", IR: OnFixed, run: func(st *state) error {
		st.p.Instrs[1].In[0] = len(st.p.Tensors) + 5
		return nil
	}}
	for _, tc := range []struct {
		after string
		p     pass
		want  string
	}{
		{"fold-batchnorm", redefine, "check after pass break-hlil"},
		{"peephole-trunc-merge", badRef, "check after pass break-fixed"},
	} {
		table := insertAfter(t, tc.after, tc.p)
		_, _, err := compileWith(table, cnn(t, 2), Options{Bits: 32, Scale: 8, Check: true})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.p.Name, err, tc.want)
		}
	}
	// An HLIL pass whose graph no longer infers fails even without Options.Check.
	undefined := pass{Name: "break-shapes", IR: OnHLIL, run: func(st *state) error {
		st.g.Nodes[0].Inputs[0] = "nowhere"
		return nil
	}}
	_, _, err := compileWith(insertAfter(t, "drop-identity", undefined), cnn(t, 2), Options{Bits: 32, Scale: 8})
	if err == nil || !strings.Contains(err.Error(), "after pass break-shapes") {
		t.Errorf("break-shapes: %v", err)
	}
}

func TestCompileReport(t *testing.T) {
	g := cnn(t, 60)
	opts := DefaultOptions()
	opts.Samples = tuneSamples(t, g, 6, true)
	opts.Scales = []int{6, 8}
	opts.Backend = "auto" // every pass runs
	opts.Check = true
	p, rep, err := Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	leaves, _ := compileTable.leaves()
	if len(rep.Passes) != len(leaves) {
		t.Fatalf("%d records for %d passes", len(rep.Passes), len(leaves))
	}
	for i, r := range rep.Passes {
		if r.Name != leaves[i].Name || r.Skipped != "" {
			t.Errorf("record %d: %+v, want pass %s run", i, r, leaves[i].Name)
		}
	}
	// The program autotune verified is the one emitted: not lowered a second time.
	if rep.Tune == nil || rep.Tune.Program != p || !rep.Tune.Verified {
		t.Fatalf("compile did not emit autotune's verified program")
	}
	if p.Bits != rep.Tune.Bits || p.Scale != rep.Tune.Scale || rep.Bits != p.Bits {
		t.Errorf("program l=%d s=%d, autotune chose l=%d s=%d", p.Bits, p.Scale, rep.Tune.Bits, rep.Tune.Scale)
	}
	if rep.Peephole == nil || rep.Peephole.Swapped+rep.Peephole.Hoisted == 0 || rep.Memory.Slots == 0 || !rep.Checked {
		t.Errorf("report %+v", rep)
	}
	for _, tn := range p.Tensors {
		if tn.Slot < 0 {
			t.Fatal("slots not assigned")
		}
	}
	lines := strings.Join(rep.Lines(), "\n")
	for _, want := range []string{"autotune: chose l=", "slots: ", "lower: Z_2^"} {
		if !strings.Contains(lines, want) {
			t.Errorf("report lines lack %q:\n%s", want, lines)
		}
	}
	var times bytes.Buffer
	if err := rep.WriteTimes(&times); err != nil || strings.Count(times.String(), "\n") != len(leaves) {
		t.Errorf("times (%v):\n%s", err, times.String())
	}

	// Pinned, without samples: autotune is skipped and says why.
	p2, rep2, err := Compile(g, Options{Bits: 40, Scale: 9, Disable: []string{"peephole-*"}, Check: true})
	if err != nil {
		t.Fatal(err)
	}
	if p2.Bits != 40 || p2.Scale != 9 || rep2.Peephole != nil || rep2.Tune != nil {
		t.Errorf("pinned: l=%d s=%d peephole %v", p2.Bits, p2.Scale, rep2.Peephole)
	}
	if r := rep2.Passes[leafIndex(t, "autotune")]; r.Skipped != "no validation samples" {
		t.Errorf("autotune record %+v", r)
	}
	// Samples, but autotune disabled: the defaults, nothing measured.
	opts.Disable = []string{"autotune"}
	p3, rep3, err := Compile(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	if p3.Bits != defaultBits || p3.Scale != defaultScale || rep3.Tune != nil {
		t.Errorf("autotune disabled: l=%d s=%d", p3.Bits, p3.Scale)
	}
	// Compile matches the hand-wired pipeline it replaces, and does not modify its input.
	before := len(g.Nodes)
	cg, _, err := clean(g, false)
	if err != nil {
		t.Fatal(err)
	}
	hand, err := build(cg, 40, 9, false)
	if err != nil {
		t.Fatal(err)
	}
	assignSlots(hand)
	var a, b bytes.Buffer
	p2.WriteText(&a)
	hand.WriteText(&b)
	if a.String() != b.String() || len(g.Nodes) != before {
		t.Error("Compile differs from Clean + Build + assignSlots")
	}
}

func TestCompileDumpAfter(t *testing.T) {
	g := cnn(t, 61)
	samples := tuneSamples(t, g, 4, false)
	leaves, _ := compileTable.leaves()
	for _, ps := range leaves {
		opts := DefaultOptions()
		opts.Samples, opts.Scales = samples, []int{8}
		opts.Backend, opts.Check = "auto", true
		var out bytes.Buffer
		opts.DumpAfter, opts.Dump = ps.Name, &out
		if _, _, err := Compile(g, opts); err != nil {
			t.Errorf("%s: %v", ps.Name, err)
			continue
		}
		s := out.String()
		header := "# HLIL after pass " + ps.Name + "\n"
		if !ps.IR.leavesHLIL() {
			header = "# fixed-point program after pass " + ps.Name + "\n"
		}
		if !strings.HasPrefix(s, header) || strings.Count(s, "\n") < 5 {
			t.Errorf("%s: dump %q", ps.Name, s)
		}
	}
}

func TestCompileOptionErrors(t *testing.T) {
	g := cnn(t, 3)
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Bits: 1, Scale: 8}, "bitwidth 1 is not in 2..64"},
		{Options{Bits: 65, Scale: 8}, "bitwidth 65"},
		{Options{Scale: -2}, "scale -2"},
		{Options{Scale: 8, Disable: []string{"lower"}}, "lower is required"},
		{Options{Scale: 8, Disable: []string{"nope"}}, "no such pass"},
		{Options{Scale: 8, DumpAfter: "nope", Dump: &bytes.Buffer{}}, "no such pass"},
		{Options{Scale: 8, DumpAfter: "lower"}, "no writer"},
		{Options{Scale: 8, DumpAfter: "autotune", Dump: &bytes.Buffer{}}, "did not run (no validation samples)"},
		{Options{Scale: 8, DumpAfter: "fuse-bias", Dump: &bytes.Buffer{}, Disable: []string{"fuse-bias"}}, "did not run (disabled)"},
	} {
		if _, _, err := Compile(g, tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
	if _, _, err := Compile(nil, Options{}); err == nil {
		t.Error("nil graph compiled")
	}
}

// TestPeepholePassesClosed: the peephole passes run once each, in table order; running them all
// again must find nothing left to rewrite (what one enables, a later one has already done).
func TestPeepholePassesClosed(t *testing.T) {
	for seed := uint64(1); seed <= 4; seed++ {
		cg, _, err := clean(cnn(t, seed), false)
		if err != nil {
			t.Fatal(err)
		}
		p, err := build(cg, 40, 10, true)
		if err != nil {
			t.Fatal(err)
		}
		_, rep, err := peephole(p)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Swapped+rep.Hoisted+rep.Merged+rep.MarkedNonNeg != 0 {
			t.Errorf("seed %d: a second round rewrote %+v", seed, rep)
		}
	}
}

func TestAssignSlots(t *testing.T) {
	p, err := build(cnn(t, 4), 40, 10, true)
	if err != nil {
		t.Fatal(err)
	}
	mem := assignSlots(p)
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if mem.Slots >= mem.Tensors || mem.WithReuse >= mem.NoReuse {
		t.Errorf("no reuse: %+v", mem)
	}
	if mem.PeakLive > mem.WithReuse || mem.PeakLive == 0 {
		t.Errorf("peak live %d, storage %d", mem.PeakLive, mem.WithReuse)
	}
	// Without slots every tensor has its own storage.
	for i := range p.Tensors {
		p.Tensors[i].Slot = -1
	}
	if m := measureMemory(p); m.WithReuse != m.NoReuse || m.Slots != m.Tensors {
		t.Errorf("unassigned: %+v", m)
	}
	// A program whose slots collide fails validation, which the compiler runs on its result.
	q := p.Clone()
	for i := range q.Tensors {
		q.Tensors[i].Slot = 0
	}
	if err := q.Validate(); err == nil {
		t.Error("all tensors in one slot validated")
	}
}
