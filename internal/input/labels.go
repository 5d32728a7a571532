package input

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/cryptflow-go/cryptflow/internal/readfile"
)

// ReadLabels reads a labels.txt of `FILE LABEL` lines (blank lines and #-comments allowed; labels
// are non-negative integers, one per file) — the format of athosc --validate folders and scirun
// batch folders. A missing file gives nil labels and no error.
func ReadLabels(path string) (map[string]int, error) {
	f, err := readfile.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	defer f.Close()
	labels := map[string]int{}
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) != 2 {
			return nil, fmt.Errorf("%s:%d: want `file label`, got %q", path, line, text)
		}
		l, err := strconv.Atoi(fields[1])
		if err != nil || l < 0 {
			return nil, fmt.Errorf("%s:%d: label %q is not a non-negative integer", path, line, fields[1])
		}
		if _, dup := labels[fields[0]]; dup {
			return nil, fmt.Errorf("%s:%d: second label for %s", path, line, fields[0])
		}
		labels[fields[0]] = l
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("labels: %w", err)
	}
	return labels, nil
}
