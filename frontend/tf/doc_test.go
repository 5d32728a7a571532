package tf

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cryptflow-go/cryptflow/internal/testenv"
)

// TestCoverageDocListsEveryOp keeps docs/tf-coverage.md in step with the handler table: every
// supported op must appear in the first column of its op table.
func TestCoverageDocListsEveryOp(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(t), "docs", "tf-coverage.md"))
	if err != nil {
		t.Fatal(err)
	}
	var firstCol strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| ") {
			firstCol.WriteString(strings.SplitN(line[2:], "|", 2)[0] + "\n")
		}
	}
	col := firstCol.String()
	for _, op := range SupportedOps() {
		if !regexp.MustCompile(`(^|[^A-Za-z0-9])` + op + `($|[^A-Za-z0-9])`).MatchString(col) {
			t.Errorf("docs/tf-coverage.md does not list %s", op)
		}
	}
}
