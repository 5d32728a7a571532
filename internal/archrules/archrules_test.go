package archrules

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/cryptflow-go/cryptflow"

var update = flag.Bool("update", false, "rewrite the generated package table in docs/architecture.md")

// pkg is what `go list -json` reports about one package of the module.
type pkg struct {
	ImportPath string
	Doc        string
	Imports    []string
	Deps       []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("the go command is not on PATH")
	}
	cmd := exec.Command("go", "list", "-json", module+"/...")
	cmd.Dir = root(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func rel(path string) string { return strings.TrimPrefix(strings.TrimPrefix(path, module), "/") }

func under(path, dir string) bool { r := rel(path); return r == dir || strings.HasPrefix(r, dir+"/") }

// violations returns the layering rules that package name (relative to the module) breaks by
// depending on deps (import paths).
func violations(name string, deps []string) []string {
	var out []string
	p := module + "/" + name
	for _, d := range deps {
		own := strings.HasPrefix(d, module+"/")
		switch {
		case under(p, "protocols") && own &&
			(under(d, "vm") || under(d, "ir") || under(d, "passes") || under(d, "frontend") || under(d, "sciir")):
			out = append(out, fmt.Sprintf("%s depends on %s: protocols must not know the VM, the IR, the compiler or the front ends", name, rel(d)))
		case name == "vm" && own && under(d, "protocols"):
			out = append(out, fmt.Sprintf("vm depends on %s: vm knows backends through its interface only", rel(d)))
		case (under(p, "passes") || name == "cmd/athosc") && strings.Contains(d, "lattigo"):
			out = append(out, fmt.Sprintf("%s links %s: the compiler plans HE layers from cost formulas, never the scheme", name, d))
		case (under(p, "passes") || name == "cmd/athosc") && own && under(d, "protocols/transport"):
			out = append(out, fmt.Sprintf("%s links %s: the compiler plans OT layers from cost formulas (protocols/linear/lincost), never the protocols' transport", name, rel(d)))
		case (under(p, "protocols") || under(p, "ring") || under(p, "netmodel") || under(p, "sciir") || under(p, "ir")) &&
			own && under(d, "internal"):
			out = append(out, fmt.Sprintf("%s depends on %s: the libraries below the commands never reach up into internal/", name, rel(d)))
		case strings.HasPrefix(name, "cmd/") && own && rel(d) == "internal/serve/servetest":
			out = append(out, fmt.Sprintf("%s links internal/serve/servetest, the insecure test backend", name))
		case strings.HasPrefix(name, "cmd/") && own && (rel(d) == "internal/testenv" || rel(d) == "internal/testsets" || rel(d) == "protocols/ot/ottest" || rel(d) == "ring/ringtest"):
			out = append(out, fmt.Sprintf("%s links %s, which is test scaffolding", name, rel(d)))
		case name == "cmd/scirun" && strings.Contains(d, "participle"):
			out = append(out, fmt.Sprintf("scirun links %s: the runtime never parses HLIL text", d))
		case name == "ir" && own:
			out = append(out, fmt.Sprintf("ir depends on %s: HLIL is the bottom of the compiler", rel(d)))
		}
	}
	return out
}

// TestLayering checks the dependency rules of the design on transitive dependencies, so that a
// rule cannot be broken through a third package.
func TestLayering(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found only %d packages", len(pkgs))
	}
	for _, p := range pkgs {
		for _, v := range violations(rel(p.ImportPath), p.Deps) {
			t.Error(v)
		}
	}
	t.Logf("checked the dependencies of %d packages", len(pkgs))
}

// TestRulesCatchViolations makes sure the rules can fail: each planted dependency is reported.
func TestRulesCatchViolations(t *testing.T) {
	for _, b := range []struct{ from, dep string }{
		{"protocols/ot", module + "/vm"},
		{"protocols/linear", module + "/ir/fixed"},
		{"protocols/nonlinear", module + "/passes"},
		{"vm", module + "/protocols/ot"},
		{"vm", module + "/protocols/bitvec"},
		{"passes", "github.com/tuneinsight/lattigo/v6/core/rlwe"},
		{"passes", module + "/protocols/transport"},
		{"cmd/athosc", module + "/protocols/transport"},
		{"sciir", module + "/internal/atomicfile"},
		{"protocols/ot/ottest", module + "/internal/testenv"},
		{"cmd/scirun", module + "/internal/serve/servetest"},
		{"cmd/scibench", module + "/protocols/ot/ottest"},
		{"cmd/scirun", "github.com/alecthomas/participle/v2"},
		{"ir", module + "/ring"},
	} {
		if len(violations(b.from, []string{b.dep})) != 1 {
			t.Errorf("%s -> %s is not caught", b.from, b.dep)
		}
	}
	if v := violations("vm", []string{module + "/ring", "fmt"}); len(v) != 0 {
		t.Errorf("allowed dependencies reported: %v", v)
	}
}

const (
	beginMark = "<!-- package table: generated by `go test ./internal/archrules -update`; do not edit -->"
	endMark   = "<!-- end of package table -->"
)

// packageTable renders every non-test package of the module: what it holds (the first sentence
// of its package doc) and the project packages it imports directly.
func packageTable(pkgs []pkg) string {
	var b strings.Builder
	b.WriteString("| package | holds | imports (project packages) |\n|---|---|---|\n")
	sorted := slices.Clone(pkgs)
	slices.SortFunc(sorted, func(a, b pkg) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	for _, p := range sorted {
		var deps []string
		for _, i := range p.Imports {
			if strings.HasPrefix(i, module+"/") {
				deps = append(deps, "`"+rel(i)+"`")
			}
		}
		doc := strings.TrimSpace(p.Doc)
		if i := strings.Index(doc, ". "); i >= 0 {
			doc = doc[:i+1]
		}
		doc = strings.ReplaceAll(doc, "|", "\\|")
		imports := strings.Join(deps, ", ")
		if imports == "" {
			imports = "—"
		}
		name := rel(p.ImportPath)
		if name == "" {
			name = "cryptflow" // the module root: the Go API
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", name, doc, imports)
	}
	return b.String()
}

// TestArchitectureDocTable keeps docs/architecture.md's package table equal to `go list`.
func TestArchitectureDocTable(t *testing.T) {
	pkgs := listPackages(t)
	path := filepath.Join(root(t), "docs", "architecture.md")
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		t.Fatalf("%s has no generated package table (markers %q ... %q)", path, beginMark, endMark)
	}
	want := beginMark + "\n\n" + packageTable(pkgs) + "\n" + endMark
	got := s[i : j+len(endMark)]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(s[:i]+want+s[j+len(endMark):]), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("rewrote the package table in %s", path)
		return
	}
	t.Errorf("docs/architecture.md's package table differs from `go list`; run `go test ./internal/archrules -update`")
}
